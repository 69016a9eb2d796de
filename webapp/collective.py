"""Plain functions behind the collectives page: form -> scenario, scenario -> run, player frames.

Nothing here touches Dash; the page's callbacks are one-line calls into these, and the tests
call them directly. Nothing is cached between calls: every request carries its own scenario.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from sim import analytic
from sim.call import Call, split
from sim.errors import CollsimError
from sim.network import Network
from sim.registry import algorithm_spec, algorithms_for, ops
from sim.results import CollectiveResult, link_name
from sim.runner import build_topology, run_collective, start_collective
from sim.scenario import CollectiveScenario
from sim.units import parse_bandwidth, parse_size, parse_time
from webapp import urlstate

MIN_RANKS, MAX_RANKS = 2, 1024
MAX_SIM_MESSAGES = 120_000  # about a second of simulation (see estimate_cost): answered directly
BACKGROUND_MAX_MESSAGES = 5_000_000  # up to here a background run with progress and Cancel (~25 s here,
# ~60 s with a 2x estimate error); above it the closed form answers, or a refusal with the CLI command
CROSSOVER_MESSAGES = 150_000  # all the crossover's simulated points together
PLAYER_MAX_RANKS = 64  # the drawing stays readable up to here
BUFFER_MAX_RANKS = 32  # per-rank buffer state (one row per rank)
BUFFER_MAX_CELLS = 256  # ranks * chunks columns at most
CROSSOVER_SIZES = tuple(4**k * 1024 for k in range(11))  # 1 KiB .. 1 GiB, x4

DEFAULTS: dict[str, str] = {
    "op": "all_reduce",
    "algorithm": "ring",
    "topology": "switch",
    "ranks": "8",
    "gpus_per_node": "",
    "size": "64MiB",
    "latency": "5us",
    "bandwidth": "25GB/s",
    "reduce_bandwidth": "100GB/s",
    "intra_latency": "",
    "intra_bandwidth": "",
    "chunks": "1",
    "overhead": "0us",
    "stragglers": "",
}

# Which form field a scenario error belongs to: the first matching message prefix wins.
_ERROR_FIELDS = (
    ("algorithm ", "ranks", "power-of-two"),
    ("algorithm ", "topology", "needs topology"),
    ("algorithm:", "algorithm", ""),
    ("op:", "op", ""),
    ("ranks", "ranks", ""),
    ("root", "ranks", ""),
    ("size", "size", ""),
    ("chunks", "chunks", ""),
    ("gpus_per_node", "gpus_per_node", ""),
    ("stragglers", "stragglers", ""),
    ("reduce_bandwidth", "reduce_bandwidth", ""),
    ("intra_bandwidth", "intra_bandwidth", ""),
    ("intra_latency", "intra_latency", ""),
    ("bandwidth", "bandwidth", ""),
    ("latency", "latency", ""),
    ("overhead", "overhead", ""),
    ("topology", "topology", ""),
)


def error_field(message: str) -> str:
    """The form field a :class:`CollsimError` message is about ("" when none fits)."""
    for prefix, name, contains in _ERROR_FIELDS:
        if message.startswith(prefix) and contains in message:
            return name
    return ""


def _check_field(name: str, text: str) -> None:
    """Field-level checks, so each box gets its own message even when several are wrong."""
    text = (text or "").strip()
    if name in ("ranks", "chunks") or (name == "gpus_per_node" and text):
        if not text.isdigit():
            raise CollsimError(f"{name}: expected a whole number, got {text!r}")
        if name == "ranks" and not MIN_RANKS <= int(text) <= MAX_RANKS:
            raise CollsimError(f"ranks: the explorer takes {MIN_RANKS} to {MAX_RANKS} ranks, got {text}")
        if int(text) < 1:
            raise CollsimError(f"{name}: must be at least 1, got {text}")
    elif name == "size":
        parse_size(text, "size")
    elif name in ("bandwidth", "reduce_bandwidth", "intra_bandwidth") and (text or name == "bandwidth"):
        if parse_bandwidth(text, name) <= 0:
            raise CollsimError(f"{name}: must be a positive rate such as 25GB/s, got {text!r}")
    elif name in ("latency", "overhead", "intra_latency") and text:
        if parse_time(text, name) < 0:
            raise CollsimError(f"{name}: must be a time >= 0 such as 5us, got {text!r}")


def scenario_fields(form: dict[str, Any]) -> dict[str, Any]:
    """The scenario mapping (unit strings kept) from the form's raw strings."""
    data = {key: str(form.get(key) or "").strip() for key in DEFAULTS}
    fields: dict[str, Any] = {"op": data["op"], "algorithm": data["algorithm"], "topology": data["topology"] or "switch"}
    for key in ("ranks", "size", "latency", "bandwidth", "chunks", "overhead"):
        fields[key] = data[key] or DEFAULTS[key]
    for key in ("reduce_bandwidth", "gpus_per_node", "intra_latency", "intra_bandwidth", "stragglers"):
        if data[key]:
            fields[key] = data[key]
    if fields["topology"] != "two_level":
        for key in ("gpus_per_node", "intra_latency", "intra_bandwidth"):
            fields.pop(key, None)
    return fields


