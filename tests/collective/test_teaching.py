"""The teaching layer against hand calculations of the course cases, and the crossover's
"fastest" row (issue 21)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sim import teaching
from sim.collective import explore, runner
from sim.errors import CollsimError
from sim.scenario import CollectiveScenario

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
MiB = 2**20


def course(name: str) -> CollectiveScenario:
    return CollectiveScenario.load(EXAMPLES / name).replace(record="full", verify=False)


def test_ring_all_reduce_8_ranks_sends_exactly_the_lower_bound_by_hand():
    """64 MiB on 8 ranks: 14 steps of n/p = 8 MiB; each rank sends 2(p-1)/p n = 112 MiB, the bound."""
    result = runner.run(course("ring_allreduce_8.yaml"))
    steps = teaching.step_bytes(result)
    assert [s.step for s in steps] == list(range(14))
    assert [s.phase for s in steps] == ["reduce-scatter"] * 7 + ["all-gather"] * 7
    assert steps[0].sent_by_rank == (8 * MiB,) * 8
    assert steps[6].sent_by_rank == (56 * MiB,) * 8  # end of reduce-scatter: (p-1)/p n
    assert steps[-1].sent_by_rank == (112 * MiB,) * 8
    assert steps[-1].bound_bytes == 2 * 7 / 8 * 64 * MiB == steps[-1].busiest_rank_bytes
    assert steps[-1].link_bytes["0->switch"] == 112 * MiB and steps[-1].link_bytes["switch->3"] == 112 * MiB


def test_binomial_broadcast_15_s_root_sends_n_lg_p_against_a_bound_of_n():
    """The course's 5 MB to 8 ranks at 1 MB/s: rounds of 5 s; the root sends 3 x 5 MB, the bound is 5 MB."""
    result = runner.run(course("binomial_broadcast_classic.yaml"))
    steps = teaching.step_bytes(result)
    assert len(steps) == 3 and result.time_s == pytest.approx(15.0)
    assert steps[0].sent_by_rank == (5_000_000,) + (0,) * 7
    assert steps[-1].sent_by_rank[0] == 15_000_000 == steps[-1].busiest_rank_bytes
    assert steps[-1].bound_bytes == 5_000_000
    assert sum(steps[-1].sent_by_rank) == 7 * 5_000_000  # every other rank receives n once


def test_formula_terms_plugged_in_by_hand():
    ring = teaching.formula_terms(course("ring_allreduce_8.yaml"))
    assert ring.text == "2(p-1) α + 2(p-1)/p n β + (p-1)/p n γ"
    alpha, beta, gamma = ring.terms
    assert alpha.coefficient == 14 and alpha.value_s == pytest.approx(14 * 5e-6)
    assert beta.value_s == pytest.approx(1.75 * 64 * MiB / 25e9)
    assert gamma.value_s == pytest.approx(0.875 * 64 * MiB / 100e9)
    assert ring.total_s == pytest.approx(runner.run(course("ring_allreduce_8.yaml")).time_s, rel=1e-12)
    assert alpha.plugged == "14 × 5 us = 70 us"
    broadcast = teaching.formula_terms(course("binomial_broadcast_classic.yaml"))
    assert broadcast.text == "lg p α + lg p n β" and broadcast.total_s == pytest.approx(15.0)
    assert teaching.formula_terms(course("ring_allreduce_8.yaml").replace(algorithm="double_binary_tree")) is None


