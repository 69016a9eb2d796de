"""Collapsed mode: each collective call is one timed event instead of thousands of messages.

Where per-message detail is not needed (one call at a time, so no contention between concurrent
collectives, and symmetric ranks: no stragglers, no jitter), a call's time comes from

1. the closed form (:mod:`sim.collective.analytic`) where the DES is known to reproduce it exactly
   (``analytic.for_scenario``: switch topology, an even split of the elements), else
2. for ring all-reduce on a topology whose ring hops share no link (switch with any split, ring,
   two_level), a max-plus replay of the per-message recursion, vectorized over ranks with
   numpy: the same float operations as the DES, so the same time to the last bit, in
   milliseconds (512 ranks: 30 ms instead of 1.7 s), else
3. one per-message simulation of a single call, cached by scenario, so a DDP step that issues
   the same bucket size many times, or a sweep, pays for it once per process.

Both give the full simulation's time for a single call (tests/collective/test_collapsed.py checks it); ``repetitions``
back-to-back calls take ``repetitions`` times one call (the collapsed model's definition; the
full simulation lets a rank that finishes early start its next call early). Scenarios that are
not symmetric, or that ask for ``verify`` (payloads need messages), run in full mode, and the
result says so.

For the DDP step model: ``collective_time(scenario).time_s`` is a drop-in for
``run_collective(scenario).time_s``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from sim.algorithms.registry import Shape, algorithm_spec
from sim.collective import analytic
from sim.collective.results import algbw_GBps, summary_head
from sim.fields import breaks
from sim.scenario import CollectiveScenario

MODES = ("full", "collapsed")


@dataclass(frozen=True)
class Timing:
    """One call's time and where it came from: "closed_form", "replayed" or "simulated" (cached)."""

    time_s: float
    source: str
    message_count: int | None = None
    bytes_sent: int | None = None
    steps: int | None = None


def why_not_collapsed(scenario: CollectiveScenario) -> str | None:
    """None when the scenario can be collapsed, else the reason it needs per-message simulation."""
    return breaks(scenario, "collapsed")  # stragglers, jitter, verify, groups: their entries in sim.fields


def _single(scenario: CollectiveScenario) -> CollectiveScenario:
    """The one call a collapsed run times (repetitions ignored)."""
    return scenario.replace(repetitions=1, verify=False, record="aggregate", seed=0) if not scenario.jitter_s else scenario


def simulated_call(scenario: CollectiveScenario) -> CollectiveScenario | None:
    """The call a collapsed run of ``scenario`` simulates message by message (no closed form, no
    ring replay: a ring all-reduce is taken as replayed), or None where it does not."""
    single = _single(scenario)
    if analytic.for_scenario(single) is not None or (single.op, single.algorithm) == ("all_reduce", "ring"):
        return None
    return single


def collective_time(scenario: CollectiveScenario, on_progress: Any = None) -> Timing:
    """Seconds one call of ``scenario`` takes (repetitions ignored), closed form or cached DES
    (``on_progress``: the DES's, sim.collective.runner.run)."""
    single = _single(scenario)
    exact = analytic.for_scenario(single)
    if exact is not None:
        return Timing(exact, "closed_form", *_ring_counts(single))
    replayed = _ring_replay(single)
    if replayed is not None:
        return replayed
    return _simulated(single, on_progress)


def replay_time(scenario: CollectiveScenario) -> Timing | None:
    """One call's time by the vectorized ring replay (exact, no per-message simulation), or
    None when the scenario cannot be replayed (another algorithm, shared hops, stragglers...)."""
    if why_not_collapsed(scenario) is not None:
        return None
    return _ring_replay(scenario.replace(repetitions=1, verify=False, record="aggregate", seed=0))


