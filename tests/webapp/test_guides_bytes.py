"""The byte counts the guides state come from simulated runs and the algorithms' records, and
agree with them (issue 36, E5: "every rank sends 2 lg p n = 384 MiB" for reduce-then-broadcast,
where the most any rank sends is lg p n = 192 MiB; and why 2(p-1)/p n is the bound)."""

from __future__ import annotations

import math
import re

import pytest

from sim import teaching
from sim.collective import runner
from sim.scenario import CollectiveScenario
from sim.units import format_size
from webapp.pages.guides import page as guides

from .guides_text import words

MiB = 2**20


def simulated(algorithm: str, p: int, n: str = "64MiB"):
    """(bytes each rank sent, step costs) of a full-record all-reduce run on switch(p)."""
    scenario = CollectiveScenario.from_dict(
        {"op": "all_reduce", "algorithm": algorithm, "ranks": p, "size": n, "latency": "5us", "bandwidth": "25GB/s", "record": "full"}
    )
    result = runner.run(scenario)
    return teaching.step_bytes(result)[-1].sent_by_rank, teaching.step_costs(result)


def claimed_sends(paragraph: str) -> list[float]:
    """Every byte count the paragraph puts right after "sends" (in the same clause), in MiB."""
    units = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}
    found = re.findall(r"sends[^.;:]*?(\d+(?:\.\d+)?) (KiB|MiB|GiB)", paragraph)
    return [float(value) * units[unit] for value, unit in found]


@pytest.mark.parametrize("p", [4, 8, 16, 64])
@pytest.mark.parametrize("tree", ["recursive_doubling", "reduce_broadcast"])
def test_crossover_guide_never_says_a_rank_sends_more_than_the_busiest_simulated_rank(tree, p):
    view = guides.crossover_view(p, tree, math.log10(5), math.log10(25))
    for algorithm, paragraph in ((tree, words(view["text"][1])), ("ring", words(view["text"][2]))):
        sent, _costs = simulated(algorithm, p)
        claims = claimed_sends(paragraph)
        assert claims, paragraph
        assert max(claims) == pytest.approx(max(sent) / MiB), paragraph  # the largest claim is the simulated busiest rank
        assert f"{format_size(max(sent))}" in paragraph


def test_reduce_then_broadcast_busiest_rank_sends_lg_p_n_not_its_beta_term():
    """p = 8, n = 64 MiB: the beta term is 2 lg p n = 384 MiB (6 steps of 64 MiB, one after
    another), but the root sends lg p n = 192 MiB, as guide 1's dotted line says."""
    sent, costs = simulated("reduce_broadcast", 8)
    assert max(sent) == 3 * 64 * MiB and sent[0] == max(sent)
    assert sum(cost.beta_bytes for cost in costs) == 6 * 64 * MiB
    paragraph = words(guides.crossover_view(8, "reduce_broadcast", math.log10(5), math.log10(25))["text"][1])
    assert "every rank sends" not in paragraph
    assert "2 lg p n = 384 MiB" in paragraph and "the most any rank sends is 192 MiB (r0" in paragraph
    line = guides.ring_view(8, 0)["bytes"].layout.shapes[1]  # guide 1's dotted reference line
    assert line.y0 == pytest.approx(192.0) and "192 MiB" in words(guides.ring_view(8, 0)["bytes"].layout.annotations[1].text)


@pytest.mark.parametrize("p", [4, 8, 16])
def test_ring_guide_argues_the_lower_bound_with_its_own_numbers(p):
    """Every byte is sent at least 2(p-1) times (p-1 to meet at the first full sum, p-1 to give
    it out), 2(p-1) n in all over p ranks: the busiest sends at least 2(p-1)/p n, which the
    simulated ring's every rank meets exactly."""
    n = 64 * MiB
    sent, _costs = simulated("ring", p)
    total = 2 * (p - 1) * n
    assert sum(sent) == total and set(sent) == {total // p}
    for position in (0, 2 * (p - 1)):
        text = words(guides.ring_view(p, position)["text"])
        assert "Why 2(p-1)/p n is the least" in text
        assert f"at least 2(p-1) = {2 * (p - 1)} times" in text
        assert f"{2 * (p - 1)} × 64 MiB = {format_size(total)} in all, shared by {p} ranks" in text
        assert f"{format_size(total)} / {p} = {format_size(total / p)}" in text
        assert f"The simulated ring sends {format_size(sum(sent))} in all" in text
        assert f"{format_size(total / 2)} in the reduce-scatter, {format_size(total / 2)} in the all-gather" in text
