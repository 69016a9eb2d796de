"""The 80 % interval of a 3D-parallel step's time on a hardware preset (issue 33, item 2).

The same method as ``sim ddp``'s and ``sim fsdp``'s (:mod:`sim.training.step_interval`): the step
is simulated twice more, with every collective (TP's all-reduces or SP's all-gathers and
reduce-scatters, EP's all_to_all, the DP buckets, ZeRO's gathers) and every pipeline send at the
low, then the high end of its own 80 % interval, and the two step times are the interval's ends.
Each call's factor is :func:`sim.hardware.uncertainty.spread` for its op, its bytes and the nodes
its group spans (a send: ``send_recv`` on one node or two, the op :class:`CommCosts` runs it as);
the exact seconds come from (and are cached by) the :class:`CommCosts` of the step itself, so
the two runs cost no collective again. The schedule is simulated again at each end, so comm
hidden behind compute (DP buckets under the backward, a send under another micro-batch) widens
the step less than comm on the critical path. Compute is taken as given.
"""

from __future__ import annotations

from typing import Any

from sim.hardware.uncertainty import spread
from sim.training.parallel.costs import CommCosts
from sim.training.parallel.result import TrainResult
from sim.training.parallel.scenario import TrainScenario
from sim.training.step_interval import ENDS, interval_fields, no_interval

__all__ = ["ScaledCosts", "simulate_with_interval", "train_interval"]

SCALED = "every collective and pipeline send"
FREE_COMM = "--free-comm: every collective and send costs nothing; no interval"


class ScaledCosts:
    """:class:`CommCosts` with every collective and send at one ``end`` (-1 low, +1 high) of its
    own 80 % interval: the wrapped costs' exact seconds x factor ** end."""

    def __init__(self, base: CommCosts, end: int) -> None:
        self.base, self.end = base, end
        self.layout, self.element_bytes, self.notes = base.layout, base.element_bytes, base.notes
        self._factors: dict[tuple[int, str, int], float] = {}

    def collective_s(self, kind: str, op: str, nbytes: float) -> float:
        seconds = self.base.collective_s(kind, op, nbytes)
        nodes = len({self.layout.node_of(rank) for rank in self.layout.group(kind, 0)})
        return seconds * self._factor(nodes, op, nbytes) ** self.end if seconds else 0.0

    def send_s(self, src: int, dst: int, nbytes: float) -> float:
        seconds = self.base.send_s(src, dst, nbytes)
        nodes = len({self.layout.node_of(src), self.layout.node_of(dst)})
        return seconds * self._factor(nodes, "send_recv", nbytes) ** self.end if seconds else 0.0

    def _factor(self, nodes: int, op: str, nbytes: float) -> float:
        """``op``'s 80 % factor at ``nbytes`` on ``nodes`` nodes; spread reads the node count from a
        rank count (ranks // GPUs a node), so the group's nodes are given as their GPUs."""
        key = (nodes, op, int(nbytes))
        if key not in self._factors:
            found = spread(self.base.hardware, nodes * self.layout.gpus_per_node, int(nbytes), op)
            self._factors[key] = 1.0 if found is None else found[0]
        return self._factors[key]


def train_interval(scenario: TrainScenario, step_time_s: float, costs: CommCosts | None = None) -> dict[str, Any]:
    """``step_time_interval_s`` (with ``step_interval_level`` and ``step_interval_basis``) of a
    step of ``step_time_s``: the step at each end (:class:`ScaledCosts`); ``costs``: the step's
    own (:func:`~sim.training.parallel.step.comm_costs`), to cost no collective twice. None
    with ``--free-comm`` (nothing to spread)."""
    from sim.training.parallel.step import comm_costs, simulate

    if scenario.free_comm:
        return {**no_interval(), "step_interval_basis": FREE_COMM}
    if not scenario.hardware:
        return no_interval()
    costs = costs or comm_costs(scenario)
    ends = [simulate(scenario, costs=ScaledCosts(costs, end)).step_time_s for end in ENDS]  # type: ignore[arg-type]
    return interval_fields(step_time_s, ends, SCALED)


def simulate_with_interval(scenario: TrainScenario, events: bool = False) -> tuple[TrainResult, dict[str, Any]]:
    """(the step, :func:`train_interval`'s keys): three runs of the schedule, each collective costed once."""
    from sim.training.parallel.step import comm_costs, simulate

    costs = comm_costs(scenario)
    result = simulate(scenario, events=events, costs=costs)
    return result, train_interval(scenario, result.step_time_s, costs)
