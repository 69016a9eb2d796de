"""A scenario resolved once into what its run needs: a :class:`Plan`.

:func:`resolve` loads the scenario's hardware preset once (NCCL's pick was made when the scenario
was built: ``algorithm: nccl`` became ``nccl_*``, its channels and sharing, sim.nccl.pick); the
plan builds the topology on first use and hands the loaded preset to every step below it (the
topology, route work, what NCCL's pick ran and the rates it ran at), so none re-loads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim.collective.pick import PickInfo
    from sim.hardware.presets import Preset
    from sim.network.topology import Topology
    from sim.scenario import CollectiveScenario

__all__ = ["Plan", "resolve"]


@dataclass(frozen=True)
class Plan:
    """A scenario, its preset (None without ``hardware``) and, built on first use, its topology."""

    scenario: CollectiveScenario
    preset: Preset | None

    @cached_property
    def topology(self) -> Topology:
        """The scenario's topology, ranks placed (sim.collective.runner.build_topology), built once."""
        from sim.collective.runner import build_topology

        return build_topology(self.scenario, self.preset)

    def route_work(self) -> tuple[int, int, int] | None:
        """How the routes of a preset's topology are found (sim.nccl.topo / sim.hardware.cluster
        route_work); None without a preset."""
        if self.preset is None:
            return None
        if self.scenario.algorithm.startswith("nccl_"):
            from sim.nccl.topo import route_work

            return route_work(self.scenario, self.preset)
        from sim.hardware.cluster import route_work as cluster_work

        return cluster_work(self.scenario, self.preset)

    def describe(self, picked: bool = True) -> PickInfo | None:
        """What NCCL's pick ran and NCCL's model's time of it (sim.collective.pick.describe)."""
        from sim.collective.pick import describe

        return describe(self.scenario, picked, self.preset)


def resolve(scenario: CollectiveScenario) -> Plan:
    """The scenario with its preset loaded, once: pass the plan down instead of the name."""
    if not scenario.hardware:
        return Plan(scenario, None)
    from sim.hardware.presets import load_preset

    return Plan(scenario, load_preset(scenario.hardware))
