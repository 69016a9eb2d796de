"""Plain functions behind the collectives page: form -> scenario, scenario -> run, player frames.

Nothing here touches Dash; the page's callbacks are one-line calls into these, and the tests
call them directly. Every request carries its own scenario; the last few simulated outcomes are
kept (:func:`run`), so a scenario asked for again (a value flipped back, a new colouring, a
second visitor) is drawn without simulating it again.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim.algorithms.registry import algorithms_for, ops
from sim.collective import explore, narrative
from sim.collective.analytic import busbw_factor
from sim.collective.results import CollectiveResult
from sim.collective.runner import build_topology, start_collective
from sim.errors import CollsimError
from sim.network.layout import node_positions
from sim.scenario import CollectiveScenario
from webapp import urlstate

log = logging.getLogger(__name__)

MIN_RANKS, MAX_RANKS = 2, 1024
MAX_SIM_MESSAGES = 120_000  # about a second of simulation (see estimate_cost): answered directly
BACKGROUND_MAX_MESSAGES = 5_000_000  # up to here a background run with progress and Cancel (~25 s here,
# ~60 s with a 2x estimate error); above it the closed form answers, or a refusal with the CLI command
BUFFER_MAX_RANKS = explore.FRAME_MAX_RANKS  # per-rank buffer state (one row per rank)
BUFFER_MAX_CELLS = explore.FRAME_MAX_CELLS  # ranks * chunks columns at most
CROSSOVER_SIZES = explore.CROSSOVER_SIZES

DEFAULTS: dict[str, str] = {
    "hardware": "",  # a preset (sim/hardware): fills ranks, topology and links; "" sets them by hand
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
    "sharing": "fair",  # how messages that meet share links: fair (max-min) or fifo (docs/network-model.md)
    "eager_limit": "0",  # larger messages wait for their receive (rendezvous)
    "placement": "block",  # two_level: block or round_robin
}

REQUIRED = {
    "ranks": f"give a whole number from {MIN_RANKS} to {MAX_RANKS}",
    "size": "give a size such as 64MiB, 1.5KB or 4096",
    "latency": "give a time such as 5us (0 for none)",
    "bandwidth": "give a rate such as 25GB/s or 100Gbps",
}
OPTIONAL_DEFAULTS = {"chunks": "1", "overhead": "0us"}  # an empty box means these (the hints say so)

# A field checked alone, on this valid scenario: the scenario's own parser and checks give the
# message, and each box gets its own even when several are wrong (the whole form is checked after).
_ALONE_BASE = {"op": "all_reduce", "algorithm": "ring", "ranks": "8", "size": "64MiB", "latency": "5us", "bandwidth": "25GB/s"}
_CHECKED_ALONE = (
    "ranks",
    "size",
    "latency",
    "bandwidth",
    "reduce_bandwidth",
    "intra_latency",
    "intra_bandwidth",
    "chunks",
    "overhead",
    "eager_limit",
)


def _check_field(name: str, text: str) -> None:
    """Field-level checks: required boxes, the explorer's rank range, and the scenario's own
    validation of the field alone (:data:`_CHECKED_ALONE`)."""
    text = (text or "").strip()
    if name in REQUIRED and not text:
        raise CollsimError(f"{name}: required; {REQUIRED[name]}")
    if name == "ranks" and text.isdigit() and not MIN_RANKS <= int(text) <= MAX_RANKS:
        raise CollsimError(f"ranks: the explorer takes {MIN_RANKS} to {MAX_RANKS} ranks, got {text}")
    if name in _CHECKED_ALONE and text:
        CollectiveScenario.from_dict({**_ALONE_BASE, name: text})


def scenario_fields(form: dict[str, Any]) -> dict[str, Any]:
    """The scenario mapping (unit strings kept) from the form's raw strings."""
    data = {key: str(form.get(key) or "").strip() for key in DEFAULTS}
    fields: dict[str, Any] = {"op": data["op"], "algorithm": data["algorithm"], "topology": data["topology"] or "switch"}
    for key in ("ranks", "size", "latency", "bandwidth"):
        fields[key] = data[key]  # required: an empty box gets a message, never a silent default
    for key in ("chunks", "overhead"):
        fields[key] = data[key] or OPTIONAL_DEFAULTS[key]
    for key in ("reduce_bandwidth", "gpus_per_node", "intra_latency", "intra_bandwidth", "stragglers"):
        if data[key]:
            fields[key] = data[key]
    if fields["topology"] != "two_level":
        for key in ("gpus_per_node", "intra_latency", "intra_bandwidth"):
            fields.pop(key, None)
    if data["hardware"]:
        fields["hardware"] = data["hardware"]
    fields["sharing"] = data["sharing"] or DEFAULTS["sharing"]
    fields["eager_limit"] = data["eager_limit"] or "0"
    if fields["topology"] == "two_level" and data["placement"] not in ("", "block"):
        fields["placement"] = data["placement"]
    return fields


