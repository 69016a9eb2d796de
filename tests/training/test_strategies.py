"""Strategy ordering invariants and timeline properties (Hypothesis), exact small timelines."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.training.ddp import DDPScenario, run_ddp

KiB = 1024

sizes_strategy = st.lists(st.integers(1, 2048).map(lambda k: 4 * KiB * k), min_size=1, max_size=25)


def scenario_for(sizes, strategy, **fields):
    base = {"param_bytes": tuple(sizes), "strategy": strategy, "backward_time_s": 0.01, "w_Bps": 5e9, "o_s": 0.0}
    return DDPScenario(**{**base, **fields})


@settings(max_examples=40, deadline=None)
@given(
    sizes=sizes_strategy,
    cap_kib=st.integers(4, 65536),
    backward_time_s=st.floats(1e-5, 0.1),
    w_Bps=st.floats(1e8, 1e11),
    first=st.booleans(),
)
def test_overlap_and_bucketed_never_slower_than_flat_without_overhead(sizes, cap_kib, backward_time_s, w_Bps, first):
    fields = {
        "backward_time_s": backward_time_s,
        "w_Bps": w_Bps,
        "o_s": 0.0,
        "bucket_cap_bytes": cap_kib * KiB,
        "first_bucket_bytes": 2**20 if first else None,
    }
    flat = run_ddp(scenario_for(sizes, "flat", **fields)).step_time_s
    for strategy in ("overlap", "bucketed"):
        assert run_ddp(scenario_for(sizes, strategy, **fields)).step_time_s <= flat * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(sizes=sizes_strategy, o_s=st.floats(1e-7, 1e-3), backward_time_s=st.floats(0.0, 0.1), w_Bps=st.floats(1e8, 1e11))
def test_naive_never_faster_than_flat_with_overhead(sizes, o_s, backward_time_s, w_Bps):
    fields = {"backward_time_s": backward_time_s, "w_Bps": w_Bps, "o_s": o_s}
    naive = run_ddp(scenario_for(sizes, "naive", **fields))
    flat = run_ddp(scenario_for(sizes, "flat", **fields))
    assert naive.step_time_s >= flat.step_time_s
    assert naive.overhead_s == pytest.approx(len(sizes) * o_s + sum(sizes) / w_Bps, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    sizes=sizes_strategy,
    strategy=st.sampled_from(["naive", "flat", "overlap", "bucketed"]),
    cap_kib=st.integers(4, 65536),
    o_s=st.floats(0, 1e-3),
    slowdown=st.floats(1.0, 3.0),
    rebuild=st.booleans(),
)
def test_timeline_invariants(sizes, strategy, cap_kib, o_s, slowdown, rebuild):
    result = run_ddp(
        scenario_for(
            sizes,
            strategy,
            bucket_cap_bytes=cap_kib * KiB,
            o_s=o_s,
            slowdown=slowdown,
            rebuild=rebuild,
            forward_time_s=1e-3,
            optimizer_time_s=2e-3,
        )
    )
    buckets = result.buckets
    assert sum(b["bytes"] for b in buckets) == sum(sizes)  # bytes conserved
    assert sorted(name for b in buckets for name in b["params"]) == sorted(f"p{i}" for i in range(len(sizes)))  # each tensor once
    for before, after in zip(buckets, buckets[1:]):
        assert after["start_s"] >= before["end_s"]  # one comm stream, issue order
    assert all(b["start_s"] >= b["ready_s"] for b in buckets)
    assert result.backward_end_s >= result.backward_start_s + 0.01 * (1 - 1e-12)
    assert result.step_time_s >= result.compute_time_s * (1 - 1e-12)
    assert result.exposed_comm_s <= result.comm_busy_s * (1 + 1e-12)
    assert result.step_time_s == pytest.approx(max(result.backward_end_s, result.comm_end_s) + 2e-3, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(sizes=sizes_strategy, slowdown=st.floats(1.0, 4.0), strategy=st.sampled_from(["overlap", "bucketed"]))
def test_slowdown_never_speeds_up(sizes, slowdown, strategy):
    base = run_ddp(scenario_for(sizes, strategy, o_s=1e-4, bucket_cap_bytes=64 * KiB))
    slowed = run_ddp(scenario_for(sizes, strategy, o_s=1e-4, bucket_cap_bytes=64 * KiB, slowdown=slowdown))
    assert slowed.backward_end_s >= base.backward_end_s * (1 - 1e-12)
    assert slowed.step_time_s >= base.step_time_s * (1 - 1e-12)


def test_slowdown_exact_two_tensors():
    """p1 (registered last) is ready at T/2; its all-reduce (d = 2 ms) runs while p0's half of the
    backward (5 ms of work) goes at 1/3 speed: 2 ms of comm cover 2/3 ms of work, the remaining
    13/3 ms run at full speed. p0 ready at 5 + 2 + 13/3 ms."""
    scenario = DDPScenario(param_bytes=(4000, 4000), strategy="overlap", backward_time_s=0.010, o_s=0.002, w_Bps=1e12, slowdown=3.0)
    result = run_ddp(scenario)
    d = 0.002 + 4000 / 1e12
    assert result.ready_s[1] == pytest.approx(0.005, rel=1e-12)
    assert result.ready_s[0] == pytest.approx(0.005 + d + (0.005 - d / 3), rel=1e-12)
    assert result.comm_end_s == pytest.approx(result.ready_s[0] + d, rel=1e-12)


def test_exact_timeline_of_a_tiny_bucketed_step():
    """Four 1 MB tensors, T = 4 ms (1 ms each), forward 1 ms; cap 2 MB, first bucket 1 MB: buckets
    [p3], [p2, p1], [p0] ready at 2, 4, 5 ms; each call costs o + n/w = 0.1 ms + n / 1 GB/s."""
    scenario = DDPScenario(
        param_bytes=(10**6,) * 4,
        bucket_cap_bytes=2 * 10**6,
        first_bucket_bytes=10**6,
        backward_time_s=4e-3,
        forward_time_s=1e-3,
        o_s=1e-4,
        w_Bps=1e9,
        optimizer_time_s=5e-4,
    )
    result = run_ddp(scenario)
    spans = [(b["params"], round(b["ready_s"] * 1e3, 9), round(b["start_s"] * 1e3, 9), round(b["end_s"] * 1e3, 9)) for b in result.buckets]
    assert spans == [(["p3"], 2.0, 2.0, 3.1), (["p2", "p1"], 4.0, 4.0, 6.1), (["p0"], 5.0, 6.1, 7.2)]
    assert (round(result.overhead_s * 1e3, 9), round(result.step_time_s * 1e3, 9)) == (2.2, 7.7)
    kinds = [row["kind"] for row in result.events()]
    assert kinds.count("grad_ready") == 4 and kinds.count("comm") == 3 and kinds[0] == "forward" and kinds[-1] == "optimizer"


def test_gradient_accumulation_adds_unsynchronised_micro_steps():
    fields = {
        "param_bytes": (2**20,) * 6,
        "backward_time_s": 0.006,
        "forward_time_s": 0.002,
        "o_s": 1e-4,
        "w_Bps": 1e9,
        "bucket_cap_bytes": 2**21,
    }
    one = run_ddp(DDPScenario(**fields))
    four = run_ddp(DDPScenario(**fields, accumulation_steps=4))
    assert four.step_time_s == pytest.approx(one.step_time_s + 3 * 0.008, rel=1e-12)
    assert four.overhead_s == pytest.approx(one.overhead_s, rel=1e-9)
    assert [row["step"] for row in four.events() if row["kind"] == "forward"] == [0, 1, 2, 3]


def test_overhead_accumulates_per_call():
    """Same bytes, more calls: the per-call overhead o is paid once per all-reduce."""
    fields = {"param_bytes": (4 * KiB,) * 200, "backward_time_s": 0.001, "o_s": 50e-6, "w_Bps": 10e9}
    overlap = run_ddp(DDPScenario(strategy="overlap", **fields))
    bucketed = run_ddp(DDPScenario(strategy="bucketed", **fields))
    assert overlap.comm_busy_s == pytest.approx(200 * 50e-6 + 800 * KiB / 10e9, rel=1e-9)
    assert overlap.overhead_s > 5 * bucketed.overhead_s
