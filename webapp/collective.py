"""Plain functions behind the collectives page: form -> scenario, scenario -> run (what the step
player and timelines draw from a run is :mod:`sim.collective.player`).

Nothing here touches Dash; the page's callbacks are one-line calls into these, and the tests
call them directly. Every request carries its own scenario; the last few simulated outcomes are
kept (:func:`run`), so a scenario asked for again (a value flipped back, a new colouring, a
second visitor) is drawn without simulating it again.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sim.algorithms.registry import algorithms_for, ops
from sim.collective import explore, pick
from sim.collective.analytic import busbw_factor
from sim.collective.plan import Plan, resolve
from sim.collective.player import PLAYER_DRAW_RANKS
from sim.collective.results import CollectiveResult, algbw_GBps
from sim.collective.runner import start_collective
from sim.errors import CollsimError
from sim.fields import FieldInfo, form_fields
from sim.hardware.uncertainty import interval
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


def _start(info: FieldInfo) -> str:
    """A box's first text: the entry's ``start``, else the dataclass default as the box writes it
    (0.0 s as "0us"; None and () as empty)."""
    if info.start or info.default in (None, (), dataclasses.MISSING):
        return info.start
    return f"{info.default * 1e6:g}us" if info.unit == "s" else str(info.default)


# The form's boxes, in order, by form and URL key: label, hint, first value, checked alone (sim.fields)
FORM: dict[str, FieldInfo] = form_fields("collectives")
DEFAULTS: dict[str, str] = {key: _start(info) for key, info in FORM.items()}

REQUIRED = {
    "ranks": f"give a whole number from {MIN_RANKS} to {MAX_RANKS}",
    "size": "give a size such as 64MiB, 1.5KB or 4096",
    "latency": "give a time such as 5us (0 for none)",
    "bandwidth": "give a rate such as 25GB/s or 100Gbps",
}
# Link sharing "auto": what the CLI runs without --sharing: NCCL's pick's own (its data path's per
# algorithm, sim.nccl.des.data_path_sharing; p2p's for all_to_all / send_recv), else fair.
AUTO_SHARING = "auto"
OPTIONAL_DEFAULTS = {"chunks": "1", "overhead": "0us", "eager_limit": "0"}  # an empty box means these (the hints say so)

# A field checked alone, on this valid scenario: the scenario's own parser and checks give the
# message, and each box gets its own even when several are wrong (the whole form is checked after).
_ALONE_BASE = {"op": "all_reduce", "algorithm": "ring", "ranks": "8", "size": "64MiB", "latency": "5us", "bandwidth": "25GB/s"}
_CHECKED_ALONE = tuple(key for key, info in FORM.items() if info.alone)
_SCENARIO_CHECKED = ("size",)  # boxes a whole scenario checks further (a size of whole elements): see _check_alone


def _check_field(name: str, text: str) -> None:
    """Field-level checks: required boxes, the explorer's rank range, and the scenario's own
    validation of the field alone (:data:`_CHECKED_ALONE`)."""
    text = (text or "").strip()
    if name in REQUIRED and not text:
        raise CollsimError(f"{name}: required; {REQUIRED[name]}")
    if name == "ranks" and text.isdigit() and not MIN_RANKS <= int(text) <= MAX_RANKS:
        raise CollsimError(f"ranks: the explorer takes {MIN_RANKS} to {MAX_RANKS} ranks, got {text}")
    if name in _CHECKED_ALONE and text:
        _check_alone(name, text)


def _check_alone(name: str, text: str) -> None:
    """A box's value through the scenario's own reader (unit required under a short name, the
    field's parser) and bounds (sim.fields.check_value), building no scenario; a value those pass
    is checked on :data:`_ALONE_BASE` as a whole scenario, for what only a scenario can tell."""
    from sim.fields import COLLECTIVE, check_value
    from sim.scenario import unit_kind
    from sim.units import require_unit

    field = FORM[name].name
    if (kind := unit_kind(field)) and name != field:
        require_unit(text, name, kind)
    parse = CollectiveScenario.PARSERS.get(field)
    check_value(COLLECTIVE[field], parse(text, name) if parse else text)
    if name in _SCENARIO_CHECKED:
        inside = {"topology": "two_level"} if name.startswith("intra_") else {}  # links inside a node exist on two_level only
        CollectiveScenario.from_dict({**_ALONE_BASE, **inside, name: text})


# boxes that are not passed as they are: preset nodes (hardware_form), NCCL's restrictions (the
# pick only), sharing "auto" and placement (two_level only)
_NOT_AS_TYPED = ("nodes", *pick.PICK_KEYS, "sharing", "placement")


def scenario_fields(form: dict[str, Any]) -> dict[str, Any]:
    """The scenario mapping (unit strings kept) from the form's raw strings: every box of the
    schema's form that is filled (a new field's box arrives without an edit here)."""
    data = {key: str(form.get(key) or "").strip() for key in DEFAULTS}
    fields: dict[str, Any] = {key: data[key] for key in DEFAULTS if data[key] and key not in _NOT_AS_TYPED}
    fields.update({key: data[key] for key in ("op", "algorithm", *REQUIRED)})  # required: an empty box gets a message
    fields["topology"] = data["topology"] or "switch"
    fields.update({key: data[key] or value for key, value in OPTIONAL_DEFAULTS.items()})
    if data["algorithm"] == pick.NCCL:  # NCCL's pick: empty Channels means the pick's, restrictions as typed
        fields.update({key: data[key] for key in pick.PICK_KEYS if data[key]})
        if not data["chunks"]:
            del fields["chunks"]
    if fields["topology"] != "two_level":
        for key in ("gpus_per_node", "intra_latency", "intra_bandwidth"):
            fields.pop(key, None)
    sharing = data["sharing"] or DEFAULTS["sharing"]
    if sharing != AUTO_SHARING:
        fields["sharing"] = sharing
    elif data["algorithm"] != pick.NCCL:  # auto: what the CLI runs without --sharing
        fields["sharing"] = DEFAULTS["sharing"]
    if fields["topology"] == "two_level" and data["placement"] not in ("", "block"):
        fields["placement"] = data["placement"]
    return fields


def hardware_form(name: str | None, ranks: str | None, nodes: str | None = None) -> dict[str, str] | None:
    """The form values a hardware preset sets: its nodes (``nodes`` when a whole number, else
    from the ranks typed, at least one node) and the ranks they make, its topology and links;
    None for "no preset"."""
    if not name:
        return None
    from sim.hardware.presets import load_preset, scenario_fields

    preset = load_preset(name)
    gpus = preset.gpus_per_node
    if str(nodes or "").strip().isdigit() and int(nodes) >= 1:
        count = int(nodes)
    else:
        count = max(1, int(ranks) // gpus) if str(ranks or "").strip().isdigit() else 1
    fields = scenario_fields(name, count, preset)
    return {
        "nodes": str(count),
        "ranks": str(fields["ranks"]),
        "topology": "two_level",
        "gpus_per_node": str(fields["gpus_per_node"]),
        "bandwidth": f"{fields['bandwidth_Bps'] / 1e9:.6g}GB/s",
        "latency": f"{fields['latency_s'] * 1e6:.6g}us",
        "intra_bandwidth": f"{fields['intra_bandwidth_Bps'] / 1e9:.6g}GB/s",
        "intra_latency": f"{fields['intra_latency_s'] * 1e6:.6g}us",
        "reduce_bandwidth": "",  # a preset's reductions cost nothing, as `collsim sim collective --hardware`
    }


def preset_note(name: str | None, values: dict[str, str] | None) -> str:
    """What choosing preset ``name`` set, said on the page: "dgx-h100: 2 nodes of 8 GPUs = 16
    ranks (change Nodes for more) ..."; "" for no preset."""
    if not name or not values:
        return ""
    nodes, gpus = int(values["nodes"]), values["gpus_per_node"]
    return (
        f"Hardware {name}: {nodes} node{'s' if nodes != 1 else ''} of {gpus} GPUs = {values['ranks']} ranks "
        f"(change Nodes for more); topology two_level, NICs {values['bandwidth']} and {values['latency']}, "
        f"inside a node {values['intra_bandwidth']} and {values['intra_latency']}."
    )


