"""Every distinct collective of a step, costed once on the preset and reused.

A collective is identified by (op, bytes, group kind); its group's shape on the topology (nodes
it spans, GPUs a node) follows from the layout. A group that fills whole nodes (a TP group of a
node's 8 GPUs, a DP group of whole nodes) runs NCCL's pick on those nodes,
:func:`sim.training.comm.pick_time`, the same call and answer as ``collsim sim collective
--hardware H --nodes N --op OP --size BYTES``. A group that takes part of each node (DP groups
strided by tp, TP groups of 2 or 4) runs with every other group of its kind on the same nodes at
once, sharing their NICs and NVLinks (``groups``, sim/collective/groups.py), on NCCL's ring
channels (``nccl_ring``; ``nccl_p2p`` for all_to_all), message by message, as ``sim fsdp`` runs
hybrid-shard groups. A group over more than :data:`DES_NODES` nodes is simulated on that many and
scaled by NCCL's own model's ratio between the two node counts (``sim.nccl.model.predict``): the
DES of one 80 MB Tree/LL128 all-reduce on 64 nodes takes about 20 s of CPU (143,080 messages
through the fair engine; bench/results/nccl_big_presets.md says why no exact shortcut exists
yet), the ratio a millisecond, and the notes say so. Sends between pipeline stages run NCCL's p2p
path between the two GPUs: over NVLink inside a node, over the NIC rail across nodes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sim.errors import CollsimError
from sim.training.parallel.layout import Layout

__all__ = ["DES_NODES", "CommCosts"]

DES_NODES = 8  # the most nodes one collective is simulated on; beyond, NCCL's model scales it


class CommCosts:
    """Seconds of each (kind, op, bytes) on ``hardware``, cached; zero with ``free``."""

    def __init__(self, hardware: str, layout: Layout, element_bytes: int, free: bool = False) -> None:
        self.hardware, self.layout, self.element_bytes, self.free = hardware, layout, element_bytes, free
        self._cache: dict[tuple[Any, ...], float] = {}
        self.notes: dict[str, str] = {}

    def collective_s(self, kind: str, op: str, nbytes: float) -> float:
        """One ``op`` of ``nbytes`` (per rank; all_gather: the gathered size) in ``kind`` groups."""
        group = self.layout.group(kind, 0)
        if self.free or len(group) < 2 or nbytes <= 0:
            return 0.0
        step = self.element_bytes * len(group)
        size = max(step, -(-int(nbytes) // step) * step)  # whole elements on every rank
        key = (kind, op, size)
        if key not in self._cache:
            self._cache[key] = self._group_s(kind, op, size, group)
        return self._cache[key]

    def send_s(self, src: int, dst: int, nbytes: float) -> float:
        """One send from rank ``src`` to ``dst`` on NCCL's p2p path."""
        if self.free or nbytes <= 0 or src == dst:
            return 0.0
        nodes = 1 if self.layout.node_of(src) == self.layout.node_of(dst) else 2
        key = ("send", nodes, int(nbytes))
        if key not in self._cache:
            self._cache[key] = self._run(self._pick(nodes, "send_recv", int(nbytes)))
        return self._cache[key]

    def _group_s(self, kind: str, op: str, size: int, group: tuple[int, ...]) -> float:
        from sim.training.comm import pick_time

        gpn = self.layout.gpus_per_node
        nodes = sorted({self.layout.node_of(rank) for rank in group})
        if len(nodes) > DES_NODES:
            return self._scaled_s(kind, op, size, group, nodes)
        if len(group) == len(nodes) * gpn and op != "all_to_all":  # whole nodes: NCCL's pick, as sim collective
            return pick_time(self.hardware, len(nodes), op, size).time_s
        scenario = self._pick(len(nodes), op, size)
        if op != "all_to_all":
            scenario = replace(scenario, algorithm="nccl_ring", chunks=self._ring_channels(len(nodes)))
        try:
            return self._run(replace(scenario, groups=self._concurrent(kind, nodes), record="aggregate"), full=True)
        except CollsimError as error:
            self.notes[f"{kind} {op}"] = f"{kind} {op}: one group alone on its nodes ({error})"
            return self._run(scenario)

    def _scaled_s(self, kind: str, op: str, size: int, group: tuple[int, ...], nodes: list[int]) -> float:
        """The group's time on :data:`DES_NODES` nodes of its shape, scaled by NCCL's model's ratio
        between the call on its nodes and the call simulated, with one algorithm and protocol at
        both node counts (:meth:`_matched`)."""
        per_node = len(group) // len(nodes)
        small_size = size * DES_NODES * per_node // len(group) if op == "all_gather" else size
        base, ratio = self._matched(op, size, small_size, len(nodes), per_node == self.layout.gpus_per_node)
        if base is None:
            base = CommCosts(self.hardware, self._strided(per_node), self.element_bytes).collective_s("dp", op, small_size)
        self.notes[f"{kind} scaled"] = (
            f"{kind} groups span {len(nodes)} nodes: simulated on {DES_NODES} and scaled by NCCL's model's ratio ({ratio:.2f})"
        )
        return base * ratio

    def _matched(self, op: str, size: int, small_size: int, nodes: int, whole: bool) -> tuple[float | None, float]:
        """(time on DES_NODES nodes or None, ratio): whole nodes run NCCL's pick for ``nodes`` nodes
        on DES_NODES (16 to 64 x dgx-a100, 80 MB all-reduce: Tree/LL128 on 8 nodes, within 1.5 % of
        the full DES, bench/results/nccl_big_presets.md; NCCL's own pick on 8 nodes, Ring/LL128,
        was 25 % over it); groups taking part of each node (the caller simulates them: None) scale
        by the ratio of NCCL's picks (16 x dgx-a100 against their full DES: -41 % at tp 2, 16 MiB;
        +19 % at tp 4, 80 MiB; Ring/Simple's ratio, as they run, gave +7 % and +70 %); all_to_all
        scales with the node count."""
        from sim.hardware.presets import load_preset
        from sim.nccl.model import predict
        from sim.training.comm import pick_time

        if op == "all_to_all":
            return None, nodes / DES_NODES
        preset = load_preset(self.hardware)
        pick = predict(preset, nodes, op, size)
        algo, proto = (pick.nccl_algorithm, pick.nccl_protocol) if whole else (None, None)
        base = None
        if whole:
            try:
                base = self._run(self._pick(DES_NODES, op, small_size, algo, proto))
            except CollsimError:  # no DES counterpart of the pick (CollNet): NCCL's pick on DES_NODES nodes
                base, algo, proto = pick_time(self.hardware, DES_NODES, op, small_size).time_s, None, None
        return base, predict(preset, nodes, op, size, algo, proto).time_s / predict(preset, DES_NODES, op, small_size, algo, proto).time_s

    def _strided(self, per_node: int) -> Layout:
        """A layout whose dp groups take ``per_node`` GPUs of each of :data:`DES_NODES` nodes (whole
        nodes where ``per_node`` is a node's GPUs: tp 1, the dp group the first nodes)."""
        gpn = self.layout.gpus_per_node
        return Layout(gpn // per_node, 1, DES_NODES * per_node, 1, gpn)

    def _concurrent(self, kind: str, nodes: list[int]) -> tuple[tuple[int, ...], ...]:
        """Every ``kind`` group on ``nodes``, renumbered onto those nodes; idle GPUs one group each."""
        gpn, index = self.layout.gpus_per_node, {node: position for position, node in enumerate(nodes)}

        def local(rank: int) -> int:
            return index[self.layout.node_of(rank)] * gpn + rank % gpn

        groups = [tuple(local(r) for r in g) for g in self.layout.groups(kind) if all(self.layout.node_of(r) in index for r in g)]
        used = {rank for group in groups for rank in group}
        return tuple(groups) + tuple((rank,) for rank in range(len(nodes) * gpn) if rank not in used)

    def _ring_channels(self, nodes: int) -> int:
        from sim.hardware.presets import load_preset

        preset = load_preset(self.hardware)
        if preset.nccl is None:
            return 1
        return preset.nccl.graph("ring", preset.nccl_nodes(nodes)[0]).n_channels

    def _pick(self, nodes: int, op: str, size: int, nccl_algo: str | None = None, nccl_proto: str | None = None) -> Any:
        from sim.collective.pick import scenario_for_pick

        scenario, why = scenario_for_pick(self.hardware, nodes, op, size, nccl_algo, nccl_proto)
        if scenario is None:
            raise CollsimError(f"hardware: {why}", field="hardware")
        return scenario

    @staticmethod
    def _run(scenario: Any, full: bool = False) -> float:
        if full:
            from sim.collective.runner import run_collective

            return run_collective(scenario).time_s
        from sim.collective.collapsed import collective_time

        return collective_time(scenario).time_s