def _ring_counts(s: CollectiveScenario) -> tuple[int | None, int | None, int | None]:
    """(messages, bytes on the wire, steps) of the ring algorithms with an even split: each of
    the record's phases is p - 1 steps in which every rank sends 1/p of the buffer."""
    p, n = s.ranks, s.size_bytes
    if s.algorithm != "ring" or p == 1:
        return None, None, None
    spec = algorithm_spec(s.op, s.algorithm)
    phases = len(spec.phases)
    messages = spec.counts(Shape(p, s.chunks, p, s.elements, s.element_bytes))[0]
    return messages, phases * (p - 1) * n, phases * (p - 1)


def _ring_replay(s: CollectiveScenario) -> Timing | None:
    """Ring all-reduce replayed as a max-plus recursion over (rank, message index), vectorized
    over ranks: exact (the same float operations as the DES) whenever no two ring hops share a
    link or port, as on switch, ring and two_level topologies; None elsewhere.

    Rank j's i-th send is issued at the overhead (first k), or once it has handled receive i-k;
    it starts when issued, its hop is free (the hop's previous message ended) and, above the
    eager limit, rank j+1 has posted receive i (right after handling receive i-1), and lasts
    latency + bytes/bandwidth. Receive i of rank j is send i of rank j-1; handling it ends at
    max(previous handling, arrival) plus the reduction in the reduce-scatter half.
    """
    import numpy as np

    from sim.algorithms.call import Call

    p, k = s.ranks, s.chunks
    if s.op != "all_reduce" or s.algorithm != "ring" or p < 2 or s.jitter_s or s.stragglers:
        return None
    hops = _disjoint_ring_hops(s)
    if hops is None:
        return None
    latency, inverse_bandwidth = hops
    call = Call(s.op, p, s.size_bytes, s.element_bytes, k)
    chunk_bytes = np.array([[sub[2] for sub in call.pieces(k, piece)] for piece in call.pieces(p)], dtype=np.float64)
    gamma = 1.0 / s.reduce_bandwidth_Bps if s.reduce_bandwidth_Bps else 0.0
    ranks = np.arange(p)
    left, right = (ranks - 1) % p, (ranks + 1) % p  # indexing, not np.roll: a tenth of the cost
    half = (p - 1) * k  # sends (and receives) per half
    handled: list[np.ndarray] = []  # P[i]: when each rank has handled its receive i
    end = np.zeros(p)  # end of each rank's previous send (its hop is free then)
    start_time = np.full(p, s.overhead_s + 0.0)
    for i in range(2 * half):
        step, chunk = divmod(i % half, k)
        piece = (ranks - step - 1) % p if i < half else (ranks - step) % p
        nbytes = chunk_bytes[piece, chunk]
        if i < k:
            issue = start_time
        elif half <= i < half + k:
            issue = handled[half - 1]
        else:
            issue = handled[i - k]
        ready = np.maximum(issue, end)
        if s.eager_limit_bytes < np.max(nbytes):  # rendezvous: rank j+1 posts receive i once it has handled i-1
            posted = (handled[i - 1] if i else start_time)[right]
            ready = np.where(nbytes > s.eager_limit_bytes, np.maximum(ready, posted), ready)
        end = ready + latency + nbytes * inverse_bandwidth
        arrival, arrived_bytes = end[left], nbytes[left]  # rank j hears from j-1
        previous = handled[i - 1] if i else start_time
        done = np.maximum(previous, arrival)
        if i < half and gamma:
            done = done + arrived_bytes * gamma
        handled.append(done)
    finish = np.maximum(handled[-1], end)
    messages = 2 * p * half
    return Timing(float(finish.max()), "replayed", messages, int(round(2 * (p - 1) * s.size_bytes)), 2 * (p - 1))


def _disjoint_ring_hops(s: CollectiveScenario) -> tuple[Any, Any] | None:
    """(latency, 1/bandwidth) per ring hop j -> j+1 when no two hops share a resource.

    The same for every size: kept per network (a DDP sweep replays ~100 sizes; finding 64 routes
    on a two_level network with NIC rails took ~75 ms each time)."""
    return _ring_hops(s.replace(size_bytes=s.element_bytes * s.ranks * max(1, s.chunks)))


