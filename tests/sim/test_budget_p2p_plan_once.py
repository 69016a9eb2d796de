"""The budget of NCCL's all_to_all looks its p2p plan up once an estimate (sim.collective.budget._p2p_layout)
and passes it to what reads it: its messages, its re-sharing beyond the probes' nodes and a visit's CPU
each looked it up again (3 an estimate, 6 a check_run, besides the run's own topology build)."""

from __future__ import annotations

import pytest

from sim.collective import budget
from sim.collective.pick import scenario_for_pick
from sim.collective.plan import resolve
from sim.nccl import topo


@pytest.fixture
def lookups(monkeypatch) -> list[int]:
    """The ranks of every p2p path lookup (sim.nccl.topo.p2p_path_params, which builds the p2p plan)."""
    seen: list[int] = []
    looked_up = topo.p2p_path_params

    def counting(scenario, preset):
        seen.append(scenario.ranks)
        return looked_up(scenario, preset)

    monkeypatch.setattr(topo, "p2p_path_params", counting)
    return seen


def _planned(nodes: int):
    """An all_to_all of 1 MiB on ``nodes`` x dgx-h100 and its plan with the run's topology parts built
    (the run's own lookup: not the budget's)."""
    scenario, why = scenario_for_pick("dgx-h100", nodes, "all_to_all", 2**20)
    assert scenario is not None and scenario.algorithm == "nccl_p2p", why
    scenario = scenario.replace(record="aggregate")
    plan = resolve(scenario)
    plan.route_work()
    return scenario, plan


@pytest.mark.parametrize("probe", [False, True])
def test_an_all_to_all_estimate_looks_its_p2p_plan_up_once(lookups, probe):
    scenario, plan = _planned(8)  # beyond the probes' 2 and 4 nodes: the re-sharing reads the plan too
    lookups.clear()
    told = budget.estimate(scenario, probe=probe, plan=plan)
    assert lookups.count(scenario.ranks) == 1, lookups
    assert told.messages == budget.messages_of(scenario, plan.preset).messages > 0


def test_a_check_run_of_an_all_to_all_looks_its_p2p_plan_up_once(lookups):
    scenario, plan = _planned(8)
    lookups.clear()
    budget.check_run(scenario, "sim collective", plan=plan)
    assert lookups.count(scenario.ranks) == 1, lookups