def parse_form(form: dict[str, Any]) -> tuple[CollectiveScenario | None, dict[str, str]]:
    """(scenario, {}) when the form is valid, else (None, {field: message})."""
    errors: dict[str, str] = {}
    fields = scenario_fields(form)
    for name in DEFAULTS:
        try:
            _check_field(name, str(fields.get(name, "")))
        except CollsimError as error:
            errors[name] = str(error)
    if fields["op"] not in ops():
        errors["op"] = f"op: choose one of {', '.join(ops())}"
    if errors:
        return None, errors
    try:
        return CollectiveScenario.from_dict(fields), {}
    except CollsimError as error:
        return None, {error_field(str(error)) or "algorithm": str(error)}


def form_from_query(search: str | None) -> dict[str, str]:
    return urlstate.form_from_query(search, DEFAULTS)


def query_from_form(form: dict[str, Any]) -> str:
    return urlstate.query_from_form(form, DEFAULTS)


def algorithm_options(op: str) -> list[str]:
    return algorithms_for(op) if op in ops() else []


# --------------------------------------------------------------------------- running


ROUTE_COST = 80  # finding a new (src, dst) route costs about as much as simulating 80 messages


def _extrapolate(small: float, large: float, p: int, probe: int) -> float:
    if small <= 0 or large <= 0:
        return float("inf")
    return large * (p / probe) ** math.log2(large / small)


def _probe(scenario: CollectiveScenario, ranks: int) -> tuple[int, int]:
    """(messages, distinct sender-receiver pairs) of the scenario at ``ranks`` ranks, one chunk."""
    changes: dict[str, Any] = {"ranks": ranks, "chunks": 1, "record": "aggregate", "stragglers": (), "root": 0, "repetitions": 1}
    if scenario.topology == "two_level":
        changes["gpus_per_node"] = min(scenario.gpus_per_node_resolved, ranks)
    result = run_collective(scenario.replace(**changes))
    return result.message_count, len(result.network.overflow)


def estimate_cost(scenario: CollectiveScenario) -> int:
    messages, pairs = estimate_parts(scenario)
    return int(messages + ROUTE_COST * pairs)


def estimate_parts(scenario: CollectiveScenario) -> tuple[int, int]:
    """About how much work the run is, in messages (a new route between two ranks counts as
    ``ROUTE_COST`` messages).

    Up to 32 ranks the scenario itself runs once with one chunk (milliseconds); above, it runs at
    16 and 32 ranks and the counts are extrapolated: they grow like p, p log p or p^2 depending
    on the algorithm, and two probes give the exponent without a table per algorithm. Chunks
    multiply the messages. A worst case (every pair, every step) when a probe cannot run."""
    p, k = scenario.ranks, scenario.chunks * scenario.repetitions
    worst = (2 * p * (p - 1) * k, p * (p - 1))
    try:
        if p <= 32:
            messages, pairs = _probe(scenario, p)
            return messages * k, pairs
        small, large = _probe(scenario, 16), _probe(scenario, 32)
    except CollsimError:
        return worst
    messages = _extrapolate(small[0], large[0], p, 32) * k
    pairs = _extrapolate(small[1], large[1], p, 32)
    if messages + ROUTE_COST * pairs > 10 * (worst[0] + ROUTE_COST * worst[1]):
        return 10 * worst[0], 10 * worst[1]
    return int(messages), int(pairs)