def hardware_form(name: str | None, ranks: str | None) -> dict[str, str] | None:
    """The form values a hardware preset sets (nodes from the ranks typed, at least one node),
    or None for "no preset"."""
    if not name:
        return None
    from sim.hardware.presets import load_preset, scenario_fields

    gpus = load_preset(name).gpus_per_node
    nodes = max(1, int(ranks) // gpus) if str(ranks or "").isdigit() else 1
    fields = scenario_fields(name, nodes)
    return {
        "ranks": str(fields["ranks"]),
        "topology": "two_level",
        "gpus_per_node": str(fields["gpus_per_node"]),
        "bandwidth": f"{fields['bandwidth_Bps'] / 1e9:.6g}GB/s",
        "latency": f"{fields['latency_s'] * 1e6:.6g}us",
        "intra_bandwidth": f"{fields['intra_bandwidth_Bps'] / 1e9:.6g}GB/s",
        "intra_latency": f"{fields['intra_latency_s'] * 1e6:.6g}us",
    }


def hardware_options() -> list[str]:
    from sim.hardware.presets import list_presets

    return list_presets()


def nccl_picks(scenario: CollectiveScenario, sizes: tuple[int, ...] = CROSSOVER_SIZES) -> list[dict[str, Any]]:
    """What NCCL's own tuning model would pick at each size on the scenario's hardware preset
    (algorithm/protocol and its predicted time); [] without a GPU preset or for other ops."""
    if not scenario.hardware:
        return []
    from sim.hardware.nccl_model import predict

    nodes = scenario.ranks // scenario.gpus_per_node_resolved
    rows = []
    for nbytes in sizes:
        try:
            pick = predict(scenario.hardware, nodes, scenario.op, nbytes)
        except CollsimError:
            return []
        rows.append({"size_bytes": nbytes, "time_s": pick.time_s, "pick": f"{pick.nccl_algorithm}/{pick.nccl_protocol}"})
    return rows


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
    if "placement" not in fields and str(form.get("placement") or "block") != "block":  # dropped off two_level: say so, as the CLI does
        try:
            CollectiveScenario.from_dict({**fields, "placement": form["placement"]})
        except CollsimError as error:
            errors["placement"] = str(error)
    if errors:
        return None, errors
    try:
        return CollectiveScenario.from_dict(fields), {}
    except CollsimError as error:
        return None, {_form_field(error) or "algorithm": str(error)}


def _form_field(error: CollsimError) -> str:
    """The form field a CollsimError names (its ``field``, canonical names read back to the
    form's: latency_s -> latency), or "" when it names none of them."""
    name = getattr(error, "field", None) or ""
    short = {canonical: alias for alias, canonical in CollectiveScenario.ALIASES.items()}
    name = {"root": "ranks", "groups": "ranks"}.get(name, short.get(name, name))  # the form has no root or groups box
    return name if name in DEFAULTS else ""


def form_from_query(search: str | None) -> dict[str, str]:
    """The form from a link; a link naming only a hardware preset (``?hardware=dgx-h100``) gets
    the ranks, topology and links the preset sets, as picking it in the form does."""
    form = urlstate.form_from_query(search, DEFAULTS)
    given = urlstate.query_keys(search)
    if form.get("hardware") and not given & set(HARDWARE_SETS):
        try:
            values = hardware_form(form["hardware"], form["ranks"] if "ranks" in given else None)
        except CollsimError:
            values = None  # an unknown preset: the form shows the hardware field's message
        if values:
            form.update(values)
    return form


HARDWARE_SETS = ("topology", "gpus_per_node", "bandwidth", "latency", "intra_bandwidth", "intra_latency")


def query_from_form(form: dict[str, Any]) -> str:
    return urlstate.query_from_form(form, DEFAULTS)


def algorithm_options(op: str) -> list[str]:
    return algorithms_for(op) if op in ops() else []


# --------------------------------------------------------------------------- running


def estimate_cost(scenario: CollectiveScenario) -> int:
    """Message-equivalents of work of a per-message run, told without running it: messages
    plus the flows fair re-sharing touches (sim.collective.budget), plus routes."""
    from sim.collective.budget import estimate

    told = explore.work(scenario)
    return estimate(scenario).visits + explore.ROUTE_COST * told.pairs


@dataclass
class Outcome:
    """A run as the page shows it: how it was computed, the result when simulated, the closed
    form with its status (exact, approximate, or none and why), buffer frames, a note."""

    scenario: CollectiveScenario
    mode: str  # "simulated" | "closed form" | "refused"
    result: CollectiveResult | None = None
    analytic_time_s: float | None = None
    note: str = ""
    breakdown: dict[str, float] = field(default_factory=dict)
    closed_exact: bool = False
    closed_note: str = ""
    frames: list[dict[str, Any]] | None = None


def cli_command(scenario: CollectiveScenario) -> str:
    return f"collsim sim collective --op {scenario.op} --algorithm {scenario.algorithm} --ranks {scenario.ranks} ..."


def closed_form(scenario: CollectiveScenario, result: CollectiveResult | None = None) -> explore.ClosedForm:
    """The closed form and its status; a result's own ``analytic_note`` (when the model gives
    one) is the reason shown."""
    closed = explore.closed_form(scenario)
    note = getattr(result, "analytic_note", "") if result is not None else ""
    return explore.ClosedForm(closed.time_s, closed.exact, note or closed.note) if note else closed


OUTCOMES_KEPT = 8  # simulated outcomes kept for scenarios asked for again (a few MB each at most)
_outcomes: OrderedDict[tuple, Outcome] = OrderedDict()
_outcomes_lock = threading.Lock()


def run(scenario: CollectiveScenario, max_messages: int = MAX_SIM_MESSAGES, estimate: int | None = None, frames: bool = True) -> Outcome:
    """Simulate once when it fits in about a second (with the player's buffer frames), else
    answer with the closed form, else refuse. (The page runs scenarios up to
    ``BACKGROUND_MAX_MESSAGES`` with :func:`run_with_progress` in a background job first.)
    The last ``OUTCOMES_KEPT`` outcomes are kept by scenario: the same scenario again is not
    simulated again (outcomes are read, never changed, by the figures)."""
    key = (scenario.to_json(), max_messages, frames)
    with _outcomes_lock:
        if key in _outcomes:
            _outcomes.move_to_end(key)
            return _outcomes[key]
    outcome = _run(scenario, max_messages, estimate, frames)
    with _outcomes_lock:
        _outcomes[key] = outcome
        while len(_outcomes) > OUTCOMES_KEPT:
            _outcomes.popitem(last=False)
    return outcome


def _run(scenario: CollectiveScenario, max_messages: int, estimate: int | None, frames: bool) -> Outcome:
    closed = explore.closed_form(scenario)
    breakdown = closed_form_breakdown(scenario) if closed.time_s is not None else {}
    estimate = estimate_cost(scenario) if estimate is None else estimate
    if estimate <= max_messages:
        record = "full" if estimate <= 2 * max_messages else "auto"
        result, buffers = explore.run(scenario.replace(record=record), frames=frames and scenario.ranks <= PLAYER_DRAW_RANKS)
        closed = closed_form(scenario, result)
        closed, breakdown = switch_form_if_equal(scenario, result, closed, breakdown)
        return Outcome(scenario, "simulated", result, closed.time_s, "", breakdown, closed.exact, closed.note, buffers)
    cli = cli_command(scenario)
    why = f"about {estimate:,} message-equivalents of work is too much to simulate in the browser (limit {max_messages:,})"
    if closed.time_s is not None:
        note = f"Showing the closed form: {why}. Simulate it on the command line: {cli}"
        return Outcome(scenario, "closed form", None, closed.time_s, note, breakdown, closed.exact, closed.note)
    note = f"Not simulated: {why}, and there is no closed form ({closed.note}). Use the command line: {cli}"
    return Outcome(scenario, "refused", None, None, note, closed_note=closed.note)


PROGRESS_EVERY_S = 0.15  # wall time between progress reports
PROGRESS_EVENTS = 32  # events between looks at the clock (one event can deliver hundreds of messages)


def run_with_progress(scenario: CollectiveScenario, report: Callable[[float, str], None], messages_estimate: int | None = None) -> Outcome:
    """Simulate ``scenario`` like :func:`sim.collective.runner.run_collective`, in slices of events, calling
    ``report(fraction, text)`` between slices (about every ``PROGRESS_EVERY_S``).

    The fraction is messages so far over the count :func:`sim.collective.explore.work` tells (exact for
    the registered algorithms); it stays below 1 until the run ends."""

    from simpy.core import EmptySchedule

    from sim.collective.runner import collect, no_gc

    s = scenario.replace(record="auto")
    closed = explore.closed_form(s)
    breakdown = closed_form_breakdown(s) if closed.time_s is not None else {}
    expected = messages_estimate or explore.work(s).messages
    started = start_collective(s)
    env, net = started.env, started.net
    step, clock = env.step, time.perf_counter
    report(0.0, "starting")
    next_report = clock() + PROGRESS_EVERY_S
    from sim.collective.budget import BACKGROUND_MAX_SECONDS

    deadline = clock() + BACKGROUND_MAX_SECONDS  # a job whose page went away ends by itself (it ran 8 min after the tab closed)
    parent = os.getppid()  # and a job whose server is gone (killed) ends at its next report
    with no_gc():
        try:
            while True:
                for _ in range(PROGRESS_EVENTS):
                    step()
                if clock() >= next_report:
                    if os.getppid() != parent:
                        raise CollsimError("the server that started this job is gone; stopped")
                    if clock() > deadline:
                        raise CollsimError(
                            f"stopped after {BACKGROUND_MAX_SECONDS:.0f} s, the explorer's limit for one run "
                            f"({net.message_count:,} of about {expected:,} messages); simulate it on the command line: {cli_command(s)}"
                        )
                    fraction = min(net.message_count / expected if expected else 0.0, 0.99)
                    report(fraction, f"{net.message_count:,} of {expected:,} messages, simulated time {env.now:.4g} s")
                    next_report = clock() + PROGRESS_EVERY_S
        except EmptySchedule:
            pass
    result = collect(started)
    report(1.0, f"{net.message_count:,} messages simulated; drawing the figures")
    closed = closed_form(s, result)
    closed, breakdown = switch_form_if_equal(scenario, result, closed, breakdown)
    return Outcome(scenario, "simulated", result, closed.time_s, "", breakdown, closed.exact, closed.note)


EXACT_RELATIVE = 1e-12  # a simulated time this close to the closed form is the closed form (float noise)


def switch_form_if_equal(
    scenario: CollectiveScenario, result: CollectiveResult, closed: explore.ClosedForm, breakdown: dict[str, float]
) -> tuple[explore.ClosedForm, dict[str, float]]:
    """A topology without a closed form of its own (a physical ring, ...) whose simulated time
    equals the switch's closed form exactly: that closed form, said so (no "closed form: none"
    beside a time that matches it to the last digit). Otherwise ``closed`` and ``breakdown``."""
    if closed.time_s is not None or scenario.topology == "switch" or result is None:
        return closed, breakdown
    try:
        switch = scenario.replace(topology="switch")
        other = explore.closed_form(switch)
    except (CollsimError, ValueError, KeyError):
        return closed, breakdown
    if other.time_s is None or not other.exact or abs(result.time_s - other.time_s) > EXACT_RELATIVE * other.time_s:
        return closed, breakdown
    note = (
        f"the closed form is derived for one port per rank into a switch; on this {scenario.topology} every message "
        "of this algorithm has a link of its own, and the simulated time equals it exactly"
    )
    return explore.ClosedForm(other.time_s, True, note), closed_form_breakdown(switch)


BREAKDOWN_NAMES = {"latency": "alpha (latency)", "bandwidth": "beta (bandwidth)", "reduction": "gamma (reduction)"}


def closed_form_breakdown(scenario: CollectiveScenario) -> dict[str, float]:
    """The closed form split into latency (alpha), bandwidth (beta), reduction (gamma) and
    per-call overhead terms (:func:`sim.collective.explore.decompose` of the closed form); what the
    three do not explain (overhead, stragglers) is "overhead / other". {} without a closed form."""
    try:
        total = explore.closed_form_time(scenario)
        parts = explore.decompose(scenario, timing=explore.closed_form_time)
    except (CollsimError, NotImplementedError, KeyError, TypeError, ValueError):
        return {}
    if total is None or not parts:
        return {}
    split = {label: parts[name] for name, label in BREAKDOWN_NAMES.items()}
    rest = total - sum(split.values())
    return {**split, "overhead / other": rest if abs(rest) > 1e-15 else 0.0}


def summary_numbers(outcome: Outcome) -> dict[str, Any]:
    """The numbers shown beside the figures (None where not known)."""
    result = outcome.result
    s = outcome.scenario
    numbers: dict[str, Any] = {
        "mode": outcome.mode,
        "time_s": result.time_s if result else None,
        "analytic_time_s": outcome.analytic_time_s,
        "analytic_exact": outcome.closed_exact,
        "analytic_note": outcome.closed_note,
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
        numbers["busbw_Bps"] = numbers["algbw_Bps"] * busbw_factor(s.op, s.ranks)
    return numbers


# --------------------------------------------------------------------------- player


def _reduces(op: str) -> bool:
    return op in ("all_reduce", "reduce", "reduce_scatter")


def topology_layout(scenario: CollectiveScenario) -> dict[str, Any]:
    """Node positions (:func:`sim.network.layout.node_positions`) and edges of the scenario's
    topology graph, and each node's ranks (several nodes only), as JSON for drawing."""
    topology = build_topology(scenario)
    positions = node_positions(topology)
    nodes = [{"id": str(node), "rank": node if isinstance(node, int) else None, "x": x, "y": y} for node, (x, y) in positions.items()]
    node_ranks = topology.node_ranks()
    return {
        "nodes": nodes,
        "edges": [[str(u), str(v)] for u, v in topology.graph.edges],
        "name": topology.name,
        "node_ranks": node_ranks if len(node_ranks) > 1 and max(map(len, node_ranks)) > 1 else [],
    }


def player_data(
    scenario: CollectiveScenario, result: CollectiveResult | None, frames: list[dict[str, Any]] | None = None
) -> dict[str, Any] | None:
    """Everything the step player draws, as JSON: layout, messages per step (each with the
    cells it carried, read from the buffer frames), phases, one sentence per step, frames, and
    the algorithm's logical layout (its trees, or hierarchical's node grid). Above
    ``PLAYER_DRAW_RANKS`` ranks the messages are summed per group of ranks (:func:`aggregate_player`)."""
    if result is None or result.truncated or not result.messages:
        return None
    s = scenario
    table = message_array(result)
    layout = topology_layout(s)
    if s.ranks > PLAYER_DRAW_RANKS:
        return aggregate_player(s, table, layout)
    steps: dict[int, list] = {}
    ends = result.links["src"], result.links["dst"]
    # times to a millionth of the run (captions show 4 digits): half the JSON the browser stores and resends
    decimals = 6 - math.floor(math.log10(float(table[:, 3].max()) or 1.0))
    times = np.round(table[:, 2:4], decimals).tolist()
    columns = table[:, [0, 1, 4, 5, 6]].astype(np.int64).tolist()
    for (src, dst, nbytes, step, chunk), (start, end) in zip(columns, times):
        steps.setdefault(step, []).append([src, dst, start, end, nbytes, chunk])
    pairs = {(row[0], row[1]) for row in columns}
    routes = {}
    for src, dst in pairs:
        routes[(src, dst)] = [[str(ends[0][i]), str(ends[1][i])] for i in result.routes[(src, dst)]]
    ordered = sorted(steps)
    if frames is not None and len(frames) != len(ordered) + 1:
        frames = None  # steps that do not line up with the frames: show messages only
    view = narrative.logical_view(s.algorithm, s.ranks, s.root, sorted(pairs), layout["node_ranks"])
    sizes = [[m[4] for m in steps[step]] for step in ordered]
    phases, sentences = narrative.step_phases(s, ordered), narrative.step_sentences(s, ordered, sizes)
    derived = narrative.derived_phases(s.algorithm, [[(m[0], m[1]) for m in steps[step]] for step in ordered], view)
    if derived:
        phases = [phase for phase, _ in derived]
        sentences = [narrative.step_sentence(move, nbytes) for (_, move), nbytes in zip(derived, sizes)]
    return {
        "op": s.op,
        "algorithm": s.algorithm,
        "ranks": s.ranks,
        "chunks": s.chunks,
        "reduces": _reduces(s.op),
        "layout": layout,
        "steps": ordered,
        "messages": [_with_cells(steps[step][:512], frames, index, s.chunks) for index, step in enumerate(ordered)],
        "phases": phases,
        "sentences": sentences,
        "description": narrative.description(s.op, s.algorithm),
        "routes": {f"{src}>{dst}": route for (src, dst), route in routes.items()},
        "buffers": frames,
        "logical": view,
    }


PLAYER_DRAW_RANKS = 32  # every rank drawn up to here; above, ranks are summed in groups
SAMPLE_HEAD, SAMPLE_TAIL = 6, 2  # ranks (or nodes) drawn alone above that: the first six and the last two
MAX_GROUPS = SAMPLE_HEAD + SAMPLE_TAIL + 1


def rank_groups(ranks: int, node_ranks: list[list[int]]) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The groups an aggregate player draws, and each rank's group: one per node on a topology
    with nodes (up to ``MAX_GROUPS`` nodes), else a sample of units (ranks, or nodes when there
    are many): the first ``SAMPLE_HEAD`` and the last ``SAMPLE_TAIL`` alone, the rest as one group."""
    units = node_ranks or [[rank] for rank in range(ranks)]
    kind = "node" if node_ranks else "rank"
    if len(units) <= MAX_GROUPS:
        chosen: list[tuple[str, list[int]]] = [(_unit_name(kind, i, u), u) for i, u in enumerate(units)]
    else:
        keep = [*range(SAMPLE_HEAD), *range(len(units) - SAMPLE_TAIL, len(units))]
        chosen = [(_unit_name(kind, i, units[i]), units[i]) for i in keep[:SAMPLE_HEAD]]
        rest = [rank for unit in units[SAMPLE_HEAD : len(units) - SAMPLE_TAIL] for rank in unit]
        span = f"{kind}s {SAMPLE_HEAD}–{len(units) - SAMPLE_TAIL - 1}"
        chosen.append((f"{span} ({len(rest)} ranks)", rest))
        chosen += [(_unit_name(kind, i, units[i]), units[i]) for i in keep[SAMPLE_HEAD:]]
    group_of = np.zeros(ranks, dtype=np.int64)
    groups = []
    for index, (name, members) in enumerate(chosen):
        group_of[members] = index
        angle = math.pi / 2 - 2 * math.pi * index / len(chosen)
        groups.append({"name": name, "size": len(members), "x": math.cos(angle), "y": math.sin(angle)})
    return groups, group_of


def _unit_name(kind: str, index: int, members: list[int]) -> str:
    return f"rank {members[0]}" if kind == "rank" else f"node {index} ({len(members)} ranks)"


def aggregate_player(s: CollectiveScenario, table: np.ndarray, layout: dict[str, Any]) -> dict[str, Any]:
    """The player above ``PLAYER_DRAW_RANKS`` ranks: per step, the messages summed per (sending
    group, receiving group) as [from, to, first start, last end, bytes, messages], and inside a
    group (a node's own traffic, or the summarised ranks') as a loop on it."""
    groups, group_of = rank_groups(s.ranks, layout["node_ranks"])
    src, dst = group_of[table[:, 0].astype(np.int64)], group_of[table[:, 1].astype(np.int64)]
    steps = table[:, 5].astype(np.int64)
    ordered = np.unique(steps)
    step_index = np.searchsorted(ordered, steps)
    count = len(groups)
    key = (step_index * count + src) * count + dst
    keys, inverse, messages = np.unique(key, return_inverse=True, return_counts=True)
    starts = np.full(len(keys), np.inf)
    ends = np.zeros(len(keys))
    nbytes = np.zeros(len(keys))
    np.minimum.at(starts, inverse, table[:, 2])
    np.maximum.at(ends, inverse, table[:, 3])
    np.add.at(nbytes, inverse, table[:, 4])
    rows: list[list[list]] = [[] for _ in ordered]
    for k, first, last, size, many in zip(keys.tolist(), starts.tolist(), ends.tolist(), nbytes.tolist(), messages.tolist()):
        rows[k // (count * count)].append([k // count % count, k % count, first, last, int(size), int(many)])
    sizes = [table[step_index == i, 4].astype(np.int64).tolist() for i in range(len(ordered))]
    phases, sentences = narrative.step_phases(s, ordered.tolist()), narrative.step_sentences(s, ordered.tolist(), sizes)
    if s.algorithm == "hierarchical" and layout["node_ranks"]:  # its phases from where each step's messages go
        node_of = np.zeros(s.ranks, dtype=np.int64)
        for index, members in enumerate(layout["node_ranks"]):
            node_of[members] = index
        across = node_of[table[:, 0].astype(np.int64)] != node_of[table[:, 1].astype(np.int64)]
        crossing = np.zeros(len(ordered), dtype=bool)
        np.logical_or.at(crossing, step_index, across)
        firsts = [[(0, 1)] if crossing[i] else [(0, 0)] for i in range(len(ordered))]
        derived = narrative.derived_phases(s.algorithm, firsts, {"kind": "grid", "nodes": [[0], [1]]})
        phases = [phase for phase, _ in derived or ()]
        sentences = [narrative.step_sentence(move, nbytes) for (_, move), nbytes in zip(derived or (), sizes)]
    return {
        "aggregate": True,
        "op": s.op,
        "algorithm": s.algorithm,
        "ranks": s.ranks,
        "chunks": s.chunks,
        "reduces": _reduces(s.op),
        "layout": {"name": layout["name"], "groups": groups},
        "steps": ordered.tolist(),
        "messages": rows,
        "phases": phases,
        "sentences": sentences,
        "description": narrative.description(s.op, s.algorithm),
        "buffers": None,
    }


def cell_name(cell: int, chunks: int) -> str:
    """A buffer cell's name: piece p3, or piece.chunk p3.1 with chunks."""
    return f"p{cell // chunks}" + (f".{cell % chunks}" if chunks > 1 else "")


def _with_cells(messages: list[list], frames: list[dict[str, Any]] | None, index: int, chunks: int) -> list[list]:
    """Each message with the names of the receiver's cells that changed in this step (what it
    carried, as seen in the buffers); a receiver fed by several messages shares them out by chunk."""
    if not frames:
        return [[*message, ""] for message in messages]
    before, after = frames[index]["cells"], frames[index + 1]["cells"]
    senders: dict[int, int] = {}
    for message in messages:
        senders[message[1]] = senders.get(message[1], 0) + 1
    out = []
    for src, dst, start, end, nbytes, chunk in messages:
        changed = [c for c, (old, new) in enumerate(zip(before[dst], after[dst])) if old != new]
        if senders[dst] > 1 and chunks > 1:
            changed = [c for c in changed if c % chunks == chunk] or changed
        changed = _carried_by(changed, before, after, src, dst)
        out.append([src, dst, start, end, nbytes, chunk, _cells_text(changed, len(before[dst]), chunks)])
    return out


def _carried_by(changed: list[int], before: list[list[int]], after: list[list[int]], src: int, dst: int) -> list[int]:
    """Of the receiver's changed cells, those this message carried: first the cells whose new
    data is exactly what the sender held at the step's start (a copy or partial sum sent on),
    else those whose new data the sender held at all. A step of an NCCL algorithm can hold
    several rounds, so a receiver's cell may also change by a later message of the same step
    (through another sender's forward): that cell is not named on this arrow."""

    def new(c: int) -> int:
        return after[dst][c] & ~before[dst][c]

    exact = [c for c in changed if new(c) and new(c) == before[src][c] & ~before[dst][c]]
    some = [c for c in changed if new(c) & (before[src][c] | after[src][c])]
    return exact or some or changed


def _cells_text(cells: list[int], total: int, chunks: int) -> str:
    if not cells:
        return ""
    if len(cells) == total:
        return "all pieces"
    if len(cells) > 3:
        return f"{len(cells)} pieces"
    return ", ".join(cell_name(cell, chunks) for cell in cells)


def _table(records: Any, width: int) -> np.ndarray:
    """Recorded rows as one float array (numpy straight from the record's columns when it has them)."""
    columns = getattr(records, "columns", None)  # a results Table's named numpy columns
    if callable(columns):
        columns = columns()
    if isinstance(columns, dict):
        arrays = list(columns.values())
        if len(arrays) == width:
            return np.column_stack(arrays).astype(float) if len(arrays[0]) else np.zeros((0, width))
    rows = list(records)
    return np.array(rows, dtype=float).reshape(len(rows), width)


def message_array(result: CollectiveResult) -> np.ndarray:
    """The recorded messages as one float array: src, dst, start, end, nbytes, step, chunk."""
    return _table(result.messages, 7)


def compute_array(result: CollectiveResult) -> np.ndarray:
    """The recorded reductions as one float array: rank, start, end, nbytes, step, chunk."""
    return _table(result.computes, 6)


def rank_intervals(result: CollectiveResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every send (on its sender) and reduction (on its rank), whole run: rank, start, end."""
    sends = message_array(result)
    computes = compute_array(result)
    ranks = np.concatenate([sends[:, 0], computes[:, 0]]).astype(int)
    return ranks, np.concatenate([sends[:, 2], computes[:, 1]]), np.concatenate([sends[:, 3], computes[:, 2]])


def rank_values(result: CollectiveResult, color_by: str = "step") -> np.ndarray:
    """Each interval of :func:`rank_intervals` (sends, then reductions): its recorded step, or
    its chunk with ``color_by="chunk"``."""
    column = 6 if color_by == "chunk" else 5
    return np.concatenate([message_array(result)[:, column], compute_array(result)[:, column - 1]])


def link_intervals(result: CollectiveResult) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Every recorded message on every directed link it crossed, whole run: (link names,
    link index per crossing, start, end) as arrays, for utilisation heatmaps at any size.
    Each (sender, receiver) pair's route is looked up once."""
    table = message_array(result)
    if not len(table):
        return [], np.zeros(0, int), np.zeros(0), np.zeros(0)
    ranks = int(table[:, :2].max()) + 1
    codes = table[:, 0].astype(np.int64) * ranks + table[:, 1].astype(np.int64)
    pairs, inverse = np.unique(codes, return_inverse=True)
    routes = [list(result.routes[(int(code // ranks), int(code % ranks))]) for code in pairs.tolist()]
    lengths = np.array([len(route) for route in routes], dtype=np.int64)
    flat = np.array([link for route in routes for link in route], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    per_message = lengths[inverse]
    message = np.repeat(np.arange(len(table)), per_message)
    # the k-th link of a message's route: its pair's offset + k
    within = np.arange(len(message)) - np.repeat(np.cumsum(per_message) - per_message, per_message)
    index_of = flat[offsets[inverse][message] + within]
    names = [str(name) for name in result.links["name"]]
    return names, index_of, table[message, 2], table[message, 3]


def link_events(result: CollectiveResult, limit: int) -> list[dict[str, Any]]:
    """One row per (message, directed link it crossed): link, start, end, bytes, step, chunk."""
    names = result.links["name"]
    rows: list[dict[str, Any]] = []
    for src, dst, start, end, nbytes, step, chunk in result.messages:
        for index in result.routes[(src, dst)]:
            rows.append(
                {
                    "link": str(names[index]),
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
