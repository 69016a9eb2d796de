"""Many flows ending at one instant: each asks whether its component holds a resource marked for
re-sharing. The searches of one instant share what they found (sim.network.flows.Reach), so a big
component is searched about once an instant, not once a flow, and the answers are the same."""

from __future__ import annotations

import pytest

import sim.network.fair as fair
import sim.network.flows as flows
from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.network.flows import Reach


def _run(monkeypatch, remember: bool):
    counts = {"searches": 0, "asked": 0}
    search, touched = flows.reaches, fair.FairNetwork._touched

    def counting_search(flow, active, marked):
        counts["searches"] += 1
        return search(flow, active, marked)

    def asking(self, flow, dirty, memo):
        counts["asked"] += 1
        return touched(self, flow, dirty, memo if remember else Reach())

    monkeypatch.setattr(flows, "reaches", counting_search)
    monkeypatch.setattr(fair.FairNetwork, "_touched", asking)
    scenario, why = scenario_for_pick("dgx-h100", 4, "all_to_all", 64 * 2**20)
    assert scenario is not None, why
    result = run_collective(scenario)
    monkeypatch.undo()
    return result, counts


@pytest.mark.slow
def test_one_instants_ends_search_each_component_about_once(monkeypatch):
    """4 x dgx-h100 all_to_all (PXN staggers the starts, so flows end a few at an instant, all
    in one component): with the instant's memo a third or more of the searches go, and every
    time and message is the same as with a fresh search for each flow. (On 10 nodes, 5,039
    asks: 135 searches instead of 5,039, bench/results/fair_end_speed.md.)"""
    fresh, fresh_counts = _run(monkeypatch, remember=False)
    kept, kept_counts = _run(monkeypatch, remember=True)
    assert fresh_counts["asked"] == kept_counts["asked"] > 100
    assert fresh_counts["searches"] == fresh_counts["asked"]
    assert kept_counts["searches"] * 3 <= fresh_counts["searches"] * 2
    assert kept.time_s == fresh.time_s
    assert kept.rank_end_s == fresh.rank_end_s
    assert kept.message_count == fresh.message_count
