"""Guide 3's numbers (step times, the one-after-another time, the root's bytes, the chain it
compares with) come from simulated runs of the case it shows, not typed text: change the
case and every number follows (issue 36: read the Guides page as a student would)."""

from __future__ import annotations

import pytest

from sim import teaching
from sim.collective import runner
from sim.scenario import CollectiveScenario
from sim.units import format_time
from webapp.pages.guides import page as guides

from .guides_text import words

SMALL = {"op": "broadcast", "algorithm": "binomial", "ranks": 4, "size": "2MB", "bandwidth": "2MB/s"}


def simulated(algorithm: str, chunks: int = 1):
    result = runner.run(CollectiveScenario.from_dict({**SMALL, "algorithm": algorithm, "chunks": chunks, "record": "full"}))
    return result, teaching.step_bytes(result)


def test_broadcast_guide_numbers_follow_the_case_it_simulates():
    """4 ranks, 2 MB at 2 MB/s: rounds of 1 s, 2 s in all; linear 3 s; the root sends 4 MB;
    an 8-chunk chain (4 - 2 + 8) x 0.25 MB / 2 MB/s = 1.25 s with 10 latency terms."""
    tree, tree_sent = simulated("binomial")
    linear, _ = simulated("linear")
    chain, chain_sent = simulated("pipelined_chain", guides.CHAIN_CHUNKS)
    assert (tree.time_s, linear.time_s, chain.time_s) == pytest.approx((2.0, 3.0, 1.25))
    view = guides.broadcast_view(1, tuple(SMALL.items()))
    now, form, price = (words(paragraph) for paragraph in view["text"])
    assert "t = 1 s: 2 of 4 ranks hold the 2 MB" in now and "1 message of 2 MB at 2 MB/s" in now and "the step takes 1 s" in now
    assert f"simulated: 2 rounds of 1 s = {format_time(tree.time_s)}" in form
    assert f"(linear, simulated) takes 3 rounds: {format_time(linear.time_s)}" in form
    assert f"the root r0 sends 2 MB in each of 2 rounds, {tree_sent[-1].sent_by_rank[0] / 1e6:g} MB in all" in price
    assert f"no rank send more than {chain_sent[-1].busiest_rank_bytes / 1e6:g} MB and takes {format_time(chain.time_s)}" in price
    assert "pays 10 latency terms where the tree pays 2" in price
    assert "35 s" not in form and "15 MB" not in price


def test_broadcast_guide_counts_one_message_in_the_singular():
    assert "1 message of 5 MB" in words(guides.broadcast_view(1)["text"][0])
    assert "4 messages of 5 MB" in words(guides.broadcast_view(3)["text"][0])


def test_broadcast_guide_clock_is_the_simulated_end_of_the_step():
    for step in range(4):
        view = guides.broadcast_view(step)
        assert f"(t = {format_time(5.0 * step)})" in view["tree"].layout.title.text  # 5 MB at 1 MB/s a round
