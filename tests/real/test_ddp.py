"""DDP wrappers: every strategy's weights equal single-process training; measured timelines."""

from __future__ import annotations

import json

import pytest

from ..cli_in_process import collsim_in_process  # ranks from this process's fork server: no CLI start-up, no torch import

pytest.importorskip("torch")

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def test_every_strategy_matches_single_process_training():
    from real.ddp_bench import check_equality
    from real.launcher import LaunchConfig

    configs = [("naive", None), ("flat", None), ("overlap", None), ("bucketed", 1024), ("bucketed", 64 << 10)]
    rows = check_equality(LaunchConfig(2, timeout_s=240), "mlp", configs, steps=3)
    assert [(row["strategy"], row["bucket_bytes"]) for row in rows] == configs
    for row in rows:
        assert row["allclose"], row
        # the check has teeth: the weights moved far more than the tolerance
        assert row["reference_moved"] > 1000 * max(row["max_abs_diff"], 1e-9)
    calls = {(row["strategy"], row["bucket_bytes"]): row["calls_per_step"] for row in rows}
    assert calls[("naive", None)] == 6 and calls[("flat", None)] == 1 and calls[("overlap", None)] == 6
    assert calls[("bucketed", 64 << 10)] == 1 and 1 < calls[("bucketed", 1024)] < 6


def test_ddp_cli_rows_profiles_and_params(tmp_path):
    from real.store import open_store
    from sim.training.ddp import load_profile
    from sim.training.params import load_params

    db, profiles, params = tmp_path / "r.sqlite", tmp_path / "profiles", tmp_path / "params.json"
    done = collsim_in_process(
        "real", "ddp", "--model", "mlp", "--ranks", "2", "--strategies", "naive,bucketed", "--bucket-sizes", "1KiB,16KiB",
        "--rounds", "2", "--warmup-rounds", "1", "--db", str(db), "--profile-dir", str(profiles), "--params", str(params), "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert [row["config"] for row in summary] == ["none", "naive", "bucketed:1KiB", "bucketed:16KiB"]
    for row in summary:
        assert row["op"] == "ddp_step" and row["rounds"] == 2 and row["median_s"] > 0
        assert row["p10_s"] <= row["median_s"] <= row["p90_s"]
    store = open_store(db)
    steps = store.ddp_steps()
    assert len(steps) == 2 * 4
    for step in steps:
        assert step["overhead_s"] == pytest.approx(step["step_s"] - step["baseline_step_s"])
        # each column is its own maximum over ranks, so the phases of different ranks need not sum
        # to the step; each phase of the slowest rank still fits inside the slowest step
        assert step["step_s"] >= max(step["forward_s"], step["backward_s"], step["sync_s"], step["optimizer_s"]) > 0
    assert {p["config"] for p in store.ddp_profiles()} == {"none", "naive", "bucketed:1KiB", "bucketed:16KiB"}
    listed = load_params(params)
    assert [p.name for p in listed] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"]
    measured = load_profile(profiles / "mlp-none.json")  # sim.training.ddp accepts what we wrote
    assert set(measured.ready_s) == {p.name for p in listed}
    # gradients become ready in reverse registration order
    assert measured.ready_s["fc3.weight"] <= measured.ready_s["fc1.weight"]
    timeline = json.loads((profiles / "mlp-bucketed-1KiB.json").read_text())["events"]
    comms = [row for row in timeline if row["kind"] == "comm"]
    assert comms and all(row["end_s"] >= row["start_s"] for row in comms) and {row["rank"] for row in comms} == {0, 1}
