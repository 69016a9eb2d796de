"""The Collectives page's callbacks: each reads the form, calls one function of
:mod:`webapp.collective` (or sim), and draws with :mod:`webapp.figures.collectives` (the step
player with :mod:`webapp.figures.player`). Outputs are named (dicts); each callback is a
module-level function (tested directly) wired in :func:`register`. The callbacks that run in the browser are in ``assets/collsim.js``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from dash import ClientsideFunction, Input, Output, Patch, State, ctx, html, no_update
from dash.exceptions import PreventUpdate

from sim.collective import explore, pick
from sim.collective.narrative import decimal_units, size_text
from sim.collective.player import link_events, link_intervals, player_data, rank_intervals, rank_values
from sim.errors import CollsimError
from sim.units import format_bandwidth, format_time
from webapp import collective as model
from webapp import jobs, urlstate
from webapp.callbacks import answer, events_csv, guarded
from webapp.components import number_card
from webapp.figures import buffers as buffers_draw
from webapp.figures import collectives as draw
from webapp.figures import common
from webapp.figures import player as player_draw
from webapp.pages.collectives import ids, views
from webapp.pages.collectives.controls import no_player_reason, step_by, tick, tick_interval, toggle_play
from webapp.pages.collectives.layout import (
    HARDWARE_FIELDS,
    LABELS,
    PICK_FIELDS,
    TWO_LEVEL_ONLY,
    algorithms_for_op,
    channels_label,
    compare_choices,
    drawn_at_load,
    nccl_options,
    scenario_of,
    validate,
    validation_failed,
)
from webapp.pages.collectives.views import (
    CROSSOVER_MORE_MESSAGES,
    compare_form,
    compare_panel,
    compare_update,
    crossover_in_background,
    crossover_note,
    crossover_panel,
    crossover_view,
)

__all__ = [
    "CROSSOVER_MORE_MESSAGES",
    "PANELS",
    "RUN",
    "apply_hardware",
    "cancelled",
    "channels_placeholder",
    "compare_choices",
    "compare_form",
    "compare_panel",
    "compare_update",
    "crossover_in_background",
    "crossover_note",
    "crossover_panel",
    "crossover_view",
    "download",
    "mark_step",
    "nccl_fields",
    "nodes_or_ranks",
    "op_changed",
    "panels",
    "register",
    "show_step",
    "simulate",
    "simulate_in_background",
    "step_by",
    "step_shapes",
    "tick",
    "tick_interval",
    "toggle_play",
    "validate",
    "validation_failed",
]

CHUNKS_LABEL = LABELS["chunks"]
PANELS = {  # what a run draws: the simulation callback's outputs (and the background run's)
    "notice": (ids.COLL_NOTICE, "children"),
    "summary": (ids.COLL_SUMMARY, "children"),
    "breakdown": (ids.COLL_BREAKDOWN, "figure"),
    "rank_gantt": (ids.COLL_GANTT_RANK, "figure"),
    "link_gantt": (ids.COLL_GANTT_LINK, "figure"),
    "player": (ids.COLL_PLAYER_STORE, "data"),
    "step_max": (ids.COLL_STEP, "max"),
    "step": (ids.COLL_STEP, "value"),
    "topology": (ids.COLL_TOPOLOGY, "figure"),
    "buffers": (ids.COLL_BUFFERS, "figure"),
    "caption": (ids.COLL_STEP_LABEL, "children"),
}
MARKED = ("rank_gantt", "link_gantt")  # the timelines that mark the player's step
RUN = (*PANELS, "job")  # the simulation callback also hands large scenarios to the background run


def outputs(names: dict[str, tuple[str, str]], duplicate: bool = False) -> dict[str, Output]:
    return {name: Output(*target, allow_duplicate=duplicate) for name, target in names.items()}


def form_inputs(kind: type = Input) -> dict[str, Any]:
    """The form's fields by name, as a callback's ``form`` argument."""
    return {name: kind(ids.field_id(name), "value") for name in model.DEFAULTS}


def apply_hardware(name: str | None, ranks: str | None, op: str | None = None, algorithm: str | None = None) -> dict[str, Any]:
    """A picked preset -> the form values it sets (ranks rounded to whole nodes; on a GPU preset
    NCCL's pick on its own channels, :func:`webapp.collective.pick_form`) and the algorithm
    choices; no preset: only the choices (NCCL's pick leaves them)."""
    options, kept = algorithms_for_op(op or "", algorithm, name)
    values = model.hardware_form(name, ranks)
    if values is None:  # no preset: its Nodes field goes (empty, hidden)
        return {**answer(HARDWARE_FIELDS + PICK_FIELDS), "nodes": "", "nodes_style": {"display": "none"}, "note": "",
                "algorithm": kept, "algorithm_options": options}  # fmt: skip
    picked = model.pick_form(name, op)
    chosen = {key: picked.get(key, no_update) for key in PICK_FIELDS}
    return {**{key: values[key] for key in HARDWARE_FIELDS}, **chosen, "algorithm": picked.get("algorithm", kept), "algorithm_options": options,
            "nodes_style": {}, "note": model.preset_note(name, values)}  # fmt: skip


def op_changed(op: str | None, current: str | None, hardware: str | None) -> dict[str, Any]:
    """A new op: its algorithm choices; an algorithm it does not run becomes its default, said
    above the form (:func:`webapp.collective.served_algorithm`)."""
    options, _ = algorithms_for_op(op or "", current, hardware)
    value, note = model.served_algorithm(op, current, hardware)
    return {"options": options, "value": value, "note": note or no_update}


def nodes_or_ranks(
    trigger: str | None, nodes: str | None, ranks: str | None, hardware: str | None, gpus_per_node: str | None
) -> dict[str, Any]:
    """Nodes and Ranks of a preset kept in step (one callback, as Dash syncs two inputs): new
    Nodes set Ranks (nodes x GPUs per node); new Ranks that fill whole nodes set Nodes. Nothing
    when they make no whole count (the Nodes field's message says why)."""
    if not hardware:
        raise PreventUpdate
    if trigger == ids.field_id("nodes"):
        made = model.nodes_to_ranks(nodes, hardware, gpus_per_node)
        changed = {"ranks": made} if made is not None and made != str(ranks or "").strip() else {}
    else:
        made = model.ranks_to_nodes(ranks, hardware, gpus_per_node)
        changed = {"nodes": made} if made is not None and made != str(nodes or "").strip() else {}
    if not changed:
        raise PreventUpdate
    return answer(("nodes", "ranks"), **changed)


def channels_placeholder(data: dict | None, algorithm: str | None) -> str:
    """The empty Channels field of NCCL's pick shows the channels the pick runs on (the
    communicator's; NCCL uses fewer for small calls, as the summary says)."""
    if algorithm != pick.NCCL or not data:
        return ""
    return f"{data['chunks']}: NCCL's channels"


def nccl_fields(algorithm: str | None, op: str | None, nccl_algo: str | None) -> dict[str, Any]:
    """The NCCL algorithm / protocol choices (shown while NCCL's pick is the algorithm) and the
    Chunks field's label: "Channels" whenever an nccl_* algorithm or the pick runs."""
    label, hint = channels_label(algorithm) or (CHUNKS_LABEL)
    shown = {} if algorithm == pick.NCCL else {"display": "none"}
    options = nccl_options(op or "", nccl_algo)
    return {"algo_options": options["nccl_algo"], "proto_options": options["nccl_proto"], "algo_style": shown, "proto_style": shown,
            "label": label, "hint": hint}  # fmt: skip


def summary_cards(outcome: model.Outcome, picked: bool = False) -> list:
    numbers = model.summary_numbers(outcome)
    error, messages, wire = numbers["relative_error"], numbers["messages"], numbers["bytes_on_wire"]
    bandwidths = f"{format_bandwidth(numbers['algbw_Bps'])} / {format_bandwidth(numbers['busbw_Bps'])}" if numbers["algbw_Bps"] else "—"
    cards = [
        number_card("Simulated", format_time(numbers["time_s"]) if numbers["time_s"] is not None else "—", ids.COLL_SIM_TIME),
        *_interval_card(numbers),
        number_card("Closed form", _closed_text(numbers), ids.COLL_ANALYTIC_TIME),
        number_card("Sim vs closed form", _error_text(error), ids.COLL_REL_ERROR),
        number_card("Messages / steps", f"{messages:,} / {numbers['steps']}" if messages is not None else "—", ids.COLL_MESSAGES),
        number_card("On the wire", size_text(wire, decimal_units(outcome.scenario.size_bytes)) if wire is not None else "—", ids.COLL_WIRE),
        number_card("algbw / busbw", bandwidths, ids.COLL_BW),
    ]
    info = model.pick_info(outcome.scenario, picked, preset=outcome.preset)
    if info is not None:  # what NCCL picks (or what ran) on its channels, and NCCL's own model beside the DES
        ran, versus, rates = pick.lines(info, numbers["time_s"])
        cards.insert(1, number_card("NCCL's model", format_time(info.model_time_s), ids.COLL_NCCL_TIME))
        cards.append(html.Div([html.B(ran), html.Br(), versus, html.Br(), rates], id=ids.COLL_NCCL_NOTE, className="closed-note", style={"flexBasis": "100%"}))  # fmt: skip
    if numbers["analytic_note"]:
        cards.append(html.Div(numbers["analytic_note"], id=ids.COLL_CLOSED_NOTE, className="closed-note", style={"flexBasis": "100%"}))
    return cards


def _interval_card(numbers: dict) -> list:
    """On a hardware preset, the 80 % interval beside the simulated time, its basis on hover."""
    if not numbers.get("time_interval_s"):
        return []
    low, high = numbers["time_interval_s"]
    card = number_card("80 % interval", f"{format_time(low)} – {format_time(high)}", ids.COLL_INTERVAL)
    card.title = numbers["interval_basis"]
    return [card]


def _error_text(error: float | None) -> str:
    """The relative difference simulated vs closed form; "exact" below float noise (1e-12)."""
    if error is None:
        return "—"
    return "exact" if abs(error) < model.EXACT_RELATIVE else f"{error:+.1e} relative"


def _closed_text(numbers: dict) -> str:
    if numbers["analytic_time_s"] is None:
        return "none"
    time_text = format_time(numbers["analytic_time_s"])
    return time_text if numbers["analytic_exact"] else f"≈ {time_text} (approx.)"


def simulate(
    data: dict | None, color_by: str, background: bool = True, position: int | None = None, picked: bool = False
) -> dict[str, Any]:
    """The scenario store -> every panel (:data:`PANELS`) and a background job. An invalid scenario
    keeps the last figures and says so.

    Scenarios up to ``MAX_SIM_MESSAGES`` are simulated here and now; larger ones up to
    ``BACKGROUND_MAX_MESSAGES`` become a job for :func:`simulate_in_background` (when the app has
    a background manager: ``background``); larger ones get the closed form or a refusal.
    ``position``: the slider's current value; the player stays at that step when the new run has
    it (the slider is left alone then: setting it would draw the player a second time).
    ``picked``: the form asked for NCCL's pick (the summary says "NCCL picks")."""
    if not data:
        return answer(
            RUN,
            notice="Fix the highlighted inputs; nothing is computed until they are valid (figures shown, if any, are from an earlier valid scenario).",
        )
    try:
        scenario = scenario_of(data)
        work = explore.work(scenario)
        if background and model.MAX_SIM_MESSAGES < work.cost <= model.BACKGROUND_MAX_MESSAGES:
            jobs.check_job(scenario)  # refused now, with what would fit, rather than stopped at the time limit
            notice = (
                f"Simulating {scenario.op}/{scenario.algorithm} on {scenario.ranks} ranks in the background "
                f"(about {work.cost:,} message-equivalents of work); Cancel stops it. The figures below show the last finished run."
            )
            # a fresh token per job: two users (or two clicks) with the same scenario get separate jobs
            job = {"scenario": data, "color_by": color_by, "messages": work.messages, "token": uuid.uuid4().hex, "picked": picked}
            return answer(RUN, notice=notice, job=job)
        outcome = model.run(scenario, estimate=work.cost)
    except CollsimError as error:
        return answer(RUN, notice=f"Cannot run this scenario: {error}")
    shown = panels(outcome, color_by, position or 0, picked)
    if shown["step"] == (position or 0):  # the slider stays: setting it would draw the player a second time
        shown["step"] = no_update
    return answer(RUN, **shown)


def panels(outcome: model.Outcome, color_by: str, position: int = 0, picked: bool = False) -> dict[str, Any]:
    """An outcome -> every panel (:data:`PANELS`): the player at ``position`` (clamped to the new
    run's steps) comes with the run, so no second round trip draws its first frame."""
    result, scenario = outcome.result, outcome.scenario
    closed = (outcome.analytic_time_s, outcome.breakdown, outcome.closed_exact, outcome.closed_note)
    shown = {
        "summary": summary_cards(outcome, picked),
        "breakdown": common.revised(draw.breakdown_figure(result.time_s if result else None, *closed)),
    }
    if result is None:
        note = common.note_figure(outcome.note, "Timeline")
        return {
            **shown,
            "notice": outcome.note,
            "rank_gantt": note,
            "link_gantt": note,
            "player": None,
            "step_max": 1,
            "step": 0,
            **show_step(0, None),
        }
    names, lanes, starts, ends = link_intervals(result)
    player = player_data(scenario, result, outcome.frames)
    positions = player_draw.player_positions(player) if player else 1
    position = max(0, min(int(position or 0), positions - 1))
    shown = {
        **shown,
        "notice": outcome.note
        or f"Simulated {scenario.op}/{scenario.algorithm} on {scenario.ranks} ranks ({scenario.topology}) message by message.",
        "rank_gantt": common.rank_timeline(result.events, *rank_intervals(result), color_by, scenario.ranks, rank_values(result, color_by)),
        "link_gantt": common.link_timeline(names, lanes, starts, ends, lambda: link_events(result, common.SEGMENT_BARS + 1), color_by),
        "player": player,
        "step_max": positions - 1,
        "step": position,
        **show_step(position, player, no_player_reason(result)),
    }
    if player:  # the timelines' scales, for the step marks the slider moves (show_step)
        player["time_factors"] = {name: (shown[name].layout.meta or {}).get("time_factor") for name in MARKED}
    for name in MARKED:
        mark = step_shapes(player, position, name)
        if mark:
            shown[name].update_layout(shapes=mark)
    return shown


def simulate_in_background(set_progress: Any, job: dict | None) -> dict[str, Any]:
    """A background job (see :func:`simulate`) -> the same panels as :func:`simulate`, reporting
    (percent, text) through ``set_progress`` while it runs. Runs in its own process; Cancel, a
    new scenario or a new job kill that process."""
    if not job:
        raise PreventUpdate
    scenario = scenario_of(job["scenario"])

    def report(fraction: float, text: str) -> None:
        set_progress((str(round(100 * fraction)), f"{100 * fraction:.0f}% ({text})"))

    try:
        outcome = model.run_with_progress(scenario, report, job.get("messages"))
    except CollsimError as error:
        return answer(PANELS, notice=f"Cannot run this scenario: {error}")
    return panels(outcome, job.get("color_by") or "step", 0, bool(job.get("picked")))


def cancelled(clicks: int | None) -> str:
    """The notice after Cancel: the run is stopped and the figures are the last finished run."""
    if not clicks:
        raise PreventUpdate
    return "Cancelled: the background run was stopped. The figures show the last finished run; change an input to run again."


def show_step(position: int | None, player: dict | None, reason: str = "") -> dict[str, Any]:
    """The player at slider ``position``: topology with messages in flight, buffers, caption."""
    if not player:
        text = reason or no_player_reason(None)
        return {"topology": common.note_figure(text, "Topology"), "buffers": common.note_figure(text, "Buffers"), "caption": ""}
    position = int(position or 0)
    return {  # the same step of a run at another size draws the same: revised() lets the browser skip it
        "topology": common.revised(player_draw.topology_figure(player, position)),
        "buffers": common.revised(buffers_draw.buffer_figure(player, position)),
        "caption": player_draw.step_caption(player, position),
    }


def step_shapes(player: dict | None, position: int, timeline: str) -> list[dict[str, Any]] | None:
    """The shapes that mark the player's step at ``position`` on ``timeline`` ("rank_gantt" or
    "link_gantt"): a band from the step's first send to its last arrival, labelled "step k"
    (the timelines' hover and colour bar number steps the same way); none at the inputs
    (position 0). None when the timeline's time scale is not known."""
    factor = ((player or {}).get("time_factors") or {}).get(timeline)
    if not player or not factor:
        return None
    span = player_draw.step_span(player, int(position or 0))
    if span is None:
        return []
    start, end, number = span
    return [common.step_mark(start, end, factor, f"step {number}")]


def mark_step(position: int | None, player: dict | None) -> dict[str, Any]:
    """The slider moved: the step marks on both timelines, as patches (the bars are not resent)."""
    marks = {}
    for name in MARKED:
        shapes = step_shapes(player, int(position or 0), name)
        if shapes is None:
            marks[name] = no_update
        else:
            marks[name] = Patch()
            marks[name]["layout"]["shapes"] = shapes
    return marks


def download(trigger: str | None, data: dict | None) -> dict[str, Any]:
    """The file for the pressed download button, or a message saying why there is none."""
    if not trigger:
        return {"file": no_update, "error": ""}
    if not data:
        return {"file": None, "error": "fix the scenario first"}
    scenario = scenario_of(data)
    stem = f"{scenario.op}-{scenario.algorithm}-p{scenario.ranks}"
    if trigger == ids.COLL_DL_YAML:
        return {"file": {"content": scenario.to_yaml(), "filename": f"{stem}.yaml", "type": "application/yaml"}, "error": ""}
    if trigger == ids.COLL_DL_JSON:
        return {"file": {"content": scenario.to_json(), "filename": f"{stem}.json", "type": "application/json"}, "error": ""}
    outcome = model.run(scenario, frames=False)
    if outcome.result is None:
        return {"file": None, "error": "too large to simulate here: no events to download (use the CLI)"}
    if trigger == ids.COLL_DL_CSV:
        return {"file": {"content": events_csv(outcome.result.events()), "filename": f"{stem}-events.csv", "type": "text/csv"}, "error": ""}
    trace = json.dumps(outcome.result.chrome_trace())
    return {"file": {"content": trace, "filename": f"{stem}-trace.json", "type": "application/json"}, "error": ""}


# ----------------------------------------------------------------------------- wiring


def register(app: Any) -> None:
    _register_form(app)
    _register_run(app, getattr(app, "_background_manager", None))
    _register_player(app)
    _register_views(app)


def _register_form(app: Any) -> None:
    """Algorithm choices, the two_level fields, the hardware picker, validation, the URL writers."""
    note = Output(ids.COLL_FORM_NOTE, "children", allow_duplicate=True)
    app.callback(
        output={"options": Output(ids.field_id("algorithm"), "options"), "value": Output(ids.field_id("algorithm"), "value"), "note": note},
        inputs={"op": Input(ids.field_id("op"), "value"), "current": State(ids.field_id("algorithm"), "value"),
                "hardware": State(ids.field_id("hardware"), "value")},
        prevent_initial_call=True,  # the layout has them (one round trip less before the first run)
    )(op_changed)  # fmt: skip
    app.callback(
        output={name: Output(ids.field_id(name), "value", allow_duplicate=True) for name in ("nodes", "ranks")},
        inputs={name: Input(ids.field_id(name), "value") for name in ("nodes", "ranks")}
        | {name: State(ids.field_id(name), "value") for name in ("hardware", "gpus_per_node")},
        prevent_initial_call=True,
    )(guarded(lambda **form: nodes_or_ranks(ctx.triggered_id, **form), lambda message: answer(("nodes", "ranks"))))
    nccl = {"algo_options": Output(ids.field_id("nccl_algo"), "options"), "proto_options": Output(ids.field_id("nccl_proto"), "options"),
            "algo_style": Output(ids.field_box_id("nccl_algo"), "style"), "proto_style": Output(ids.field_box_id("nccl_proto"), "style"),
            "label": Output(ids.COLL_CHUNKS_LABEL, "children"), "hint": Output(ids.COLL_CHUNKS_HINT, "children")}  # fmt: skip
    app.callback(
        output=nccl,
        inputs={"algorithm": Input(ids.field_id("algorithm"), "value"), "op": Input(ids.field_id("op"), "value"),
                "nccl_algo": Input(ids.field_id("nccl_algo"), "value")},
        prevent_initial_call=True,  # the layout has them
    )(nccl_fields)  # fmt: skip
    app.callback(
        Output(ids.field_id("chunks"), "placeholder"),
        Input(ids.COLL_SCENARIO, "data"),
        State(ids.field_id("algorithm"), "value"),
        prevent_initial_call=True,  # the layout has it (layout.checked)
    )(channels_placeholder)
    app.clientside_callback(  # the layout sets them at load
        ClientsideFunction("collsim", "twoLevelFields"),
        *[Output(ids.field_box_id(name), "style") for name in TWO_LEVEL_ONLY],
        Input(ids.field_id("topology"), "value"),
        prevent_initial_call=True,
    )
    filled = {name: Output(ids.field_id(name), "value", allow_duplicate=True) for name in HARDWARE_FIELDS + PICK_FIELDS}
    app.callback(
        output={**filled, "algorithm_options": Output(ids.field_id("algorithm"), "options", allow_duplicate=True),
                "nodes_style": Output(ids.field_box_id("nodes"), "style"), "note": note},
        inputs={"name": Input(ids.field_id("hardware"), "value"), "ranks": State(ids.field_id("ranks"), "value"),
                "op": State(ids.field_id("op"), "value"), "algorithm": State(ids.field_id("algorithm"), "value")},
        prevent_initial_call=True,
    )(guarded(apply_hardware, lambda message: answer((*HARDWARE_FIELDS, *PICK_FIELDS, "algorithm_options", "nodes_style", "note"))))  # fmt: skip
    errors = {name: Output(ids.error_id(name), "children") for name in model.DEFAULTS}
    app.callback(
        output={"scenario": Output(ids.COLL_SCENARIO, "data"), "errors": errors},
        inputs={"form": form_inputs()},
        prevent_initial_call=True,  # the layout has its answer (layout.checked)
    )(guarded(validate, validation_failed))
    # Two writers of one query, both in the browser: an input change is written at once (the view
    # options as State), a view change (step, colour, comparison) too; one callback with all of
    # them as Inputs would wait for the simulation, whose output the step is.
    view = [(ids.COLL_STEP, "value"), (ids.COLL_COLOR_BY, "value"), (ids.COLL_CMP_FIELD, "value"), (ids.COLL_CMP_VALUE, "value")]
    names = urlstate.writer_states(ids.COLL_URL_NAMES)
    fields = [Input(ids.field_id(name), "value") for name in model.DEFAULTS]
    app.clientside_callback(
        ClientsideFunction("collsim", "urlFromForm"), Output(ids.URL, "search"), Output(ids.URL_WRITTEN, "data"),
        *fields, *[State(*item) for item in view], *names,
    )  # fmt: skip
    app.clientside_callback(
        ClientsideFunction("collsim", "urlFromView"),
        Output(ids.URL, "search", allow_duplicate=True),
        Output(ids.URL_WRITTEN, "data", allow_duplicate=True),
        *[Input(*item) for item in view], *[State(field.component_id, "value") for field in fields], *names,
        prevent_initial_call=True,
    )  # fmt: skip


def _register_run(app: Any, manager: Any) -> None:
    """The simulation on the form's fields (it starts with the input change, not one round trip
    later with the scenario store), and the background run with progress and Cancel."""
    background = manager is not None

    def simulate_form(form: dict[str, Any], color_by: str, position: int | None) -> dict[str, Any]:
        if ctx.triggered_id is None and drawn_at_load(form, background):  # at load: the layout came drawn (first_view)
            raise PreventUpdate
        return simulate(validate(form)["scenario"], color_by, background, position, form.get("algorithm") == pick.NCCL)

    app.callback(
        output={**outputs(PANELS), "job": Output(ids.COLL_JOB, "data")},
        inputs={"form": form_inputs(), "color_by": Input(ids.COLL_COLOR_BY, "value"), "position": State(ids.COLL_STEP, "value")},
    )(guarded(simulate_form, lambda message: answer(RUN, notice=message)))
    # A new scenario (or colouring) stops a running background job (set in the browser only while one runs)
    app.clientside_callback(
        ClientsideFunction("collsim", "stopSignal"), Output(ids.COLL_STOP, "data"), Input(ids.COLL_SCENARIO, "data"),
        Input(ids.COLL_COLOR_BY, "value"), State(ids.COLL_CANCEL, "disabled"), prevent_initial_call=True,
    )  # fmt: skip
    if not background:
        return
    app.callback(
        output=outputs(PANELS, duplicate=True),
        inputs={"job": Input(ids.COLL_JOB, "data")},
        background=True,
        manager=manager,
        interval=300,
        progress=[Output(ids.COLL_PROGRESS_BAR, "value"), Output(ids.COLL_PROGRESS_TEXT, "children")],
        progress_default=["0", ""],
        running=[
            (Output(ids.COLL_PROGRESS, "style"), {"display": "flex"}, {"display": "none"}),
            (Output(ids.COLL_CANCEL, "disabled"), False, True),
        ],
        # Cancel, any new scenario (which may be answered directly) or another page of the app stops the run
        cancel=[Input(ids.COLL_CANCEL, "n_clicks"), Input(ids.COLL_STOP, "data"), Input(ids.URL, "pathname")],
        prevent_initial_call=True,
    )(guarded(simulate_in_background, lambda message: answer(PANELS, notice=message)))
    app.callback(Output(ids.COLL_NOTICE, "children", allow_duplicate=True), Input(ids.COLL_CANCEL, "n_clicks"), prevent_initial_call=True)(
        cancelled
    )


def _register_player(app: Any) -> None:
    """The slider draws the step (a new run draws its first frame itself, see :func:`panels`); Play ticks it."""
    player = {name: PANELS[name] for name in ("topology", "buffers", "caption")}
    app.callback(
        output=outputs(player, duplicate=True),
        inputs={"position": Input(ids.COLL_STEP, "value"), "player": State(ids.COLL_PLAYER_STORE, "data")},
        prevent_initial_call=True,
    )(
        guarded(
            show_step, lambda message: {"topology": common.note_figure(message), "buffers": common.note_figure(message), "caption": message}
        )
    )
    app.callback(
        output={name: Output(*PANELS[name], allow_duplicate=True) for name in MARKED},
        inputs={"position": Input(ids.COLL_STEP, "value"), "player": State(ids.COLL_PLAYER_STORE, "data")},
        prevent_initial_call=True,
    )(guarded(mark_step, lambda message: answer(MARKED)))
    playing = {
        "disabled": Output(ids.COLL_TICK, "disabled", allow_duplicate=True),
        "label": Output(ids.COLL_PLAY, "children", allow_duplicate=True),
    }
    slider = {"position": State(ids.COLL_STEP, "value"), "maximum": State(ids.COLL_STEP, "max")}
    app.callback(
        output={**playing, "step": Output(ids.COLL_STEP, "value", allow_duplicate=True)},
        inputs={"clicks": Input(ids.COLL_PLAY, "n_clicks"), "disabled": State(ids.COLL_TICK, "disabled"), **slider},
        prevent_initial_call=True,
    )(toggle_play)
    app.callback(
        output={**playing, "step": Output(ids.COLL_STEP, "value", allow_duplicate=True)},
        inputs={"_": Input(ids.COLL_TICK, "n_intervals"), **slider},
        prevent_initial_call=True,
    )(tick)
    app.callback(
        Output(ids.COLL_STEP, "value", allow_duplicate=True),
        Input(ids.COLL_PREV, "n_clicks"),
        Input(ids.COLL_NEXT, "n_clicks"),
        State(ids.COLL_STEP, "value"),
        State(ids.COLL_STEP, "max"),
        prevent_initial_call=True,
    )(lambda prev, next_, position, maximum: step_by(ctx.triggered_id, position, maximum))
    app.callback(Output(ids.COLL_TICK, "interval"), Input(ids.COLL_SPEED, "value"), prevent_initial_call=True)(tick_interval)


def _register_views(app: Any) -> None:
    """The second column and the crossover (:mod:`.views`, both on the form's fields, as the simulation) and downloads."""
    views.register(app, form_inputs)
    buttons = [ids.COLL_DL_YAML, ids.COLL_DL_JSON, ids.COLL_DL_CSV, ids.COLL_DL_TRACE]
    app.callback(
        output={"file": Output(ids.COLL_DOWNLOAD, "data"), "error": Output(ids.COLL_DL_ERROR, "children")},
        inputs={"clicks": [Input(button, "n_clicks") for button in buttons], "data": State(ids.COLL_SCENARIO, "data")},
        prevent_initial_call=True,
    )(guarded(lambda clicks, data: download(ctx.triggered_id, data), lambda message: {"file": None, "error": message}))
    app.clientside_callback(
        ClientsideFunction("collsim", "saveFigure"), Output(ids.COLL_FIGURE_DONE, "children"), Input(ids.COLL_DL_PNG, "n_clicks"),
        Input(ids.COLL_DL_SVG, "n_clicks"), State(ids.COLL_FIGURE_PICK, "value"), prevent_initial_call=True,
    )  # fmt: skip
