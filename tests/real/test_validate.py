"""collsim validate: held-out logic, constrained fits and the summary contract on synthetic rows
with known constants (no torch), plus one small real run (torch)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from real.validate import COLLECTIVE_KEYS, DDP_KEYS, FIT_KEYS, load_validate, summary_document
from real.validate_analysis import (
    analyse,
    ddp_analysis,
    fit_link_model,
    held_out_by_launch,
    held_out_by_size,
    held_out_by_world_size,
    noise,
)
from sim.collective.analytic import closed_form
from sim.errors import CollsimError

from ..cli_in_process import collsim_in_process

SIZES = [4096 * 4**k for k in range(7)]  # 4 KiB .. 16 MiB


def rows_for(time_of, op="all_reduce", world_size=2, launches=("A", "B", "C"), sizes=SIZES, noise_sigma=0.0, seed=0, iters=15):
    """Rows as the bench writes them: per-iteration times with median time_of(n) (lognormal noise, median 1)."""
    rng = np.random.default_rng(seed)
    rows = []
    for launch in launches:
        for n in sizes:
            times = time_of(n) * rng.lognormal(0.0, noise_sigma, iters) if noise_sigma else np.full(iters, time_of(n))
            rows.append({"op": op, "world_size": world_size, "size_bytes": n, "run_id": launch, "times_s": times.tolist(),
                         "median_s": float(np.median(times)), "backend": "gloo", "device": "cpu"})  # fmt: skip
    return rows


def test_size_hold_out_predicts_each_size_from_a_fit_that_excluded_it():
    """A wild point at one size does not pull its own prediction: it was not in the fit that predicts it."""
    o, w = 200e-6, 1e9
    rows = rows_for(lambda n: o + n / w)
    wild = SIZES[3]
    for row in rows:
        if row["size_bytes"] == wild:
            row["times_s"] = [t * 5 for t in row["times_s"]]
    result = {row["size_bytes"]: row for row in held_out_by_size(rows)}
    assert set(result) == set(SIZES) and all(row["held_out"] == "size" for row in result.values())
    assert result[wild]["predicted_s"] == pytest.approx(o + wild / w, rel=0.05)
    assert result[wild]["error"] == pytest.approx(-0.8, abs=0.02)
    assert not result[wild]["within_spread"]


def test_launch_hold_out_predicts_each_launch_from_the_others():
    """Launch B runs twice as slow as A: A is predicted from B (+100%) and B from A (-50%)."""
    rows = rows_for(lambda n: 1e-4 + n / 1e9, launches=("A",)) + rows_for(lambda n: 2 * (1e-4 + n / 1e9), launches=("B",))
    result = held_out_by_launch(rows)
    assert len(result) == len(SIZES)
    for row in result:
        truth = 1e-4 + row["size_bytes"] / 1e9
        assert row["held_out"] == "launch"
        assert row["predicted_s"] == pytest.approx(1.5 * truth, rel=1e-6)
        assert row["error"] == pytest.approx(0.25, rel=1e-6)  # median of +100% and -50%
        assert row["spread_low_s"] == pytest.approx(truth) and row["spread_high_s"] == pytest.approx(2 * truth)


def test_one_launch_gives_no_launch_hold_out():
    assert held_out_by_launch(rows_for(lambda n: 1e-4 + n / 1e9, launches=("A",))) == []


def ring_time(p, n, o_call=300e-6, a=20e-6, b=1 / 2e9, g=0.0):
    return o_call + closed_form("all_reduce", "ring", p, n, a, b, g)


def test_world_size_hold_out_fits_the_smallest_and_predicts_the_rest():
    """Ring all-reduce with a = 0: fitted on p = 2 alone, p = 3 and 4 follow from 2(p-1)/p n b."""
    rows = []
    for p in (2, 3, 4):
        rows += rows_for(lambda n, p=p: ring_time(p, n, a=0.0), world_size=p)
    result = held_out_by_world_size(rows, "gloo")
    assert {row["world_size"] for row in result} == {3, 4}
    assert all(row["held_out"] == "world_size" for row in result)
    for row in result:
        assert row["predicted_s"] == pytest.approx(ring_time(row["world_size"], row["size_bytes"], a=0.0), rel=1e-4)


def test_link_model_recovers_known_constants_and_names_what_it_cannot_separate():
    rows = []
    for p in (2, 3, 4):
        rows += rows_for(lambda n, p=p: ring_time(p, n), world_size=p)
    model = fit_link_model(rows, "gloo")
    assert model["o_call_s"] == pytest.approx(300e-6, rel=1e-3)
    assert model["latency_s"] == pytest.approx(20e-6, rel=1e-3)
    assert model["inverse_bandwidth_s_per_B"] == pytest.approx(1 / 2e9, rel=1e-3)
    # ring's n b and n g terms are both (p-1)/p n: gamma cannot be told apart from beta
    assert model["not_identifiable"] == ["inverse_reduce_bandwidth_s_per_B"]
    one = fit_link_model([row for row in rows if row["world_size"] == 2], "gloo")
    assert "latency_s" in one["not_identifiable"]


def test_link_model_never_fits_a_negative_call_overhead():
    """o_p that grows faster than the ring's latency steps (the -1331 us case): o_call bounded at 0."""
    rows = []
    for p in (2, 3, 4):
        rows += rows_for(lambda n, p=p: ring_time(p, n, o_call=-1331e-6, a=1000e-6), world_size=p)
    model = fit_link_model(rows, "gloo")
    assert model["o_call_s"] >= 0 and model["latency_s"] >= 0 and model["inverse_bandwidth_s_per_B"] >= 0


