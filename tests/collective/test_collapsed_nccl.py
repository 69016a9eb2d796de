"""Collapsed mode on NCCL's data path (``--algorithm nccl`` on a hardware preset) gives the full
simulation's time: NCCL's ring and tree have no closed form and no ring replay, so the collapsed
answer is one cached per-message run of the same scenario, never a shortcut that drifts from it
(bench/results/nccl_big_presets.md: why large node counts keep the cached run)."""

from __future__ import annotations

import pytest

from sim.collective.collapsed import collective_time, run
from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.training.comm import pick_time

CASES = [  # (nodes, size): NCCL picks Tree/LL128 at 1 MB, Ring/LL128 at 64 MB on 2 x dgx-a100
    (2, 1 << 20),
    (2, 64 << 20),
    (4, 1 << 20),
]


@pytest.mark.parametrize(("nodes", "size"), CASES, ids=lambda v: str(v))
def test_collapsed_nccl_pick_equals_full_run(nodes: int, size: int) -> None:
    scenario, why = scenario_for_pick("dgx-a100", nodes, "all_reduce", size)
    assert scenario is not None, why
    assert scenario.algorithm.startswith(("nccl_tree", "nccl_ring"))
    full = run_collective(scenario)
    timing = collective_time(scenario)
    assert timing.source == "simulated"
    assert timing.time_s == pytest.approx(full.time_s, rel=1e-9)
    assert run(scenario, "collapsed").time_s == pytest.approx(full.time_s, rel=1e-9)
    assert pick_time("dgx-a100", nodes, "all_reduce", size).time_s == pytest.approx(full.time_s, rel=1e-9)
    assert pick_time("dgx-a100", nodes, "all_reduce", size, mode="full").time_s == pytest.approx(full.time_s, rel=1e-9)
