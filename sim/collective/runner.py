"""Run a collective scenario: build the topology, start one SimPy process per rank, collect."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import simpy

from sim.algorithms.call import Call
from sim.algorithms.registry import algorithm_spec
from sim.collective import analytic
from sim.collective.groups import group_closed_form, group_programs, group_times
from sim.collective.plan import resolve
from sim.collective.results import CollectiveResult, records_of
from sim.collective.verify import check, initial_buffers, prepare
from sim.errors import DeadlockError
from sim.network import Network, make_network
from sim.network import topology as topo
from sim.network.simpy_core import BoundProcess
from sim.scenario import CollectiveScenario

if TYPE_CHECKING:  # a plain run loads no preset reader (yaml)
    from sim.collective.plan import Plan
    from sim.hardware.presets import Preset

__all__ = [
    "PROGRESS_EVENTS",
    "PROGRESS_EVERY_S",
    "Started",
    "build_topology",
    "collect",
    "drive",
    "make_call",
    "no_gc",
    "planned_topology",
    "run",
    "run_collective",
    "start_collective",
    "wire_copies",
]


@contextmanager
def no_gc() -> Iterator[None]:
    """Millions of recorded tuples make the cyclic GC rescan them over and over; the run
    creates no reference cycles that outlive it, so collect once afterwards instead."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_topology(scenario: CollectiveScenario, preset: Preset | None = None) -> topo.Topology:
    """The scenario's topology with its ranks placed (``placement``, docs/network-model.md),
    built by its plan (:mod:`sim.collective.plan`; ``preset``: the scenario's, loaded already)."""
    return resolve(scenario, preset).topology


def planned_topology(scenario: CollectiveScenario, plan: Plan | None) -> topo.Topology:
    """``scenario``'s topology: its plan's (``plan``: resolved for it or a variant of it on the same
    hardware, :meth:`Plan.with_scenario`: the preset loaded once, the topology shared where it can be)."""
    return build_topology(scenario) if plan is None else plan.with_scenario(scenario).topology


def make_call(scenario: CollectiveScenario) -> Call:
    s = scenario
    call = Call(s.op, s.ranks, s.size_bytes, s.element_bytes, s.chunks, s.root)
    if s.verify:
        prepare(call, initial_buffers(s.op, s.ranks, s.elements, s.root, s.seed), s.repetitions)
    return call


@dataclass
class Started:
    """A collective whose rank processes are created but not yet run: run ``env`` (to the end,
    or step by step with ``env.run(until=...)``) and read ``net``, ``call`` and ``ends``."""

    scenario: CollectiveScenario
    env: simpy.Environment
    net: Network
    call: Call
    processes: list[simpy.Process]
    ends: list[float]
    calls: list[Call] | None = None  # with groups: one call per group (``call`` is then unused)


def start_collective(scenario: CollectiveScenario, topology: topo.Topology | None = None, buffers: list | None = None) -> Started:
    """Build the network and start one process per rank. ``buffers`` replaces the verification
    payloads (the webapp passes bitmasks to show which ranks' data each piece holds)."""
    s = scenario
    env = simpy.Environment()
    graph = topology or build_topology(s)
    max_events = {"full": None, "aggregate": 0, "auto": s.max_events}[s.record]
    net = make_network(
        env, graph, s.sharing, reduce_bandwidth_Bps=s.reduce_bandwidth_Bps, jitter_s=s.jitter_s, seed=s.seed,
        max_events=max_events, eager_limit_bytes=s.eager_limit_bytes,
    )  # fmt: skip
    program = algorithm_spec(s.op, s.algorithm).program
    call = make_call(s)
    if buffers is not None:
        call.buffers = buffers
    delays = dict(s.stragglers)
    ends = [0.0] * s.ranks
    fresh = call.inputs if buffers is None else None  # each repetition starts from the inputs
    per_rank, calls = group_programs(s, net) if s.groups else (None, None)  # rank -> (group's net view, local rank, call)

    def rank_main(rank: int) -> Generator:
        view, local, rank_call = per_rank[rank] if per_rank else (net, rank, call)
        inputs = rank_call.inputs if per_rank else fresh
        if delays.get(rank):
            yield env.timeout(delays[rank])
        for repetition in range(s.repetitions):
            if repetition and inputs is not None:  # payloads are snapshots: nothing in flight aliases this
                rank_call.buffers[local] = inputs[local].copy()
            if s.overhead_s:
                yield env.timeout(s.overhead_s)
            yield from program(view, local, rank_call)
            last = net.last_send(rank)
            if last is not None and not last.processed:
                yield last
        ends[rank] = env.now

    machine = getattr(program, "machine", None)  # sim.network.machine: the same program as callbacks

    def start(rank: int) -> simpy.Process:
        """The rank's process; without skew, overhead or repetitions, the program itself (one
        generator frame fewer to resume per message), its end noted by callbacks instead."""
        if delays.get(rank) or s.overhead_s or s.repetitions != 1:
            return BoundProcess(env, rank_main(rank))
        if machine is not None and not per_rank:  # resumed by its events directly: no Process._resume per message
            process = machine(env, net, rank, call)
            if process is not None:
                process.callbacks.append(lambda _: _program_done(rank))
                return process
        process = BoundProcess(env, program(*(per_rank[rank] if per_rank else (net, rank, call))))
        process.callbacks.append(lambda _: _program_done(rank))
        return process

    def _program_done(rank: int) -> None:
        last = net.last_send(rank)
        if last is not None and not last.processed:  # as rank_main: the end is the last delivery
            last.callbacks.append(lambda _: ends.__setitem__(rank, env.now))
        else:
            ends[rank] = env.now

    return Started(s, env, net, call, [start(rank) for rank in range(s.ranks)], ends, calls)


