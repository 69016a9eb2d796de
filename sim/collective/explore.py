"""What an explorer needs from the model besides a run: the work of a scenario without running
it, buffer frames recorded while the run goes, the phases of an algorithm, honest closed forms,
and the algorithm crossover over message size (cached).

Pure model code (standard library, numpy, simpy through the runner): the webapp draws what
these functions return, and ``collsim sim crossover`` prints the crossover.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sim.algorithms.registry import Shape, algorithm_spec, algorithms_for
from sim.collective import analytic, runner
from sim.collective.analytic import ClosedForm  # noqa: F401  (public here too)
from sim.collective.analytic import status as closed_form  # noqa: F401  (public here too)
from sim.collective.collapsed import collective_time, replay_time, time_of, why_not_collapsed
from sim.collective.frames import FRAME_MAX_CELLS, FRAME_MAX_RANKS, frames_possible, miniature, same_run_scale  # noqa: F401  (public here too)
from sim.collective.narrative import description, phase_of, phase_starts  # noqa: F401  (kept public here)
from sim.collective.results import CollectiveResult
from sim.errors import CollsimError
from sim.scenario import CollectiveScenario

ROUTE_COST = 80  # finding a new (src, dst) route costs about as much as simulating 80 messages
CROSSOVER_SIZES = tuple(4**k * 1024 for k in range(11))  # 1 KiB .. 1 GiB, x4
CROSSOVER_MESSAGES = 60_000  # the per-message simulations of one crossover, all points together (about 1 s here)
POINT_MESSAGES = 3_000  # a crossover point whose run sends more is extrapolated from two smaller runs


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


def _counts(s: CollectiveScenario) -> tuple[int, int, bool]:
    """(messages, pairs, exact) of one call, from the algorithm's record; (-1, -1, False) for
    an algorithm whose record has no counts."""
    spec = algorithm_spec(s.op, s.algorithm)
    if spec is None or spec.counts is None:
        return -1, -1, False
    k = s.chunks if spec.chunked else 1
    gpus = s.gpus_per_node_resolved if s.topology == "two_level" else s.ranks
    messages, pairs = spec.counts(Shape(s.ranks, k, gpus, s.elements, s.element_bytes))
    return messages, pairs, True


def work(scenario: CollectiveScenario) -> Work:
    """The messages and routes a per-message simulation of ``scenario`` needs, from the
    algorithm's structure (no run): exact message counts from the algorithm's record (the
    tests check them against runs), a bound on routes. An algorithm without counts is run at
    8 and 16 ranks (one chunk, milliseconds) and its counts extrapolated with the growth
    exponent the two give (``exact=False``); if even that fails, the bound of every pair, both
    ways, each chunk."""
    s = scenario
    messages, pairs, exact = _counts(s)
    if messages < 0:
        messages, pairs = _extrapolated(s)
    return Work(messages * s.repetitions, min(pairs, s.ranks * (s.ranks - 1)), exact)


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
    result = runner.run(s.replace(**changes))
    return result.message_count, len(result.overflow)


# --------------------------------------------------------------------------- phases


# --------------------------------------------------------------------------- run with frames


def run(scenario: CollectiveScenario, frames: bool = False) -> tuple[CollectiveResult, list[dict[str, Any]] | None]:
    """Simulate ``scenario``; with ``frames`` (and a scenario small enough to show:
    ``frames_possible``) also each rank's buffer as bitmask cells at the end of every step
    (:func:`sim.collective.runner.run`, :mod:`sim.collective.frames`)."""
    recorded: list[dict[str, Any]] = []
    result = runner.run(scenario, frames=recorded if frames else None)
    return result, recorded or None


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
    # size by size, the cheapest algorithms first at each: the budget runs out on big points of
    # costly algorithms, not before the rest have their small ones.
    # Two passes: every other size of every algorithm first (a curve at half the cost), then the
    # sizes in between while the budget lasts, so each algorithm has a row at every size (its time
    # None and the reason where it was not simulated) and the fastest at a size is never chosen
    # among the few algorithms that happened to have a point there.
    order_by_cost = sorted(scenarios, key=lambda name: work(scenarios[name]).cost)
    routed: set[str] = set()  # routes are found once per algorithm, not once per size
    state = {"budget": max_messages}
    skipped: list[tuple[str, int]] = []
    for index, nbytes in enumerate(sizes):  # size by size: every algorithm's small points before any big one
        for algorithm in order_by_cost:
            point = scenarios[algorithm].replace(size_bytes=max(nbytes - nbytes % element_bytes, element_bytes))
            row = _free_point(algorithm, point)
            if row is None and index % 2 and index != len(sizes) - 1 and len(sizes) > 4:
                skipped.append((algorithm, index))
                continue
            rows.append(row or _budget_point(algorithm, point, routed, state))
    skipped.sort(key=lambda item: item[1])  # the sizes in between, smallest (cheapest) first
    for algorithm, index in skipped:
        point = scenarios[algorithm].replace(size_bytes=max(sizes[index] - sizes[index] % element_bytes, element_bytes))
        rows.append(_budget_point(algorithm, point, routed, state))
    order = {name: index for index, name in enumerate(names)}
    return tuple(sorted(rows, key=lambda row: (order[row["algorithm"]], row["size_bytes"] or 0)))


def _free_point(algorithm: str, point: CollectiveScenario) -> dict[str, Any] | None:
    """The row of a point that costs no simulation budget: the closed form or a vectorized
    replay; None when the point must be simulated."""
    closed = analytic.for_scenario(point)
    if closed is not None:
        return _row(algorithm, point, closed, "closed form")
    replayed = replay_time(point)
    return None if replayed is None else _row(algorithm, point, replayed.time_s, "replayed")


def _budget_point(algorithm: str, point: CollectiveScenario, routed: set[str], state: dict[str, int]) -> dict[str, Any]:
    """The row of a point that is simulated (or extended from two smaller runs) within what is
    left of the crossover's message budget, ``state["budget"]`` (spent here); past the budget
    its time is None and ``why`` says so."""
    free = _free_point(algorithm, point)
    if free is not None:
        return free
    cost = _point_cost(point, algorithm in routed)
    if cost > POINT_MESSAGES and (extended := _extended_point(point, state["budget"])) is not None:
        state["budget"] -= extended[1]
        routed.add(algorithm)
        return _row(algorithm, point, extended[0], "extrapolated")
    if cost > state["budget"]:  # per size: some algorithms cut big messages into pieces
        return {**_row(algorithm, point, None, "n/a"), "why": "too large to simulate here"}
    state["budget"] -= cost
    routed.add(algorithm)
    if why_not_collapsed(point) is None:
        timing = collective_time(point)
        return _row(algorithm, point, timing.time_s, timing.source.replace("_", " "))
    return _row(algorithm, point, runner.run(point).time_s, "simulated")


def fastest(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fastest algorithm at each size of crossover ``rows``, chosen only among algorithms
    with a time at that size: size_bytes, algorithm, time_s, and ``missing``, the algorithms
    that run at other sizes but have no time at this one (so the winner is only the fastest of
    those compared), with ``why`` each."""
    rows = list(rows)
    running = {row["algorithm"] for row in rows if row["time_s"] is not None}
    best: dict[int, dict[str, Any]] = {}
    for row in rows:
        size = row["size_bytes"]
        if size is None:
            continue
        entry = best.setdefault(size, {"size_bytes": size, "algorithm": None, "time_s": None, "missing": {}})
        if row["time_s"] is None:
            if row["algorithm"] in running:
                entry["missing"][row["algorithm"]] = row["why"] or "no time at this size"
        elif entry["time_s"] is None or row["time_s"] < entry["time_s"]:
            entry["algorithm"], entry["time_s"] = row["algorithm"], row["time_s"]
    for size, entry in best.items():  # an algorithm with no row at all at a size is missing too
        present = {row["algorithm"] for row in rows if row["size_bytes"] == size}
        for name in sorted(running - present):
            entry["missing"][name] = "no point at this size"
    return [best[size] for size in sorted(best)]


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
    else left out); tests/collective/test_explore.py checks both."""
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


def closed_form_time(scenario: CollectiveScenario) -> float | None:
    """The closed form's time, exact or approximate (None where there is none)."""
    return closed_form(scenario).time_s


