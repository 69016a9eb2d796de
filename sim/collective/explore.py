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
from contextvars import ContextVar
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from sim.algorithms.registry import Shape, algorithm_spec, algorithms_for
from sim.collective import analytic, runner
from sim.collective.analytic import ClosedForm  # noqa: F401  (public here too)
from sim.collective.analytic import status as closed_form  # noqa: F401  (public here too)
from sim.collective.collapsed import collective_time, replay_time, time_of, why_not_collapsed
from sim.collective.frames import FRAME_MAX_CELLS, FRAME_MAX_RANKS, frames_possible, miniature, run_with_frames, same_run_scale  # noqa: F401  (public here too)
from sim.collective.narrative import description, phase_of, phase_starts  # noqa: F401  (kept public here)
from sim.collective.pick import runs_as_picked
from sim.collective.results import CollectiveResult
from sim.errors import CollsimError
from sim.hardware.uncertainty import interval
from sim.scenario import CollectiveScenario

if TYPE_CHECKING:
    from sim.collective.plan import Plan

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


def run(
    scenario: CollectiveScenario, frames: bool = False, plan: Plan | None = None
) -> tuple[CollectiveResult, list[dict[str, Any]] | None]:
    """Simulate ``scenario``; with ``frames`` (and a scenario small enough to show:
    ``frames_possible``) also each rank's buffer as bitmask cells at the end of every step
    (:func:`sim.collective.runner.run`, :func:`sim.collective.frames.run_with_frames`; ``plan``: theirs)."""
    if not frames:
        return runner.run(scenario, plan=plan), None
    recorded: list[dict[str, Any]] = []
    result = run_with_frames(scenario, recorded, plan=plan)
    return result, recorded or None


# --------------------------------------------------------------------------- crossover


Progress = Callable[[int, int], None]  # (points answered, points in all)
_PROGRESS: ContextVar[Progress] = ContextVar("crossover_progress", default=lambda done, total: None)


def crossover(
    scenario: CollectiveScenario,
    sizes: tuple[int, ...] = CROSSOVER_SIZES,
    max_messages: int = CROSSOVER_MESSAGES,
    on_point: Progress | None = None,
) -> list[dict[str, Any]]:
    """Time of every algorithm of the scenario's op that accepts its ranks and topology, per size.

    Each point is one collapsed call (:func:`sim.collective.collapsed.collective_time`: the closed form
    where the simulation reproduces it, a replay, or a cached simulation) when the scenario
    can be collapsed and its work fits the budget; the answer is cached per scenario, so a
    page that redraws with the same network and ranks pays nothing. Rows: algorithm,
    size_bytes, time_s, method, why (time None where it could not run), time_interval_s (the
    80 % interval on a hardware preset, :mod:`sim.hardware.uncertainty`; None without one). ``on_point(done, total)``
    is told as points are answered (nothing when the answer is cached)."""
    return [dict(row) for row in crossover_of(crossover_key(scenario), sizes, max_messages, on_point)]


def crossover_key(scenario: CollectiveScenario) -> str:
    """What a crossover depends on, as JSON: the scenario without the algorithm and size it
    varies itself (nor what it records or repeats), so those changes share one answer. Each
    algorithm's point is then the scenario ``sim collective --algorithm A --size S`` runs with
    the same inputs; NCCL's pick's channels and sharing are the pick's, not inputs
    (:func:`sim.collective.pick.runs_as_picked`), so the others run without them."""
    data = scenario.to_dict()
    for name in ("algorithm", "size_bytes", "record", "repetitions"):
        data.pop(name, None)
    if runs_as_picked(scenario):  # NCCL's pick set its channels and sharing itself (issue 36, E2)
        defaults = {item.name: item.default for item in dataclass_fields(CollectiveScenario)}
        data.update(chunks=defaults["chunks"], sharing=defaults["sharing"])
    return json.dumps(data, sort_keys=True, default=str)


def crossover_of(
    key: str, sizes: tuple[int, ...] = CROSSOVER_SIZES, max_messages: int = CROSSOVER_MESSAGES, on_point: Progress | None = None
) -> tuple[dict[str, Any], ...]:
    """:func:`crossover` of a :func:`crossover_key` (cached; rows shared between callers, not to
    be changed): what another process can be sent instead of the scenario."""
    if on_point is None:
        return _crossover(key, tuple(sizes), max_messages)
    token = _PROGRESS.set(on_point)  # the cached function keeps its arguments hashable and few
    try:
        return _crossover(key, tuple(sizes), max_messages)
    finally:
        _PROGRESS.reset(token)


