"""all_to_all: every algorithm verifies on every p in 1..16; closed forms on switch(p)."""

import pytest

from sim.collective.analytic import busbw_factor
from sim.collective.runner import run_collective
from sim.scenario import CollectiveScenario

ALGORITHMS = ("pairwise", "bruck", "direct")


def _scenario(algorithm, p, **fields):
    data = {"op": "all_to_all", "algorithm": algorithm, "ranks": p, "size_bytes": p * 4 * 3, "bandwidth": "10GB/s", "latency": "1us"}
    return CollectiveScenario.from_dict({**data, **fields})


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("p", range(1, 17))
def test_verifies(algorithm, p):
    assert run_collective(_scenario(algorithm, p, verify=True)).verified


@pytest.mark.parametrize("sharing", ["fair", "fifo"])
@pytest.mark.parametrize("algorithm, p", [("pairwise", 6), ("pairwise", 8), ("bruck", 8), ("bruck", 16)])
def test_closed_forms(algorithm, p, sharing):
    result = run_collective(_scenario(algorithm, p, size_bytes=p * 4 * 1000, sharing=sharing))
    assert result.analytic_time_s is not None
    assert result.time_s == pytest.approx(result.analytic_time_s, rel=1e-9)


def test_bruck_beats_pairwise_on_small_blocks_and_loses_on_large():
    small = {a: run_collective(_scenario(a, 16, size_bytes=16 * 4)).time_s for a in ("pairwise", "bruck")}
    large = {a: run_collective(_scenario(a, 16, size_bytes=16 * 4 * 2**16)).time_s for a in ("pairwise", "bruck")}
    assert small["bruck"] < small["pairwise"] and large["bruck"] > large["pairwise"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_uneven_sizes_exchange_whole_blocks_and_keep_the_tail(algorithm):
    result = run_collective(_scenario(algorithm, 5, size_bytes=4 * 23, verify=True))  # 4 elements a block, 3 stay
    assert result.verified
    if algorithm != "bruck":  # 5 ranks x 4 peers x one block of 4 elements
        assert result.bytes_sent == 5 * 4 * 4 * 4


def test_busbw_factor():
    assert busbw_factor("all_to_all", 8) == pytest.approx(7 / 8)