@dataclass
class Outcome:
    """A run as the page shows it: how it was computed, the result when simulated, a note."""

    scenario: CollectiveScenario
    mode: str  # "simulated" | "closed form" | "refused"
    result: CollectiveResult | None = None
    analytic_time_s: float | None = None
    note: str = ""
    breakdown: dict[str, float] = field(default_factory=dict)


def cli_command(scenario: CollectiveScenario) -> str:
    return f"collsim sim collective --op {scenario.op} --algorithm {scenario.algorithm} --ranks {scenario.ranks} ..."


def run(scenario: CollectiveScenario, max_messages: int = MAX_SIM_MESSAGES, estimate: int | None = None) -> Outcome:
    """Simulate when it fits in about a second, else answer with the closed form, else refuse.
    (The page runs scenarios up to ``BACKGROUND_MAX_MESSAGES`` with :func:`run_with_progress`
    in a background job before falling back to this.)"""
    closed = analytic_time(scenario)
    breakdown = closed_form_breakdown(scenario) if closed is not None else {}
    estimate = estimate_cost(scenario) if estimate is None else estimate
    if estimate <= max_messages:
        result = run_collective(scenario.replace(record="full" if estimate <= 2 * max_messages else "auto"))
        return Outcome(scenario, "simulated", result, closed, "", breakdown)
    cli = cli_command(scenario)
    why = f"about {estimate:,} message-equivalents of work is too much to simulate in the browser (limit {max_messages:,})"
    if closed is not None:
        return Outcome(
            scenario, "closed form", None, closed, f"Showing the closed form: {why}. Simulate it on the command line: {cli}", breakdown
        )
    return Outcome(
        scenario,
        "refused",
        None,
        None,
        f"Not simulated: {why}, and {scenario.op}/{scenario.algorithm} has no closed form here. Use the command line: {cli}",
    )


PROGRESS_EVERY_S = 0.15  # wall time between progress reports
PROGRESS_EVENTS = 32  # events between looks at the clock (one event can deliver hundreds of messages)


def run_with_progress(scenario: CollectiveScenario, report: Callable[[float, str], None], messages_estimate: int | None = None) -> Outcome:
    """Simulate ``scenario`` like :func:`sim.runner.run_collective`, in slices of events, calling
    ``report(fraction, text)`` between slices (about every ``PROGRESS_EVERY_S``).

    The fraction is simulated time over the closed form's time when there is a closed form,
    else messages so far over ``messages_estimate``; it stays below 1 until the run ends."""
    import time

    from simpy.core import EmptySchedule

    from sim.runner import collect, no_gc

    s = scenario.replace(record="auto")
    closed = analytic_time(s)
    breakdown = closed_form_breakdown(s) if closed is not None else {}
    expected = messages_estimate or estimate_parts(s)[0]
    started = start_collective(s)
    env, net = started.env, started.net
    step, clock = env.step, time.perf_counter
    report(0.0, "starting")
    next_report = clock() + PROGRESS_EVERY_S
    with no_gc():
        try:
            while True:
                for _ in range(PROGRESS_EVENTS):
                    step()
                if clock() >= next_report:
                    by_time = env.now / closed if closed else 0.0
                    by_messages = net.message_count / expected if expected else 0.0
                    fraction = min(max(by_time, by_messages), 0.99)
                    report(fraction, f"{net.message_count:,} messages, simulated time {env.now:.4g} s")
                    next_report = clock() + PROGRESS_EVERY_S
        except EmptySchedule:
            pass
    result = collect(started)
    report(1.0, f"{net.message_count:,} messages simulated; drawing the figures")
    return Outcome(scenario, "simulated", result, closed, "", breakdown)