def test_gloo_reduce_scatter_is_modelled_as_the_all_reduce_it_runs():
    rows = []
    for p in (2, 4):
        rows += rows_for(lambda n, p=p: ring_time(p, n, a=0.0), op="reduce_scatter", world_size=p)
    result = held_out_by_world_size(rows, "gloo")
    assert all(row["error"] == pytest.approx(0, abs=1e-4) for row in result)


@pytest.mark.parametrize("seed", [1, 2])
def test_fits_recover_known_constants_within_their_intervals(seed):
    o, w = 150e-6, 1.5e9
    rows = rows_for(lambda n: o + n / w, noise_sigma=0.05, seed=seed)
    summary = analyse(rows, [], [], "gloo", replicates=200)
    (fit,) = summary["fits"]
    assert fit["o_low_s"] <= o <= fit["o_high_s"]
    assert fit["w_low_Bps"] <= w <= fit["w_high_Bps"]
    assert fit["o_low_s"] >= 0


def test_negative_overhead_is_zero_not_negative():
    rows = rows_for(lambda n: max(1e-6, -300e-6 + n / 1e9), sizes=SIZES[3:])
    (fit,) = analyse(rows, [], [], "gloo", replicates=50)["fits"]
    assert fit["o_s"] == 0.0 and fit["o_low_s"] == 0.0


def test_noise_counts_stalls_and_launch_spread():
    rows = rows_for(lambda n: 1e-3, launches=("A", "B"), sizes=[1 << 20], iters=10)
    rows[0]["times_s"][0] = 10e-3  # one stall in 20 calls
    rows[1]["times_s"] = [1.2e-3] * 10  # launch B 20% slower
    result = noise(rows)
    assert result["stall_rate"] == pytest.approx(1 / 20)
    assert result["median_launch_spread_at_1MiB_up"] == pytest.approx(0.2 / 1.1, rel=1e-6)


