"""A DDP step's network all-reduces checked against the run budget before they run (issue 22):
:func:`check_ddp`, on :mod:`sim.collective.budget`'s estimate of one all-reduce. Here, above
sim.collective, because it reads a DDP scenario's parameters (sim.training.ddp)."""

from __future__ import annotations

from typing import Any

from sim.collective import analytic
from sim.collective.budget import MAX_MEMORY_BYTES, MAX_SECONDS, estimate, format_seconds
from sim.collective.collapsed import replay_time, why_not_collapsed
from sim.errors import CollsimError
from sim.training.ddp import resolve_params

__all__ = ["check_ddp"]


def check_ddp(scenario: Any, points: int = 1, what: str = "sim ddp") -> None:
    """Refuse a DDP step (times ``points`` for a sweep) whose network all-reduces, simulated
    message by message, go beyond :data:`MAX_SECONDS` or :data:`MAX_MEMORY_BYTES`. The o / w
    comm model costs nothing; in collapsed mode each distinct bucket size is simulated once,
    unless a closed form or replay answers it."""
    if getattr(scenario, "comm", None) != "network":
        return
    try:
        total = sum(param.nbytes for param in resolve_params(scenario))
    except CollsimError:
        return  # the run itself says what is wrong
    cap = max(1, min(scenario.bucket_cap_bytes, total))
    calls = -(-total // cap) if scenario.strategy == "bucketed" else (1 if scenario.strategy == "flat" else 0)
    if scenario.strategy in ("naive", "overlap"):
        calls = len(resolve_params(scenario))
    call = scenario.collective(max(cap - cap % (4 * scenario.ranks), 4 * scenario.ranks), 4)
    if scenario.mode == "collapsed" and why_not_collapsed(call) is None:
        if analytic.for_scenario(call) is not None or replay_time(call.replace(size_bytes=4 * call.ranks * call.chunks)) is not None:
            return  # answered without a per-message run
        calls = min(calls, 2)  # one cached simulation per distinct bucket size (about two sizes)
    told = estimate(call.replace(record="aggregate"))
    seconds = told.seconds * calls * points
    if seconds > MAX_SECONDS or told.memory_bytes > MAX_MEMORY_BYTES:
        raise CollsimError(
            f"ranks: {what}: {calls} all-reduce(s) x {points} point(s) simulated message by message on {scenario.ranks} ranks "
            f"need ~{format_seconds(seconds)} here ({told.describe()} each); limit ~{format_seconds(MAX_SECONDS)}. "
            "Use --comm ow (o and w), fewer --ranks, a larger --bucket-size or --mode collapsed",
            field="ranks",
        )
