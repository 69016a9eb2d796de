"""A scenario resolved once into what its run needs: a :class:`Plan`.

:func:`resolve` loads the scenario's hardware preset once (NCCL's pick was made when the scenario
was built: ``algorithm: nccl`` became ``nccl_*``, its channels and sharing, sim.nccl.pick); the
plan builds the topology on first use and hands the loaded preset to every step below it (the
topology, route work, what NCCL's pick ran and the rates it ran at), so none re-loads it.
:func:`sim.collective.runner.build_topology` builds through a plan.

One run resolves once and passes the plan down: the budget (sim.collective.budget: its route work
and its probes), the run and its buffer frames (sim.collective.runner.run, sim.collective.frames),
the CLI's notes and NCCL's pick read its preset, and the budget's route work reads the very build
the run then finishes (:meth:`Plan.route_work`, :attr:`Plan.topology`). A variant of the scenario
that differs only in what no topology is built from (``record``; :data:`UNBUILT_FIELDS`) shares
the plan's topology (:meth:`Plan.with_scenario`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import TYPE_CHECKING, Any

from sim.network import topology as topo

if TYPE_CHECKING:
    from sim.collective.pick import PickInfo
    from sim.hardware.presets import Preset
    from sim.scenario import CollectiveScenario

__all__ = ["UNBUILT_FIELDS", "Plan", "resolve"]


@dataclass(frozen=True)
class Plan:
    """A scenario, its preset (None without ``hardware``) and, built on first use, its topology.
    The route work the budget reads comes from the same build as the topology the run uses."""

    scenario: CollectiveScenario
    preset: Preset | None
    _kept: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _lock: Any = field(default_factory=threading.RLock, init=False, repr=False, compare=False)

    @property
    def topology(self) -> topo.Topology:
        """The scenario's topology with its ranks placed (``placement``, docs/network-model.md), built once."""
        return self._once("topology", self._placed)

    def route_work(self) -> tuple[int, int, int] | None:
        """How the routes of a preset's topology are found (sim.nccl.topo / sim.hardware.cluster
        route_work), read off the build the run uses; None without a preset."""
        if self.preset is None:
            return None
        if self._nccl:
            from sim.nccl.topo import route_work

            return route_work(self.scenario, self.preset, parts=self._nccl_parts())
        from sim.hardware.cluster import route_work as cluster_work

        return cluster_work(self.scenario, self.preset, topology=self.topology)

    def describe(self, picked: bool = True) -> PickInfo | None:
        """What NCCL's pick ran and NCCL's model's time of it (sim.collective.pick.describe)."""
        from sim.collective.pick import describe

        return describe(self.scenario, picked, self.preset)

    def with_scenario(self, scenario: CollectiveScenario) -> Plan:
        """The plan of ``scenario``, a variant of this one (on other hardware: resolved afresh): the preset is
        shared, and the topology too (built once, by whichever plan asks first) where only fields
        no topology reads differ (:data:`UNBUILT_FIELDS`)."""
        if scenario is self.scenario:
            return self
        if scenario.hardware != self.scenario.hardware:
            return resolve(scenario)
        other = Plan(scenario, self.preset)
        if _same_but(scenario, self.scenario, UNBUILT_FIELDS):
            object.__setattr__(other, "_kept", self._kept)  # frozen: one store of built things, one lock
            object.__setattr__(other, "_lock", self._lock)
        return other

    @property
    def _nccl(self) -> bool:
        return bool(self.scenario.hardware) and self.scenario.algorithm.startswith("nccl_")

    def _once(self, name: str, build: Callable[[], Any]) -> Any:
        with self._lock:  # the webapp's callbacks run in threads; NCCL's parts are finished in place, once
            if name not in self._kept:
                self._kept[name] = build()
            return self._kept[name]

    def _nccl_parts(self) -> tuple:
        from sim.nccl.topo import unfinished

        return self._once("nccl_parts", lambda: unfinished(self.scenario, self.preset))

    def _placed(self) -> topo.Topology:
        built = self._unplaced()
        return built if self.scenario.placement == "block" else topo.place(built, self.scenario.placement)

    def _unplaced(self) -> topo.Topology:
        """The scenario's topology, rank r on endpoint r; user graphs must connect exactly ``ranks`` ranks."""
        s = self.scenario
        if self._nccl:  # NCCL's data path: effective rates, NCCL's hop latencies
            from sim.nccl.topo import topology

            return topology(s, self.preset, parts=self._nccl_parts())
        if s.hardware:
            from sim.hardware.cluster import for_scenario

            return for_scenario(s, self.preset)
        return _plain_topology(s)


# Fields no topology is built from: a run differing from its plan's scenario only in these runs on its topology
UNBUILT_FIELDS = frozenset({"record", "max_events", "element_bytes"})


def _same_but(one: CollectiveScenario, other: CollectiveScenario, fields: frozenset[str]) -> bool:
    return all(getattr(one, f.name) == getattr(other, f.name) for f in dataclass_fields(one) if f.name not in fields)


def resolve(scenario: CollectiveScenario, preset: Preset | None = None) -> Plan:
    """The scenario with its preset loaded once (``preset``: loaded already): pass the plan down
    instead of the preset's name. A scenario without ``hardware`` loads no preset reader (yaml)."""
    if not scenario.hardware:
        return Plan(scenario, None)
    if preset is None:
        from sim.hardware.presets import load_preset

        preset = load_preset(scenario.hardware)
    return Plan(scenario, preset)


def _plain_topology(s: CollectiveScenario) -> topo.Topology:
    """A topology of the scenario's own link fields (no preset)."""
    kind = s.topology
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
    from sim.network.graph_files import load_graph

    graph = load_graph(kind)
    if graph.ranks != s.ranks:
        from sim.errors import CollsimError

        raise CollsimError(f"ranks: the topology file {kind} connects {graph.ranks} ranks, but ranks is {s.ranks}")
    return graph
