"""A scenario resolved once into what its run needs: a :class:`Plan`.

:func:`resolve` loads the scenario's hardware preset once (NCCL's pick was made when the scenario
was built: ``algorithm: nccl`` became ``nccl_*``, its channels and sharing, sim.nccl.pick); the
plan builds the topology on first use and hands the loaded preset to every step below it (the
topology, route work, what NCCL's pick ran and the rates it ran at), so none re-loads it.
:func:`sim.collective.runner.build_topology` builds through a plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from sim.network import topology as topo

if TYPE_CHECKING:
    from sim.collective.pick import PickInfo
    from sim.hardware.presets import Preset
    from sim.scenario import CollectiveScenario

__all__ = ["Plan", "resolve"]


@dataclass(frozen=True)
class Plan:
    """A scenario, its preset (None without ``hardware``) and, built on first use, its topology."""

    scenario: CollectiveScenario
    preset: Preset | None

    @cached_property
    def topology(self) -> topo.Topology:
        """The scenario's topology with its ranks placed (``placement``, docs/network-model.md), built once."""
        built = _unplaced_topology(self.scenario, self.preset)
        return built if self.scenario.placement == "block" else topo.place(built, self.scenario.placement)

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


def resolve(scenario: CollectiveScenario, preset: Preset | None = None) -> Plan:
    """The scenario with its preset loaded once (``preset``: loaded already): pass the plan down
    instead of the preset's name. A scenario without ``hardware`` loads no preset reader (yaml)."""
    if not scenario.hardware:
        return Plan(scenario, None)
    if preset is None:
        from sim.hardware.presets import load_preset

        preset = load_preset(scenario.hardware)
    return Plan(scenario, preset)


def _unplaced_topology(scenario: CollectiveScenario, preset: Preset | None) -> topo.Topology:
    """The scenario's topology, rank r on endpoint r; user graphs must connect exactly ``ranks`` ranks."""
    s = scenario
    kind = s.topology
    if s.hardware and s.algorithm.startswith("nccl_"):  # NCCL's data path: effective rates, NCCL's hop latencies
        from sim.nccl.topo import topology

        return topology(s, preset)
    if s.hardware:
        from sim.hardware.cluster import for_scenario

        return for_scenario(s, preset)
    if kind == "switch":
        return topo.switch(s.ranks, s.latency_s, s.bandwidth_Bps)
    if kind == "ring":
        return topo.ring(s.ranks, s.latency_s, s.bandwidth_Bps)
    if kind == "torus2d":
        rows, cols = topo.torus_shape(s.ranks)
        return topo.torus2d(rows, cols, s.latency_s, s.bandwidth_Bps)
    if kind == "two_level":
        gpus = s.gpus_per_node_resolved
        intra_latency = s.latency_s if s.intra_latency_s is None else s.intra_latency_s
        intra_bandwidth = s.bandwidth_Bps if s.intra_bandwidth_Bps is None else s.intra_bandwidth_Bps
        return topo.two_level(s.ranks // gpus, gpus, intra_latency, intra_bandwidth, s.latency_s, s.bandwidth_Bps)
    graph = topo.load_graph(kind)
    if graph.ranks != s.ranks:
        from sim.errors import CollsimError

        raise CollsimError(f"ranks: the topology file {kind} connects {graph.ranks} ranks, but ranks is {s.ranks}")
    return graph
