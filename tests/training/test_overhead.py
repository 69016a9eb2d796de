"""Fitting o and w: recovers known constants, intervals cover them, and says when the formula fails."""

import math

import numpy as np
import pytest

from sim.errors import CollsimError
from sim.training.ddp import DDPScenario, run_ddp
from sim.training.ddp_sweep import optimize, sweep_bucket_sizes
from sim.training.overhead import fit_overhead, fit_ow, overhead_simple, t_quantile_975

MiB = 2**20


def test_fit_recovers_o_and_w_from_noisy_points():
    s, o, w = 2e9, 120e-6, 8e9
    rng = np.random.default_rng(7)
    buckets = [2**k for k in range(20, 31)]
    points = [(b, overhead_simple(s, s / b, o, w) * (1 + 0.01 * rng.standard_normal())) for b in buckets]
    fit = fit_overhead(points, total_nbytes=s)
    assert fit.o == pytest.approx(o, rel=0.05) and fit.w == pytest.approx(w, rel=0.05)
    assert fit.intervals["o"][0] < o < fit.intervals["o"][1]
    assert fit.intervals["w"][0] < w < fit.intervals["w"][1]
    assert fit.r2 > 0.99
    assert fit.predict(10, s) == pytest.approx(10 * fit.o + s / (10 * fit.w))


def test_exact_fit_recovers_constants_from_uniform_des_points():
    """Simulated uniform buckets in the comm-bound regime: the exact closed form (with T) fits
    them perfectly, while the textbook form, which ignores T, does not."""
    o, w, t = 80e-6, 4e9, 0.02
    summaries = []
    for num_buckets in (1, 2, 4, 8, 16, 32):
        nbytes = 64 * MiB // num_buckets
        summaries.append(
            run_ddp(
                DDPScenario(
                    param_bytes=(nbytes,) * num_buckets, bucket_cap_bytes=nbytes, first_bucket_bytes=None, backward_time_s=t, o_s=o, w_Bps=w
                )
            ).summary()
        )
    exact = fit_overhead(summaries, backward_time_s=t)
    assert exact.o == pytest.approx(o, rel=1e-6) and exact.w == pytest.approx(w, rel=1e-6) and exact.r2 > 0.999999
    simple = fit_overhead(summaries)
    assert simple.r2 < exact.r2 and simple.rmse_s > 1e3 * exact.rmse_s


def test_t_quantiles_match_scipy():
    stats = pytest.importorskip("scipy.stats", reason="scipy not installed: the table is checked against it when present")
    for dof in (1, 2, 5, 10, 30, 40, 60, 120):
        assert t_quantile_975(dof) == pytest.approx(stats.t.ppf(0.975, dof), abs=1e-3)
    assert t_quantile_975(45) >= stats.t.ppf(0.975, 45)  # conservative between table rows
    assert math.isinf(t_quantile_975(0))


def test_fit_needs_enough_points_and_total_bytes():
    with pytest.raises(CollsimError, match="at least three points"):
        fit_overhead([(MiB, 1e-3), (2 * MiB, 1e-3)], total_nbytes=64 * MiB)
    with pytest.raises(CollsimError, match="need total_nbytes"):
        fit_overhead([(MiB, 1e-3)] * 3)
    with pytest.raises(CollsimError, match="two different message sizes"):
        fit_ow([1.0, 1.0], [1.0, 2.0])


def test_fit_ow_is_exact_on_a_line():
    assert fit_ow([1e3, 1e6, 1e9], [1e-5 + n / 2e9 for n in (1e3, 1e6, 1e9)]) == pytest.approx((1e-5, 2e9), rel=1e-9)


def test_sweep_reuses_one_profile_and_matches_single_runs():
    scenario = DDPScenario(preset="cs336-tiny", backward_time_s=0.02, o_s=30e-6, w_Bps=5e9)
    sizes = [MiB, 8 * MiB, 64 * MiB]
    rows = sweep_bucket_sizes(scenario, sizes)
    for size, row in zip(sizes, rows):
        assert row["step_time_s"] == run_ddp(scenario.replace(bucket_cap_bytes=size)).step_time_s


def test_optimize_finds_no_worse_than_any_swept_cap_and_reports_the_formula():
    scenario = DDPScenario(preset="cs336-tiny", backward_time_s=0.01, o_s=200e-6, w_Bps=5e9, comm="ow")
    best = optimize(scenario)
    probes = sweep_bucket_sizes(scenario, [MiB // 4, MiB, 3 * MiB, 10 * MiB, 40 * MiB, 200 * MiB])
    assert best["best_step_time_s"] <= min(row["step_time_s"] for row in probes) * (1 + 1e-12)
    low, high = best["best_bucket_bytes_range"]
    assert low <= best["best_bucket_bytes_sim"] <= high
    s = best["grad_bytes"]
    assert best["best_bucket_bytes_formula"] == pytest.approx(math.sqrt(s * 5e9 * 200e-6))
    assert best["fit"] is not None and best["fit_exact"] is not None
