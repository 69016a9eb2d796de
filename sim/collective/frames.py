"""Buffer frames: each rank's buffer as bitmask cells at the end of every step of a run, for the
step player: :func:`run_with_frames` is :func:`sim.collective.runner.run` with them.

Buffer frames need one element per (piece, chunk): the rank programs move bitmask payloads
of ``ranks * chunks`` cells. **One run** gives both the result and the frames when
:func:`same_run_scale` finds the factor m with elements = m * ranks * chunks: the run is
made on ``ranks * chunks`` cells of m elements each (``element_bytes`` m times larger, the
same ``size_bytes``), which sends exactly the original's messages (same bytes, steps,
chunks and times) and reductions, and the result comes back carrying the original scenario.
That is the common case: a size that is a multiple of ranks * chunks elements (64 MiB on 2,
4, 8, 16 or 32 ranks, any power-of-two chunks), one repetition, no verify, no groups, record
full or auto, and an algorithm whose every split then falls on whole cells: all of them but
double_binary_tree on an odd number of ranks (its halves of p * k cells do not cut into k
chunks of whole cells) and nccl_tree when its 512 KiB tree chunks per channel do not
divide ranks. A frame is the buffers at its step's last end, so one-run frames follow the
scenario's own timing: where a later step's message ends first (binomial scatter of 48 MiB
on 12 ranks: 8 -> 9 before 0 -> 4), the frame shows it, as the timelines do.

**Two runs** otherwise (sizes that do not divide, such as 64 MiB on 3, 5 or 12 ranks;
repetitions; verify; groups unless elements = ranks * chunks; record aggregate, or auto
past ``max_events``; the two cases above): the scenario runs plainly for the result, and a
miniature copy with ``ranks * chunks`` elements of the original's ``element_bytes`` (one
call, no overhead) gives the frames (for record auto past ``max_events``, the scaled run's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.algorithms.call import split
from sim.algorithms.registry import algorithm_spec
from sim.collective import analytic, runner
from sim.collective.groups import group_closed_form
from sim.collective.results import CollectiveResult
from sim.scenario import CollectiveScenario

if TYPE_CHECKING:
    from sim.collective.plan import Plan

__all__ = ["FRAME_MAX_CELLS", "FRAME_MAX_RANKS", "frames_possible", "miniature", "recorded", "run_with_frames", "same_run_scale"]

FRAME_MAX_RANKS = 32  # per-rank buffer frames: one row per rank
FRAME_MAX_CELLS = 256  # ranks * chunks columns at most
Progress = Callable[[int, float], None]


def run_with_frames(
    scenario: CollectiveScenario, out: list[dict[str, Any]], on_progress: Progress | None = None, plan: Plan | None = None
) -> CollectiveResult:
    """Simulate ``scenario`` and append its buffer frames to ``out`` (nothing when the scenario
    is too large to show: ``frames_possible``); one run where :func:`same_run_scale` allows it,
    else two (the module docstring says when). ``plan``: the scenario's (sim.collective.plan),
    whose preset and topology the runs use (the miniature's topology is its own)."""
    s = scenario
    if not frames_possible(s):
        return runner.run(s, on_progress, plan=plan)
    scale = same_run_scale(s)
    if scale is None:
        out.extend(recorded(miniature(s), plan=plan)[1])
        return runner.run(s, on_progress, plan=plan)
    result, frames = recorded(s.replace(element_bytes=s.element_bytes * scale), on_progress, plan)
    out.extend(frames)
    if s.record == "auto" and max(result.message_count, len(result.computes)) > s.max_events:
        return runner.run(s, on_progress, plan=plan)  # the plain run aggregates past max_events: its records differ
    analytic_time_s = group_closed_form(s) if s.groups else analytic.for_scenario(s)
    return replace(result, scenario=s, analytic_time_s=analytic_time_s)


def _mask_table(op: str, ranks: int, elements: int, root: int) -> np.ndarray:
    table = np.zeros((ranks, elements), dtype=np.int64 if ranks < 63 else object)
    blocks = split(elements, ranks)
    for rank, buffer in enumerate(table):
        if op in ("all_gather", "gather"):
            buffer[blocks[rank][0] : blocks[rank][1]] = 1 << rank
        elif op in ("broadcast", "scatter"):
            if rank == root:
                buffer[:] = 1 << rank
        elif op == "send_recv":
            if rank == 0:
                buffer[:] = 1
        else:
            buffer[:] = 1 << rank
    return table


def frames_possible(scenario: CollectiveScenario) -> bool:
    s = scenario
    return s.ranks <= FRAME_MAX_RANKS and s.ranks * s.chunks <= FRAME_MAX_CELLS and s.op != "barrier"


def miniature(scenario: CollectiveScenario) -> CollectiveScenario:
    """The scenario on ``ranks * chunks`` elements, one call, no overhead: frames only."""
    s = scenario
    cells = s.ranks * s.chunks
    return s.replace(size_bytes=cells * s.element_bytes, repetitions=1, overhead_s=0.0, verify=False, record="full")


def _whole_cells(s: CollectiveScenario) -> bool:
    """Whether every split the algorithm's ranks make of ``ranks * chunks`` cells falls on whole
    cells (its record's ``whole_cells``). A range of L cells cut into q parts gives pieces of m
    times the bytes of the original range of m L elements cut into q parts exactly when q
    divides L (otherwise the cut pieces differ by m elements, the original's by one)."""
    whole = algorithm_spec(s.op, s.algorithm).whole_cells
    return whole if isinstance(whole, bool) else bool(whole(s))


def same_run_scale(scenario: CollectiveScenario) -> int | None:
    """The m for which ``ranks * chunks`` cells of m elements each send exactly the messages of
    ``scenario``, so that one run records both its result and its buffer frames; None when
    there is none (:func:`run` then runs twice)."""
    s = scenario
    cells = s.ranks * s.chunks
    if s.elements == 0 or s.elements % cells:
        return None
    if s.repetitions != 1 or s.verify or s.record == "aggregate":
        return None  # frames show one call on bitmasks, recorded in full
    scale = s.elements // cells
    if scale == 1:
        return 1  # the scenario itself has one element per cell
    return scale if not s.groups and _whole_cells(s) else None


def recorded(
    s: CollectiveScenario, on_progress: Progress | None = None, plan: Plan | None = None
) -> tuple[CollectiveResult, list[dict[str, Any]]]:
    """One run with bitmask payloads, the buffers copied each time simulated time moves on;
    afterwards each step keeps the copy at its last message's (or reduction's) end. ``plan``:
    as :func:`sim.collective.runner.run`'s."""
    table = _mask_table(s.op, s.ranks, s.ranks * s.chunks, s.root)
    buffers = list(table)
    bitmasks = s.replace(record="full", verify=False)
    started = runner.start_collective(bitmasks, runner.planned_topology(bitmasks, plan), buffers=buffers)
    env, call = started.env, started.call

    def snapshot() -> np.ndarray:  # the rows are views of ``table`` unless a program replaced one
        intact = all(mine is theirs for mine, theirs in zip(call.buffers, buffers))
        return table.copy() if intact else np.array(call.buffers)

    times: list[float] = [0.0]
    copies: list[np.ndarray] = [table.copy()]

    def advance(now: float) -> None:
        if now > times[-1]:
            times.append(now)
            copies.append(snapshot())

    runner.drive(started, on_progress, advance)
    times.append(env.now)
    copies.append(snapshot())
    result = runner.collect(started)
    ends: dict[int, float] = {}
    for message in result.messages:
        ends[message[5]] = max(ends.get(message[5], 0.0), message[3])
    for compute in result.computes:
        ends[compute[4]] = max(ends.get(compute[4], 0.0), compute[2])
    frames = [{"step": -1, "cells": copies[0].tolist()}]
    for step in sorted(ends):
        index = int(np.searchsorted(times, ends[step], side="right")) - 1
        frames.append({"step": step, "cells": copies[max(index, 0)].tolist()})
    if len(frames) > 1:  # the last step shows the result: work after its last message (NVLS's
        frames[-1]["cells"] = copies[-1].tolist()  # multicast into the node's GPUs) ends the call
    return result, frames
