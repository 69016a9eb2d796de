"""The DES equals the overhead closed form on uniform buckets, in both regimes (DESIGN §5)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.training.ddp import DDPScenario, run_ddp
from sim.training.overhead import optimal_bucket_bytes, optimal_num_buckets_uniform, overhead_simple, overhead_uniform

MiB = 2**20


def uniform_run(num_buckets: int, params_per_bucket: int, param_nbytes: int, backward_time_s: float, o_s: float, w_Bps: float, **extra):
    """num_buckets equal buckets: equal tensors, cap = one bucket's bytes, no smaller first bucket."""
    sizes = [param_nbytes] * (num_buckets * params_per_bucket)
    scenario = DDPScenario(
        param_bytes=tuple(sizes),
        strategy="bucketed",
        bucket_cap_bytes=param_nbytes * params_per_bucket,
        first_bucket_bytes=None,
        backward_time_s=backward_time_s,
        comm="ow",
        o_s=o_s,
        w_Bps=w_Bps,
        **extra,
    )
    return run_ddp(scenario)


@pytest.mark.parametrize(
    "backward_time_s, o_s, w_Bps",
    [
        (0.100, 50e-6, 10e9),  # d < c: compute-bound, overhead = d
        (0.010, 50e-6, 1e9),  # d > c: comm-bound, overhead = n_b (d - c) + c
    ],
)
def test_des_equals_closed_form_in_both_regimes(backward_time_s, o_s, w_Bps):
    num_buckets, total_nbytes = 8, 64 * MiB
    result = uniform_run(num_buckets, 2, total_nbytes // (2 * num_buckets), backward_time_s, o_s, w_Bps)
    compute_s, comm_s = backward_time_s / num_buckets, o_s + total_nbytes / num_buckets / w_Bps
    expected = overhead_uniform(total_nbytes, num_buckets, backward_time_s, o_s, w_Bps)
    assert result.summary()["num_buckets"] == num_buckets
    assert result.overhead_s == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(comm_s if comm_s < compute_s else num_buckets * (comm_s - compute_s) + compute_s, rel=1e-15)


@settings(max_examples=40, deadline=None)
@given(
    num_buckets=st.integers(1, 24),
    params_per_bucket=st.integers(1, 3),
    param_kib=st.integers(1, 4096),
    backward_time_s=st.floats(1e-4, 1.0),
    o_s=st.floats(0.0, 1e-3),
    w_Bps=st.floats(1e8, 1e11),
)
def test_des_equals_closed_form_property(num_buckets, params_per_bucket, param_kib, backward_time_s, o_s, w_Bps):
    result = uniform_run(num_buckets, params_per_bucket, param_kib * 1024, backward_time_s, o_s, w_Bps)
    total_nbytes = num_buckets * params_per_bucket * param_kib * 1024
    assert result.overhead_s == pytest.approx(overhead_uniform(total_nbytes, num_buckets, backward_time_s, o_s, w_Bps), rel=1e-9)


def test_textbook_case_c_equals_wire_time():
    """With T = s / w (c = s / (n_b w)) the closed form is n_b o + s / (n_b w)."""
    total_nbytes, w_Bps, o_s, num_buckets = 32 * MiB, 5e9, 200e-6, 4
    result = uniform_run(num_buckets, 1, total_nbytes // num_buckets, total_nbytes / w_Bps, o_s, w_Bps)
    assert result.overhead_s == pytest.approx(overhead_simple(total_nbytes, num_buckets, o_s, w_Bps), rel=1e-9)


def test_network_ring_on_switch_matches_closed_form_with_design_o_w():
    """DESIGN §4: ring on switch(p) is o = o_call + 2(p-1)a, w = pB / (2(p-1)); the DES with each
    bucket simulated message by message must give the same overhead."""
    ranks, latency_s, bandwidth_Bps, call_s = 8, 5e-6, 25e9, 20e-6
    num_buckets, param_nbytes, backward_time_s = 6, 4 * MiB, 3e-3
    scenario = DDPScenario(
        param_bytes=(param_nbytes,) * num_buckets,
        bucket_cap_bytes=param_nbytes,
        first_bucket_bytes=None,
        backward_time_s=backward_time_s,
        comm="network",
        algorithm="ring",
        ranks=ranks,
        latency_s=latency_s,
        bandwidth_Bps=bandwidth_Bps,
        call_overhead_s=call_s,
    )
    result = run_ddp(scenario)
    o_s, w_Bps = call_s + 2 * (ranks - 1) * latency_s, ranks * bandwidth_Bps / (2 * (ranks - 1))
    expected = overhead_uniform(num_buckets * param_nbytes, num_buckets, backward_time_s, o_s, w_Bps)
    assert result.overhead_s == pytest.approx(expected, rel=1e-9)
    summary = result.summary()
    assert summary["o_s"] == pytest.approx(o_s, rel=1e-6) and summary["w_Bps"] == pytest.approx(w_Bps, rel=1e-6)


def test_formula_optimum_minimises_the_simple_formula():
    s, w, o = 1.2e9, 12e9, 80e-6
    best = optimal_bucket_bytes(s, w, o)
    at = lambda b: overhead_simple(s, s / b, o, w)  # noqa: E731
    assert at(best) < at(best * 1.05) and at(best) < at(best / 1.05)
    assert best == pytest.approx(math.sqrt(s * w * o))


def test_exact_optimum_is_the_argmin_of_the_closed_form():
    s, t, o, w = 2e9, 0.05, 100e-6, 10e9
    best = optimal_num_buckets_uniform(s, t, o, w, 500)
    values = [overhead_uniform(s, n, t, o, w) for n in range(1, 501)]
    assert values[best - 1] == min(values)
