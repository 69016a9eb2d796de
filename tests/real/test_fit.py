"""Fitting recovers known constants from synthetic measurements (no torch needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from real.fit import (
    calibrated_fields,
    calibration,
    fit_alpha_beta,
    fit_bucket_overhead,
    fit_groups,
    fit_ow,
    fit_ow_piecewise,
    link_bandwidth,
    load_calibration,
    write_calibration,
)
from sim.errors import CollsimError

SIZES = [4096 * 4**k for k in range(8)]  # 4 KiB .. 64 MiB


def synthetic_rows(
    o_s: float, w_Bps: float, seed: int, iters: int = 50, noise: float = 0.1, run_id: str = "r0", sizes=SIZES, **key
) -> list[dict]:
    """Rows whose per-iteration times have mean exactly o + n/w in expectation (gamma noise, mean 1)."""
    rng = np.random.default_rng(seed)
    shape = 1 / noise**2
    rows = []
    for size in sizes:
        times = (o_s + size / w_Bps) * rng.gamma(shape, 1 / shape, iters)
        rows.append({"size_bytes": size, "times_s": times.tolist(), "time_s": float(times.mean()), "run_id": run_id, **key})
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fit_recovers_o_and_w_within_its_interval(seed):
    o_true, w_true = 250e-6, 1.5e9
    fit = fit_ow(synthetic_rows(o_true, w_true, seed), "mean", replicates=300)
    assert fit.method == "bootstrap"
    assert fit.o_ci_s[0] <= o_true <= fit.o_ci_s[1]
    assert fit.w_ci_Bps[0] <= w_true <= fit.w_ci_Bps[1]
    # the interval is informative, not just wide enough to contain anything
    assert (fit.o_ci_s[1] - fit.o_ci_s[0]) < 0.2 * o_true
    assert (fit.w_ci_Bps[1] - fit.w_ci_Bps[0]) < 0.2 * w_true
    assert abs(fit.predict(2**20) - (o_true + 2**20 / w_true)) / (o_true + 2**20 / w_true) < 0.05


def test_fit_excludes_wrong_constants():
    """The interval must not contain a value 30% off: the test above could fail."""
    fit = fit_ow(synthetic_rows(250e-6, 1.5e9, 7), "mean", replicates=300)
    assert not fit.o_ci_s[0] <= 1.3 * 250e-6 <= fit.o_ci_s[1]
    assert not fit.w_ci_Bps[0] <= 1.3 * 1.5e9 <= fit.w_ci_Bps[1]


def test_fit_across_launches_resamples_launches():
    rows = (
        synthetic_rows(100e-6, 2e9, 1, run_id="a") + synthetic_rows(100e-6, 2e9, 2, run_id="b") + synthetic_rows(100e-6, 2e9, 3, run_id="c")
    )
    fit = fit_ow(rows, "median", replicates=200)
    assert fit.points == 3 * len(SIZES)
    assert fit.o_ci_s[0] <= 100e-6 <= fit.o_ci_s[1]


def test_fit_without_raw_times_uses_least_squares_interval():
    rng = np.random.default_rng(0)
    rows = [{"size_bytes": n, "time_s": (50e-6 + n / 3e9) * (1 + 0.02 * rng.standard_normal())} for n in SIZES]
    fit = fit_ow(rows, "mean")
    assert fit.method == "wls-t"
    assert fit.o_ci_s[0] <= 50e-6 <= fit.o_ci_s[1]
    assert fit.w_ci_Bps[0] <= 3e9 <= fit.w_ci_Bps[1]


def test_exact_data_is_fitted_exactly():
    rows = [{"size_bytes": n, "time_s": 20e-6 + n / 8e9} for n in SIZES]
    fit = fit_ow(rows)
    assert fit.o_s == pytest.approx(20e-6, rel=1e-9)
    assert fit.w_Bps == pytest.approx(8e9, rel=1e-9)
    assert fit.rms_relative_residual < 1e-12


def test_fit_needs_two_sizes():
    with pytest.raises(CollsimError, match="2 or more sizes"):
        fit_ow([{"size_bytes": 1024, "time_s": 1e-3}])
    with pytest.raises(CollsimError, match="--stat"):
        fit_ow([{"size_bytes": 1024, "time_s": 1e-3}], stat="mode")


def test_piecewise_finds_the_breakpoint():
    small = [{"size_bytes": n, "time_s": 1e-3 + n / 10e9} for n in SIZES[:4]]
    large = [{"size_bytes": n, "time_s": 5e-3 + n / 1e9} for n in SIZES[4:]]
    result = fit_ow_piecewise(small + large)
    assert result["breakpoint_bytes"] == SIZES[4]
    assert result["below"]["w_Bps"] == pytest.approx(10e9, rel=1e-6)
    assert result["above"]["o_s"] == pytest.approx(5e-3, rel=1e-6)
    assert result["improvement"] > 10


def test_alpha_beta_across_world_sizes():
    """Ring all-reduce on switch(p): o_p = o_call + 2(p-1) a, w_p = p B / (2(p-1))."""
    call, latency, bandwidth = 30e-6, 5e-6, 10e9
    rows = []
    for p in (2, 4, 8):
        o_p, w_p = call + 2 * (p - 1) * latency, p * bandwidth / (2 * (p - 1))
        rows += [
            {
                "size_bytes": n,
                "time_s": o_p + n / w_p,
                "op": "all_reduce",
                "world_size": p,
                "backend": "gloo",
                "source": "measured",
                "device": "cpu",
            }
            for n in SIZES
        ]
    fits = fit_groups(rows)
    assert [fit.key["world_size"] for fit in fits] == [2, 4, 8]
    (entry,) = fit_alpha_beta(fits)
    assert entry["latency_s"] == pytest.approx(latency, rel=1e-6)
    assert entry["call_overhead_s"] == pytest.approx(call, rel=1e-6)
    assert entry["bandwidth_Bps"] == pytest.approx(bandwidth, rel=1e-6)


def test_calibration_file_drives_the_simulator(tmp_path):
    """The calibration's scenario fields make sim's ring all-reduce reproduce o + n/w."""
    from sim.collective.runner import run_collective
    from sim.scenario import CollectiveScenario

    rows = [
        {
            "size_bytes": n,
            "time_s": 40e-6 + n / 2e9,
            "op": "all_reduce",
            "world_size": 4,
            "backend": "gloo",
            "source": "measured",
            "device": "cpu",
        }
        for n in SIZES
    ]
    fits = fit_groups(rows)
    path = tmp_path / "cal.yaml"
    write_calibration(calibration(fits, fit_alpha_beta(fits)), str(path))
    document = load_calibration(str(path))
    fields = calibrated_fields(document, "all_reduce", 4, "gloo")
    assert fields["bandwidth_Bps"] == pytest.approx(link_bandwidth("all_reduce", "ring", 4, 2e9))
    for n in (4096, 2**20, 2**26):
        scenario = CollectiveScenario.from_dict({"op": "all_reduce", "ranks": 4, "size_bytes": n, **fields})
        assert run_collective(scenario).time_s == pytest.approx(40e-6 + n / 2e9, rel=1e-6)
    with pytest.raises(CollsimError, match="nothing for"):
        calibrated_fields(document, "broadcast", 4, "gloo")


def test_infinite_bandwidth_is_reported_not_crashing():
    rows = [{"size_bytes": n, "time_s": 1e-3} for n in SIZES]  # flat: no size dependence
    fit = fit_ow(rows)
    assert math.isinf(fit.w_Bps) or fit.w_Bps > 1e12


# ---------------------------------------------------------------- issue 10 item 6: constrained fits


def test_negative_overhead_is_bounded_at_zero():
    """Points whose straight line crosses zero below the smallest size (the published p=2 table
    fitted o = -119.7 us): the bounded fit gives o = 0 and an interval that starts at 0."""
    rows = [{"size_bytes": n, "time_s": -200e-6 + n / 1.6e9} for n in (1 << 20, 4 << 20, 16 << 20, 64 << 20)]
    fit = fit_ow(rows)
    assert fit.o_s == 0.0
    assert fit.o_ci_s[0] >= 0.0 and fit.w_ci_Bps[0] >= 0.0
    assert fit.w_Bps == pytest.approx(1.6e9, rel=0.25)


def test_call_overhead_across_world_sizes_is_never_negative():
    """o_p that grows faster than the ring's 2(p-1) latency steps used to give o_call < 0."""
    rows = []
    for p, o_p in ((2, 100e-6), (3, 600e-6), (4, 1100e-6)):
        rows += [{"size_bytes": n, "time_s": o_p + n / 1e9, "op": "all_reduce", "world_size": p, "backend": "gloo", "source": "measured", "device": "cpu"} for n in SIZES]  # fmt: skip
    (entry,) = fit_alpha_beta(fit_groups(rows, replicates=0))
    assert entry["call_overhead_s"] >= 0.0 and entry["latency_s"] >= 0.0
    assert entry["latency_identifiable"]


