"""``collsim validate nccl-tests LOG...`` (issue 33, item 3): the user's own nccl-tests logs in, a
held-out report out. Fast tests replace the DES with a closed form (sim.collective.nccl_fit.des_time,
which the fit and the predictions both call); one slow test runs the real DES on two shipped logs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from real.validate_nccl import (
    SHIPPED,
    Calibration,
    Log,
    Z,
    choose_fit_on,
    predict_log,
    read_logs,
    regime_rows,
    validate,
)
from real.validate_nccl_report import markdown, sections
from sim.collective import nccl_fit
from sim.errors import CollsimError
from sim.hardware.presets import TRIAL, effective, load_preset

from ..cli_in_process import collsim_in_process

REPO = Path(__file__).resolve().parents[2]
ONE_NODE = SHIPPED / "h100_1node_allreduce_nvls_nccl-tests290.txt"
TWO_NODES = SHIPPED / "hgx-h100_2node_ib400_nccl2.26.2_allreduce_default.txt"
SIZES = [2**k for k in range(3, 31, 3)]  # 8 B .. 1 GiB: every regime
FITTED_HERE = frozenset({("all_reduce", 1)})  # a fitted log ran the predicted one's op and nodes: the interval is not floored


def closed_form(hardware, nodes, op, size, nccl_algo=None, nccl_proto=None, nccl_version=None):
    """A stand-in DES: latency plus size over the link rates, reading the constants in force."""
    constants = effective(load_preset(hardware))
    time_s = constants.latency_scale * 5e-6 + size / (constants.intra_efficiency * 2e11)
    if nodes > 1:
        time_s += constants.base_latency_us * 1e-6 + size / (constants.inter_efficiency * 1e11)
    return time_s, "Ring/Simple"


def write_log(path: Path, nodes: int, seconds, ranks_per_node: int = 8) -> Path:
    """An nccl-tests all_reduce text log with these times (us columns) and its '#  Rank' lines."""
    lines = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20", "#", "# Using devices"]
    lines += [
        f"#  Rank {r:2d} Group  0 Pid 1 on host{r // ranks_per_node} device {r % ranks_per_node} [0x1] NVIDIA A100"
        for r in range(nodes * ranks_per_node)
    ]
    for size in SIZES:
        time_us = seconds(size) * 1e6
        lines.append(f"  {size:>12d} {size // 4:>12d}  float  sum  -1  {time_us:9.2f}  1.00  1.00  0  {time_us:9.2f}  1.00  1.00  0")
    lines.append("# all_reduce_perf")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def synthetic(monkeypatch, tmp_path):
    """Two logs of a 'cluster' the closed form describes (1 and 2 nodes of oci-a100-roce)."""
    monkeypatch.setattr(nccl_fit, "des_time", closed_form)
    one = write_log(tmp_path / "one_node.txt", 1, lambda n: 6e-6 + n / (0.7 * 2e11))
    two = write_log(tmp_path / "two_nodes.txt", 2, lambda n: 6e-6 + 12e-6 + n / (0.7 * 2e11) + n / (0.9 * 1e11))
    return read_logs([one, two], "oci-a100-roce")


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "arguments, message",
    [
        ([], "give one or more nccl-tests logs"),
        ([str(ONE_NODE), str(TWO_NODES), "--hardware", "no-such-machine"], "unknown preset 'no-such-machine'"),
        ([str(ONE_NODE), str(TWO_NODES), "--hardware", "hgx-h100-nvls", "--fit-on", "nodes=4"], "'nodes=4' names none of the logs"),
        ([str(ONE_NODE), str(REPO / "pyproject.toml"), "--hardware", "hgx-h100-nvls", "--nodes", "1,2"], "no nccl-tests result lines"),
        ([str(ONE_NODE), "--hardware", "hgx-h100-nvls"], "nothing to hold out"),
        ([str(ONE_NODE), str(TWO_NODES), "--hardware", "hgx-h100-nvls", "--fit-on", "nodes=1,nodes=2"], "nothing held out"),
        ([str(ONE_NODE), str(TWO_NODES), "--hardware", "hgx-h100-nvls", "--stride", "0"], "--stride: must be >= 1"),
        ([str(ONE_NODE), str(TWO_NODES), "--hardware", "hgx-h100-nvls", "--nccl-algo", "Bogus"], "--nccl-algo: unknown algo 'Bogus'"),
        ([str(ONE_NODE), str(ONE_NODE), "--hardware", "hgx-h100-nvls"], "the same file name twice"),
        ([str(ONE_NODE), "missing.txt", "--hardware", "hgx-h100-nvls"], "cannot read missing.txt"),
    ],
)
def test_bad_input_is_one_message_before_any_work(tmp_path, arguments, message):
    out = tmp_path / "report"
    command = ["validate", "nccl-tests", *arguments, "--out", str(out)]
    if "--hardware" not in arguments:
        command += ["--hardware", "hgx-h100-nvls"]
    done = collsim_in_process(*command, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and message in errors[0], done.stderr
    assert not out.exists()  # refused before the folder, the fit or any simulation


def test_a_log_of_an_op_the_des_does_not_predict_is_refused(tmp_path):
    log = write_log(tmp_path / "sendrecv.txt", 2, lambda n: 1e-5 + n / 1e11)
    log.write_text("# Collective test starting: sendrecv_perf\n" + log.read_text().replace("# all_reduce_perf\n", ""))
    with pytest.raises(CollsimError, match="is sendrecv_perf output; validate nccl-tests predicts all_reduce"):
        read_logs([log, write_log(tmp_path / "other.txt", 1, lambda n: 1e-5)], "oci-a100-roce")


def test_hardware_fit_without_nodes_names_a_missing_log(tmp_path):
    """collsim hardware fit and validate nccl-tests count a log's nodes from its rank lines."""
    with pytest.raises(CollsimError, match="LOG: cannot read .*missing.txt: No such file"):
        nccl_fit.read_checked(tmp_path / "missing.txt")  # what log_nodes counts from