def _ddp_steps(o=3e-3, w=1e9, total=16 << 20, caps=(256 << 10, 1 << 20, 4 << 20, 16 << 20), rounds=5):
    steps = []
    for cap in caps:
        count = max(1, total // cap)
        for launch in ("A", "B"):
            for r in range(rounds):
                overhead = count * o + total / (count * w)
                steps.append({"config": f"bucketed:{cap}", "strategy": "bucketed", "bucket_bytes": cap, "comm_calls": count, "comm_bytes": total,
                              "overhead_s": overhead * (1 + 0.01 * r), "step_s": 0.2 + overhead, "run_id": launch, "world_size": 2})  # fmt: skip
    return steps


def test_ddp_analysis_finds_the_measured_optimum_and_fits_the_formula():
    o, w, total = 3e-3, 1e9, 16 << 20
    result = ddp_analysis(_ddp_steps(o, w, total), [], None)
    assert result["bucket_bytes"] == [256 << 10, 1 << 20, 4 << 20, 16 << 20]
    assert result["best_measured_bytes"] == 4 << 20  # n_b = 4: 12 ms + 4.2 ms is the least
    assert result["fitted_o_s"] == pytest.approx(o, rel=0.05) and result["fitted_w_Bps"] == pytest.approx(w, rel=0.05)
    assert result["best_formula_bytes"] == pytest.approx(math.sqrt(total * w * o), rel=0.05)
    assert result["best_sim_bytes"] is None  # no profile, no simulation


def test_summary_document_has_exactly_the_contract_keys(tmp_path):
    rows = []
    for p in (2, 3):
        rows += rows_for(lambda n, p=p: ring_time(p, n), world_size=p, noise_sigma=0.02)
    summary = analyse(rows, _ddp_steps(), [], "gloo", meta={"host": "test"}, replicates=20)
    document = summary_document(summary)
    assert list(document)[:3] == ["collectives", "fits", "ddp"]
    assert all(tuple(row) == COLLECTIVE_KEYS for row in document["collectives"])
    assert all(tuple(row) == FIT_KEYS for row in document["fits"])
    assert tuple(document["ddp"]) == DDP_KEYS
    assert {row["held_out"] for row in document["collectives"]} == {"size", "launch", "world_size"}
    assert document["targets"][0]["met"] is True  # every prediction held out
    json.dumps(document)  # plain JSON: no numpy, no inf
    (tmp_path / "summary.json").write_text(json.dumps(document))
    assert load_validate(tmp_path)["fits"] == document["fits"]
    assert load_validate(tmp_path / "report.html")["ddp"] == document["ddp"]


def test_load_validate_names_what_is_wrong(tmp_path):
    with pytest.raises(CollsimError, match="not found"):
        load_validate(tmp_path)
    (tmp_path / "summary.json").write_text('{"fits": []}')
    with pytest.raises(CollsimError, match="no collectives, ddp"):
        load_validate(tmp_path)


def test_report_is_one_html_file_with_the_figures(tmp_path):
    pytest.importorskip("plotly")
    from real.report import write_report

    rows = rows_for(lambda n: ring_time(2, n), noise_sigma=0.02)
    document = summary_document(analyse(rows, _ddp_steps(), [], "gloo", meta={"backend": "gloo"}, replicates=20))
    path = tmp_path / "report.html"
    write_report(document, path, plotlyjs="cdn")
    text = path.read_text()
    assert text.count("plotly-graph-div") >= 3 and "held out by size" in text and "DDP overhead vs bucket cap" in text
    assert "in-sample" in text


def collsim(*args: str, cwd=None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sim.cli", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


@pytest.mark.parametrize(
    "args, message",
    [(["--ranks", "1"], "--ranks: need world sizes >= 2"), (["--ranks", "two"], "--ranks: expected a number"),
     (["--sizes", "4KiB,8KiB"], "--sizes: need 4 or more sizes")],
)  # fmt: skip
def test_bad_input_is_one_error_line(tmp_path, args, message):
    done = collsim_in_process("validate", "--out", str(tmp_path / "out"), *args, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip().startswith("error:") and message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_validate_runs_for_real_and_writes_the_three_files(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "out"
    done = collsim("validate", "--backend", "gloo", "--ranks", "2", "--sizes", "4KiB:256KiB:x4", "--launches", "2", "--no-ddp",
                   "--plotlyjs", "cdn", "--out", str(out), cwd=tmp_path, timeout=280)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert {path.name for path in out.iterdir()} >= {"report.html", "summary.json", "calibration.yaml", "results.sqlite"}
    document = load_validate(out)
    assert len(document["collectives"]) == 4 * 4 * 2  # 4 ops x 4 sizes, held out by size and by launch
    assert all(row["held_out"] in ("size", "launch") for row in document["collectives"])
    assert {row["op"] for row in document["fits"]} == {"all_reduce", "all_gather", "reduce_scatter", "broadcast"}
    assert "held out by size" in done.stdout


def test_a_launch_cut_short_still_gives_launch_hold_outs():
    rows = rows_for(lambda n: 1e-4 + n / 1e9, launches=("A", "B")) + rows_for(lambda n: 1e-4 + n / 1e9, launches=("C",), sizes=SIZES[:1])
    result = held_out_by_launch(rows)
    assert len(result) == len(SIZES) and all(row["error"] == pytest.approx(0, abs=1e-9) for row in result)


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_ctrl_c_keeps_what_was_measured_and_still_reports(tmp_path, signum):
    """SIGINT (or SIGTERM: `timeout`, a scheduler; it left the run 'running') after the first
    launch: the run stops, the rows stay in the store, the three files are written from them and
    say the run was interrupted."""
    import signal
    import sqlite3
    import time

    pytest.importorskip("torch")
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "validate", "--ranks", "2", "--sizes", "4KiB:1MiB:x4", "--launches", "5", "--no-ddp",
         "--plotlyjs", "cdn", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a `pytest &` job ignores SIGINT, and so would it
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 200
        while time.monotonic() < deadline and _rows(out / "results.sqlite") < 4 * 5 * 2:
            time.sleep(0.5)
        assert _rows(out / "results.sqlite") >= 4 * 5 * 2, "two launches not measured in time"
        process.send_signal(getattr(signal, signum))
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr  # a script can tell: interrupted is not success
    assert "interrupted" in stdout and "Traceback" not in stderr
    assert json.loads((out / "status.json").read_text())["state"] == "interrupted"
    document = load_validate(out)
    assert document["meta"]["interrupted"] is True
    assert {row["held_out"] for row in document["collectives"]} == {"size", "launch"}
    statuses = [status for (status,) in sqlite3.connect(out / "results.sqlite").execute("SELECT status FROM runs")]
    assert statuses.count("ok") >= 1 and "running" not in statuses


def _rows(db) -> int:
    import sqlite3

    if not db.exists():
        return 0
    try:
        return sqlite3.connect(db, timeout=5).execute("SELECT COUNT(*) FROM collectives").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_write_outputs_gives_a_calibration_the_simulator_reads(tmp_path):
    pytest.importorskip("plotly")
    from real.validate import write_outputs
    from sim.calibration import calibrated_fields, load_calibration

    o, w = 200e-6, 1e9
    rows = rows_for(lambda n: o + n / w, noise_sigma=0.01)
    paths = write_outputs(analyse(rows, [], [], "gloo", replicates=20), tmp_path, plotlyjs="cdn")
    assert all(path.is_file() for path in paths.values())
    fields = calibrated_fields(load_calibration(str(paths["calibration"])), "all_reduce", 2, "gloo")
    assert fields["overhead_s"] == pytest.approx(o, rel=0.05)
    assert fields["bandwidth_Bps"] == pytest.approx(w, rel=0.05)  # ring p=2: B = w 2(p-1)/p = w