def analytic_time(scenario: CollectiveScenario) -> float | None:
    try:
        return analytic.for_scenario(scenario)
    except (CollsimError, NotImplementedError, KeyError, TypeError, ValueError):
        return None


_HUGE_BANDWIDTH = 1e30  # makes n / bandwidth vanish while the scenario stays valid


def closed_form_breakdown(scenario: CollectiveScenario) -> dict[str, float]:
    """The closed form split into latency (alpha), bandwidth (beta), reduction (gamma) and
    per-call overhead terms, by evaluating it with the other terms switched off."""
    s = scenario
    no_alpha = {"latency_s": 0.0, "intra_latency_s": None if s.intra_latency_s is None else 0.0}
    no_beta = {"bandwidth_Bps": _HUGE_BANDWIDTH, "intra_bandwidth_Bps": None if s.intra_bandwidth_Bps is None else _HUGE_BANDWIDTH}
    quiet = {"reduce_bandwidth_Bps": None, "overhead_s": 0.0, "stragglers": (), "jitter_s": 0.0}
    total = analytic_time(s)
    alpha = analytic_time(s.replace(**no_beta, **quiet))
    beta = analytic_time(s.replace(**no_alpha, **quiet))
    gamma_total = analytic_time(s.replace(**no_alpha, **no_beta, stragglers=(), overhead_s=0.0, jitter_s=0.0))
    if None in (total, alpha, beta, gamma_total):
        return {}
    gamma = gamma_total if s.reduce_bandwidth_Bps else 0.0
    rest = total - alpha - beta - gamma
    return {
        "alpha (latency)": alpha,
        "beta (bandwidth)": beta,
        "gamma (reduction)": gamma,
        "overhead / other": rest if abs(rest) > 1e-15 else 0.0,
    }


def summary_numbers(outcome: Outcome) -> dict[str, Any]:
    """The numbers shown beside the figures (None where not known)."""
    result = outcome.result
    s = outcome.scenario
    numbers: dict[str, Any] = {
        "mode": outcome.mode,
        "time_s": result.time_s if result else None,
        "analytic_time_s": outcome.analytic_time_s,
        "relative_error": None,
        "messages": result.message_count if result else None,
        "steps": result.steps if result else None,
        "bytes_on_wire": result.bytes_sent if result else None,
        "algbw_Bps": None,
        "busbw_Bps": None,
    }
    time_s = numbers["time_s"] if numbers["time_s"] is not None else outcome.analytic_time_s
    if result and outcome.analytic_time_s:
        numbers["relative_error"] = (result.time_s - outcome.analytic_time_s) / outcome.analytic_time_s
    if time_s:
        numbers["algbw_Bps"] = s.size_bytes / time_s
        factor = {
            "all_reduce": 2 * (s.ranks - 1) / s.ranks,
            "all_gather": (s.ranks - 1) / s.ranks,
            "reduce_scatter": (s.ranks - 1) / s.ranks,
        }.get(s.op, 1.0)
        numbers["busbw_Bps"] = numbers["algbw_Bps"] * factor
    return numbers


# --------------------------------------------------------------------------- crossover