def test_default_split_fits_the_smallest_node_count_and_predicts_the_rest(synthetic):
    fitted, predicted = choose_fit_on(synthetic)
    assert [log.nodes for log in fitted] == [1] and [log.nodes for log in predicted] == [2]
    fitted, predicted = choose_fit_on(synthetic, "two_nodes.txt")
    assert [log.nodes for log in fitted] == [2] and [log.nodes for log in predicted] == [1]


def test_logs_of_one_node_count_are_not_split_silently(synthetic):
    same = [synthetic[1], Log(Path("other.txt"), "all_reduce", 2, synthetic[1].rows)]
    with pytest.raises(CollsimError, match="every log has the smallest node count of its op"):
        choose_fit_on(same)


# ----------------------------------------------------------------------------- the interval


def test_interval_and_coverage_follow_the_stated_method(monkeypatch):
    """latency_scale one sd either side (0.5, 2) through the closed form, with a residual spread of
    0.1: at 8 B the time is nearly latency only, so sigma^2 = (the larger one-sided change, about
    ln 2)^2 + 0.1^2; the measured times put one point inside the 80 % interval and one outside."""
    monkeypatch.setattr(nccl_fit, "des_time", closed_form)
    values = {"intra_efficiency": 0.8, "latency_scale": 1.0, "base_latency_us": 0.0}
    calibration = Calibration(values, {"latency_scale": (0.5, 2.0), "base_latency_us": (0.0, 25.0)}, 0.1, fitted_runs=FITTED_HERE)
    bytes_s = 8 / (0.8 * 2e11)
    central = 5e-6 + bytes_s
    half = Z * math.sqrt(math.log((2.0 * 5e-6 + bytes_s) / central) ** 2 + 0.1**2)  # the larger side: up, x2
    inside, outside = central * math.exp(0.9 * half), central * math.exp(1.1 * half)
    log = Log(Path("x.txt"), "all_reduce", 1, ((8, inside), (8, outside)))
    points = predict_log(log, "oci-a100-roce", calibration)
    assert points[0].predicted_s == pytest.approx(central)
    assert points[0].low_s == pytest.approx(central * math.exp(-half)) and points[0].high_s == pytest.approx(central * math.exp(half))
    assert [p.covered for p in points] == [True, False]
    (row,) = regime_rows(points)
    assert (row["regime"], row["points"], row["covered"], row["coverage"]) == ("< 1 MiB", 2, 1, 0.5)
    assert row["worst_error"] == pytest.approx(outside / central - 1)
    assert row["median_width"] == pytest.approx(math.exp(half))


def test_a_constant_the_des_does_not_read_adds_nothing(monkeypatch):
    """base_latency_us does not enter a one-node time: the interval is the residual spread alone."""
    monkeypatch.setattr(nccl_fit, "des_time", closed_form)
    calibration = Calibration(
        {"latency_scale": 1.0, "base_latency_us": 0.0}, {"base_latency_us": (0.0, 25.0)}, 0.2, fitted_runs=FITTED_HERE
    )
    (point,) = predict_log(Log(Path("x.txt"), "all_reduce", 1, ((1024, 1e-5),)), "oci-a100-roce", calibration)
    assert math.log(point.high_s / point.predicted_s) == pytest.approx(Z * 0.2)


def test_predictions_pin_every_constant_never_the_shipped_fit(monkeypatch):
    """oci-a100-roce ships a fit made on the calibration logs: a prediction from priors must not
    read it (inter_efficiency 0.938 there, 0.92 the prior)."""
    seen = []

    def spy(hardware, nodes, op, size, nccl_algo=None, nccl_proto=None, nccl_version=None):
        seen.append(effective(load_preset(hardware)).inter_efficiency)
        return closed_form(hardware, nodes, op, size)

    monkeypatch.setattr(nccl_fit, "des_time", spy)
    from real.validate_nccl import priors_only

    predict_log(Log(Path("x.txt"), "all_reduce", 2, ((2**20, 1e-4),)), "oci-a100-roce", priors_only("oci-a100-roce"))
    assert seen and 0.92 in seen and 0.938261 not in seen
    assert "oci-a100-roce" not in TRIAL  # nothing left pinned after


