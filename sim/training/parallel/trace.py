"""Every rank's rows of a simulated step in the shared trace schema (sim.chakra's ``ROW_KEYS``).

:func:`trace_rows` expands the representative pipeline's events to every rank
(:func:`~sim.training.parallel.result.events_for_rank`), compute rows as kind ``compute`` (the op,
F/B/I/W, stays in the name), each pipeline send also as a receive on its peer, as measured runs
(``collsim real train``) record them; ``bytes`` is the row's per-rank size. Bounded: a layout of
more than :data:`MAX_TRACE_RANKS` ranks is refused.
"""

from __future__ import annotations

from typing import Any

from sim.errors import CollsimError
from sim.training.parallel.result import TrainResult, events_for_rank

__all__ = ["MAX_TRACE_RANKS", "trace_rows"]

MAX_TRACE_RANKS = 4096


def check_trace_ranks(ranks: int, what: str = "--chakra") -> None:
    """One error when a trace of ``ranks`` ranks (a file each) is more than is written."""
    if ranks > MAX_TRACE_RANKS:
        raise CollsimError(f"{what}: the layout has {ranks} ranks; traces are written for up to {MAX_TRACE_RANKS} ranks "
                           "(a file each): lower --dp or --nodes", field="chakra")  # fmt: skip


def trace_rows(result: TrainResult) -> list[dict[str, Any]]:
    """Every rank's rows (rank, stream, kind, name, start_s, end_s, bytes, peer, group)."""
    layout = result.layout
    ranks = layout["tp"] * layout["ep"] * layout["dp"] * layout["pp"]
    check_trace_ranks(ranks)
    rows = []
    for rank in range(ranks):
        for event in events_for_rank(result, rank):
            rows.extend(_rows_of(event))
    return rows


def _rows_of(event: dict[str, Any]) -> list[dict[str, Any]]:
    row = {key: event[key] for key in ("rank", "stream", "kind", "name", "start_s", "end_s", "peer", "group")}
    row["bytes"] = event["nbytes"]
    if event["stream"] == "compute":
        return [dict(row, kind="compute")]
    if event["stream"] != "pp":
        return [row]
    return [dict(row, kind="send"), dict(row, kind="recv", rank=event["peer"], peer=event["rank"])]