@lru_cache(maxsize=256)
def _ring_hops(s: CollectiveScenario) -> tuple[Any, Any] | None:
    import numpy as np
    import simpy

    from sim.collective.runner import build_topology
    from sim.network import Network

    net = Network(simpy.Environment(), build_topology(s))
    routes = [net.route(j, (j + 1) % s.ranks) for j in range(s.ranks)]
    used: set[int] = set()
    for resources, _, _ in routes:
        if used.intersection(resources):
            return None
        used.update(resources)
    latency, inverse_bandwidth = np.array([r[1] for r in routes]), np.array([r[2] for r in routes])
    latency.flags.writeable = inverse_bandwidth.flags.writeable = False  # shared by every caller
    return latency, inverse_bandwidth


def time_of(scenario: CollectiveScenario) -> float:
    """One call's time: collapsed (closed form, replay, cached run) when the scenario allows it,
    else one per-message run."""
    from sim.collective.runner import run

    if why_not_collapsed(scenario) is None:
        return collective_time(scenario).time_s
    return run(scenario.replace(record="aggregate")).time_s


@lru_cache(maxsize=4096)
def _simulated(single: CollectiveScenario, on_progress: Any = None) -> Timing:
    from sim.collective.runner import run

    result = run(single, on_progress)
    return Timing(result.time_s, "simulated", result.message_count, result.bytes_sent, result.steps)


@dataclass
class CollapsedResult:
    """What a collapsed run produced; ``summary()`` has the keys of the full result's."""

    scenario: CollectiveScenario
    timing: Timing
    mode: str = "collapsed"
    analytic_time_s: float | None = field(default=None)

    @property
    def time_s(self) -> float:
        return self.timing.time_s + 0.0

    @property
    def total_time_s(self) -> float:
        return self.timing.time_s * self.scenario.repetitions

    def summary(self, preset: Any = None) -> dict[str, Any]:
        s, t = self.scenario, self.timing
        reps = s.repetitions
        return {
            **summary_head(s, t.time_s, self.analytic_time_s, preset),
            "messages": None if t.message_count is None else t.message_count * reps,
            "bytes_on_wire": None if t.bytes_sent is None else t.bytes_sent * reps,
            "steps": t.steps,
            "verified": None,
            "mode": "collapsed",
            "collapsed_source": t.source,
            "repetitions": reps,
            "rank_end_s": {"min": self.total_time_s, "max": self.total_time_s},
            "algbw_GBps": algbw_GBps(s.size_bytes, t.time_s, s.op),
            "busiest_link": None,
            "events_recorded": 0,
            "events_truncated": False,
            "scenario": s.to_dict(),
        }


def run(scenario: CollectiveScenario, mode: str = "full", plan: Any = None, on_progress: Any = None) -> Any:
    """Run ``scenario`` in ``mode``; collapsed falls back to full (and says why) where it cannot apply.
    ``plan``: the scenario's (sim.collective.plan), whose topology a full run uses; ``on_progress``:
    the DES's where it runs (sim.collective.runner.run)."""
    from sim.collective.runner import run as run_full

    if mode not in MODES:
        from sim.errors import CollsimError

        raise CollsimError(f"mode: must be one of {', '.join(MODES)}, got {mode!r}")
    reason = why_not_collapsed(scenario) if mode == "collapsed" else None
    if mode == "full" or reason:
        result = run_full(scenario, on_progress, plan=plan)
        if reason:
            result = replace(result, mode_note=f"collapsed mode not applicable ({reason}); ran full")
        return result
    return CollapsedResult(scenario, collective_time(scenario, on_progress), analytic_time_s=analytic.for_scenario(scenario))


def summarize(result: Any, preset: Any = None) -> dict[str, Any]:
    """``result.summary()`` plus, where collapsed mode fell back to full, the reason; ``preset``:
    the scenario's, loaded already (its plan's)."""
    summary = result.summary(preset)
    note = getattr(result, "mode_note", None)
    if note:
        summary["mode_note"] = note
    return summary