def crossover(
    scenario: CollectiveScenario, sizes: tuple[int, ...] = CROSSOVER_SIZES, max_messages: int = CROSSOVER_MESSAGES
) -> list[dict[str, Any]]:
    """Time of every algorithm of the scenario's op that accepts its ranks and topology, per size.

    The closed form answers on the switch topology without stragglers or jitter (where the
    simulation reproduces it exactly); otherwise each point is simulated, every other size when
    the closed form is missing, while the messages simulated stay within ``max_messages``.
    Rows: algorithm, size_bytes, time_s, method, why (time None where it could not run).
    """
    rows: list[dict[str, Any]] = []
    budget = max_messages
    exact = scenario.topology == "switch" and not scenario.stragglers and not scenario.jitter_s
    for algorithm in algorithms_for(scenario.op):
        spec = algorithm_spec(scenario.op, algorithm)
        try:
            base = scenario.replace(algorithm=algorithm, chunks=scenario.chunks if spec.chunked else 1, record="aggregate", repetitions=1)
        except CollsimError as error:
            rows.append({"algorithm": algorithm, "size_bytes": None, "time_s": None, "method": "n/a", "why": str(error)})
            continue
        estimate: int | None = None
        for index, nbytes in enumerate(sizes):
            point = base.replace(size_bytes=nbytes - nbytes % scenario.element_bytes)
            closed = analytic_time(point) if exact else None
            if closed is not None:
                rows.append({"algorithm": algorithm, "size_bytes": point.size_bytes, "time_s": closed, "method": "closed form", "why": ""})
                continue
            if index % 2 and index != len(sizes) - 1:
                continue  # simulated curves: every other size is enough to see the crossover
            estimate = estimate_cost(base) if estimate is None else estimate
            if estimate > budget:
                rows.append(
                    {
                        "algorithm": algorithm,
                        "size_bytes": point.size_bytes,
                        "time_s": None,
                        "method": "n/a",
                        "why": "too large to simulate here",
                    }
                )
                continue
            budget -= estimate
            rows.append(
                {
                    "algorithm": algorithm,
                    "size_bytes": point.size_bytes,
                    "time_s": run_collective(point).time_s,
                    "method": "simulated",
                    "why": "",
                }
            )
    return rows


# --------------------------------------------------------------------------- player


def initial_masks(op: str, ranks: int, elements: int, root: int) -> list[np.ndarray]:
    """Each rank's input as bitmasks (Python ints) of the ranks whose data an element holds.

    Algorithms only copy and add payloads, and a correct reduction adds each rank's data once,
    so a sum of distinct powers of two is exactly the set of ranks it combines."""
    buffers = [np.zeros(elements, dtype=object) for _ in range(ranks)]
    blocks = split(elements, ranks)
    for rank, buffer in enumerate(buffers):
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
    return buffers


def _small_run(scenario: CollectiveScenario, buffers: list[np.ndarray] | None) -> tuple[simpy.Environment, Network, Call]:
    """The scenario's rank processes, started but not run."""
    started = start_collective(scenario, buffers=buffers)
    return started.env, started.net, started.call


def record_buffers(scenario: CollectiveScenario) -> list[dict[str, Any]]:
    """Each rank's buffer (bitmask cells) before the first message and at the end of each step.

    The scenario runs at one element per (piece, chunk): the same steps as the full-size run.
    A first pass finds when each step ends (its last message or reduction); a second, with
    bitmask payloads, stops at each of those times and copies the buffers."""
    s = scenario
    elements = s.ranks * s.chunks
    small = s.replace(size_bytes=elements * s.element_bytes, record="full", repetitions=1, overhead_s=0.0, verify=False)
    env, net, _ = _small_run(small, None)
    env.run()
    ends: dict[int, float] = {}
    for message in net.messages:
        ends[message[5]] = max(ends.get(message[5], 0.0), message[3])
    for compute in net.computes:
        ends[compute[4]] = max(ends.get(compute[4], 0.0), compute[2])
    env, net, call = _small_run(small, initial_masks(s.op, s.ranks, elements, s.root))
    frames = [{"step": -1, "cells": [[int(v) for v in buffer] for buffer in call.buffers]}]
    for step in sorted(ends):
        until = math.nextafter(ends[step], math.inf)  # include events at exactly the step's end
        if until > env.now:
            env.run(until=until)
        frames.append({"step": step, "cells": [[int(v) for v in buffer] for buffer in call.buffers]})
    return frames


def _reduces(op: str) -> bool:
    return op in ("all_reduce", "reduce", "reduce_scatter")


def buffer_frames(scenario: CollectiveScenario) -> list[dict[str, Any]] | None:
    """Per step: each rank's buffer as bitmask cells (one per piece and chunk) at the end of
    that step; frame 0 is the input. None when too large to show or moving no data (barrier)."""
    s = scenario
    if s.ranks > BUFFER_MAX_RANKS or s.ranks * s.chunks > BUFFER_MAX_CELLS or s.op == "barrier":
        return None
    return record_buffers(s)


