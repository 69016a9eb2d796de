"""``collsim validate nccl-tests``: a predicted log whose op and node count no fitted log ran gets
an interval at least the leave-one-log-out bound wide (issue 33, item 2: the fit's own uncertainty
has no term for the model's error there); one whose configuration a fitted log ran keeps the fit's
own. And an op the default split fits whole (one log) is named, not dropped in silence. The DES is
replaced by a closed form (sim.collective.nccl_fit.des_time)."""

from __future__ import annotations

import json
import math

import pytest

from real.validate_nccl import Z, calibrate, choose_fit_on, log_sigma, read_logs, time_with, validate
from real.validate_nccl_report import format_text, markdown
from sim.collective import nccl_fit
from sim.hardware.uncertainty import LOO_HALF_WIDTH

from ..cli_in_process import collsim_in_process
from .test_validate_nccl_ops import closed_form, write_op_log

HARDWARE = "oci-a100-roce"


def loo(size: int) -> float:
    return next(bound for below, bound in LOO_HALF_WIDTH if size < below)


@pytest.fixture
def cluster(monkeypatch, tmp_path):
    """all_reduce twice on 1 node (two runs), once on 2 nodes; all_gather once, on 2 nodes."""
    monkeypatch.setattr(nccl_fit, "des_time", closed_form)
    paths = [write_op_log(tmp_path / name, op, nodes) for name, op, nodes in
             (("ar_1a.txt", "all_reduce", 1), ("ar_1b.txt", "all_reduce", 1), ("ar_2.txt", "all_reduce", 2), ("ag_2.txt", "all_gather", 2))]  # fmt: skip
    return read_logs(paths, HARDWARE)


def own_half_widths(logs, fit_on: str, name: str) -> list[float]:
    """z sigma of each size of log ``name``: the fit's own uncertainty, before any floor."""
    fitted, _ = choose_fit_on(logs, fit_on)
    calibration = calibrate(fitted, HARDWARE)
    log = next(log for log in logs if log.name == name)
    halves = []
    for size, _ in log.rows:
        central = time_with(HARDWARE, log.nodes, log.op, size, calibration.values, log.nccl_algo, log.nccl_proto)
        halves.append(Z * log_sigma(HARDWARE, log, size, calibration, central))
    return halves


@pytest.mark.slow
def test_a_predicted_log_of_an_unseen_op_or_node_count_is_floored_and_a_seen_one_is_not(cluster):
    fit_on = "ar_1a.txt,ar_2.txt"  # ar_1b: all_reduce on 1 node, a fitted log ran it; ag_2: all_gather, none did
    document = validate(cluster, HARDWARE, fit_on)
    halves = {(p["log"], p["size_bytes"]): math.log(p["high_s"] / p["predicted_s"]) for p in document["points"] if p["role"] == "predicted"}
    seen, unseen = own_half_widths(cluster, fit_on, "ar_1b.txt"), own_half_widths(cluster, fit_on, "ag_2.txt")
    sizes = [size for size, _ in cluster[0].rows]
    assert any(half < loo(size) for half, size in zip(seen, sizes))  # the floor would bind on the seen log ...
    assert any(half < loo(size) for half, size in zip(unseen, sizes))  # ... and does on the unseen one
    for size, own_seen, own_unseen in zip(sizes, seen, unseen):
        assert halves["ar_1b.txt", size] == pytest.approx(own_seen)
        assert halves["ag_2.txt", size] == pytest.approx(max(own_unseen, loo(size)))
    assert "leave-one-log-out 80 % bound" in document["interval"]["method"]


@pytest.mark.slow
def test_the_default_split_floors_a_larger_node_count(cluster):
    """Default: the smallest node count of each op fitted (all_reduce on 1 node), all_reduce on 2 predicted."""
    document = validate(cluster, HARDWARE)
    predicted = [p for p in document["points"] if p["role"] == "predicted"]
    assert {p["log"] for p in predicted} == {"ar_2.txt"}
    assert all(math.log(p["high_s"] / p["predicted_s"]) >= loo(p["size_bytes"]) - 1e-12 for p in predicted)


@pytest.mark.slow
def test_an_op_the_default_split_fits_whole_is_named_with_how_to_hold_it_out(cluster):
    document = validate(cluster, HARDWARE)
    line = "all_gather: one log (2 nodes), fitted; nothing of it is predicted; --fit-on ar_1a.txt,ar_1b.txt to hold it out"
    assert document["not_predicted"] == [{"op": "all_gather", "logs": ["ag_2.txt"], "nodes": [2], "note": line}]
    assert f"# {line}" in format_text(document, {}).splitlines() and line in markdown(document)
    assert validate(cluster, HARDWARE, "ar_1a.txt,ar_1b.txt")["not_predicted"] == []  # its own advice holds it out


@pytest.mark.slow
def test_the_command_prints_the_line_and_writes_the_field(cluster, tmp_path):
    out = tmp_path / "report"
    done = collsim_in_process("validate", "nccl-tests", *(str(log.path) for log in cluster), "--hardware", HARDWARE, "--out", str(out),
                              cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "# all_gather: one log (2 nodes), fitted; nothing of it is predicted" in done.stdout
    assert [entry["op"] for entry in json.loads((out / "summary.json").read_text())["not_predicted"]] == ["all_gather"]
