"""The run-size budget of NCCL's all_to_all across nodes (sim.collective.budget._all_to_all_visits).

Every peer's message is in flight at once and each instant at which some end re-shares all the
rest, so the re-sharing a message grows about as the square of the nodes (counted on dgx-h100:
4.1, 18, 50 and 368 flows a message at 2, 4, 8 and 16 nodes, 16 MiB). The probes of 2 and 4 nodes
at 16 MiB, extrapolated by the growth they showed (and an 8-node probe of seconds beyond), read
3.3-3.4x over at 8 nodes and 64-256 MiB and 2.6x under at 16 nodes (bench/results/budget_all_to_all.md).
"""

from __future__ import annotations

import pytest

from sim.collective import budget
from sim.collective.pick import scenario_for_pick


def _all_to_all(preset: str, nodes: int, mib: int):
    scenario, why = scenario_for_pick(preset, nodes, "all_to_all", mib * 2**20)
    assert scenario is not None, why
    assert scenario.algorithm == "nccl_p2p"
    return scenario.replace(record="aggregate")


@pytest.mark.slow
@pytest.mark.parametrize(("preset", "mib"), [("dgx-h100", 1), ("dgx-h100", 64), ("hgx-h100-nvls", 256)])
def test_nccl_all_to_all_on_8_nodes_is_estimated_within_3x_of_its_counted_visits(preset, mib):
    scenario = _all_to_all(preset, 8, mib)
    budget.clear_probes()
    told = budget.estimate(scenario)
    messages, visits = budget.count_visits(scenario)
    assert told.messages == messages
    assert 1 / 3 <= told.visits / visits <= 3.0, (told, messages, visits)


def test_the_probes_of_a_32_node_all_to_all_stay_cheap(monkeypatch):
    """They run before every run the explorer starts: the probes of 32 x dgx-h100 at 64 MiB
    counted 245,000 visits before (2, 4 and 8 nodes at 16 MiB: seconds), two nodes now."""
    probed: list[tuple[int, int, int]] = []
    count = budget.count_visits

    def counting(scenario, plan=None):
        messages, visits = count(scenario, plan)
        probed.append((scenario.ranks, messages, visits))
        return messages, visits

    monkeypatch.setattr(budget, "count_visits", counting)
    budget.clear_probes()
    told = budget.estimate(_all_to_all("dgx-h100", 32, 64))
    assert probed and max(ranks for ranks, _, _ in probed) <= 32
    assert sum(visits for _, _, visits in probed) <= 20_000, probed
    assert told.visits > 0


@pytest.mark.slow
def test_a_32_node_all_to_all_is_estimated_with_the_square_of_its_nodes():
    """The estimate of 32 x dgx-h100 at 64 MiB read 2.5 min (24.8 M visits), under its run: per
    message at least (32 / 2)^2 times what the 2-node probe counts (the growth 2 to 16 nodes counted
    at 16 and 64 MiB: x91 and x77, 8^2.1-2.2)."""
    scenario = _all_to_all("dgx-h100", 32, 64)
    budget.clear_probes()
    told = budget.estimate(scenario)
    two = _all_to_all("dgx-h100", 2, 64)
    messages, visits = budget.count_visits(two)
    per_message = (visits - messages) / messages
    assert (told.visits - told.messages) / told.messages >= per_message * 16**2 * 0.99, (told, per_message)


@pytest.mark.slow
def test_a_32_node_all_to_all_whose_channels_run_two_batches_is_refused_naming_16_nodes():
    """At 32 x dgx-h100 a channel runs two batches; each channel of each rank starting its second
    settles the whole component again. The 1 MiB run read ~3 s before; stopped after 151 s (51 s
    of CPU) it had settled 326 times at one instant, 2.7 M visits, short of its end
    (bench/results/budget_all_to_all.md). 16 nodes (one batch a channel) fit."""
    from sim.errors import CollsimError

    budget.clear_probes()
    with pytest.raises(CollsimError, match=r"on 32 x dgx-h100 \(256 ranks\) needs about 65,280 messages.*--nodes 16 would fit"):
        budget.check_run(_all_to_all("dgx-h100", 32, 1), "sim collective")
    assert budget.check_run(_all_to_all("dgx-h100", 16, 1), "sim collective").seconds < budget.NOTE_FROM_SECONDS
