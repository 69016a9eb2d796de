"""What a simulated training step returns: flat numbers and plain event rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["EVENT_KEYS", "TrainResult", "events_for_rank"]

# One row of ``TrainResult.events``: rank (global), stream (compute, tp, ep, pp, dp), kind
# (F, B, I, W for compute; the collective's op otherwise), name, start_s, end_s, nbytes (per
# rank; 0 for compute), peer (the other rank of a send, else -1), group (the group's global ranks).
EVENT_KEYS = ("rank", "stream", "kind", "name", "start_s", "end_s", "nbytes", "peer", "group")


@dataclass(frozen=True)
class TrainResult:
    """``step_time_s`` and where it goes on the slowest pipeline rank; ``bubble_fraction`` the
    compute stream's idle share of the step (mean over pipeline ranks); memory per GPU (bytes) on
    the first stage, which holds the most activations; ``events`` the representative pipeline's
    rows (see :data:`EVENT_KEYS`), empty when not asked for."""

    step_time_s: float
    compute_s: float
    tp_s: float
    ep_s: float
    pp_exposed_s: float
    dp_exposed_s: float
    bubble_fraction: float
    micro_batches: int
    model_flops: float
    mfu_achieved: float
    memory_bytes: float
    memory_limit_bytes: float
    tokens_per_s: float
    bytes_by_kind: dict[str, float] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    notes: tuple[str, ...] = ()
    layout: dict[str, int] = field(default_factory=dict)  # tp, ep, dp, pp, gpus_per_node: sim.training.parallel.layout.Layout

    @property
    def fits(self) -> bool:
        return self.memory_bytes <= self.memory_limit_bytes

    def to_dict(self, events: bool = False) -> dict[str, Any]:
        data = asdict(self)
        data["fits"] = self.fits
        data["notes"] = list(self.notes)
        if not events:
            data.pop("events")
        return data


_GROUP_OF_STREAM = {"tp": "tp", "ep": "ep", "dp": "dense_dp"}


def events_for_rank(result: TrainResult, rank: int) -> list[dict[str, Any]]:
    """``rank``'s rows: the representative pipeline's rank of its stage runs the same ops at the
    same times (its TP, EP and DP peers are identical), with ``rank``'s own groups and peers."""
    from sim.training.parallel.layout import Layout

    layout = Layout(**result.layout)
    me = layout.coordinates(rank)
    source = layout.rank(pp=me.pp)
    rows = []
    for row in result.events:
        if row["rank"] != source:
            continue
        copy = dict(row, rank=rank)
        if row["stream"] in _GROUP_OF_STREAM:
            copy["group"] = list(layout.group(_GROUP_OF_STREAM[row["stream"]], rank))
        if row["peer"] >= 0:
            copy["peer"] = layout.rank(me.tp, me.ep, me.dp, layout.coordinates(row["peer"]).pp)
        rows.append(copy)
    return rows