Progress = Callable[[int, float], None]  # (messages so far, simulated time so far)
PROGRESS_EVERY_S = 0.15  # wall time between progress reports
PROGRESS_EVENTS = 32  # events between looks at the clock (one event can deliver hundreds of messages)


def run(
    scenario: CollectiveScenario, on_progress: Progress | None = None, topology: topo.Topology | None = None, plan: Plan | None = None
) -> CollectiveResult:
    """Simulate ``scenario`` message by message: the one way to run a collective.

    ``on_progress(messages, now_s)`` is called about every ``PROGRESS_EVERY_S`` of wall time
    while the run goes. ``topology`` replaces the one the scenario builds; ``plan`` (the
    scenario's, or one on its hardware: :func:`planned_topology`) gives it, built once with
    what the budget read. Each rank's buffer at the end of every step as well:
    :func:`sim.collective.frames.run_with_frames`, which builds on this module."""
    started = start_collective(scenario, topology or planned_topology(scenario, plan))
    drive(started, on_progress)
    return collect(started)


def run_collective(scenario: CollectiveScenario, topology: topo.Topology | None = None) -> CollectiveResult:
    """Simulate ``scenario`` message by message and return its result (:func:`run`)."""
    return run(scenario, topology=topology)


def drive(started: Started, on_progress: Progress | None = None, on_advance: Callable[[float], None] | None = None) -> None:
    """Run a started collective to its end: in one go, or event by event calling
    ``on_progress`` (see :func:`run`) and ``on_advance(now_s)`` each time simulated time is
    about to move on. The same events in the same order either way."""
    env, net = started.env, started.net
    with no_gc():
        if on_progress is None and on_advance is None:
            env.run()
            return
        step, peek, clock = env.step, env.peek, time.perf_counter
        next_report, events = clock() + PROGRESS_EVERY_S, 0
        while (upcoming := peek()) != math.inf:
            if on_advance is not None and upcoming > env.now:
                on_advance(env.now)
            step()
            events += 1
            if on_progress is not None and events % PROGRESS_EVENTS == 0 and clock() >= next_report:
                on_progress(net.message_count, env.now)
                next_report = clock() + PROGRESS_EVERY_S


def collect(started: Started) -> CollectiveResult:
    """The result of a started collective whose environment has run to its end."""
    s, net, ends = started.scenario, started.net, started.ends
    stuck = [rank for rank, process in enumerate(started.processes) if process.is_alive]
    if stuck:
        raise DeadlockError(f"{s.op}/{s.algorithm} deadlocked: ranks {stuck[:16]} still wait for messages {net.pending()[:8]}")
    total = max(ends) if ends else 0.0
    copies = wire_copies(net)
    return CollectiveResult(
        scenario=s,
        time_s=total / s.repetitions,
        total_time_s=total,
        rank_end_s=ends,
        message_count=net.message_count,
        bytes_sent=round(net.bytes_sent * copies),
        steps=len(net.message_table.steps()),
        analytic_time_s=group_closed_form(s) if s.groups else analytic.for_scenario(s),
        verified=all(map(check, started.calls or [started.call])) if s.verify else None,
        records=records_of(net),
        group_times_s=group_times(s, ends) if s.groups else None,
        wire_copies=copies,
    )


def wire_copies(net: Network) -> float:
    """How many channels each simulated one stands for on NCCL's data path (its channels that
    run as copies are not simulated: sim.nccl.path.PathParams.copies); 1 elsewhere."""
    path = getattr(net.topology, "nccl", None) or getattr(getattr(net.topology, "topology", None), "nccl", None)
    return path.copies if path is not None else 1.0
