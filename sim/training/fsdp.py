"""FSDP / ZeRO step models beside DDP: per-unit all-gathers, reduce-scatters and memory per rank.

One training step on one rank (every rank runs the same timeline). The model is split into FSDP
units (a transformer block each by default; the parameters outside every block form the root
unit). Strategies (docs/fsdp.md):

- ``full_shard`` (ZeRO-3): all-gather a unit's parameters before its forward, free them after
  forward (reshard; not the root), all-gather again before its backward, reduce-scatter the
  gradients after its backward, free again. Backward prefetch ``pre`` (default, BACKWARD_PRE)
  issues the next unit's all-gather before the current unit's backward compute.
- ``shard_grad_op`` (ZeRO-2): parameters stay gathered from forward to the end of backward (no
  second all-gather); gradients are reduce-scattered.
- ``no_shard``: every unit's gradients are all-reduced after its backward (DDP-like, per unit).
- ``hybrid_shard``: ``full_shard`` inside a shard group of ``shard_size`` ranks (default: a
  node), then an all-reduce of the gradient shard across the ``ranks / shard_size`` replicas.
- ``ddp``: :mod:`sim.training.ddp` (bucketed all-reduce) with the full optimizer.
- ``zero1``: DDP + ZeroRedundancyOptimizer: the optimizer steps 1/N of the state, then the
  updated parameters are all-gathered (torch broadcasts each rank's shard; same bytes).

Streams: compute runs its ops in program order; collectives run one at a time, in the order the
CPU issues them, on the process group's comm stream (NCCL serialises a group's collectives).
The CPU runs ahead of the device (as with CUDA), so an op's only waits are its stream, the data
it needs, and the all-gather rate limiter (``limit_all_gathers``: an all-gather waits until the
unit gathered two all-gathers earlier has been freed, FSDP1's ``_free_event_queue`` of 2).
Compute and memory inputs shared with DDP (sim.training.compute): forward and optimizer time,
precision (bytes per element of parameters, gradients and collectives; fp32 master weights),
FLOP-derived compute at a stated MFU, activation memory and checkpointing (its recompute lengthens
backward). Not modelled: CPU-bound issue, the time of mixed precision casts, compute slowdown under comm, the second process group of hybrid_shard (its all-reduces share
the comm stream here).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from typing import Any

from sim.errors import CollsimError
from sim.training import comm, ddp
from sim.training.fsdp_result import FSDPResult, memory_per_rank
from sim.training.fsdp_scenario import BACKWARD_PREFETCH, SHARDINGS, STRATEGIES, FSDPScenario, Op, Unit  # noqa: F401  (public here too)
from sim.training.params import Param
from sim.training.step_interval import ENDS, ScaledComm, at_end, interval_fields, no_interval

_BLOCK = re.compile(r"^(.*?(?:^|\.)(?:layers|h|blocks|block|layer\d*)\.\d+)\.")


# --- units --------------------------------------------------------------------------------


def unit_groups(params: Sequence[Param], units: str) -> list[tuple[str, list[int]]]:
    """(name, parameter indices) in forward order: the root (parameters in no unit) first."""
    if units == "single":
        return [("model", list(range(len(params))))]
    if units == "blocks":
        prefixes: list[str] = []
        for param in params:
            match = _BLOCK.match(param.name)
            if match and match.group(1) not in prefixes:
                prefixes.append(match.group(1))
    else:
        prefixes = [prefix.strip() for prefix in units.split(",") if prefix.strip()]
        if not prefixes:
            raise CollsimError("units: give blocks, single or comma-separated parameter name prefixes")
    groups: dict[str, list[int]] = {prefix: [] for prefix in prefixes}
    root: list[int] = []
    for index, param in enumerate(params):
        owner = max((p for p in prefixes if param.name == p or param.name.startswith(p + ".")), key=len, default=None)
        (groups[owner] if owner is not None else root).append(index)
    empty = [prefix for prefix, members in groups.items() if not members]
    if empty:
        raise CollsimError(f"units: prefix(es) {empty[:3]} match no parameter")
    ordered = sorted(groups.items(), key=lambda item: item[1][0])
    return ([("root", root)] if root else []) + ordered


def build_units(scenario: FSDPScenario, prepared: ddp.Prepared) -> list[Unit]:
    """Units with per-unit compute: backward from the DDP profile's segments (each segment's
    work goes to the unit of its parameters), forward spread over units by bytes."""
    params = prepared.params
    groups = unit_groups(params, scenario.units)
    owner = {index: k for k, (_, members) in enumerate(groups) for index in members}
    backward = [0.0] * len(groups)
    for indices, work_s in prepared.backward.segments:
        share = sum(params[i].nbytes for i in indices)
        for i in indices:
            backward[owner[i]] += work_s * params[i].nbytes / share
    backward[0] += prepared.backward.tail_s  # compute after the last gradient (measured): the root's
    total = prepared.grad_bytes
    units = []
    for k, (name, members) in enumerate(groups):
        nbytes = sum(params[i].nbytes for i in members)
        numel = sum(params[i].numel for i in members)
        root = name == "root" or len(groups) == 1
        units.append(Unit(k, name, tuple(members), nbytes, numel, prepared.forward_s * nbytes / total, backward[k], root))
    return units


# --- comm ---------------------------------------------------------------------------------


class Comm:
    """Seconds of one collective. ow: ``o + bytes/w`` for an all-reduce of ``bytes``, ``o +
    bytes/(2w)`` for an all-gather or reduce-scatter whose full (unsharded) buffer has ``bytes``
    (a ring moves half an all-reduce's data).

    network: every strategy's collectives run on the one network of the job: the scenario's
    topology, or with ``hardware`` the preset's two_level with its NIC rails (as
    ``collsim sim collective --hardware`` and DDP's buckets). Collectives over all ranks take the
    collapsed simulation (closed form, ring replay or cached DES). hybrid_shard's collectives run
    as NCCL runs sub-communicators: every shard group (``ranks / S`` groups of ``S`` consecutive
    ranks, a node's GPUs by default) does its all-gather or reduce-scatter at the same time, and
    every replica group (ranks ``i, i+S, i+2S, ...``) its all-reduce, on the same physical links
    (``groups``, sim/collective/groups.py), simulated message by message; the time is the slowest group's.
    So a shard group that fits in a node runs on the intra-node links, and replica groups cross
    nodes on their GPUs' NICs: a rail each on a preset with a NIC per GPU, one NIC shared by the
    node's replica groups on the plain two_level. On a switch groups share no port, so a switch
    of the group's size gives the same time in one step. The algorithm is the scenario's for
    all-reduces (ring for the other ops unless it is nccl_ring); where it cannot run on a group
    (hierarchical on replica groups whose ranks sit unevenly on nodes: shard groups of 3 on nodes
    of 8) that group's collective falls back to ring and ``notes`` says so. NCCL's rings and trees
    lay their channels over the group's own nodes (``sim.collective.groups.GroupTopology.gpus_per_node``)."""

    def __init__(self, scenario: FSDPScenario, element_bytes: int, end: int = 0) -> None:
        self.scenario, self.element_bytes = scenario, element_bytes
        self.end = end  # -1 / +1: every collective at the low / high end of its 80 % interval (sim.training.step_interval)
        self._cache: dict[tuple[str, str, int], float] = {}
        self._notes: dict[tuple[str, str], str] = {}

    @property
    def notes(self) -> tuple[str, ...]:
        """One line per (op, group) whose algorithm fell back to ring."""
        return tuple(self._notes.values())

    def cost_s(self, op: str, nbytes: int, group: str = "world") -> float:
        return at_end(self.scenario, nbytes, self._exact_s(op, nbytes, group), self.end)

    def _exact_s(self, op: str, nbytes: int, group: str) -> float:
        s = self.scenario
        size = s.group_size if group == "shard" else (s.ranks // s.group_size if group == "replicate" else s.ranks)
        if size <= 1 or nbytes == 0:
            return 0.0
        if s.comm == "ow":
            o_s, w_Bps = s.ow_params(self.element_bytes)  # as given, or fitted on the hardware preset
            return o_s + nbytes / w_Bps / (1.0 if op == "all_reduce" else 2.0)
        key = (op, group, nbytes)
        if key not in self._cache:
            self._cache[key] = self._network_s(op, nbytes, group, size)
        return self._cache[key]

    def _network_s(self, op: str, nbytes: int, group: str, size: int) -> float:
        s = self.scenario
        if s.algorithm == comm.NCCL and group == "world":  # NCCL's pick on its channels, as sim collective --hardware
            step = self.element_bytes * s.ranks
            nbytes = max(step, -(-nbytes // step) * step)
            return comm.pick_time(s.hardware, s.nodes, op, nbytes, s.pick_fields(self.element_bytes), "collapsed").time_s
        algorithm = s.algorithm if op == "all_reduce" or s.algorithm in ("ring", "nccl_ring") else "ring"
        if algorithm == comm.NCCL:  # a sub-communicator: NCCL's rings on the preset's ring channels
            algorithm = "nccl_ring"
        try:
            return _time_s(self._collective(op, nbytes, group, size, algorithm))
        except CollsimError as error:
            if group == "world" or algorithm == "ring":
                raise
            where = f"{'replica' if group == 'replicate' else group} groups of {size} ranks"
            self._notes.setdefault((op, group), f"{op} in {where}: ring instead of {algorithm}, which cannot run there ({error})")
            return _time_s(self._collective(op, nbytes, group, size, "ring"))

    def _collective(self, op: str, nbytes: int, group: str, size: int, algorithm: str) -> Any:
        from sim.scenario import CollectiveScenario

        s = self.scenario
        step = self.element_bytes * size
        nbytes = max(step, -(-nbytes // step) * step)  # whole elements on every rank
        fields = {"topology": s.topology, "gpus_per_node": s.gpus_per_node, "bandwidth_Bps": s.bandwidth_Bps, "latency_s": s.latency_s,
                  "intra_bandwidth_Bps": s.intra_bandwidth_Bps, "intra_latency_s": s.intra_latency_s, "hardware": s.hardware,
                  "ranks": s.ranks, "groups": ()}  # fmt: skip
        if group != "world" and s.topology == "switch" and s.hardware is None:
            fields["ranks"] = size  # groups share no port: each takes a switch of its size
        elif group != "world":
            fields["groups"] = self._groups(group)
        chunks = s.chunks
        if algorithm == "nccl_ring" and s.algorithm == comm.NCCL:
            from sim.hardware.presets import load_preset

            preset = load_preset(s.hardware)
            chunks = preset.nccl.graph("ring", preset.nccl_nodes(s.nodes)[0]).n_channels
        return CollectiveScenario(
            op=op, algorithm=algorithm, size_bytes=nbytes, reduce_bandwidth_Bps=s.reduce_bandwidth_Bps,
            overhead_s=s.call_overhead_s, chunks=chunks, element_bytes=self.element_bytes, record="aggregate", **fields,
        )  # fmt: skip

    def _groups(self, group: str) -> tuple[tuple[int, ...], ...]:
        """hybrid_shard's process groups: shard groups of consecutive ranks, replica groups strided."""
        ranks, size = self.scenario.ranks, self.scenario.group_size
        if group == "shard":
            return tuple(tuple(range(first, first + size)) for first in range(0, ranks, size))
        return tuple(tuple(range(index, ranks, size)) for index in range(size))


def _time_s(collective: Any) -> float:
    """One call's time: collapsed for a collective over all ranks, the cached DES for groups."""
    if not collective.groups:
        from sim.collective.collapsed import collective_time

        return collective_time(collective).time_s
    return _groups_time_s(collective)


@functools.lru_cache(maxsize=1024)
def _groups_time_s(collective: Any) -> float:
    from sim.collective.runner import run_collective

    return run_collective(collective).time_s


# --- the step -----------------------------------------------------------------------------


class _Program:
    """Builds the op list of one FSDP step and the memory events of unsharded buffers."""

    def __init__(self, scenario: FSDPScenario, units: list[Unit], comm: Comm, optimizer_s: float) -> None:
        self.s, self.units, self.comm = scenario, units, comm
        self.ops: list[Op] = []
        self.gathered: dict[int, int] = {}  # unit -> the all-gather op that made it resident
        self.frees: list[tuple[int, int]] = []  # (unit, op after whose end it is freed)
        self.gathers: list[int] = []  # all-gathers of units that will be freed, issue order
        self.gather_frees: dict[int, int] = {}  # all-gather op -> op after which its unit is freed
        self.build(optimizer_s)

    def add(self, stream: str, kind: str, unit: int, nbytes: int, duration_s: float, after: list[int], phase: str) -> int:
        self.ops.append(Op(stream, kind, unit, nbytes, duration_s, [a for a in after if a is not None], phase=phase))
        return len(self.ops) - 1

    def gather(self, unit: int, phase: str, freed: bool) -> int:
        u, s = self.units[unit], self.s
        after = []
        if freed and s.limit_all_gathers and len(self.gathers) >= 2:
            after.append(-1 - self.gathers[-2])  # resolved once the free op is known (see resolve)
        op = self.add("comm", "all_gather", unit, u.nbytes, self.comm.cost_s("all_gather", u.nbytes, self._group), after, phase)
        if freed:
            self.gathers.append(op)
        self.gathered[unit] = op
        return op

    @property
    def _group(self) -> str:
        return "shard" if self.s.sharding == "hybrid_shard" else "world"

    def free(self, unit: int, after_op: int) -> None:
        gather = self.gathered.pop(unit)
        self.gather_frees[gather] = after_op
        self.frees.append((unit, after_op))

    def build(self, optimizer_s: float) -> None:
        s, units = self.s, self.units
        sharded = s.sharding in ("full_shard", "shard_grad_op", "hybrid_shard")
        reshard_forward = s.sharding in ("full_shard", "hybrid_shard")
        last_forward = None
        for u in units:
            # the rate limiter counts gathers whose free comes in program order: resharded ones
            gather = self.gather(u.index, "forward", freed=reshard_forward and not u.root) if sharded else None
            last_forward = self.add("compute", "forward", u.index, u.nbytes, u.forward_s, [gather, last_forward], "forward")
            if reshard_forward and not u.root:
                self.free(u.index, last_forward)
        order = list(reversed(units))
        compute, tail = last_forward, []
        for position, u in enumerate(order):
            following = order[position + 1] if position + 1 < len(order) else None
            if sharded and u.index not in self.gathered:
                self.gather(u.index, "backward", freed=True)
            if sharded and s.backward_prefetch == "pre" and following and following.index not in self.gathered:
                self.gather(following.index, "backward", freed=True)
            compute = self.add("compute", "backward", u.index, u.nbytes, u.backward_s, [self.gathered.get(u.index), compute], "backward")
            if sharded and s.backward_prefetch == "post" and following and following.index not in self.gathered:
                self.gather(following.index, "backward", freed=True)
            if s.sharding == "no_shard":
                tail.append(
                    self.add("comm", "all_reduce", u.index, u.nbytes, self.comm.cost_s("all_reduce", u.nbytes), [compute], "backward")
                )
                continue
            rs = self.add(
                "comm",
                "reduce_scatter",
                u.index,
                u.nbytes,
                self.comm.cost_s("reduce_scatter", u.nbytes, self._group),
                [compute],
                "backward",
            )
            tail.append(rs)
            if s.sharding == "hybrid_shard":
                shard = u.nbytes // s.group_size
                tail.append(
                    self.add("comm", "all_reduce", u.index, shard, self.comm.cost_s("all_reduce", shard, "replicate"), [rs], "backward")
                )
            self.free(u.index, compute)
        self.add("compute", "optimizer", -1, 0, optimizer_s, [compute, *tail], "step")

    def resolve(self) -> None:
        """Turn rate-limiter placeholders (-1 - gather op) into the op that frees that unit."""
        for op in self.ops:
            op.after = [a if a >= 0 else self.gather_frees[-1 - a] for a in op.after]

    def schedule(self) -> None:
        """One pass in program order: an op starts when its stream is free and its inputs are done
        (every input is earlier in program order). ``overlap=False``: one stream for both."""
        self.resolve()
        free = {"compute": 0.0, "comm": 0.0}
        for position, op in enumerate(self.ops):
            if any(a >= position for a in op.after):
                raise AssertionError(f"op {position} ({op.kind}) waits for a later op {op.after}")
            stream = op.stream if self.s.overlap else "compute"
            op.start_s = max([free[stream], *(self.ops[a].end_s for a in op.after)])
            op.end_s = op.start_s + op.duration_s
            free[stream] = op.end_s


# --- entry points -------------------------------------------------------------------------


def _ddp_scenario(scenario: FSDPScenario) -> ddp.DDPScenario:
    own = {f.name for f in dataclasses.fields(FSDPScenario)} - {f.name for f in dataclasses.fields(ddp.DDPScenario)}
    data = {f.name: getattr(scenario, f.name) for f in dataclasses.fields(scenario) if f.name not in own}
    return ddp.DDPScenario(**data)


def run_fsdp(scenario: FSDPScenario, prepared: ddp.Prepared | None = None, comm_end: int = 0) -> FSDPResult:
    """Simulate one step of ``scenario.sharding``; ``comm_end`` -1 / +1: every collective at the
    low / high end of its 80 % interval (:func:`step_interval`)."""
    prepared = prepared or ddp.prepare(_ddp_scenario(scenario))
    element_bytes = prepared.comm.element_bytes
    numel = sum(p.numel for p in prepared.params)
    if scenario.sharding in ("ddp", "zero1"):
        return _run_ddp(scenario, prepared, element_bytes, numel, comm_end)
    units = build_units(scenario, prepared)
    n = scenario.group_size
    optimizer_s = prepared.optimizer_s / n if scenario.sharding != "no_shard" else prepared.optimizer_s
    comm = Comm(scenario, element_bytes, comm_end)
    program = _Program(scenario, units, comm, optimizer_s)
    program.schedule()
    memory = memory_per_rank(scenario, units, program.ops, element_bytes)
    return FSDPResult(scenario, tuple(units), tuple(program.ops), memory, None, prepared.grad_bytes, numel, comm.notes)


def ddp_memory(scenario: ddp.DDPScenario) -> dict[str, Any]:
    """A DDP step's memory per rank (the ``ddp`` row of :func:`compare`: whole parameters,
    gradients, Adam state, master weights, activations) and whether it fits the GPU
    (:func:`sim.training.memory.capacity`). Gradient accumulation holds the same."""
    from sim.training.memory import capacity

    fields = {f.name: getattr(scenario, f.name) for f in dataclasses.fields(ddp.DDPScenario)}
    variant = FSDPScenario(**{**fields, "accumulation_steps": 1}, sharding="ddp", units="single")
    prepared = ddp.prepare(_ddp_scenario(variant))
    memory = memory_per_rank(variant, build_units(variant, prepared), [], prepared.comm.element_bytes)
    return {"peak_memory_bytes": memory["peak_bytes"], **capacity(memory["peak_bytes"], scenario), "memory": memory}


def _run_ddp(scenario: FSDPScenario, prepared: ddp.Prepared, element_bytes: int, numel: int, comm_end: int = 0) -> FSDPResult:
    """DDP (bucketed or the scenario's DDP strategy) and ZeRO-1 on top of it."""
    zero = scenario.sharding == "zero1"
    if comm_end:
        prepared = dataclasses.replace(prepared, comm=ScaledComm(prepared.comm, scenario, comm_end))
    result = ddp.run_ddp(_ddp_scenario(scenario).replace(optimizer_time_s=0.0), prepared)
    comm = Comm(scenario, element_bytes, comm_end)
    units = build_units(scenario.replace(units="single"), prepared)
    ops = [Op("compute", "forward", 0, 0, prepared.forward_s, [], 0.0, prepared.forward_s, "forward")]
    start, end = result.backward_start_s, result.backward_end_s
    ops.append(Op("compute", "backward", 0, prepared.grad_bytes, end - start, [], start, end, "backward"))
    for bucket in result.buckets:
        ops.append(
            Op(
                "comm",
                "all_reduce",
                0,
                bucket["bytes"],
                bucket["end_s"] - bucket["start_s"],
                [],
                bucket["start_s"],
                bucket["end_s"],
                "backward",
            )
        )
    t = result.optimizer_start_s
    optimizer_s = prepared.optimizer_s / scenario.ranks if zero else prepared.optimizer_s
    ops.append(Op("compute", "optimizer", -1, 0, optimizer_s, [], t, t + optimizer_s, "step"))
    if zero:
        gather_s = comm.cost_s("all_gather", prepared.grad_bytes)
        ops.append(Op("comm", "all_gather", -1, prepared.grad_bytes, gather_s, [], t + optimizer_s, t + optimizer_s + gather_s, "step"))
    memory = memory_per_rank(scenario, units, ops, element_bytes)
    return FSDPResult(scenario, tuple(units), tuple(ops), memory, result, prepared.grad_bytes, numel)


def step_interval(scenario: FSDPScenario, step_time_s: float, prepared: ddp.Prepared | None = None) -> dict[str, Any]:
    """``step_time_interval_s`` (with its level and basis) of a step of ``step_time_s`` on a
    hardware preset: the step run twice more with every collective at the ends of its 80 %
    interval (:mod:`sim.training.step_interval`; collective times are cached); None without a preset."""
    if not scenario.hardware:
        return no_interval()
    prepared = prepared or ddp.prepare(_ddp_scenario(scenario))
    return interval_fields(step_time_s, [run_fsdp(scenario, prepared, end).step_time_s for end in ENDS])


def compare(scenario: FSDPScenario, strategies: Sequence[str]) -> list[dict[str, Any]]:
    """One compact summary per strategy, sharing the profile (the same files and comm cache)."""
    unknown = [name for name in strategies if name not in STRATEGIES]
    if unknown or not strategies:
        raise CollsimError(f"--compare: unknown {', '.join(unknown) or '(empty)'}; allowed: {', '.join(STRATEGIES)}")
    prepared = ddp.prepare(_ddp_scenario(scenario))
    rows = []
    for name in strategies:
        variant = scenario.replace(sharding=name)
        summary = run_fsdp(variant, prepared).summary()
        rows.append({**{key: summary[key] for key in COMPARE_KEYS}, **step_interval(variant, summary["step_time_s"], prepared)})
    return rows


COMPARE_KEYS = (
    "sharding", "ranks", "shard_group", "step_time_s", "exposed_comm_s", "compute_time_s", "comm_busy_s",
    "no_overlap_bound_s", "perfect_overlap_bound_s", "peak_memory_bytes", "gpu", "gpu_memory_bytes", "fits", "gpu_memory_note",
    "memory", "notes",
)  # fmt: skip
