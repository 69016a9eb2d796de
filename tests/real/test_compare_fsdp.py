"""``collsim compare`` for FSDP / ZeRO: measured steps per strategy (real fsdp --save) vs sim fsdp."""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path

import pytest

from real.compare import format_report, split_file
from real.compare_fsdp import compare_fsdp, fsdp_comm, fsdp_document, fsdp_points
from sim.errors import CollsimError

from ..cli_in_process import collsim_in_process

DATA = Path(__file__).resolve().parents[2] / "real" / "data"
SPEC = DATA / "compare_fsdp_small.yaml"
PARAMS = [{"name": f"layers.{i}.weight", "shape": [256, 256], "numel": 65536, "element_bytes": 4} for i in range(4)]
O_S, W_BPS = 200e-6, 0.5e9
SIZES = [64 << 10, 1 << 20, 4 << 20]


def _launch(steps: dict[str, list[float]], phases=(0.010, 0.020, 0.005), scale=1.0):
    rows = []
    for name, values in steps.items():
        for index, value in enumerate(values):
            rows.append({"kind": "step", "strategy": name, "round": index, "step_s": value * scale, "forward_s": phases[0],
                         "backward_s": phases[1], "optimizer_s": phases[2]})  # fmt: skip
    rows.append({"kind": "allreduce", "sizes": SIZES, "times_s": [O_S + n / W_BPS for n in SIZES]})
    return rows


def _document(launches):
    return fsdp_document(launches, "test", 2, PARAMS, {"host": "test"})


def test_measured_is_the_median_of_launch_medians_and_the_spread_their_range():
    steps = {"none": [0.035, 0.036, 0.034], "ddp": [0.050, 0.052, 0.060], "full_shard": [0.070, 0.071, 0.090]}
    document = _document([_launch(steps, scale=s) for s in (1.0, 1.2, 0.9)])
    points, model = fsdp_points(document)
    by = {p["strategy"]: p for p in points}
    assert list(by) == ["ddp", "full_shard"]  # measured strategies, in the documented order; never the baseline
    medians = [statistics.median(steps["ddp"]) * s for s in (1.0, 1.2, 0.9)]
    assert by["ddp"]["measured_s"] == pytest.approx(statistics.median(medians))
    assert (by["ddp"]["spread_low_s"], by["ddp"]["spread_high_s"]) == pytest.approx((min(medians), max(medians)))
    assert by["ddp"]["spread"] == "range over 3 launches"
    # o and w come back from the all-reduces of the same launches; the replayed phases are the baseline's
    assert (model["o_s"], model["w_Bps"]) == pytest.approx((O_S, W_BPS), rel=1e-6)
    assert model["baseline"] == pytest.approx({"forward_s": 0.010, "backward_s": 0.020, "optimizer_s": 0.005})
    for point in points:
        inside = point["spread_low_s"] <= point["simulated_s"] <= point["spread_high_s"]
        assert point["within_spread"] is inside
        assert point["relative_error"] == pytest.approx((point["simulated_s"] - point["measured_s"]) / point["measured_s"])


def test_free_communication_gives_the_compute_sum_for_ddp():
    """Closed form: with o = 0 and an infinite-rate link, a DDP step is forward + backward + optimizer."""
    document = _document([_launch({"none": [0.035], "ddp": [0.040, 0.041]})])
    points, _ = fsdp_points(document, ["ddp"], o_s=0.0, w_Bps=1e30)
    assert points[0]["simulated_s"] == pytest.approx(0.035, rel=1e-9)
    assert points[0]["spread"].startswith("p10-p90 of rounds")  # one launch: the spread of its rounds


def test_sharded_strategies_pay_for_their_collectives():
    document = _document([_launch({"none": [0.035], "ddp": [0.04], "full_shard": [0.05]})])
    fast, _ = fsdp_points(document, ["full_shard"], o_s=0.0, w_Bps=1e30)
    slow, _ = fsdp_points(document, ["full_shard"], o_s=1e-3, w_Bps=1e8)
    assert slow[0]["simulated_s"] > fast[0]["simulated_s"] + 1e-3