@pytest.mark.parametrize("example", ["ring_allreduce_8.yaml", "binomial_broadcast_classic.yaml"])
def test_step_costs_add_up_to_the_closed_form_and_name_the_phase(example):
    s = course(example)
    costs = teaching.step_costs(runner.run(s))
    terms = [teaching.step_term(s, costs, index) for index in range(len(costs))]
    total = sum(t["alpha_s"] + t["beta_s"] + t["gamma_s"] for t in terms)
    assert total == pytest.approx(teaching.formula_terms(s).total_s, rel=1e-12)
    last = terms[-1]
    assert last["phase_alpha_s"] + last["phase_beta_s"] + last["phase_gamma_s"] == pytest.approx(
        sum(t["alpha_s"] + t["beta_s"] + t["gamma_s"] for t in terms if t["phase"] == last["phase"])
    )
    if example.startswith("ring"):
        assert terms[0]["beta_s"] == pytest.approx(8 * MiB / 25e9)
        assert terms[7]["gamma_s"] == 0 and terms[6]["gamma_s"] == pytest.approx(8 * MiB / 100e9)
        assert "step 1 of the 7 of all-gather" in terms[7]["sentence"]
    else:
        assert [t["beta_s"] for t in terms] == pytest.approx([5.0, 5.0, 5.0])


def test_crossover_size_solved_by_hand_for_recursive_doubling_against_ring():
    """p = 8, a = 5 us, 25 GB/s, reduce 100 GB/s: n* = 11 a / ((3 - 1.75)/25e9 + (3 - 0.875)/100e9)."""
    found = teaching.crossover_size("all_reduce", "recursive_doubling", "ring", 8, 5e-6, 25e9, 100e9)
    by_hand = 11 * 5e-6 / (1.25 / 25e9 + 2.125 / 100e9)
    assert found.size_bytes == pytest.approx(by_hand, rel=1e-12)
    assert (found.small, found.large) == ("recursive_doubling", "ring")
    assert "A = recursive_doubling, B = ring" in found.formula and found.plugged.startswith("5 us × (14 − 3)")
    for size, winner in ((found.size_bytes / 2, "recursive_doubling"), (found.size_bytes * 2, "ring")):
        times = {name: teaching.formula_terms(_scenario(name, size)).total_s for name in ("recursive_doubling", "ring")}
        assert min(times, key=times.get) == winner


def _scenario(algorithm: str, size: float) -> CollectiveScenario:
    return CollectiveScenario.from_dict(
        {
            "op": "all_reduce",
            "algorithm": algorithm,
            "ranks": 8,
            "size": int(size) // 32 * 32,
            "latency": "5us",
            "bandwidth": "25GB/s",
            "reduce_bandwidth": "100GB/s",
        }
    )


@pytest.mark.parametrize("scale", [0.5, 2.0, 10.0])
def test_crossover_moves_with_alpha_and_beta_as_the_formula_says(scale):
    base = teaching.crossover_size("all_reduce", "recursive_doubling", "ring", 8, 5e-6, 25e9)
    slower_latency = teaching.crossover_size("all_reduce", "recursive_doubling", "ring", 8, 5e-6 * scale, 25e9)
    faster_wire = teaching.crossover_size("all_reduce", "recursive_doubling", "ring", 8, 5e-6, 25e9 * scale)
    assert slower_latency.size_bytes == pytest.approx(base.size_bytes * scale)  # n* grows with alpha
    assert faster_wire.size_bytes == pytest.approx(base.size_bytes * scale)  # and with bandwidth (1 / beta)


def test_crossover_size_never_crossing_and_bad_input():
    assert teaching.crossover_size("all_reduce", "ring", "ring", 8, 5e-6, 25e9).size_bytes is None
    rabenseifner = teaching.crossover_size("all_reduce", "rabenseifner", "ring", 8, 5e-6, 25e9, 100e9)
    assert rabenseifner.size_bytes is None and rabenseifner.always == "rabenseifner"  # fewer latency terms, same bytes
    with pytest.raises(CollsimError, match="no closed form"):
        teaching.crossover_size("all_reduce", "double_binary_tree", "ring", 8, 5e-6, 25e9)
    with pytest.raises(CollsimError, match="power-of-two"):
        teaching.crossover_size("all_reduce", "recursive_doubling", "ring", 6, 5e-6, 25e9)


def test_lower_bounds():
    assert teaching.lower_bound("all_reduce", 8, 800).nbytes == 1400
    assert teaching.lower_bound("broadcast", 8, 800).nbytes == 800
    with pytest.raises(CollsimError, match="op"):
        teaching.lower_bound("nope", 8, 800)


