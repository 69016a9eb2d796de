"""collsim compare: error beside the measurement's own spread (bundled sample data, no torch)."""

from __future__ import annotations

import json

import pytest

from real.compare import compare_file, judge, measured_point
from real.store import open_store, sample_path
from sim.errors import CollsimError

from ..cli_in_process import collsim_in_process


def scenario(tmp_path, text: str):
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return str(path)


def test_judge_uses_the_spread():
    point = {"measured_s": 1.0, "spread_low_s": 0.9, "spread_high_s": 1.2}
    assert judge(point, 1.1)["within_spread"] and judge(point, 1.1)["relative_error"] == pytest.approx(0.1)
    assert not judge(point, 1.25)["within_spread"]
    assert judge(point, 0.8)["relative_spread"] == pytest.approx(0.15)


def test_measured_point_prefers_the_spread_between_launches():
    rows = [{"time_s": t, "times_s": [t, t]} for t in (1.0, 1.3, 1.1)]
    point = measured_point(rows)
    assert point["measured_s"] == pytest.approx(1.1)
    assert (point["spread_low_s"], point["spread_high_s"]) == (1.0, 1.3) and "3 launches" in point["spread"]
    single = measured_point([{"times_s": [1.0, 2.0, 3.0, 4.0, 5.0]}])
    assert single["spread_low_s"] == pytest.approx(1.4) and "one launch" in single["spread"]


def test_collective_comparison_on_the_sample_data(tmp_path):
    path = scenario(tmp_path, "op: all_reduce\nalgorithm: ring\nranks: 2\nsizes: 4KiB:64MiB:x4\nbackend: gloo\n")
    report = compare_file(path, open_store(None))
    assert len(report["points"]) == 8 and "in-sample" in report["calibration"]
    for point in report["points"]:
        assert point["within_spread"] == (point["spread_low_s"] <= point["simulated_s"] <= point["spread_high_s"])
        assert point["relative_error"] == pytest.approx((point["simulated_s"] - point["measured_s"]) / point["measured_s"])
    # an absurd model must be judged wrong at large sizes
    wrong = compare_file(
        scenario(tmp_path, "op: all_reduce\nalgorithm: ring\nranks: 2\nsizes: 16MiB,64MiB\nbandwidth: 100GB/s\n"), open_store(None)
    )
    assert not any(point["within_spread"] for point in wrong["points"])
    assert all(point["relative_error"] < -0.9 for point in wrong["points"])


def test_calibration_file_feeds_compare(tmp_path):
    from real.fit import calibration, fit_alpha_beta, fit_groups, write_calibration

    store = open_store(None)
    fits = fit_groups(store.collectives(source="measured"))
    write_calibration(calibration(fits, fit_alpha_beta(fits)), str(tmp_path / "cal.yaml"))
    path = scenario(tmp_path, "op: all_reduce\nranks: 2\nsizes: 1MiB,4MiB\ncalibration: cal.yaml\n")
    report = compare_file(path, store)
    assert report["calibration"].startswith("calibration file") and len(report["points"]) == 2


def test_ddp_comparison_on_the_sample_data():
    report = compare_file(str(sample_path("compare_ddp_small.yaml")), open_store(None))
    configs = {point["config"] for point in report["points"]}
    assert {"naive", "flat", "overlap", "bucketed:1MiB"} <= configs
    assert all(point["simulated_s"] > 0 and point["measured_s"] > 0 for point in report["points"])


def test_missing_measurements_are_named(tmp_path):
    with pytest.raises(CollsimError, match="measured sizes"):
        compare_file(scenario(tmp_path, "op: all_reduce\nranks: 2\nsizes: 3MiB\n"), open_store(None))
    with pytest.raises(CollsimError, match="no measurements of all_reduce on gloo with 3 ranks"):
        compare_file(scenario(tmp_path, "op: all_reduce\nranks: 3\nsizes: 1MiB\n"), open_store(None))


def test_cli_json_and_text(tmp_path):
    path = str(sample_path("compare_all_reduce_gloo_2.yaml"))
    done = collsim_in_process("compare", path, "--json", cwd=tmp_path)  # what it prints: no Python start-up needed
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"]["points"] == 8
    done = collsim_in_process("compare", path, cwd=tmp_path)
    assert "within the measurement's spread" in done.stdout and "range over 3 launches" in done.stdout


def test_holdout_is_out_of_sample_and_differs_from_in_sample(tmp_path):
    store = open_store(None)
    text = "op: all_reduce\nranks: 2\nsizes: 4KiB,1MiB,64MiB\n"
    inside = compare_file(scenario(tmp_path, text), store)
    held = compare_file(scenario(tmp_path, text + "holdout: true\n"), store)
    assert "out-of-sample" in held["calibration"]
    assert [p["measured_s"] for p in held["points"]] == [p["measured_s"] for p in inside["points"]]
    assert any(abs(a["simulated_s"] - b["simulated_s"]) > 1e-9 for a, b in zip(held["points"], inside["points"]))


def test_ddp_paired_overhead_is_judged():
    report = compare_file(str(sample_path("compare_ddp_small.yaml")), open_store(None))
    for point in report["points"]:
        over = point["overhead"]
        assert over["within_spread"] == (over["spread_low_s"] <= over["simulated_s"] <= over["spread_high_s"])
        assert over["simulated_s"] >= 0 and point["simulated_with_slowdown_s"] >= point["simulated_s"] - 1e-12
    naive = next(p for p in report["points"] if p["config"] == "naive")
    flat = next(p for p in report["points"] if p["config"] == "flat")
    assert naive["overhead"]["simulated_s"] > flat["overhead"]["simulated_s"]  # 37 calls cost more than 1 in the model
