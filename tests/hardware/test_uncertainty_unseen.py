"""A calibrated prediction (your own preset file, fitted by ``collsim hardware fit -o``) at a
configuration (op, node count) that none of its fitted logs ran is never narrower than the
leave-one-log-out bound (issue 33, item 2): the fit's residual spread says nothing about the
model's structural error there. At a configuration a fitted log ran, the interval is the fit's own."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sim.hardware import uncertainty
from sim.hardware.presets import HERE
from sim.hardware.uncertainty import LOO_HALF_WIDTH, Z80, spread

from ..cli_in_process import collsim_in_process

SIZES = (4096, 16 * 2**20, 2**30)  # one size in each regime of LOO_HALF_WIDTH


def own_preset(tmp_path: Path, logs: str = "'mine.txt (all_reduce, 2 nodes)'", rms: float = 0.06) -> Path:
    """A dgx-h100 preset file with a fitted block as `collsim hardware fit -o` writes it."""
    text = (HERE / "dgx-h100.yaml").read_text().split("\nfitted:")[0]
    fitted = f"\nfitted:\n  logs: [{logs}]\n  rms_log_error: {rms}\n  constants:\n    latency_scale: {{value: 1.1, interval: [1.0, 1.2]}}\n"
    path = tmp_path / "mine.yaml"
    path.write_text(text + fitted)
    return path


def half_width(path: Path, op: str | None, nodes: int, size: int) -> float:
    factor, _ = spread(str(path), nodes * 8, size, op)
    return math.log(factor)


def loo(size: int) -> float:
    return next(bound for below, bound in LOO_HALF_WIDTH if size < below)


@pytest.mark.parametrize("op, nodes", [("all_reduce", 8), ("all_gather", 2), ("all_to_all", 4)])
def test_a_prediction_at_an_unseen_node_count_or_op_is_at_least_the_held_out_bound(tmp_path, op, nodes):
    path = own_preset(tmp_path)
    assert Z80 * 0.06 < min(bound for _, bound in LOO_HALF_WIDTH)  # the fit's own would be narrower
    for size in SIZES:
        assert half_width(path, op, nodes, size) == pytest.approx(loo(size))
    _, basis = spread(str(path), nodes * 8, 2**30, op)
    assert f"{op} on {nodes} node(s) is a configuration none of the fitted logs ran" in basis


def test_a_prediction_at_the_fitted_op_and_node_count_is_not_widened(tmp_path):
    path = own_preset(tmp_path, "'a.txt (all_reduce, 2 nodes)', 'b.txt (all_gather, 4 nodes)'")
    for op, nodes in (("all_reduce", 2), ("all_gather", 4)):
        for size in SIZES:
            assert half_width(path, op, nodes, size) == pytest.approx(Z80 * 0.06)
    assert half_width(path, "all_gather", 2, 2**30) == pytest.approx(loo(2**30))  # each op at its own node counts only


def test_a_fit_wider_than_the_bound_keeps_its_own_width_max_not_sum(tmp_path):
    path = own_preset(tmp_path, rms=0.5)
    for size in SIZES:
        assert Z80 * 0.5 > loo(size)
        assert half_width(path, "all_reduce", 8, size) == pytest.approx(Z80 * 0.5)


def test_where_too_few_logs_give_a_bound_the_published_spread_is_the_floor(tmp_path, monkeypatch):
    monkeypatch.setattr(uncertainty, "LOO_HALF_WIDTH", ((2**20, math.inf), *LOO_HALF_WIDTH[1:]))
    path = own_preset(tmp_path)
    published = math.log(spread("dgx-h100", 16, 4096, "all_gather")[0])  # a shipped preset at an op no log ran
    assert math.isfinite(published) and published > Z80 * 0.06
    assert half_width(path, "all_reduce", 8, 4096) == pytest.approx(published)
    assert "published spread of other clusters" in spread(str(path), 64, 4096, "all_reduce")[1]


def test_an_entry_that_does_not_name_its_op_and_a_mix_of_ops_count_as_unseen(tmp_path):
    """A fitted block written before the op was recorded ('FILE (2 nodes)'), and a training step's
    mix of ops (op None): nothing shows the fit saw that configuration."""
    old = own_preset(tmp_path, "'mine.txt (2 nodes)'")
    assert half_width(old, "all_reduce", 2, 2**30) == pytest.approx(loo(2**30))
    new = own_preset(tmp_path)
    assert half_width(new, None, 2, 2**30) == pytest.approx(loo(2**30))


@pytest.mark.slow
def test_sim_collective_on_your_own_preset_floors_an_unseen_node_count_in_its_json(tmp_path):
    path = own_preset(tmp_path)

    def width(nodes: int, op: str = "all_reduce") -> float:
        done = collsim_in_process("sim", "collective", "--hardware", str(path), "--nodes", str(nodes), "--op", op, "--size", "16MiB",
                                  "--json", cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        low, high = summary["time_interval_s"]
        assert low < summary["time_s"] < high
        return math.log(high / summary["time_s"])

    assert width(2) == pytest.approx(Z80 * 0.06, rel=1e-6)
    assert width(4) == pytest.approx(loo(16 * 2**20), rel=1e-6)
    assert width(2, "all_gather") == pytest.approx(loo(16 * 2**20), rel=1e-6)