@lru_cache(maxsize=256)
def _crossover(key: str, sizes: tuple[int, ...], max_messages: int) -> tuple[dict[str, Any], ...]:
    data = json.loads(key)
    names = algorithms_for(data["op"])
    scenarios, rows = _crossover_scenarios(data, names)
    report = _PROGRESS.get()
    sizes = tuple(sorted(set(sizes)))  # smallest first: the plan keeps each algorithm's smallest points
    total, count = len(scenarios) * len(sizes), 0
    pending: dict[str, list[CollectiveScenario]] = {name: [] for name in scenarios}
    for name, base in scenarios.items():  # closed forms and replays first: they cost no budget
        for nbytes in sizes:
            point = base.replace(size_bytes=max(nbytes - nbytes % base.element_bytes, base.element_bytes))
            row = _free_point(name, point)
            if row is None:
                pending[name].append(point)
                continue
            rows.append(row)
            count += 1
            report(count, total)
    chosen, refused = _plan(pending, max_messages)
    for name, point, extension in chosen:
        rows.append(_simulated_point(name, point, extension))
        count += 1
        report(count, total)
    rows += [{**_row(name, point, None, "n/a"), "why": TOO_LARGE} for name, point in refused]
    report(total, total)
    order = {name: index for index, name in enumerate(names)}
    return tuple(sorted(rows, key=lambda row: (order[row["algorithm"]], row["size_bytes"] or 0)))


def _crossover_scenarios(data: dict[str, Any], names: list[str]) -> tuple[dict[str, CollectiveScenario], list[dict[str, Any]]]:
    """Each algorithm's scenario at the smallest size (what ``sim collective --algorithm A`` runs
    with the crossover's inputs), and a row saying why for each algorithm that cannot run."""
    scenarios: dict[str, CollectiveScenario] = {}
    rows: list[dict[str, Any]] = []
    for algorithm in names:
        spec = algorithm_spec(data["op"], algorithm)
        fields = {
            **data,
            "algorithm": algorithm,
            "size_bytes": int(data.get("element_bytes", 4)) * int(data["ranks"]),
            "record": "aggregate",
        }
        fields["chunks"] = fields.get("chunks", 1) if spec.chunked else 1
        try:
            scenarios[algorithm] = CollectiveScenario.from_dict(fields)
        except CollsimError as error:
            rows.append(
                {"algorithm": algorithm, "size_bytes": None, "time_s": None, "method": "n/a", "why": str(error), "time_interval_s": None}
            )
    return scenarios, rows


TOO_LARGE = "too large to simulate here"  # a point beyond the crossover's budget (its time None)
Extension = tuple[int, int, int]  # (smaller size, larger size, messages of both runs)


def _plan(
    pending: dict[str, list[CollectiveScenario]], budget: int
) -> tuple[list[tuple[str, CollectiveScenario, Extension | None]], list[tuple[str, CollectiveScenario]]]:
    """Which of the points that must be simulated fit a budget of ``budget`` messages: (chosen,
    each with the two runs it extends from or None; refused). First every algorithm's smallest
    point, cheapest first (each curve starts; the first also finds the routes); then the rest
    of the budget is shared max-min fairly: the algorithms in order of what their remaining
    points cost, each takes them in size order while they fit its share (what is left over an
    equal split among those not yet served), so the cheap curves are drawn whole and the
    costly ones split the rest. What an algorithm has simulated is always its smallest sizes: a
    point is never left out while a larger one of the same algorithm is shown (issue 36).
    Costs are told before anything runs (:func:`work`)."""
    costed = {
        name: [(point, *_cost(point, index == 0)) for index, point in enumerate(points)] for name, points in pending.items() if points
    }
    chosen: list[tuple[str, CollectiveScenario, Extension | None]] = []
    refused: list[tuple[str, CollectiveScenario]] = []
    for name in sorted(costed, key=lambda name: costed[name][0][1]):
        point, cost, extension = costed[name][0]
        if cost > budget:
            refused += [(name, point) for point, _, _ in costed.pop(name)]
            continue
        budget -= cost
        chosen.append((name, point, extension))
    order = sorted(costed, key=lambda name: sum(cost for _, cost, _ in costed[name][1:]))
    for index, name in enumerate(order):
        share, spent = budget / (len(order) - index), 0
        for position, (point, cost, extension) in enumerate(costed[name][1:], start=1):
            if spent + cost > share:
                refused += [(name, later) for later, _, _ in costed[name][position:]]
                break
            spent += cost
            chosen.append((name, point, extension))
        budget -= spent
    return chosen, refused