def test_one_world_size_leaves_latency_not_identifiable():
    rows = [{"size_bytes": n, "time_s": 1e-4 + n / 1e9, "op": "all_reduce", "world_size": 2, "backend": "gloo", "source": "measured", "device": "cpu"} for n in SIZES]  # fmt: skip
    (entry,) = fit_alpha_beta(fit_groups(rows, replicates=0))
    assert entry["latency_identifiable"] is False


def _ddp_steps(overheads_by_buckets: dict[int, list[float]], total: int = 16 << 20) -> list[dict]:
    return [
        {
            "strategy": "bucketed",
            "config": f"bucketed:{n}",
            "bucket_bytes": total // n,
            "comm_calls": n,
            "comm_bytes": total,
            "overhead_s": value,
        }
        for n, values in overheads_by_buckets.items()
        for value in values
    ]


def test_bucket_overhead_recovers_known_constants_within_intervals():
    o, w, total = 2e-3, 1e9, 16 << 20
    rng = np.random.default_rng(0)
    points = {n: list((n * o + total / (n * w)) * rng.normal(1, 0.03, 9)) for n in (1, 2, 4, 8, 16, 32)}
    result = fit_bucket_overhead(_ddp_steps(points, total))
    assert result["identifiable"]
    assert result["intervals"]["o"][0] <= o <= result["intervals"]["o"][1]
    assert result["intervals"]["w"][0] <= w <= result["intervals"]["w"][1]
    assert result["optimal_bucket_bytes"] == pytest.approx(math.sqrt(total * w * o), rel=0.2)


def test_bucket_overhead_that_the_formula_cannot_explain_is_not_identifiable():
    """Three bucket sizes with overheads that fall and rise at random (the r2 = -2.51 case)."""
    points = {2: [0.030, 0.010, 0.050], 8: [0.002, 0.040, 0.020], 32: [0.035, 0.012, 0.028]}
    result = fit_bucket_overhead(_ddp_steps(points))
    assert result["identifiable"] is False
    assert "optimal_bucket_bytes" not in result
    assert result["o_s"] >= 0 and result["w_Bps"] >= 0


def test_fit_cli_prints_no_negative_constant_on_the_bundled_data(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "sim.cli", "fit", "--json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import json

    document = json.loads(done.stdout)
    assert all(entry["o_s"] >= 0 for entry in document["collectives"])
    assert all(entry["call_overhead_s"] >= 0 and entry["latency_s"] >= 0 for entry in document["alpha_beta"])
    assert document["ddp"]["bucket_overhead"]["identifiable"] is False
    text = subprocess.run([sys.executable, "-m", "sim.cli", "fit"], capture_output=True, text=True, timeout=120, cwd=tmp_path).stdout
    assert "not identifiable from these points" in text and "r2 = -" not in text