def test_no_overlap_spec_is_the_compute_plus_comm_bound(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(_document([_launch({"none": [0.035], "full_shard": [0.05]})])))
    overlapped = compare_fsdp({"kind": "fsdp", "measured": str(path), "o": "1ms", "w": "100MB/s"})["points"][0]["simulated_s"]
    serial = compare_fsdp({"kind": "fsdp", "measured": str(path), "o": "1ms", "w": "100MB/s", "overlap": False})["points"][0]["simulated_s"]
    assert serial > overlapped
    with pytest.raises(CollsimError, match="o: .*unit"):
        compare_fsdp({"kind": "fsdp", "measured": str(path), "o": 0.001})


def test_noisy_allreduce_fit_falls_back_to_the_mean_rate():
    document = _document([_launch({"none": [0.035], "ddp": [0.04]})])
    document["rows"][-1]["times_s"] = [0.004, 0.002, 0.003]  # time falling with size: no o + n/w fit
    o_s, w_Bps, source = fsdp_comm(document)
    assert o_s == 0.0 and w_Bps == pytest.approx(sum(SIZES) / 0.009) and "noisy" in source


def test_spec_errors_name_what_is_wrong(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(_document([_launch({"none": [0.035], "ddp": [0.04]})])))
    with pytest.raises(CollsimError, match="unknown key 'strategy'.*did you mean 'strategies'"):
        compare_fsdp({"kind": "fsdp", "measured": str(path), "strategy": "ddp"})
    with pytest.raises(CollsimError, match="no measured steps for full_shard; measured: ddp"):
        compare_fsdp({"kind": "fsdp", "measured": str(path), "strategies": "full_shard"})
    with pytest.raises(CollsimError, match="unknown zero9"):
        compare_fsdp({"kind": "fsdp", "measured": str(path), "strategies": ["zero9"]})
    with pytest.raises(CollsimError, match="ranks 4 but .* measured ranks 2"):
        compare_fsdp({"kind": "fsdp", "measured": str(path), "ranks": 4})
    with pytest.raises(CollsimError, match="give 'measured: FILE'"):
        compare_fsdp({"kind": "fsdp"})
    with pytest.raises(CollsimError, match="not found"):
        compare_fsdp({"kind": "fsdp", "measured": str(tmp_path / "missing.json")})
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(CollsimError, match="not a file of measured FSDP steps"):
        compare_fsdp({"kind": "fsdp", "measured": str(tmp_path / "other.json")})


def test_bundled_spec_compares_every_measured_strategy():
    fields, extra = split_file(str(SPEC))
    report = compare_fsdp(fields, extra["base"])
    document = json.loads((DATA / "fsdp_small_gloo_2ranks.json").read_text())
    measured = {row["strategy"] for row in document["rows"] if row.get("kind") == "step"} - {"none"}
    assert {p["strategy"] for p in report["points"]} == measured and len(measured) == 6
    assert document["launches"] >= 2 and all(p["spread"].startswith("range over") for p in report["points"])
    for point in report["points"]:
        assert point["spread_low_s"] <= point["measured_s"] <= point["spread_high_s"]
        assert point["simulated_s"] > 0
    text = format_report(report)
    assert all(name in text for name in measured) and "within the measurement's spread" in text


def collsim(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return collsim_in_process(*args, cwd=cwd or Path.cwd())  # what it says: no Python start-up needed


def test_cli_prints_the_table_and_json(tmp_path):
    done = collsim("compare", str(SPEC), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "full_shard" in done.stdout and "ranking, fastest first" in done.stdout
    done = collsim("compare", str(SPEC), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["kind"] == "fsdp" and {"strategy", "measured_s", "simulated_s", "within_spread"} <= set(report["points"][0])


@pytest.mark.parametrize("extra, message", [(["--holdout"], "do not apply to kind: fsdp"), (["--run"], "--run: not for kind: fsdp")])
def test_cli_options_that_do_not_apply_are_one_error_line(tmp_path, extra, message):
    done = collsim_in_process("compare", str(SPEC), *extra, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip().startswith("error:") and message in done.stderr
    assert "Traceback" not in done.stderr