def _cost(point: CollectiveScenario, first: bool) -> tuple[int, Extension | None]:
    """(messages simulated for a point, the two runs it extends from or None); ``first``: the
    algorithm's first point, which also finds its routes."""
    told = work(point)
    routes = ROUTE_COST * told.pairs if first else 0
    extension = _extension(point) if told.messages > POINT_MESSAGES else None
    return (extension[2] if extension else told.messages) + routes, extension


def _simulated_point(algorithm: str, point: CollectiveScenario, extension: Extension | None) -> dict[str, Any]:
    """The row of a planned point: extended from two smaller runs, a collapsed call or a run."""
    if extension is not None:
        return _row(algorithm, point, _extended_time(point, extension), "extrapolated")
    if why_not_collapsed(point) is None:
        timing = collective_time(point)
        return _row(algorithm, point, timing.time_s, timing.source.replace("_", " "))
    return _row(algorithm, point, runner.run(point).time_s, "simulated")


def _free_point(algorithm: str, point: CollectiveScenario) -> dict[str, Any] | None:
    """The row of a point that costs no simulation budget: the closed form or a vectorized
    replay; None when the point must be simulated."""
    closed = analytic.for_scenario(point)
    if closed is not None:
        return _row(algorithm, point, closed, "closed form")
    replayed = replay_time(point)
    return None if replayed is None else _row(algorithm, point, replayed.time_s, "replayed")


def fastest(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fastest algorithm at each size of crossover ``rows``, chosen only among algorithms
    with a time at that size: size_bytes, algorithm, time_s, and ``missing``, the algorithms
    that run but have no time at this one (so the winner is only the fastest of those
    compared), with ``why`` each."""
    rows = list(rows)
    running = {row["algorithm"] for row in rows if row["time_s"] is not None}
    best: dict[int, dict[str, Any]] = {}
    for row in rows:
        size = row["size_bytes"]
        if size is None:
            continue
        entry = best.setdefault(size, {"size_bytes": size, "algorithm": None, "time_s": None, "missing": {}})
        if row["time_s"] is None:  # left out at this size (beyond the budget): the winner is only among the rest
            entry["missing"][row["algorithm"]] = row["why"] or "no time at this size"
        elif entry["time_s"] is None or row["time_s"] < entry["time_s"]:
            entry["algorithm"], entry["time_s"] = row["algorithm"], row["time_s"]
    for size, entry in best.items():  # an algorithm with no row at all at a size is missing too
        present = {row["algorithm"] for row in rows if row["size_bytes"] == size}
        for name in sorted(running - present):
            entry["missing"][name] = "no point at this size"
    return [best[size] for size in sorted(best)]


def _extended_point(point: CollectiveScenario, budget: int) -> tuple[float, int] | None:
    """(time, messages simulated) of a big point extended from two smaller runs
    (:func:`_extension`), or None when it cannot be or the two runs need more than ``budget``."""
    extension = _extension(point)
    if extension is None or extension[2] > budget:
        return None
    return _extended_time(point, extension), extension[2]


def _extension(point: CollectiveScenario) -> Extension | None:
    """The two smaller sizes a big point is extended from, ``n / 2**j`` and ``n / 2**(j-1)``, the
    largest pair whose bigger run sends at most ``POINT_MESSAGES`` messages, and the messages of
    both runs; None when the message count does not grow with size (then the point is no bigger
    at a smaller size: simulate it).

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
    if small_messages >= large_messages:
        return None
    return small, large, small_messages + large_messages


def _extended_time(point: CollectiveScenario, extension: Extension) -> float:
    """The line through the runs at the two smaller sizes, at the point's size."""
    small, large, _ = extension
    a, b = time_of(point.replace(size_bytes=small)), time_of(point.replace(size_bytes=large))
    return b + (point.size_bytes - large) * (b - a) / (large - small)


def _row(algorithm: str, point: CollectiveScenario, time_s: float | None, method: str) -> dict[str, Any]:
    """A crossover point; ``time_interval_s`` the 80 % interval ``sim collective`` gives the same
    point on a hardware preset (:func:`sim.hardware.uncertainty.interval`), else None."""
    found = interval(point, time_s)
    return {"algorithm": algorithm, "size_bytes": point.size_bytes, "time_s": time_s, "method": method, "why": "",
            "time_interval_s": None if found is None else [found.low_s, found.high_s]}  # fmt: skip


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
