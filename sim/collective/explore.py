"""What an explorer needs from the model besides a run: the work of a scenario without running
it, buffer frames recorded while the run goes, the phases of an algorithm, honest closed forms,
and the algorithm crossover over message size (cached).

Pure model code (standard library, numpy, simpy through the runner): the webapp draws what
these functions return, and ``collsim sim crossover`` prints the crossover.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
from simpy.core import EmptySchedule

from sim.collective import analytic
from sim.collective.call import split
from sim.collective.collapsed import collective_time, replay_time, why_not_collapsed
from sim.errors import CollsimError
from sim.collective.groups import group_closed_form
from sim.hardware.nccl_des import TREE_CHUNK_BYTES
from sim.algorithms.registry import algorithm_spec, algorithms_for
from sim.collective.results import CollectiveResult
from sim.collective.runner import collect, no_gc, start_collective
from sim.scenario import CollectiveScenario

ROUTE_COST = 80  # finding a new (src, dst) route costs about as much as simulating 80 messages
CROSSOVER_SIZES = tuple(4**k * 1024 for k in range(11))  # 1 KiB .. 1 GiB, x4
CROSSOVER_MESSAGES = 60_000  # the per-message simulations of one crossover, all points together (about 1 s here)
POINT_MESSAGES = 3_000  # a crossover point whose run sends more is extrapolated from two smaller runs
FRAME_MAX_RANKS = 32  # per-rank buffer frames: one row per rank
FRAME_MAX_CELLS = 256  # ranks * chunks columns at most


# --------------------------------------------------------------------------- work


@dataclass(frozen=True)
class Work:
    """How much a per-message simulation of a scenario costs, told without running it.

    ``messages``: point-to-point messages of the run (all repetitions); ``pairs``: distinct
    sender-receiver pairs (each needs a route); ``exact``: the counts are the algorithm's own,
    not an upper bound."""

    messages: int
    pairs: int
    exact: bool

    @property
    def cost(self) -> int:
        """Message-equivalents: a new route costs about ``ROUTE_COST`` messages."""
        return self.messages + ROUTE_COST * self.pairs


def _lg(p: int) -> int:
    return max(0, (p - 1).bit_length())


def _counts(op: str, algorithm: str, p: int, k: int, gpus: int) -> tuple[int, int, bool]:
    """(messages, pairs, exact) of one call on p ranks with k chunks."""
    lg, ring = _lg(p), p * (p - 1)
    table: dict[tuple[str, str], tuple[int, int, bool]] = {
        ("broadcast", "linear"): (p - 1, p - 1, True),
        ("broadcast", "binomial"): (p - 1, p - 1, True),
        ("broadcast", "pipelined_chain"): ((p - 1) * k, p - 1, True),
        ("broadcast", "scatter_allgather"): (p - 1 + ring, 2 * (p - 1) + p, True),
        ("scatter", "binomial"): (p - 1, p - 1, True),
        ("gather", "binomial"): (p - 1, p - 1, True),
        ("reduce", "linear"): (p - 1, p - 1, True),
        ("reduce", "binomial"): (p - 1, p - 1, True),
        ("reduce", "reduce_scatter_gather"): (p * lg + p - 1, p * lg + p - 1, True),
        ("all_reduce", "reduce_broadcast"): (2 * (p - 1), 2 * (p - 1), True),
        ("all_reduce", "ring"): (2 * ring * k, p, True),
        ("all_reduce", "recursive_doubling"): (p * lg, p * lg, True),
        ("all_reduce", "rabenseifner"): (2 * p * lg, p * lg, True),
        ("all_reduce", "double_binary_tree"): (4 * (p - 1) * k, 4 * (p - 1), True),
        ("all_reduce", "hierarchical"): (2 * p * (gpus - 1) * k + 2 * p * (max(p // gpus, 1) - 1) * k, 2 * p, True),
        ("all_gather", "ring"): (ring * k, p, True),
        ("all_gather", "recursive_doubling"): (p * lg, p * lg, True),
        ("reduce_scatter", "ring"): (ring * k, p, True),
        ("reduce_scatter", "recursive_halving"): (p * lg, p * lg, True),
        ("barrier", "dissemination"): (p * lg, p * lg, True),
        ("send_recv", "direct"): (1, 1, True),
    }
    return table.get((op, algorithm), (-1, -1, False))


def work(scenario: CollectiveScenario) -> Work:
    """The messages and routes a per-message simulation of ``scenario`` needs, from the
    algorithm's structure (no run): exact message counts for the algorithms listed here (the
    tests check them against runs), a bound on routes. An algorithm not listed is run at 8 and
    16 ranks (one chunk, milliseconds) and its counts extrapolated with the growth exponent the
    two give (``exact=False``); if even that fails, the bound of every pair, both ways, each chunk."""
    s = scenario
    k = s.chunks if algorithm_spec(s.op, s.algorithm) and algorithm_spec(s.op, s.algorithm).chunked else 1
    gpus = s.gpus_per_node_resolved if s.topology == "two_level" else s.ranks
    messages, pairs, exact = _counts(s.op, s.algorithm, s.ranks, k, gpus)
    if messages < 0 and k > PROBE_MAX_CHUNKS:  # probe at fewer chunks: each chunk is sent the same way
        few = s.replace(chunks=PROBE_MAX_CHUNKS, size_bytes=max(s.element_bytes * s.ranks * PROBE_MAX_CHUNKS, min(s.size_bytes, PROBE_MAX_BYTES)))
        messages, pairs = _extrapolated(few)
        messages = messages * k // PROBE_MAX_CHUNKS
    elif messages < 0:
        messages, pairs = _extrapolated(s)
    return Work(messages * s.repetitions, min(pairs, s.ranks * (s.ranks - 1)), exact)


PROBE_MAX_CHUNKS = 16  # probes run at most this many chunks (the count grows linearly in chunks)
PROBE_MAX_BYTES = 16 * 2**20  # probes run at most this size (some algorithms cut messages into fixed-size pieces)


def _extrapolated(s: CollectiveScenario) -> tuple[int, int]:
    """Messages and pairs of an algorithm not listed, from small runs: at 8 and 16 ranks for
    the growth with ranks, and at two sizes for the growth with size (messages of fixed-size
    pieces grow with n). Cached: a page asks again and again."""
    p, n = s.ranks, s.size_bytes
    base = min(n, PROBE_MAX_BYTES)
    key = s.replace(size_bytes=s.element_bytes * s.ranks * s.chunks, stragglers=(), repetitions=1, record="aggregate", jitter_s=0.0)
    return _extrapolated_cached(key, p, n, base)


@lru_cache(maxsize=512)
def _extrapolated_cached(s: CollectiveScenario, p: int, n: int, base: int) -> tuple[int, int]:
    ring, k = p * (p - 1), s.chunks
    try:
        if p <= 16:
            messages, pairs = _probe(s, p, base)
            by_size = _probe(s, p, max(base // 4, s.element_bytes * p * k))[0] if n > base else messages
            return int(messages * _growth(by_size, messages, n / base, 4.0)), pairs
        (m8, r8), (m16, r16) = _probe(s, 8, base), _probe(s, 16, base)
        by_size = _probe(s, 8, max(base // 4, s.element_bytes * 8 * k))[0] if n > base else m8
    except CollsimError:
        return 2 * ring * k, ring
    messages = m16 * _growth(m8, m16, p / 16) * _growth(by_size, m8, n / base, 4.0)
    return int(min(messages, 1e12)), int(min(r16 * _growth(r8, r16, p / 16), ring))


def _growth(small: float, large: float, factor: float, apart: float = 2.0) -> float:
    """``factor`` raised to the exponent seen between two probes ``apart`` times apart."""
    if small <= 0 or large <= 0 or factor <= 1:
        return 1.0 if factor <= 1 else factor**2
    return factor ** (math.log(large / small) / math.log(apart)) if large >= small else 1.0


@lru_cache(maxsize=1024)
def _probe(s: CollectiveScenario, ranks: int, nbytes: int) -> tuple[int, int]:
    """(messages, distinct sender-receiver pairs) of ``s`` at ``ranks`` ranks and ``nbytes``
    (kept: every size above the probes' own asks the same two or three of them)."""
    changes: dict[str, Any] = {"ranks": ranks, "record": "aggregate", "stragglers": (), "root": 0, "repetitions": 1}
    unit = ranks * s.chunks * s.element_bytes
    changes["size_bytes"] = max(unit, nbytes - nbytes % unit)
    if s.topology == "two_level":
        changes["gpus_per_node"] = min(s.gpus_per_node_resolved, ranks)
    result = _plain(s.replace(**changes))
    return result.message_count, len(result.network.overflow)


# --------------------------------------------------------------------------- phases


def phase_starts(op: str, algorithm: str, p: int) -> list[tuple[int, str]]:
    """(first step, name) of each phase of an algorithm, in order ([] when it has one phase)."""
    rounds = _lg(p)
    two = {
        ("all_reduce", "ring"): (p - 1, "reduce-scatter", "all-gather"),
        ("all_reduce", "rabenseifner"): (rounds, "reduce-scatter (recursive halving)", "all-gather (recursive doubling)"),
        ("all_reduce", "reduce_broadcast"): (rounds, "reduce (up the tree)", "broadcast (down the tree)"),
        ("broadcast", "scatter_allgather"): (rounds, "scatter (binomial)", "all-gather (ring)"),
        ("reduce", "reduce_scatter_gather"): (rounds, "reduce-scatter (recursive halving)", "gather (binomial)"),
    }
    if (op, algorithm) in two:
        split_at, first, second = two[(op, algorithm)]
        return [(0, first), (split_at, second)]
    single = {
        ("all_gather", "ring"): "all-gather around the ring",
        ("reduce_scatter", "ring"): "reduce-scatter around the ring",
        ("all_gather", "recursive_doubling"): "all-gather (recursive doubling)",
        ("reduce_scatter", "recursive_halving"): "reduce-scatter (recursive halving)",
        ("broadcast", "binomial"): "broadcast down the binomial tree",
        ("reduce", "binomial"): "reduce up the binomial tree",
        ("scatter", "binomial"): "scatter down the binomial tree",
        ("gather", "binomial"): "gather up the binomial tree",
        ("broadcast", "pipelined_chain"): "chunks flow down the chain",
        ("all_reduce", "recursive_doubling"): "pairwise exchange and combine",
        ("all_reduce", "double_binary_tree"): "reduce up and broadcast down two trees",
        ("all_reduce", "hierarchical"): "intra-node reduce-scatter, inter-node all-reduce, intra-node all-gather",
        ("barrier", "dissemination"): "dissemination rounds",
    }
    return [(0, single[(op, algorithm)])] if (op, algorithm) in single else []


def phase_of(op: str, algorithm: str, p: int, step: int) -> str:
    """The name of the phase ``step`` belongs to ("" when the algorithm names none)."""
    name = ""
    for first, phase in phase_starts(op, algorithm, p):
        if step >= first:
            name = phase
    return name


def description(op: str, algorithm: str) -> str:
    """The algorithm's own one-paragraph description (its docstring's first paragraph)."""
    spec = algorithm_spec(op, algorithm)
    text = (spec.program.__doc__ or "").strip() if spec else ""
    return " ".join(text.split("\n\n")[0].split())


# --------------------------------------------------------------------------- closed forms


@dataclass(frozen=True)
class ClosedForm:
    """The closed form's time for a scenario, whether the simulation should match it exactly,
    and in words why it is approximate or missing."""

    time_s: float | None
    exact: bool
    note: str


def closed_form(scenario: CollectiveScenario) -> ClosedForm:
    """The closed form with an honest status: exact (the DES reproduces it), approximate (an
    uneven split: the formula assumes n divides into equal pieces), or none with the reason."""
    s = scenario
    exact = analytic.for_scenario(s)
    if exact is not None:
        return ClosedForm(exact, True, "")
    g = 1.0 / s.reduce_bandwidth_Bps if s.reduce_bandwidth_Bps else 0.0
    time_s = analytic.closed_form(s.op, s.algorithm, s.ranks, s.size_bytes, s.latency_s, 1.0 / s.bandwidth_Bps, g, s.chunks, s.overhead_s)
    if time_s is None:
        return ClosedForm(None, False, _why_none(s))
    if s.topology != "switch":
        why = f"the closed forms assume one port per rank into a switch; on {s.topology} messages take other paths and share links"
        return ClosedForm(None, False, why)
    reasons = []
    if s.stragglers:
        reasons.append("stragglers start late")
    if s.jitter_s:
        reasons.append("jitter varies message times")
    if s.repetitions != 1:
        reasons.append(f"{s.repetitions} back-to-back calls may overlap")
    if not analytic.splits_evenly(s.op, s.algorithm, s.ranks, s.elements, s.chunks):
        parts = s.ranks * (s.chunks if s.algorithm == "ring" else 1)
        reasons.append(f"{s.elements:,} elements do not divide into {parts} equal pieces, so pieces differ by one element")
    return ClosedForm(time_s, False, "approximate: " + "; ".join(reasons))


def _why_none(s: CollectiveScenario) -> str:
    if (s.op, s.algorithm) not in analytic.FORMS:
        return f"no closed form is known for {s.op}/{s.algorithm} (only the simulation answers)"
    power_of_two = analytic.FORMS[(s.op, s.algorithm)][1]
    if power_of_two and s.ranks & (s.ranks - 1):
        return f"the {s.algorithm} formula holds for a power-of-two number of ranks, not {s.ranks}"
    if s.op == "all_reduce" and s.algorithm == "ring" and s.chunks != 1:
        return "the ring formula is for one chunk; pipelined chunks have no closed form here"
    return f"no closed form for {s.op}/{s.algorithm} with these inputs"


# --------------------------------------------------------------------------- run with frames


def initial_masks(op: str, ranks: int, elements: int, root: int) -> list[np.ndarray]:
    """Each rank's input as bitmasks of the ranks whose data an element holds: the rows (views)
    of one ranks x elements table, int64 up to 62 ranks (Python ints beyond).

    Algorithms only copy and add payloads, and a correct reduction adds each rank's data once,
    so a sum of distinct powers of two is exactly the set of ranks it combines."""
    return list(_mask_table(op, ranks, elements, root))


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


def run(scenario: CollectiveScenario, frames: bool = False) -> tuple[CollectiveResult, list[dict[str, Any]] | None]:
    """Simulate ``scenario``; with ``frames`` (and a scenario small enough to show:
    ``frames_possible``) also each rank's buffer as bitmask cells at the end of every step.

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
    call, no overhead) gives the frames (for record auto past ``max_events``, the scaled run's)."""
    s = scenario
    if not (frames and frames_possible(s)):
        return _plain(s), None
    scale = same_run_scale(s)
    if scale is None:
        return _plain(s), _with_frames(miniature(s))[1]
    result, recorded = _with_frames(s.replace(element_bytes=s.element_bytes * scale))
    if s.record == "auto" and max(result.message_count, len(result.network.computes)) > s.max_events:
        return _plain(s), recorded  # the plain run aggregates past max_events: its records differ
    analytic_time_s = group_closed_form(s) if s.groups else analytic.for_scenario(s)
    return replace(result, scenario=s, analytic_time_s=analytic_time_s), recorded


def miniature(scenario: CollectiveScenario) -> CollectiveScenario:
    """The scenario on ``ranks * chunks`` elements, one call, no overhead: frames only."""
    s = scenario
    cells = s.ranks * s.chunks
    return s.replace(size_bytes=cells * s.element_bytes, repetitions=1, overhead_s=0.0, verify=False, record="full")


def _double_tree_halves_whole(s: CollectiveScenario) -> bool:
    """Halves of p k cells, each cut into k chunks: p / 2 cells a chunk, whole when p is even."""
    return s.ranks % 2 == 0 or s.ranks == 1


def _nccl_tree_chunks_whole(s: CollectiveScenario) -> bool:
    """A channel's slice (p cells) cut into ceil(slice bytes / TREE_CHUNK_BYTES) tree chunks."""
    return s.ranks % -(-(s.size_bytes // s.chunks) // TREE_CHUNK_BYTES) == 0


# Whether every split an algorithm's ranks make of ``ranks * chunks`` cells falls on whole
# cells. A range of L cells cut into q parts gives pieces of m times the bytes of the original
# range of m L elements cut into q parts exactly when q divides L (otherwise the cut pieces
# differ by m elements, the original's by one). Splits into p blocks, into k chunks of a block,
# into gpus and nodes (hierarchical: p = gpus * nodes), and all_to_all's p blocks always do.
# An algorithm in neither table runs twice.
_ALWAYS_WHOLE = {
    "broadcast": ("linear", "binomial", "pipelined_chain", "scatter_allgather"),
    "reduce": ("linear", "binomial", "reduce_scatter_gather"),
    "all_reduce": ("ring", "hierarchical", "reduce_broadcast", "recursive_doubling", "rabenseifner", "nccl_ring"),
    "all_gather": ("ring", "recursive_doubling", "nccl_ring"),
    "reduce_scatter": ("ring", "recursive_halving", "nccl_ring"),
    "all_to_all": ("pairwise", "direct", "bruck"),
    "gather": ("binomial",),
    "scatter": ("binomial",),
    "send_recv": ("direct",),
}
_WHOLE_WHEN = {
    ("all_reduce", "double_binary_tree"): _double_tree_halves_whole,
    ("all_reduce", "nccl_tree"): _nccl_tree_chunks_whole,
}


def _whole_cells(s: CollectiveScenario) -> bool:
    if s.algorithm in _ALWAYS_WHOLE.get(s.op, ()):
        return True
    condition = _WHOLE_WHEN.get((s.op, s.algorithm))
    return condition is not None and condition(s)


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


def _plain(s: CollectiveScenario) -> CollectiveResult:
    started = start_collective(s)
    with no_gc():
        started.env.run()
    return collect(started)


def _with_frames(s: CollectiveScenario) -> tuple[CollectiveResult, list[dict[str, Any]]]:
    """One run with bitmask payloads, the buffers copied each time simulated time moves on;
    afterwards each step keeps the copy at its last message's (or reduction's) end."""
    table = _mask_table(s.op, s.ranks, s.ranks * s.chunks, s.root)
    buffers = list(table)
    started = start_collective(s.replace(record="full", verify=False), buffers=buffers)
    env, call = started.env, started.call

    def snapshot() -> np.ndarray:  # the rows are views of ``table`` unless a program replaced one
        intact = all(mine is theirs for mine, theirs in zip(call.buffers, buffers))
        return table.copy() if intact else np.array(call.buffers)

    times: list[float] = [0.0]
    copies: list[np.ndarray] = [table.copy()]
    with no_gc():
        while True:
            upcoming = env.peek()
            if upcoming == math.inf:
                break
            if upcoming > env.now and env.now > times[-1]:
                times.append(env.now)
                copies.append(snapshot())
            try:
                env.step()
            except EmptySchedule:
                break
    times.append(env.now)
    copies.append(snapshot())
    result = collect(started)
    ends: dict[int, float] = {}
    for message in result.network.messages:
        ends[message[5]] = max(ends.get(message[5], 0.0), message[3])
    for compute in result.network.computes:
        ends[compute[4]] = max(ends.get(compute[4], 0.0), compute[2])
    frames = [{"step": -1, "cells": copies[0].tolist()}]
    for step in sorted(ends):
        index = int(np.searchsorted(times, ends[step], side="right")) - 1
        frames.append({"step": step, "cells": copies[max(index, 0)].tolist()})
    return result, frames


# --------------------------------------------------------------------------- crossover


def crossover(
    scenario: CollectiveScenario, sizes: tuple[int, ...] = CROSSOVER_SIZES, max_messages: int = CROSSOVER_MESSAGES
) -> list[dict[str, Any]]:
    """Time of every algorithm of the scenario's op that accepts its ranks and topology, per size.

    Each point is one collapsed call (:func:`sim.collective.collapsed.collective_time`: the closed form
    where the simulation reproduces it, a replay, or a cached simulation) when the scenario
    can be collapsed and its work fits the budget; the answer is cached per scenario, so a
    page that redraws with the same network and ranks pays nothing. Rows: algorithm,
    size_bytes, time_s, method, why (time None where it could not run)."""
    return [dict(row) for row in crossover_of(crossover_key(scenario), sizes, max_messages)]


def crossover_key(scenario: CollectiveScenario) -> str:
    """What a crossover depends on, as JSON: the scenario without the algorithm and size it
    varies itself (nor what it records or repeats), so those changes share one answer."""
    data = scenario.to_dict()
    for name in ("algorithm", "size_bytes", "record", "repetitions"):
        data.pop(name, None)
    return json.dumps(data, sort_keys=True, default=str)


def crossover_of(key: str, sizes: tuple[int, ...] = CROSSOVER_SIZES, max_messages: int = CROSSOVER_MESSAGES) -> tuple[dict[str, Any], ...]:
    """:func:`crossover` of a :func:`crossover_key` (cached; rows shared between callers, not to
    be changed): what another process can be sent instead of the scenario."""
    return _crossover(key, tuple(sizes), max_messages)


@lru_cache(maxsize=256)
def _crossover(key: str, sizes: tuple[int, ...], max_messages: int) -> tuple[dict[str, Any], ...]:
    data = json.loads(key)
    rows: list[dict[str, Any]] = []
    budget = max_messages
    op, element_bytes = data["op"], int(data.get("element_bytes", 4))
    names = algorithms_for(op)
    scenarios: dict[str, CollectiveScenario] = {}
    for algorithm in names:
        spec = algorithm_spec(op, algorithm)
        fields = {**data, "algorithm": algorithm, "size_bytes": element_bytes * int(data["ranks"]), "record": "aggregate"}
        fields["chunks"] = fields.get("chunks", 1) if spec.chunked else 1
        try:
            scenarios[algorithm] = CollectiveScenario.from_dict(fields)
        except CollsimError as error:
            rows.append({"algorithm": algorithm, "size_bytes": None, "time_s": None, "method": "n/a", "why": str(error)})
    # the cheapest algorithms first: the budget runs out on the costly ones, not before the rest
    for algorithm in sorted(scenarios, key=lambda name: work(scenarios[name]).cost):
        mine = scenarios[algorithm]
        routed = False  # routes are found once per algorithm, not once per size
        for index, nbytes in enumerate(sizes):
            point = mine.replace(size_bytes=max(nbytes - nbytes % element_bytes, element_bytes))
            closed = analytic.for_scenario(point)
            if closed is not None:
                rows.append(_row(algorithm, point, closed, "closed form"))
            elif (replayed := replay_time(point)) is not None:  # vectorized, no messages: costs no budget
                rows.append(_row(algorithm, point, replayed.time_s, "replayed"))
            elif index % 2 and index != len(sizes) - 1 and len(sizes) > 4:
                continue  # simulated curves: every other size shows the crossover at half the cost
            elif (cost := _point_cost(point, routed)) > POINT_MESSAGES and (extended := _extended_point(point, budget)) is not None:
                budget -= extended[1]
                routed = True
                rows.append(_row(algorithm, point, extended[0], "extrapolated"))
            elif cost > budget:  # per size: some algorithms cut big messages into pieces
                rows.append({**_row(algorithm, point, None, "n/a"), "why": "too large to simulate here"})
            else:
                budget -= cost
                routed = True
                if why_not_collapsed(point) is None:
                    timing = collective_time(point)
                    rows.append(_row(algorithm, point, timing.time_s, timing.source.replace("_", " ")))
                else:
                    rows.append(_row(algorithm, point, _plain(point).time_s, "simulated"))
    order = {name: index for index, name in enumerate(names)}
    return tuple(sorted(rows, key=lambda row: order[row["algorithm"]]))  # stable: sizes stay in order


def _extended_point(point: CollectiveScenario, budget: int) -> tuple[float, int] | None:
    """(time, messages simulated) of a big point from the same scenario at two smaller sizes,
    ``n / 2**j`` and ``n / 2**(j-1)``, the largest pair whose bigger run sends at most
    ``POINT_MESSAGES`` messages, extended linearly to ``n``; None when the message count does
    not grow with size (then the point is no bigger at a smaller size: simulate it) or the two
    runs do not fit in what is left of the crossover's ``budget``.

    The algorithms whose runs grow with size cut a message into fixed-size chunks (NCCL's tree
    and ring, 512 KiB a chunk): past the pipeline's fill each more chunk adds one period, so the
    time is linear in the size. Under fair sharing, measured against direct runs (nccl_tree,
    64 MiB and 1 GiB, p = 5 to 24, the explorer's network): within 2e-3 relative, for a twentieth
    of the work. Under fifo sharing the issue-order schedule settles later: exact at p <= 9 but
    5-8% off at p = 16-24, so fifo points are never extrapolated (simulated within the budget,
    else left out); tests/sim/test_explore.py checks both."""
    if point.sharing != "fair":
        return None
    n, element = point.size_bytes, point.element_bytes
    for j in range(2, 24):
        large = (n >> (j - 1)) // element * element
        small = (n >> j) // element * element
        if small < element * point.ranks:
            return None
        large_messages = work(point.replace(size_bytes=large)).messages
        if large_messages <= POINT_MESSAGES:
            break
    else:
        return None
    small_messages = work(point.replace(size_bytes=small)).messages
    if small_messages >= large_messages or small_messages + large_messages > budget:
        return None
    a, b = time_of(point.replace(size_bytes=small)), time_of(point.replace(size_bytes=large))
    return b + (n - large) * (b - a) / (large - small), small_messages + large_messages


def _point_cost(point: CollectiveScenario, routed: bool) -> int:
    told = work(point)
    return told.messages if routed else told.cost


def _row(algorithm: str, point: CollectiveScenario, time_s: float | None, method: str) -> dict[str, Any]:
    return {"algorithm": algorithm, "size_bytes": point.size_bytes, "time_s": time_s, "method": method, "why": ""}


# --------------------------------------------------------------------------- side by side

_HUGE_BANDWIDTH = 1e30  # makes n / bandwidth vanish while the scenario stays valid
PARTS = ("latency", "bandwidth", "reduction", "overhead", "contention")


def time_of(scenario: CollectiveScenario) -> float:
    """One call's time: collapsed (closed form, replay, cached run) when the scenario allows it."""
    if why_not_collapsed(scenario) is None:
        return collective_time(scenario).time_s
    return _plain(scenario.replace(record="aggregate")).time_s


def decompose(scenario: CollectiveScenario) -> dict[str, float]:
    """A call's time split into latency, bandwidth, reduction, overhead and contention.

    Each of the first three is the time of the same call with only that cost switched on
    (alpha alone, beta alone, gamma alone); overhead is ``o``; contention is what these do not
    explain when they act together: waiting for shared links and ports (and, when negative,
    costs that overlap). On ``switch(p)`` with a closed form the contention is zero."""
    s = scenario.replace(repetitions=1, stragglers=(), jitter_s=0.0)
    total = time_of(s)
    fast = {"bandwidth_Bps": _HUGE_BANDWIDTH}
    if s.intra_bandwidth_Bps is not None:
        fast["intra_bandwidth_Bps"] = _HUGE_BANDWIDTH
    still = {"latency_s": 0.0}
    if s.intra_latency_s is not None:
        still["intra_latency_s"] = 0.0
    bare = {"overhead_s": 0.0, "reduce_bandwidth_Bps": None}
    latency = time_of(s.replace(**fast, **bare))
    bandwidth = time_of(s.replace(**still, **bare))
    reduction = time_of(s.replace(**fast, **still, overhead_s=0.0)) if s.reduce_bandwidth_Bps else 0.0
    parts = {"latency": latency, "bandwidth": bandwidth, "reduction": reduction, "overhead": s.overhead_s}
    rest = total - sum(parts.values())
    return {**parts, "contention": rest if abs(rest) > 1e-12 * max(total, 1e-30) else 0.0, "total": total}