def nodes_to_ranks(nodes: str | None, hardware: str | None, gpus_per_node: str | None) -> str | None:
    """The ranks ``nodes`` nodes of a preset make (the form's GPUs per node, else the preset's);
    None when they make none (no preset, not a whole number)."""
    text = str(nodes or "").strip()
    if not hardware or not text.isdigit() or int(text) < 1:
        return None
    gpus = str(gpus_per_node or "").strip()
    if not gpus.isdigit() or not int(gpus):
        from sim.hardware.presets import load_preset

        gpus = str(load_preset(hardware).gpus_per_node)
    return str(int(text) * int(gpus))


def ranks_to_nodes(ranks: str | None, hardware: str | None, gpus_per_node: str | None) -> str | None:
    """The nodes ``ranks`` fill on a preset when they fill whole nodes, else None."""
    per_node = nodes_to_ranks("1", hardware, gpus_per_node)
    text = str(ranks or "").strip()
    if per_node is None or not text.isdigit() or int(text) % int(per_node) or not int(text):
        return None
    return str(int(text) // int(per_node))


def _check_nodes(form: dict[str, Any]) -> str:
    """The Nodes field's message ("" when fine): a whole number, only with a preset, making as
    many ranks as the Ranks field says."""
    text, hardware = str(form.get("nodes") or "").strip(), str(form.get("hardware") or "").strip()
    if not text:
        return ""
    if not hardware:
        return "nodes: only with a hardware preset (without one, Ranks sets the size)"
    if not text.isdigit() or int(text) < 1:
        return f"nodes: give a whole number of nodes, at least 1, got {text!r}"
    try:
        ranks = nodes_to_ranks(text, hardware, form.get("gpus_per_node"))
    except CollsimError:
        return ""  # an unknown preset: the hardware field says so
    if ranks is not None and int(ranks) > MAX_RANKS:
        return f"nodes: {text} nodes of {int(ranks) // int(text)} GPUs are {ranks} ranks; the explorer takes up to {MAX_RANKS}"
    if ranks is not None and str(form.get("ranks") or "").strip() not in ("", ranks):
        return f"nodes: {text} nodes are {ranks} ranks, but Ranks says {str(form.get('ranks')).strip()}; change one of them"
    return ""


def pick_form(name: str | None, op: str | None) -> dict[str, str]:
    """What choosing a preset sets besides the network: on a GPU preset, for an op NCCL's pick
    covers, Algorithm "NCCL's pick" with its own channels (Channels empty) and sharing "auto" (the
    pick's own, as the CLI's default: the data path's per algorithm, Tree fair and the others
    fifo; p2p's for all_to_all and send_recv); {} otherwise (the algorithm stays)."""
    from sim.training.comm import uses_nccl

    try:
        if not name or not uses_nccl(name) or op not in pick.PICKED_OPS:
            return {}
    except CollsimError:  # an unknown preset: the hardware field says so
        return {}
    return {"algorithm": pick.NCCL, "chunks": "", "sharing": AUTO_SHARING, "nccl_algo": "", "nccl_proto": ""}


def nccl_choices(op: str, nccl_algo: str | None = None) -> tuple[list[str], list[str]]:
    """The NCCL algorithms the op has on NCCL's data path (Ring, Tree, NVLS, NVLSTree, PAT), and
    the protocols of ``nccl_algo`` (of any of them when "" or unknown): from the registered nccl_* algorithms."""
    from sim.algorithms.registry import algorithm_spec
    from sim.nccl.path import NAMES

    pairs = [pair for pair, name in NAMES.items() if op in ops() and algorithm_spec(op, name) is not None]
    algorithms = list(dict.fromkeys(algorithm for algorithm, _ in pairs))
    protocols = [p for p in ("Simple", "LL", "LL128") if any(pr == p and nccl_algo in ("", None, a) for a, pr in pairs)]
    return algorithms, protocols


def pick_info(scenario: CollectiveScenario, picked: bool, plan: Plan | None = None, preset: Any = None) -> Any:
    """What an nccl_* scenario on a GPU preset runs and NCCL's model's time for it (None otherwise);
    ``plan``: the scenario's (sim.collective.plan), whose preset it reads; or ``preset``, loaded
    already (an :class:`Outcome`'s)."""
    try:
        return pick.describe(scenario, picked, preset if plan is None else plan.preset)
    except CollsimError:
        return None


def hardware_options() -> list[str]:
    from sim.hardware.presets import list_presets

    return list_presets()


def nccl_picks(scenario: CollectiveScenario, sizes: tuple[int, ...] = CROSSOVER_SIZES) -> list[dict[str, Any]]:
    """What NCCL's own tuning model would pick at each size on the scenario's hardware preset
    (algorithm/protocol and its predicted time); [] without a GPU preset or for other ops."""
    if not scenario.hardware:
        return []
    from sim.nccl.model import predict

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
    if _check_nodes(form):
        errors["nodes"] = _check_nodes(form)
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
    """The form box a CollsimError is about: its ``field`` (a short key, canonical name or alias
    of a box's entry, sim.fields), or "" when it names none of them."""
    name = getattr(error, "field", None) or ""
    name = {"root": "ranks", "groups": "ranks"}.get(name, name)  # the form has no root or groups box
    return next((key for key, info in FORM.items() if name in (key, info.name, *info.keys())), "")


def form_from_query(search: str | None) -> dict[str, str]:
    """The form from a link (:func:`read_link` without its notes)."""
    return read_link(search)[0]


def read_link(search: str | None) -> tuple[dict[str, str], list[str]]:
    """The form from a link, and what the page says it made of it. A link naming only a
    hardware preset (``?hardware=dgx-h100``, perhaps with ``nodes``) gets the nodes, ranks,
    topology and links the preset sets, as picking it in the form does; a link whose op the
    default algorithm does not serve (``?op=barrier``) gets that op's default algorithm."""
    form = urlstate.form_from_query(search, DEFAULTS)
    given = urlstate.query_keys(search)
    notes = []
    if form.get("hardware") and not given & set(HARDWARE_SETS):
        try:
            values = hardware_form(form["hardware"], form["ranks"] if "ranks" in given else None, form["nodes"])
        except CollsimError:
            values = None  # an unknown preset: the form shows the hardware field's message
        if values:
            form.update({key: value for key, value in values.items() if key not in given or key == "nodes"})
            notes.append(preset_note(form["hardware"], values))
            if "algorithm" not in given:  # as picking the preset in the form: NCCL's pick
                form.update(pick_form(form["hardware"], form["op"]))
    if "algorithm" not in given:
        form["algorithm"], note = served_algorithm(form["op"], form["algorithm"], form["hardware"])
        notes.append(note)
    return form, [note for note in notes if note]


def served_algorithm(op: str | None, algorithm: str | None, hardware: str | None = None) -> tuple[str | None, str]:
    """(algorithm, note): ``algorithm`` when ``op`` has it; else the op's default (its first
    choice) and a note saying so, shown on the page (an op whose algorithm stayed was refused)."""
    names = algorithm_options(op or "", hardware)
    if algorithm in names or not names:
        return algorithm, ""
    return names[0], f"Algorithm: {algorithm} does not run {op}; set to {_algorithm_label(names[0])}, {op}'s default."


def _algorithm_label(name: str) -> str:
    return "NCCL's pick" if name == pick.NCCL else name


HARDWARE_SETS = ("topology", "gpus_per_node", "bandwidth", "latency", "intra_bandwidth", "intra_latency")


def query_from_form(form: dict[str, Any]) -> str:
    return urlstate.query_from_form(form, DEFAULTS)


def algorithm_options(op: str, hardware: str | None = None) -> list[str]:
    """The op's algorithms; "nccl" (NCCL's pick) first on a GPU preset for the ops it covers."""
    names = algorithms_for(op) if op in ops() else []
    return [pick.NCCL, *names] if pick_form(hardware, op) else names


# --------------------------------------------------------------------------- running


def estimate_cost(scenario: CollectiveScenario, plan: Plan | None = None) -> int:
    """Message-equivalents of work of a per-message run, told without running it: messages
    plus the flows fair re-sharing touches (sim.collective.budget), plus routes. ``plan``: the
    scenario's, whose topology the run then uses."""
    from sim.collective.budget import estimate

    told = explore.work(scenario)
    return estimate(scenario, plan=plan).visits + explore.ROUTE_COST * told.pairs


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
    preset: Any = field(default=None, repr=False, compare=False)  # the run's plan's, for pick_info (not its topology: kept small)


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
    plan = resolve(scenario)  # the preset loaded once; the topology built once for the estimate and the run
    estimate = estimate_cost(scenario, plan) if estimate is None else estimate
    if estimate <= max_messages:
        record = "full" if estimate <= 2 * max_messages else "auto"
        runs = scenario.replace(record=record)
        result, buffers = explore.run(runs, frames=frames and scenario.ranks <= PLAYER_DRAW_RANKS, plan=plan)
        closed = closed_form(scenario, result)
        closed, breakdown = switch_form_if_equal(scenario, result, closed, breakdown)
        return Outcome(scenario, "simulated", result, closed.time_s, "", breakdown, closed.exact, closed.note, buffers, plan.preset)
    cli = cli_command(scenario)
    why = f"about {estimate:,} message-equivalents of work is too much to simulate in the browser (limit {max_messages:,})"
    if closed.time_s is not None:
        note = f"Showing the closed form: {why}. Simulate it on the command line: {cli}"
        return Outcome(scenario, "closed form", None, closed.time_s, note, breakdown, closed.exact, closed.note, preset=plan.preset)
    note = f"Not simulated: {why}, and there is no closed form ({closed.note}). Use the command line: {cli}"
    return Outcome(scenario, "refused", None, None, note, closed_note=closed.note, preset=plan.preset)


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
    plan = resolve(s)  # the preset loaded once: the topology and the summary's NCCL pick read it
    started = start_collective(s, plan.topology)
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
    return Outcome(scenario, "simulated", result, closed.time_s, "", breakdown, closed.exact, closed.note, preset=plan.preset)


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
    found = interval(s, time_s) if time_s else None  # on a hardware preset: how far real clusters spread
    numbers["time_interval_s"] = None if found is None else [found.low_s, found.high_s]
    numbers["interval_basis"] = None if found is None else found.basis
    algbw = algbw_GBps(s.size_bytes, time_s, s.op) if time_s else None  # None for a barrier: it moves no data
    if algbw is not None:
        numbers["algbw_Bps"] = algbw * 1e9
        numbers["busbw_Bps"] = numbers["algbw_Bps"] * busbw_factor(s.op, s.ranks)
    return numbers
