"""What one FSDP / ZeRO step is built from (:mod:`sim.training.fsdp` builds the step,
:mod:`sim.training.fsdp_result` reads it): the scenario (:class:`FSDPScenario`, a DDP scenario
plus the sharding strategy), its units (:class:`Unit`) and the ops of its program (:class:`Op`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim.errors import CollsimError
from sim.scenario import optional_parser, parse_bool, parse_int
from sim.training.ddp_scenario import DDPScenario
from sim.units import parse_element_bytes

__all__ = ["BACKWARD_PREFETCH", "SHARDINGS", "STRATEGIES", "FSDPScenario", "Op", "Unit"]

SHARDINGS = ("full_shard", "shard_grad_op", "no_shard", "hybrid_shard")
STRATEGIES = ("ddp", "zero1", *SHARDINGS)
BACKWARD_PREFETCH = ("pre", "post", "none")


@dataclass(frozen=True)
class FSDPScenario(DDPScenario):
    """A DDP scenario (parameters, compute profile, comm model) plus the sharding strategy."""

    sharding: str = "full_shard"
    backward_prefetch: str = "pre"  # BACKWARD_PRE | BACKWARD_POST | None
    limit_all_gathers: bool = True
    shard_size: int | None = None  # hybrid_shard: ranks per shard group (default gpus_per_node)
    units: str = "blocks"  # blocks | single | comma-separated name prefixes
    optimizer_state_bytes: int = 8  # per parameter element: Adam's exp_avg and exp_avg_sq in fp32
    overlap: bool = True  # False: every collective blocks compute (the no-overlap bound)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sharding not in STRATEGIES:
            raise CollsimError(f"sharding: unknown {self.sharding!r}; allowed: {', '.join(STRATEGIES)}")
        if self.backward_prefetch not in BACKWARD_PREFETCH:
            raise CollsimError(f"backward_prefetch: unknown {self.backward_prefetch!r}; allowed: {', '.join(BACKWARD_PREFETCH)}")
        if self.optimizer_state_bytes < 0:
            raise CollsimError(f"optimizer_state_bytes: must be >= 0 bytes per element, got {self.optimizer_state_bytes}")
        if self.accumulation_steps != 1:
            raise CollsimError("accumulation_steps: sim fsdp models one synchronised step; use 1")
        if self.sharding == "hybrid_shard":
            if self.shard_size is None and self.gpus_per_node is None:
                raise CollsimError(
                    "hybrid_shard: give --shard-size (ranks per shard group) or a two_level topology with --gpus-per-node / --hardware",
                    field="shard_size",
                )
            size = self.group_size
            if size < 1 or self.ranks % size:
                raise CollsimError(f"shard_size: must divide ranks ({self.ranks}), got {size}")

    @property
    def group_size(self) -> int:
        """Ranks one parameter is sharded over."""
        if self.sharding in ("full_shard", "shard_grad_op", "zero1"):
            return self.ranks
        if self.sharding == "hybrid_shard":
            return self.shard_size or self.gpus_per_node or self.ranks
        return 1


FSDPScenario.PARSERS = {
    **DDPScenario.PARSERS,
    "limit_all_gathers": parse_bool,
    "shard_size": optional_parser(parse_int),
    "optimizer_state_bytes": parse_element_bytes,
    "overlap": parse_bool,
}
FSDPScenario.ALIASES = dict(DDPScenario.ALIASES)
FSDPScenario.LABEL = "FSDP scenario"


@dataclass(frozen=True)
class Unit:
    """One FSDP unit: its parameters (indices), bytes, forward and backward compute."""

    index: int
    name: str
    params: tuple[int, ...]
    nbytes: int
    numel: int
    forward_s: float
    backward_s: float
    root: bool


@dataclass
class Op:
    """One op of the step: ``stream`` compute or comm, in CPU program order."""

    stream: str
    kind: str  # forward backward optimizer | all_gather reduce_scatter all_reduce
    unit: int
    nbytes: int
    duration_s: float
    after: list[int]  # ops (by position) whose end this op waits for
    start_s: float = math.nan
    end_s: float = math.nan
    phase: str = ""  # forward | backward | step