def decompose(scenario: CollectiveScenario, timing: Callable[[CollectiveScenario], float | None] = time_of) -> dict[str, float]:
    """A call's time split into latency, bandwidth, reduction, overhead and contention.

    Each of the first three is the time of the same call with only that cost switched on
    (alpha alone, beta alone, gamma alone); overhead is ``o``; contention is what these do not
    explain when they act together: waiting for shared links and ports (and, when negative,
    costs that overlap). On ``switch(p)`` with a closed form the contention is zero.
    ``timing`` gives a scenario's time: a run (``time_of``, the default) or the closed form
    (``closed_form_time``: the alpha/beta/gamma terms of the formula); {} where it has none."""
    s = scenario.replace(repetitions=1, stragglers=(), jitter_s=0.0)
    fast = {"bandwidth_Bps": _HUGE_BANDWIDTH}
    if s.intra_bandwidth_Bps is not None:
        fast["intra_bandwidth_Bps"] = _HUGE_BANDWIDTH
    still = {"latency_s": 0.0}
    if s.intra_latency_s is not None:
        still["intra_latency_s"] = 0.0
    bare = {"overhead_s": 0.0, "reduce_bandwidth_Bps": None}
    total = timing(s)
    latency = timing(s.replace(**fast, **bare))
    bandwidth = timing(s.replace(**still, **bare))
    reduction = timing(s.replace(**fast, **still, overhead_s=0.0)) if s.reduce_bandwidth_Bps else 0.0
    if None in (total, latency, bandwidth, reduction):
        return {}
    parts = {"latency": latency, "bandwidth": bandwidth, "reduction": reduction, "overhead": s.overhead_s}
    rest = total - sum(parts.values())
    return {**parts, "contention": rest if abs(rest) > 1e-12 * max(total, 1e-30) else 0.0, "total": total}
