"""One simulated FSDP / ZeRO step as data (:class:`FSDPResult`: summary, per-unit rows, events,
Chrome trace) and the memory per rank it needs (:func:`memory_per_rank`);
:func:`sim.training.fsdp.run_fsdp` builds both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sim.collective.results import event_row
from sim.trace import chrome_trace
from sim.training import compute, ddp
from sim.training.fsdp_scenario import FSDPScenario, Op, Unit
from sim.training.memory import capacity

# --- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FSDPResult:
    """One simulated FSDP / ZeRO step (or DDP via :mod:`sim.training.ddp`)."""

    scenario: FSDPScenario
    units: tuple[Unit, ...]
    ops: tuple[Op, ...]
    memory: dict[str, int]
    ddp_result: ddp.DDPResult | None = None
    grad_bytes: int = 0
    param_count: int = 0
    notes: tuple[str, ...] = ()  # collectives that fell back to ring on a group (Comm)

    @property
    def compute_spans(self) -> list[tuple[float, float]]:
        return [(op.start_s, op.end_s) for op in self.ops if op.stream == "compute"]

    @property
    def step_time_s(self) -> float:
        return max(op.end_s for op in self.ops)

    @property
    def compute_time_s(self) -> float:
        return sum(op.duration_s for op in self.ops if op.stream == "compute")

    @property
    def comm_busy_s(self) -> float:
        return sum(op.duration_s for op in self.ops if op.stream == "comm")

    @property
    def exposed_comm_s(self) -> float:
        """Step time not spent computing: the communication the compute stream waits for."""
        return self.step_time_s - self.compute_time_s

    def unit_rows(self) -> list[dict[str, Any]]:
        """One row per unit: name, bytes, forward/backward compute spans and its collectives."""
        rows = [{"index": u.index, "name": u.name, "bytes": u.nbytes, "num_params": len(u.params), "forward_s": u.forward_s,
                 "backward_s": u.backward_s, "ops": []} for u in self.units]  # fmt: skip
        for op in self.ops:
            if op.unit >= 0:
                rows[op.unit]["ops"].append(
                    {"kind": op.kind, "phase": op.phase, "bytes": op.nbytes, "start_s": op.start_s, "end_s": op.end_s}
                )
        return rows

    def summary(self) -> dict[str, Any]:
        s = self.scenario
        comm_by_kind: dict[str, float] = {}
        for op in self.ops:
            if op.stream == "comm":
                comm_by_kind[op.kind] = comm_by_kind.get(op.kind, 0.0) + op.duration_s
        compute, comm = self.compute_time_s, self.comm_busy_s
        return {
            "sharding": s.sharding,
            "comm": s.comm,
            "ranks": s.ranks,
            "shard_group": s.group_size,
            "num_units": len(self.units),
            "param_count": self.param_count,
            "grad_bytes": self.grad_bytes,
            "step_time_s": self.step_time_s,
            "exposed_comm_s": self.exposed_comm_s,
            "compute_time_s": compute,
            "comm_busy_s": comm,
            "comm_by_kind_s": comm_by_kind,
            "no_overlap_bound_s": compute + comm,
            "perfect_overlap_bound_s": max(compute, comm),
            "peak_memory_bytes": self.memory["peak_bytes"],
            **capacity(self.memory["peak_bytes"], s),  # gpu_memory_bytes and fits beside the peak
            "memory": self.memory,
            "units": self.unit_rows(),
            "notes": list(self.notes),
            "scenario": s.to_dict(),
        }

    def events(self) -> list[dict[str, Any]]:
        """Rows in the core's event schema (sim/collective/results.py), rank 0: resource ``compute:0`` or
        ``comm:0``, kind forward/backward/optimizer/all_gather/reduce_scatter/all_reduce,
        ``bucket`` = unit index, ``name`` = unit name (optimizer: "optimizer")."""
        if self.ddp_result is not None:
            return self.ddp_result.events() + [
                event_row(0, -1, "comm:0", op.kind, op.start_s, op.end_s, op.nbytes, 0, -1, -1, op.kind) for op in self.ops if op.phase == "step" and op.stream == "comm"
            ]  # fmt: skip
        names = {u.index: u.name for u in self.units}
        rows = [
            event_row(0, -1, f"{op.stream}:0", op.kind, op.start_s, op.end_s, op.nbytes, 0, -1, op.unit, names.get(op.unit, op.kind))
            for op in self.ops
        ]
        return sorted(rows, key=lambda row: (row["start_s"], row["end_s"], row["resource"]))

    def chrome_trace(self) -> dict[str, Any]:
        return chrome_trace(self.events())


# --- memory -------------------------------------------------------------------------------


def memory_per_rank(scenario: FSDPScenario, units: Sequence[Unit], ops: Sequence[Op], element_bytes: int) -> dict[str, int]:
    """Bytes per rank: sharded (or full) parameters, gradients, optimizer state, and the peak of
    unsharded buffers (gathered parameters from all-gather start to free, unsharded gradients
    from a unit's backward start to the end of its reduction); with bf16 / fp16 the fp32 master
    weights (sharded as the optimizer state); the activations of a transformer preset with
    ``tokens`` (:func:`sim.training.compute.activation_bytes`, 0 where unknown)."""
    s = scenario
    numel = sum(u.numel for u in units)
    total = sum(u.nbytes for u in units)
    n = s.group_size
    sharded = s.sharding in ("full_shard", "shard_grad_op", "hybrid_shard")
    params = -(-total // n) if sharded else total
    grads = params
    optimizer = (
        -(-(numel * s.optimizer_state_bytes) // n)
        if s.sharding in ("full_shard", "shard_grad_op", "hybrid_shard", "zero1")
        else numel * s.optimizer_state_bytes
    )
    changes: list[tuple[float, int]] = []
    if sharded:
        gathered: dict[int, float] = {}
        for k, op in enumerate(ops):
            if op.kind == "all_gather":
                gathered[op.unit] = op.start_s
                free = next(
                    (o for o in ops[k + 1 :] if o.kind in ("forward", "backward") and o.unit == op.unit and _frees(s, o, units)), None
                )
                changes += [(op.start_s, op.nbytes), (free.end_s if free else ops[-1].end_s, -op.nbytes)]
        for op in ops:
            if op.kind == "backward":
                done = max(o.end_s for o in ops if o.unit == op.unit and o.phase == "backward" and o.stream == "comm")
                changes += [(op.start_s, units[op.unit].nbytes), (done, -units[op.unit].nbytes)]
    changes.sort(key=lambda change: (change[0], change[1]))
    level = peak = 0
    for _, delta in changes:
        level += delta
        peak = max(peak, level)
    largest = max(u.nbytes for u in units)
    master = _master_bytes(s, numel)
    activations = compute.activation_bytes(s.preset, s.tokens, element_bytes, s.activation_checkpointing) or 0
    return {
        "params_bytes": params,
        "grads_bytes": grads,
        "optimizer_bytes": optimizer,
        "unsharded_peak_bytes": peak,
        "largest_unit_bytes": largest,
        "master_bytes": master,
        "activations_bytes": activations,
        "peak_bytes": params + grads + optimizer + peak + master + activations,
    }


def _master_bytes(s: FSDPScenario, numel: int) -> int:
    """fp32 master weights under bf16 / fp16 (with ``master_weights``), sharded as the optimizer state."""
    if s.precision in (None, "fp32") or not s.master_weights:
        return 0
    whole = numel * compute.MASTER_BYTES
    return -(-whole // s.group_size) if s.sharding in ("full_shard", "shard_grad_op", "hybrid_shard", "zero1") else whole


def _frees(s: FSDPScenario, op: Op, units: Sequence[Unit]) -> bool:
    """Whether this compute op is the one after which its unit's gathered parameters are freed."""
    if op.kind == "backward":
        return True
    return s.sharding in ("full_shard", "hybrid_shard") and not units[op.unit].root
