"""Exact event log of a tiny scenario: who sends what to whom, and when."""

import pytest

from sim.collective.runner import run_collective
from sim.scenario import CollectiveScenario


def test_ring_all_reduce_p4_exact_log():
    # n = 4 KB in 4 pieces of 1 KB; a = 1 us, B = 1 GB/s -> each message 1 us + 1 us = 2 us,
    # each combine 1 KB / 0.5 GB/s = 2 us. Reduce-scatter steps take 4 us, all-gather steps 2 us.
    scenario = CollectiveScenario(
        op="all_reduce", algorithm="ring", ranks=4, size_bytes=4000, bandwidth_Bps=1e9, latency_s=1e-6, reduce_bandwidth_Bps=0.5e9
    )
    result = run_collective(scenario)
    log = sorted(
        (round(start * 1e6, 9), round(end * 1e6, 9), src, dst, nbytes, step) for src, dst, start, end, nbytes, step, _ in result.messages
    )
    expected = []
    starts = [0, 4, 8, 12, 14, 16]  # us: three reduce-scatter steps, then three all-gather steps
    for step, start in enumerate(starts):
        for src in range(4):
            expected.append((start, start + 2, src, (src + 1) % 4, 1000, step))
    assert log == sorted(expected)
    combines = sorted((rank, round(start * 1e6, 9), round(end * 1e6, 9)) for rank, start, end, *_ in result.computes)
    assert combines == sorted((rank, s, s + 2) for rank in range(4) for s in (2, 6, 10))
    assert result.time_s == pytest.approx(18e-6, rel=1e-12)


def test_ring_pieces_travel_as_the_docstring_says():
    """Rank i sends piece (i - s - 1) mod p at reduce-scatter step s (checked by payload)."""
    scenario = CollectiveScenario(op="reduce_scatter", algorithm="ring", ranks=4, size_bytes=16, bandwidth_Bps=1e9, verify=True)
    result = run_collective(scenario)
    assert result.verified
    steps = {(src, step): dst for src, dst, _, _, _, step, _ in result.messages}
    assert steps == {(src, step): (src + 1) % 4 for src in range(4) for step in range(3)}


def test_binomial_broadcast_sends_farthest_subtree_first():
    scenario = CollectiveScenario(op="broadcast", algorithm="binomial", ranks=8, size_bytes=1000, bandwidth_Bps=1e9)
    order = [(src, dst, step) for src, dst, _, _, _, step, _ in sorted(run_collective(scenario).messages, key=lambda m: (m[2], m[0]))]
    assert order == [(0, 4, 0), (0, 2, 1), (4, 6, 1), (0, 1, 2), (2, 3, 2), (4, 5, 2), (6, 7, 2)]
