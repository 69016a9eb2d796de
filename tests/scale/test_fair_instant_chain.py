"""One instant's ends that its re-sharing left at that instant finish together.

A flow whose end comes while its component is about to be re-shared, with bytes left from
rounding, waits for the re-sharing (FairNetwork._end). The re-sharing often leaves its end at
the same instant. The engine used to treat those ends like any other: the first one finished and
marked its resources, so each next one waited again, for a re-solve of the whole component, one
flow a re-solve (8 x dgx-h100 all_to_all of 3 MiB: 85 re-sharings at one instant). Now they end
together and the component is re-solved once after them. Chained below is the engine before:
the same times, but a deferred end that is left at the instant may then be moved one ulp later by
the zero-length re-solves after it (bench/results/fair_instant_chain.md).
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

import sim.network as network
from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.network.fair import FairNetwork


class CountingFairNetwork(FairNetwork):
    """The engine as it is, counting its re-sharings per simulated instant."""

    settles: Counter = Counter()

    def settle(self) -> None:
        CountingFairNetwork.settles[self.env.now] += 1
        super().settle()


class ChainedFairNetwork(CountingFairNetwork):
    """The engine before: an end that this instant's re-sharing left at now waits again for the
    next re-sharing when another end of the instant has marked resources since."""

    def _end(self, flows, end, settled=False) -> None:
        super()._end(flows, end, False)


def _run(monkeypatch: pytest.MonkeyPatch, sharing: type[FairNetwork]) -> tuple:
    scenario, why = scenario_for_pick("dgx-h100", 4, "all_to_all", 6 * 2**20)  # PXN: many ends at one instant
    assert scenario is not None, why
    CountingFairNetwork.settles = Counter()
    with monkeypatch.context() as patch:
        patch.setitem(network.SHARING, "fair", sharing)
        result = run_collective(scenario.replace(record="full"))
    return result, CountingFairNetwork.settles


@pytest.fixture(scope="module")
def both() -> dict:
    with pytest.MonkeyPatch.context() as patch:
        return {name: _run(patch, sharing) for name, sharing in (("today", CountingFairNetwork), ("chained", ChainedFairNetwork))}


@pytest.mark.slow
def test_an_instants_settled_ends_finish_together_not_one_a_re_sharing(both):
    _, today = both["today"]
    _, chained = both["chained"]
    assert max(chained.values()) >= 8  # the chain: one more re-sharing at one instant for each deferred end
    assert max(today.values()) * 2 <= max(chained.values())
    assert sum(today.values()) < sum(chained.values())


def _by_message(rows) -> list:
    return sorted(rows, key=lambda row: (row[0], row[1], row[5], row[6], row[2]))  # src, dst, step, chunk, start


@pytest.mark.slow
def test_finishing_them_together_moves_no_time_beyond_one_ulp_earlier(both):
    """Every start and the run's time are the same; an end differs only where the chained engine's
    zero-length re-solves moved a settled end one ulp later (never by more, never earlier)."""
    today, _ = both["today"]
    chained, _ = both["chained"]
    assert today.time_s == chained.time_s
    assert today.rank_end_s == chained.rank_end_s
    rows, before = _by_message(today.messages), _by_message(chained.messages)
    assert len(rows) == len(before) > 0
    for row, old in zip(rows, before):
        assert row[:3] == old[:3] and row[4:] == old[4:], (row, old)
        assert row[3] == old[3] or 0 < old[3] - row[3] <= math.ulp(old[3]), (row, old)