# ----------------------------------------------------------------------------- the report


def test_report_separates_fitted_from_predicted_points(synthetic, tmp_path):
    document = validate(synthetic, "oci-a100-roce", stride=1)
    roles = {(p["log"], p["role"]) for p in document["points"]}
    assert roles == {("one_node.txt", "fitted"), ("two_nodes.txt", "predicted")}
    assert all(p["low_s"] is None for p in document["points"] if p["role"] == "fitted")
    assert all(p["low_s"] < p["predicted_s"] < p["high_s"] for p in document["points"] if p["role"] == "predicted")
    assert [row["log"] for row in document["split"]["fitted"]] == ["one_node.txt"]
    assert [row["log"] for row in document["split"]["predicted"]] == ["two_nodes.txt"]
    assert all(row["coverage"] is None for row in document["regimes"]["fitted"])
    assert sum(row["points"] for row in document["regimes"]["predicted"]) == len(SIZES)
    assert document["fit"]["constants"] and "inter_efficiency" not in document["fit"]["constants"]  # one node cannot tell it
    titles = [title for title, *_ in sections(document)]
    assert titles[1].startswith("Predicted (held-out)") and "in-sample, not a validation" in titles[2]
    text = markdown(document)
    predicted_table = text.split("## Predicted (held-out)")[1].split("## Fitted points")[0]
    assert "80 % interval covered" in predicted_table
    assert all(f"| {row['covered']}/{row['points']} (" in predicted_table for row in document["regimes"]["predicted"])
    assert "| fitted | one_node.txt |" in text and "| predicted | two_nodes.txt |" in text
    json.dumps(document)  # summary.json is plain data


def test_the_fit_holds_a_held_constant_at_its_prior_while_it_solves(monkeypatch, tmp_path):
    """hgx-h100-nvls ships nvls_efficiency 0.642 fitted on the calibration logs; the closed form
    does not read it, so the fit holds it at its prior (0.6) and must run every DES at 0.6."""
    seen = []

    def spy(hardware, nodes, op, size, nccl_algo=None, nccl_proto=None, nccl_version=None):
        seen.append(effective(load_preset(hardware)).nvls_efficiency)
        return closed_form(hardware, nodes, op, size)

    monkeypatch.setattr(nccl_fit, "des_time", spy)
    log = write_log(tmp_path / "one.txt", 1, lambda n: 7e-6 + n / (0.7 * 2e11))
    result = nccl_fit.fit([(log, 1, None)], "hgx-h100-nvls", ["intra_efficiency", "latency_scale", "nvls_efficiency"])
    assert "nvls_efficiency" in result["held_at_prior"] and "intra_efficiency" in result["constants"]
    assert seen and all(abs(value - 0.6) < 0.01 for value in seen)  # 0.6, or a finite-difference step from it


# ----------------------------------------------------------------------------- shipped logs


def test_every_calibration_log_ships_with_its_source_machine_date_and_licence():
    for name in nccl_fit.CALIBRATION:
        path = SHIPPED / name
        head = path.read_text().splitlines()[:6]
        for field in ("# source:", "# machine:", "# date:", "# licence:"):
            assert any(line.startswith(field) for line in head), (name, field)
        op, rows = nccl_fit.read_log(path)
        assert op == "all_reduce" and len(rows) >= 4


@pytest.mark.slow
def test_validate_two_shipped_logs_end_to_end(tmp_path):
    """The real DES: fit on the one-node H100 log, predict the two-node one (every 4th size)."""
    out = tmp_path / "report"
    command = [sys.executable, "-m", "sim.cli", "validate", "nccl-tests", str(ONE_NODE), str(TWO_NODES), "--hardware", "hgx-h100-nvls",
               "--stride", "4", "--out", str(out), "--plotlyjs", "cdn"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "# fitted on h100_1node_allreduce_nvls_nccl-tests290.txt (1 node)" in done.stdout
    document = json.loads((out / "summary.json").read_text())
    predicted = [p for p in document["points"] if p["role"] == "predicted"]
    assert {p["log"] for p in predicted} == {TWO_NODES.name} and len(predicted) == 8
    assert [row["regime"] for row in document["regimes"]["predicted"]] == ["< 1 MiB", "1-256 MiB", ">= 256 MiB"]
    assert all(0 <= row["coverage"] <= 1 for row in document["regimes"]["predicted"])
    assert "nvls_efficiency" in document["fit"]["constants"]
    assert "## Predicted (held-out) points per regime" in (out / "report.md").read_text()
    assert "<table>" in (out / "report.html").read_text()