def test_crossover_fastest_compares_every_algorithm_at_every_size():
    """On a physical ring of 8 (the explorer's network otherwise), ring is replayed at every
    size but recursive doubling is simulated: main drew it at every other size only, so at
    4 KiB the "fastest" row named ring (70 us) where recursive doubling takes 36 us."""
    s = CollectiveScenario.from_dict(
        {"op": "all_reduce", "algorithm": "ring", "ranks": 8, "size": "64MiB", "latency": "5us", "bandwidth": "25GB/s",
         "reduce_bandwidth": "100GB/s", "topology": "ring"}
    )  # fmt: skip
    rows = explore.crossover(s, max_messages=30_000)
    sizes = sorted({row["size_bytes"] for row in rows if row["size_bytes"]})
    for name in {row["algorithm"] for row in rows if row["time_s"] is not None}:
        assert sorted(row["size_bytes"] for row in rows if row["algorithm"] == name) == sizes, name
    at_4k = {row["algorithm"]: row["time_s"] for row in rows if row["size_bytes"] == 4096}
    assert at_4k["recursive_doubling"] is not None and at_4k["recursive_doubling"] < at_4k["ring"]
    best = {entry["size_bytes"]: entry for entry in explore.fastest(rows)}
    assert best[4096]["algorithm"] == "recursive_doubling" and not best[4096]["missing"]


def test_fastest_says_which_algorithms_are_missing_at_a_size():
    rows = [
        {"algorithm": "ring", "size_bytes": 1024, "time_s": 2.0, "method": "closed form", "why": ""},
        {"algorithm": "tree", "size_bytes": 1024, "time_s": None, "method": "n/a", "why": "too large to simulate here"},
        {"algorithm": "tree", "size_bytes": 2048, "time_s": 1.0, "method": "simulated", "why": ""},
        {"algorithm": "ring", "size_bytes": 2048, "time_s": 3.0, "method": "closed form", "why": ""},
        {"algorithm": "other", "size_bytes": None, "time_s": None, "method": "n/a", "why": "needs two_level"},
    ]
    best = explore.fastest(rows)
    assert best[0]["algorithm"] == "ring" and best[0]["missing"] == {"tree": "too large to simulate here"}
    assert best[1]["algorithm"] == "tree" and best[1]["missing"] == {}
    assert math.isclose(best[1]["time_s"], 1.0)


def test_bucket_guide_optimum_range_and_where_the_simulation_parts():
    """The course's model: 256 MiB in 1,024 tensors of 256 KiB, T = s / w (the formula's own
    assumption), o = 50 us, w = 10 GB/s. Above a tensor the DES is the formula; below, it cannot
    make smaller buckets, and the notes say so."""
    from sim.training.ddp import DDPScenario

    s, w, o = 256 * MiB, 10e9, 50e-6
    scenario = DDPScenario(param_bytes=(256 * 1024,) * 1024, first_bucket_bytes=None, o_s=o, w_Bps=w, backward_time_s=s / w)
    caps = [64 * 1024, 1 * MiB, 4 * MiB, 8 * MiB, 11 * MiB, 16 * MiB, 64 * MiB]
    guide = teaching.bucket_guide(scenario, caps)
    assert guide["b_star"] == pytest.approx(math.sqrt(s * w * o))
    low, high = guide["formula_range"]
    for x in (low / guide["b_star"], high / guide["b_star"]):
        assert (x + 1 / x) / 2 == pytest.approx(1.01)  # exactly 1 % above the best at both ends
    by_cap = dict(zip(caps, zip(guide["formula_s"], guide["simulated_s"])))
    for cap in (1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB):  # s / cap whole buckets: the DES is the formula
        assert by_cap[cap][1] == pytest.approx(by_cap[cap][0], rel=1e-9)
    assert by_cap[64 * 1024][1] < by_cap[64 * 1024][0] / 2  # a bucket cannot be smaller than its 256 KiB tensor
    assert any("largest gradient tensor" in note for note in guide["notes"])
    assert guide["simulated_range"][0] <= 11 * MiB <= guide["simulated_range"][1]