def topology_layout(scenario: CollectiveScenario) -> dict[str, Any]:
    """Node positions and edges of the scenario's topology graph, for drawing."""
    topology = build_topology(scenario)
    graph = topology.graph
    p = topology.ranks
    positions: dict[Any, tuple[float, float]] = {}
    if topology.name in ("switch", "ring"):
        for rank in range(p):
            angle = math.pi / 2 - 2 * math.pi * rank / p
            positions[rank] = (math.cos(angle), math.sin(angle))
        for node in graph.nodes:
            if not isinstance(node, int):
                positions[node] = (0.0, 0.0)
    elif topology.name == "torus2d":
        from sim.topology import torus_shape

        rows, cols = torus_shape(p)
        for rank in range(p):
            positions[rank] = (rank % cols, -(rank // cols))
    elif topology.name == "two_level" and topology.gpus_per_node:
        gpus = topology.gpus_per_node
        nodes = p // gpus
        for node in range(nodes):
            angle = math.pi / 2 - 2 * math.pi * node / max(nodes, 1)
            center = (1.6 * math.cos(angle), 1.6 * math.sin(angle)) if nodes > 1 else (0.0, 0.0)
            positions[f"node{node}"] = center
            for local in range(gpus):
                inner = math.pi / 2 - 2 * math.pi * local / gpus
                positions[node * gpus + local] = (center[0] + 0.55 * math.cos(inner), center[1] + 0.55 * math.sin(inner))
        positions["core"] = (0.0, 0.0)
    import networkx as nx

    missing = [node for node in graph.nodes if node not in positions]
    if missing:
        positions.update(nx.spring_layout(graph, seed=0))
    return {
        "nodes": [
            {
                "id": str(node),
                "rank": node if isinstance(node, int) else None,
                "x": float(positions[node][0]),
                "y": float(positions[node][1]),
            }
            for node in graph.nodes
        ],
        "edges": [[str(u), str(v)] for u, v in graph.edges],
        "name": topology.name,
    }


def player_data(scenario: CollectiveScenario, result: CollectiveResult | None) -> dict[str, Any] | None:
    """Everything the step player draws, as JSON: layout, messages per step, buffer frames."""
    if result is None or scenario.ranks > PLAYER_MAX_RANKS or result.truncated or not result.messages:
        return None
    steps: dict[int, list] = {}
    for src, dst, start, end, nbytes, step, chunk in result.messages:
        # times to 6 significant digits (captions show 4): half the JSON the browser stores and resends
        steps.setdefault(step, []).append([src, dst, float(f"{start:.6g}"), float(f"{end:.6g}"), nbytes, chunk])
    net = result.network
    routes = {}
    for src, dst, *_ in result.messages:
        if (src, dst) not in routes:
            routes[(src, dst)] = [[str(a), str(b)] for a, b in (net.links[i] for i in net.route(src, dst)[0] if i < len(net.links))]
    frames = None
    try:
        frames = buffer_frames(scenario)
    except (CollsimError, TypeError, ValueError, AttributeError, IndexError):
        frames = None  # an algorithm whose payloads cannot be bitmasks: show messages only
    ordered = sorted(steps)
    return {
        "op": scenario.op,
        "ranks": scenario.ranks,
        "chunks": scenario.chunks,
        "reduces": _reduces(scenario.op),
        "layout": topology_layout(scenario),
        "steps": ordered,
        "messages": [steps[step][:512] for step in ordered],
        "routes": {f"{src}>{dst}": route for (src, dst), route in routes.items()},
        "buffers": frames,
    }


def link_events(result: CollectiveResult, limit: int) -> list[dict[str, Any]]:
    """One row per (message, directed link it crossed): link, start, end, bytes, step, chunk."""
    net = result.network
    rows: list[dict[str, Any]] = []
    for src, dst, start, end, nbytes, step, chunk in result.messages:
        for index in net.route(src, dst)[0]:
            if index < len(net.links):
                rows.append(
                    {
                        "link": link_name(net.links[index]),
                        "src": src,
                        "dst": dst,
                        "start_s": start,
                        "end_s": end,
                        "bytes": nbytes,
                        "step": step,
                        "chunk": chunk,
                    }
                )
                if len(rows) >= limit:
                    return rows
    return rows
