"""Collectives: pick a collective and a network, watch it step by step, compare algorithms.

Layout plus thin callbacks; the work is in :mod:`webapp.collective` and :mod:`webapp.figures`.
Each callback is a module-level function (tested directly) wired in :func:`register`.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from dash import Input, Output, State, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from sim.collective import explore
from sim.errors import CollsimError
from sim.algorithms.registry import ops
from sim.scenario import SHARING_MODES, CollectiveScenario
from sim.network.topology import TOPOLOGIES
from sim.units import format_bandwidth, format_size, format_time
from webapp import collective as model
from webapp import figures, ids, urlstate
from webapp.components import field, graph, hardware_dropdown, number_card

PATH = "/"
NAME = "collectives"
TITLE = "Collectives"
log = logging.getLogger(__name__)

LABELS = {
    "hardware": ("Hardware", "a preset fills ranks, topology and links (collsim hardware list)"),
    "op": ("Operation", "the collective to run"),
    "algorithm": ("Algorithm", "choices depend on the operation"),
    "topology": ("Topology", "switch: one port per rank into a non-blocking switch"),
    "ranks": ("Ranks p", "2 to 1024"),
    "gpus_per_node": ("GPUs per node", "two_level: ranks per node (default 8)"),
    "size": ("Message size n", "e.g. 64MiB, 1.5KB, 4096"),
    "latency": ("Latency alpha", "per message, e.g. 5us"),
    "bandwidth": ("Bandwidth B", "per link, e.g. 25GB/s or 100Gbps"),
    "reduce_bandwidth": ("Reduction bandwidth 1/gamma", "e.g. 100GB/s; empty: free"),
    "intra_latency": ("Intra-node latency", "two_level; empty: same as latency"),
    "intra_bandwidth": ("Intra-node bandwidth", "two_level; empty: same as bandwidth"),
    "chunks": ("Chunks k", "pipeline chunks (chunked algorithms)"),
    "overhead": ("Per-call overhead o", "e.g. 10us"),
    "stragglers": ("Stragglers", "rank:delay pairs, e.g. 3:20us,5:1ms"),
    "sharing": ("Link sharing", "fair: flows that meet share a link (max-min); fifo: they queue"),
    "eager_limit": ("Eager limit", "larger messages wait for their receive; 0: all wait (NCCL), 64KiB: MPI-like"),
    "placement": ("Rank placement", "two_level: block fills a node first; round_robin alternates nodes"),
}
DROPDOWNS = ("hardware", "op", "algorithm", "topology", "sharing", "placement")
HARDWARE_FIELDS = ("ranks", "topology", "gpus_per_node", "bandwidth", "latency", "intra_bandwidth", "intra_latency")
TWO_LEVEL_ONLY = ("gpus_per_node", "intra_latency", "intra_bandwidth", "placement")
VIEW_DEFAULTS = {"step": "0", "color": "step", "cmp": ""}  # view options kept in the URL beside the inputs
COMPARE_FIELDS = {"algorithm": "another algorithm", "topology": "another topology", "sharing": "another sharing mode"}
EXAMPLES = (
    (
        "Why ring is bandwidth-optimal, 1: a binomial tree broadcasts 5 MB to 8 ranks at 1 MB/s in 15 s",
        "?op=broadcast&algorithm=binomial&ranks=8&size=5MB&latency=0us&bandwidth=1MB/s",
    ),
    (
        "2: the same broadcast as scatter + ring all-gather, side by side (and every algorithm by size below)",
        "?op=broadcast&algorithm=binomial&ranks=8&size=5MB&latency=0us&bandwidth=1MB/s&cmp=algorithm:scatter_allgather",
    ),
    ("How big should my DDP buckets be?", "/ddp?preset=gpt2&comm_model=ow"),
)
FIGURE_CHOICES = {
    ids.COLL_TOPOLOGY: "topology (player)",
    ids.COLL_BUFFERS: "buffers (player)",
    ids.COLL_BREAKDOWN: "simulated vs closed form",
    ids.COLL_GANTT_RANK: "per-rank timeline",
    ids.COLL_GANTT_LINK: "per-link timeline",
    ids.COLL_CROSSOVER: "algorithm crossover",
}


# ----------------------------------------------------------------------------- layout


def _options(op: str) -> list[dict[str, str]]:
    return [{"label": name.replace("_", " "), "value": name} for name in model.algorithm_options(op)]


def _input(name: str, value: str) -> Any:
    if name == "hardware":
        return hardware_dropdown(ids.field_id(name), value, model.hardware_options())
    if name == "op":
        return dcc.Dropdown(
            id=ids.field_id(name), options=[{"label": op.replace("_", " "), "value": op} for op in ops()], value=value, clearable=False
        )
    if name == "algorithm":
        return dcc.Dropdown(id=ids.field_id(name), options=[], value=value, clearable=False)
    if name == "topology":
        return dcc.Dropdown(id=ids.field_id(name), options=[{"label": t, "value": t} for t in TOPOLOGIES], value=value, clearable=False)
    if name == "sharing":
        return dcc.Dropdown(id=ids.field_id(name), options=[{"label": m, "value": m} for m in SHARING_MODES], value=value, clearable=False)
    if name == "placement":
        options = [{"label": m.replace("_", " "), "value": m} for m in ("block", "round_robin")]
        return dcc.Dropdown(id=ids.field_id(name), options=options, value=value or "block", clearable=False)
    return dcc.Input(id=ids.field_id(name), type="text", value=value, debounce=True, autoComplete="off", className="text-input")


def form(values: dict[str, str]) -> html.Div:
    rows = []
    for name in model.DEFAULTS:
        label, hint = LABELS[name]
        component = _input(name, values[name])
        if name == "algorithm":  # the page comes with its op's choices: no callback at load
            component.options, component.value = algorithms_for_op(values["op"], values["algorithm"])
            if values["algorithm"] and component.value != values["algorithm"]:  # a link's unknown value stays, flagged
                component.options = [*component.options, {"label": f"{values['algorithm']} (unknown)", "value": values["algorithm"]}]
                component.value = values["algorithm"]
        hidden = name in TWO_LEVEL_ONLY and values["topology"] != "two_level" and values[name] in ("", model.DEFAULTS[name])
        rows.append(field(name, label, hint, component, hidden=hidden))
    return html.Div(rows, className="form")


def layout(search: str = "") -> html.Div:
    values = model.form_from_query(search)
    view = urlstate.form_from_query(search, VIEW_DEFAULTS)
    compare_field, _, compare_value = view["cmp"].partition(":")
    compare_field = compare_field if compare_field in COMPARE_FIELDS else "algorithm"
    controls = html.Div(
        [
            html.Button("Play", id=ids.COLL_PLAY, n_clicks=0, className="button"),
            html.Div(
                dcc.Slider(
                    id=ids.COLL_STEP,
                    min=0,
                    max=max(1, _int(view["step"])),
                    step=1,
                    value=_int(view["step"]),
                    marks=None,
                    updatemode="drag",
                    tooltip={"always_visible": False},
                ),
                className="slider",
            ),
            dcc.Interval(id=ids.COLL_TICK, interval=900, disabled=True),
        ],
        className="player-controls",
    )
    downloads = html.Div(
        [
            html.Span("Download:", className="muted"),
            html.Button("scenario YAML", id=ids.COLL_DL_YAML, className="button small"),
            html.Button("scenario JSON", id=ids.COLL_DL_JSON, className="button small"),
            html.Button("events CSV", id=ids.COLL_DL_CSV, className="button small"),
            html.Button("Chrome trace", id=ids.COLL_DL_TRACE, className="button small"),
            html.Span("figure:", className="muted"),
            dcc.Dropdown(
                id=ids.COLL_FIGURE_PICK,
                options=[{"label": v, "value": k} for k, v in FIGURE_CHOICES.items()],
                value=ids.COLL_TOPOLOGY,
                clearable=False,
                className="figure-pick",
            ),
            html.Button("PNG", id=ids.COLL_DL_PNG, className="button small"),
            html.Button("SVG", id=ids.COLL_DL_SVG, className="button small"),
            html.Span(id=ids.COLL_DL_ERROR, className="error"),
            html.Span(id=ids.COLL_FIGURE_DONE, className="muted"),
            dcc.Download(id=ids.COLL_DOWNLOAD),
        ],
        className="downloads",
    )
    results = html.Div(
        [
            html.Div(id=ids.COLL_NOTICE, className="notice"),
            html.Div(id=ids.COLL_SUMMARY, className="cards"),
            html.Div(
                [
                    html.Div(
                        [graph(ids.COLL_TOPOLOGY, 440), controls, html.Div(id=ids.COLL_STEP_LABEL, className="caption")], className="col"
                    ),
                    html.Div(graph(ids.COLL_BUFFERS, 440), className="col"),
                ],
                className="row",
            ),
            html.Div(
                [
                    html.Div(graph(ids.COLL_BREAKDOWN, 320), className="col narrow"),
                    html.Div(graph(ids.COLL_GANTT_RANK, 320), className="col wide"),
                ],
                className="row",
            ),
            html.Div(
                [
                    html.Span("Colour timelines by ", className="muted"),
                    dcc.RadioItems(
                        id=ids.COLL_COLOR_BY,
                        options=[{"label": " step", "value": "step"}, {"label": " chunk", "value": "chunk"}],
                        value=view["color"] if view["color"] in ("step", "chunk") else "step",
                        inline=True,
                    ),
                ],
                className="inline",
            ),
            graph(ids.COLL_GANTT_LINK, 320),
        ]
    )
    return html.Div(
        [
            dcc.Store(id=ids.COLL_SCENARIO),
            dcc.Store(id=ids.COLL_PLAYER_STORE),
            dcc.Store(id=ids.COLL_JOB),
            dcc.Store(id=ids.COLL_STOP),
            html.Aside([html.H3("Scenario"), form(values), downloads], className="sidebar"),
            html.Section(
                [
                    intro(),
                    progress_box(),
                    dcc.Loading(results, type="default", delay_show=250, overlay_style={"visibility": "visible", "opacity": 0.5}),
                    compare_section(compare_field, compare_value, values),
                    dcc.Loading(graph(ids.COLL_CROSSOVER, 400), type="dot", delay_show=250),
                ],
                className="content",
            ),
        ],
        className="layout",
    )


def _int(text: str) -> int:
    return int(text) if str(text).isdigit() else 0


def intro() -> html.Div:
    """What the page shows, in two sentences, and the guided examples one click away."""
    return html.Div(
        [
            html.P(
                "Pick a collective and a network on the left: the simulator moves every message between ranks "
                "(alpha-beta-gamma costs, one port per rank), and the panels show it step by step, against the "
                "closed form, on a timeline, beside a second scenario, and across message sizes."
            ),
            html.Div([html.B("Start here: ")] + [dcc.Link(text, href=href, className="example-link") for text, href in EXAMPLES]),
        ],
        id=ids.COLL_INTRO,
        className="intro",
    )


def compare_section(compare_field: str, compare_value: str, values: dict[str, str]) -> html.Div:
    """A second scenario with the same inputs but another algorithm, topology or sharing mode:
    both timelines on one time axis and the difference split by cost. The choices come with the
    layout (a dropdown drops a value that is not among its options)."""
    scenario, _ = model.parse_form(values)
    options = compare_choices(compare_field, scenario.to_dict(), None)[0] if scenario else []
    if compare_value and compare_value not in [option["value"] for option in options]:
        options.append({"label": compare_value.replace("_", " "), "value": compare_value})
    return html.Div(
        [
            html.Div(
                [
                    html.B("Side by side:"),
                    html.Span("the same inputs with", className="muted"),
                    dcc.Dropdown(
                        id=ids.COLL_CMP_FIELD,
                        options=[{"label": text, "value": key} for key, text in COMPARE_FIELDS.items()],
                        value=compare_field,
                        clearable=False,
                        className="compare-pick",
                    ),
                    dcc.Dropdown(
                        id=ids.COLL_CMP_VALUE,
                        options=options,
                        value=compare_value or None,
                        placeholder="pick one to compare",
                        className="compare-pick",
                    ),  # fmt: skip
                    html.Span(id=ids.COLL_CMP_NOTE, className="muted"),
                ],
                className="compare-bar",
            ),
            # the two graphs come with the comparison (compare_update): none to draw until one is picked
            dcc.Loading(html.Div([], className="row", id=ids.COLL_CMP_ROW, style={"display": "none"}), type="dot", delay_show=250),
        ]
    )


def progress_box() -> html.Div:
    """Progress of a background run and its Cancel button (outside the loading overlay, so the
    button stays clickable); hidden unless a run is going."""
    return html.Div(
        [
            html.Span("Simulating in the background:", className="muted"),
            html.Progress(id=ids.COLL_PROGRESS_BAR, value="0", max="100", className="progress-bar"),
            html.Span("", id=ids.COLL_PROGRESS_TEXT, className="progress-text"),
            html.Button("Cancel", id=ids.COLL_CANCEL, n_clicks=0, className="button small cancel", disabled=True),
        ],
        id=ids.COLL_PROGRESS,
        className="progress",
        style={"display": "none"},
    )


# ----------------------------------------------------------------------------- callbacks


def algorithms_for_op(op: str, current: str | None) -> tuple[list[dict[str, str]], str | None]:
    """Algorithm choices for ``op``; keeps the current one when the op offers it."""
    options = _options(op)
    names = [option["value"] for option in options]
    return options, current if current in names else (names[0] if names else None)


def apply_hardware(name: str | None, ranks: str | None) -> tuple:
    """A picked preset -> the form values it sets (ranks rounded to whole nodes)."""
    values = model.hardware_form(name, ranks)
    if values is None:
        raise PreventUpdate
    return tuple(values[key] for key in HARDWARE_FIELDS)


def validate(*values: str) -> tuple:
    """Form values (in ``DEFAULTS`` order) -> (scenario dict or None, one message per field...)."""
    form_values = dict(zip(model.DEFAULTS, values))
    scenario, errors = model.parse_form(form_values)
    messages = [errors.get(name, "") for name in model.DEFAULTS]
    return (scenario.to_dict() if scenario else None), *messages


def url_query_js(view_first: bool = False) -> str:
    """The URL writer, in the browser (no request per input change): form values (in ``DEFAULTS``
    order) and step, colour-by, compare field and value (first when ``view_first``, after the
    form otherwise) -> the URL query, twice (for the address
    bar and for the page's record of what it wrote, see :data:`webapp.app.ROUTE_GATE_JS`). Only
    what differs from the defaults is written, as :func:`webapp.urlstate.query_from_form` does
    (falsy values as empty; form-urlencoded, which :func:`webapp.urlstate.form_from_query` reads)."""
    names = json.dumps(list(model.DEFAULTS))
    defaults = json.dumps({**model.DEFAULTS, **VIEW_DEFAULTS})
    return f"""
function(...args) {{
    const names = {names}, defaults = {defaults};
    const form = {{}}, offset = {4 if view_first else 0};
    names.forEach((name, i) => {{ form[name] = args[offset + i]; }});
    const [step, color, cmpField, cmpValue] = {"args.slice(0, 4)" if view_first else "args.slice(names.length)"};
    form.step = String(step || 0);
    form.color = color || 'step';
    form.cmp = cmpValue ? cmpField + ':' + cmpValue : '';
    const query = new URLSearchParams();
    for (const [key, fallback] of Object.entries(defaults)) {{
        const value = form[key];
        const text = (value === null || value === undefined || value === false || value === 0) ? '' : String(value);
        if (text !== fallback) {{ query.append(key, text); }}
    }}
    const search = query.toString() ? '?' + query.toString() : '';
    return [search, search];
}}
"""


def _written(function):
    """A callback whose last output is the URL query, also recorded as the query the page wrote
    (see :func:`webapp.app.route`: any other query comes from Back/Forward)."""

    def wrapper(*args):
        out = function(*args)
        return (*out, out[-1])

    wrapper.__name__ = function.__name__
    return wrapper


def _scenario(data: dict | None) -> CollectiveScenario | None:
    return None if not data else CollectiveScenario.from_dict(data)


def summary_cards(outcome: model.Outcome) -> list:
    numbers = model.summary_numbers(outcome)
    error = numbers["relative_error"]
    cards = [
        number_card("Simulated", format_time(numbers["time_s"]) if numbers["time_s"] is not None else "—", ids.COLL_SIM_TIME),
        number_card("Closed form", _closed_text(numbers), ids.COLL_ANALYTIC_TIME),
        number_card("Sim vs closed form", f"{error:+.1e} relative" if error is not None else "—", "coll-rel-error"),
        number_card(
            "Messages / steps", f"{numbers['messages']:,} / {numbers['steps']}" if numbers["messages"] is not None else "—", "coll-messages"
        ),
        number_card("On the wire", format_size(numbers["bytes_on_wire"]) if numbers["bytes_on_wire"] is not None else "—", "coll-wire"),
        number_card(
            "algbw / busbw",
            f"{format_bandwidth(numbers['algbw_Bps'])} / {format_bandwidth(numbers['busbw_Bps'])}" if numbers["algbw_Bps"] else "—",
            "coll-bw",
        ),
    ]
    if numbers["analytic_note"]:
        cards.append(html.Div(numbers["analytic_note"], id=ids.COLL_CLOSED_NOTE, className="closed-note", style={"flexBasis": "100%"}))
    return cards


def _closed_text(numbers: dict) -> str:
    if numbers["analytic_time_s"] is None:
        return "none"
    return (
        format_time(numbers["analytic_time_s"]) if numbers["analytic_exact"] else f"≈ {format_time(numbers['analytic_time_s'])} (approx.)"
    )


def simulate(data: dict | None, color_by: str, background: bool = True, position: int | None = None) -> tuple:
    """The scenario store -> notice, number cards, breakdown, rank and link timelines, player data,
    slider max and position, background job. An invalid scenario keeps the last figures and says so.

    Scenarios up to ``MAX_SIM_MESSAGES`` are simulated here and now; larger ones up to
    ``BACKGROUND_MAX_MESSAGES`` become a job for :func:`simulate_in_background` (when the app has
    a background manager: ``background``); larger ones get the closed form or a refusal.
    ``position``: the slider's current value; the player stays at that step when the new run has
    it (the slider is left alone then: setting it would draw the player a second time)."""
    if not data:
        return ("Fix the highlighted inputs; nothing is computed until they are valid (figures shown, if any, are from an earlier valid scenario).", *([no_update] * (KEEP + 1)))
    try:
        scenario = _scenario(data)
        work = explore.work(scenario)
        messages, estimate = work.messages, work.cost
        if background and model.MAX_SIM_MESSAGES < estimate <= model.BACKGROUND_MAX_MESSAGES:
            notice = (
                f"Simulating {scenario.op}/{scenario.algorithm} on {scenario.ranks} ranks in the background "
                f"(about {estimate:,} message-equivalents of work); Cancel stops it. The figures below show the last finished run."
            )
            # a fresh token per job: two users (or two clicks) with the same scenario get separate jobs
            job = {"scenario": data, "color_by": color_by, "messages": messages, "token": uuid.uuid4().hex}
            return (notice, *([no_update] * KEEP), job)
        outcome = model.run(scenario, estimate=estimate)
    except CollsimError as error:
        return (f"Cannot run this scenario: {error}", *([no_update] * (KEEP + 1)))
    result = panels(outcome, color_by, position or 0)
    if result[7] == (position or 0):  # the slider stays: setting it would draw the player a second time
        result = (*result[:7], no_update, *result[8:])
    return (*result, no_update)


def panels(outcome: model.Outcome, color_by: str, position: int = 0) -> tuple:
    """An outcome -> notice, number cards, breakdown, rank and link timelines, player data,
    slider max and position, and the player at ``position`` (clamped to the new run's steps):
    topology, buffers, caption."""
    result = outcome.result
    scenario = outcome.scenario
    breakdown = figures.breakdown_figure(
        result.time_s if result else None, outcome.analytic_time_s, outcome.breakdown, outcome.closed_exact, outcome.closed_note
    )
    if result is None:
        note = figures.note_figure(outcome.note, "Timeline")
        return (outcome.note, summary_cards(outcome), breakdown, note, note, None, 1, 0, *show_step(0, None))
    position = int(position or 0)
    rank_figure = figures.rank_timeline(result.events, *model.rank_intervals(result), color_by)
    names, lanes, starts, ends = model.link_intervals(result)
    link_figure = figures.link_timeline(names, lanes, starts, ends, lambda: model.link_events(result, figures.SEGMENT_BARS + 1), color_by)
    player = model.player_data(scenario, result, outcome.frames)
    positions = figures.player_positions(player) if player else 1
    notice = (
        outcome.note or f"Simulated {scenario.op}/{scenario.algorithm} on {scenario.ranks} ranks ({scenario.topology}) message by message."
    )
    # the player's first frame comes with the run: no second round trip after the figures are drawn
    position = max(0, min(position, positions - 1))
    return (
        notice,
        summary_cards(outcome),
        breakdown,
        rank_figure,
        link_figure,
        player,
        positions - 1,
        position,
        *show_step(position, player),
    )


def simulate_in_background(set_progress: Any, job: dict | None) -> tuple:
    """A background job (see :func:`simulate`) -> the same panels as :func:`simulate`, reporting
    (percent, text) through ``set_progress`` while it runs. Runs in its own process; Cancel, a
    new scenario or a new job kill that process."""
    if not job:
        raise PreventUpdate
    scenario = _scenario(job["scenario"])

    def report(fraction: float, text: str) -> None:
        set_progress((str(round(100 * fraction)), f"{100 * fraction:.0f}% ({text})"))

    try:
        outcome = model.run_with_progress(scenario, report, job.get("messages"))
    except CollsimError as error:
        return (f"Cannot run this scenario: {error}", *([no_update] * KEEP))
    return panels(outcome, job.get("color_by") or "step")


def _from_fields(background: bool):
    """The simulation callback on the form's fields themselves (validated here as by
    :func:`validate`), not on the scenario store: it starts with the input change instead of one
    round trip later, while the store still feeds the crossover and the second column."""

    def simulate_fields(*args: Any) -> tuple:
        count = len(model.DEFAULTS)
        color_by, position = args[count:]
        return simulate(validate(*args[:count])[0], color_by, background, position)

    return simulate_fields


def cancelled(clicks: int | None) -> str:
    """The notice after Cancel: the run is stopped and the figures are the last finished run."""
    if not clicks:
        raise PreventUpdate
    return "Cancelled: the background run was stopped. The figures show the last finished run; change an input to run again."


def show_step(position: int | None, player: dict | None) -> tuple:
    """The player at slider ``position``: topology with messages in flight, buffers, caption."""
    if not player:
        text = "The step player draws up to 64 ranks of a simulated run."
        return figures.note_figure(text, "Topology"), figures.note_figure(text, "Buffers"), ""
    position = int(position or 0)
    return figures.topology_figure(player, position), figures.buffer_figure(player, position), figures.step_caption(player, position)


def toggle_play(clicks: int | None, disabled: bool) -> tuple[bool, str]:
    playing = not disabled
    return (True, "Play") if playing else (False, "Pause")


def tick(_: int, position: int | None, maximum: int | None) -> int:
    """Next slider position; wraps to the start after the last step."""
    position, maximum = int(position or 0), int(maximum or 0)
    return 0 if position >= maximum else position + 1


def crossover_panel(data: dict | None) -> Any:
    if not data:
        return no_update
    try:
        scenario = _scenario(data)
        rows = model.crossover(scenario)
    except CollsimError as error:
        return figures.note_figure(str(error), "Algorithm crossover")
    return figures.crossover_figure(rows, scenario.size_bytes, scenario.algorithm, model.nccl_picks(scenario))


def compare_choices(compare_field: str | None, data: dict | None, current: str | None) -> tuple[list[dict[str, str]], str | None]:
    """The values the second column may take (all but the scenario's own); keeps the current one."""
    if not data:
        raise PreventUpdate
    s = _scenario(data)
    if compare_field == "topology":
        values = [name for name in TOPOLOGIES if name != s.topology]
    elif compare_field == "sharing":
        values = [mode for mode in SHARING_MODES if mode != s.sharing]
    else:
        values = [name for name in model.algorithm_options(s.op) if name != s.algorithm]
    options = [{"label": value.replace("_", " "), "value": value} for value in values]
    # the value is set only when it must change: setting it (even to itself) fires the URL
    # writer, which could push an old query after Back
    return options, no_update if (current in values or current is None) else None


def compare_panel(value: str | None, compare_field: str | None, data: dict | None) -> tuple:
    """Both runs on one time axis, and the time of each split into latency, bandwidth, reduction,
    overhead and contention, with the difference named in words."""
    if not data:
        raise PreventUpdate
    if not value:
        return no_update, no_update, "", {"display": "none"}
    a = _scenario(data)
    b = a.replace(**{compare_field or "algorithm": value})
    for s in (a, b):
        if model.estimate_cost(s) > model.MAX_SIM_MESSAGES:
            text = f"{getattr(s, compare_field or 'algorithm')} is too large to simulate side by side here; use the command line"
            return no_update, no_update, text, {"display": "none"}
    labels = [f"A: {getattr(a, compare_field or 'algorithm')}", f"B: {value}"]
    runs = [explore.run(s)[0] for s in (a, b)]
    timeline = figures.side_by_side_figure([(label, *model.rank_intervals(run)) for label, run in zip(labels, runs)])
    parts = [explore.decompose(s) for s in (a, b)]
    ratio = runs[1].time_s / runs[0].time_s if runs[0].time_s else float("inf")
    figure = figures.parts_figure(labels, parts)
    note = f"B takes {ratio:.3g}x the time of A ({format_time(runs[1].time_s)} vs {format_time(runs[0].time_s)}); {figure.layout.meta['summary']}"
    return timeline, figure, note, {}


def compare_update(compare_field: str | None, value: str | None, *fields: str) -> tuple:
    """The second column in one request, on the form's fields (validated as by :func:`validate`):
    its choices (:func:`compare_choices`), then both runs (:func:`compare_panel`) for the value
    kept, as the row's two graphs; the row is empty and hidden while none is picked."""
    data = validate(*fields)[0]
    options, new_value = compare_choices(compare_field, data, value)
    kept = value if new_value is no_update else new_value
    timeline, parts, note, style = compare_panel(kept, compare_field, data)
    if style:  # nothing to compare (or too large): no graphs to draw
        return options, new_value, [], note, style
    row = [
        html.Div(graph(ids.COLL_CMP_TIMELINE, figure=timeline), className="col wide"),
        html.Div(graph(ids.COLL_CMP_PARTS, figure=parts), className="col narrow"),
    ]
    return options, new_value, row, note, style


def download(trigger: str | None, data: dict | None) -> tuple[Any, str]:
    """The file for the pressed download button, or a message saying why there is none."""
    if not trigger:
        return no_update, ""
    if not data:
        return None, "fix the scenario first"
    scenario = _scenario(data)
    stem = f"{scenario.op}-{scenario.algorithm}-p{scenario.ranks}"
    if trigger == ids.COLL_DL_YAML:
        return {"content": scenario.to_yaml(), "filename": f"{stem}.yaml", "type": "application/yaml"}, ""
    if trigger == ids.COLL_DL_JSON:
        return {"content": scenario.to_json(), "filename": f"{stem}.json", "type": "application/json"}, ""
    outcome = model.run(scenario, frames=False)
    if outcome.result is None:
        return None, "too large to simulate here: no events to download (use the CLI)"
    if trigger == ids.COLL_DL_CSV:
        return {"content": events_csv(outcome.result), "filename": f"{stem}-events.csv", "type": "text/csv"}, ""
    return {"content": json.dumps(outcome.result.chrome_trace()), "filename": f"{stem}-trace.json", "type": "application/json"}, ""


def events_csv(result: Any) -> str:
    import csv
    import io

    from sim.collective.results import EVENT_COLUMNS

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EVENT_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(result.events())
    return buffer.getvalue()


_SAVE_FIGURE_JS = """
function(png, svg, pick) {
    const trigger = dash_clientside.callback_context.triggered_id;
    if (!trigger) { return window.dash_clientside.no_update; }
    const graph = document.querySelector('#' + pick + ' .js-plotly-plot');
    if (!graph) { return 'no figure to save'; }
    const format = trigger.endsWith('svg') ? 'svg' : 'png';
    Plotly.downloadImage(graph, {format: format, filename: 'collsim-' + pick,
        width: graph._fullLayout.width, height: graph._fullLayout.height, scale: format === 'png' ? 2 : 1});
    return 'saved ' + format;
}
"""


def _guarded(function, fallback):
    """Run a callback; an unexpected error becomes a visible message, never an HTTP 500."""

    def wrapper(*args):  # background callbacks get set_progress first: it passes through
        try:
            return function(*args)
        except PreventUpdate:
            raise
        except CollsimError as error:
            return fallback(str(error))
        except Exception as error:  # noqa: BLE001 - the page must keep working whatever went wrong
            log.exception("callback %s failed", function.__name__)
            return fallback(f"internal error in {function.__name__}: {type(error).__name__}: {error}")

    wrapper.__name__ = function.__name__
    return wrapper


PANEL_OUTPUTS = (
    (ids.COLL_NOTICE, "children"),
    (ids.COLL_SUMMARY, "children"),
    (ids.COLL_BREAKDOWN, "figure"),
    (ids.COLL_GANTT_RANK, "figure"),
    (ids.COLL_GANTT_LINK, "figure"),
    (ids.COLL_PLAYER_STORE, "data"),
    (ids.COLL_STEP, "max"),
    (ids.COLL_STEP, "value"),
    (ids.COLL_TOPOLOGY, "figure"),
    (ids.COLL_BUFFERS, "figure"),
    (ids.COLL_STEP_LABEL, "children"),
)
KEEP = len(PANEL_OUTPUTS) - 1  # outputs left as they are next to a notice


def register(app: Any) -> None:
    fields = [Input(ids.field_id(name), "value") for name in model.DEFAULTS]
    app.callback(
        Output(ids.field_id("algorithm"), "options"),
        Output(ids.field_id("algorithm"), "value"),
        Input(ids.field_id("op"), "value"),
        State(ids.field_id("algorithm"), "value"),
        prevent_initial_call=True,  # the layout has them (one round trip less before the first run)
    )(algorithms_for_op)
    app.clientside_callback(  # the two_level-only fields, shown for two_level (the layout sets them at load)
        "function(topology) { const style = topology === 'two_level' ? {} : {display: 'none'};"
        f" return Array({len(TWO_LEVEL_ONLY)}).fill(style); }}",
        *[Output(f"field-{name}", "style") for name in TWO_LEVEL_ONLY],
        Input(ids.field_id("topology"), "value"),
        prevent_initial_call=True,
    )
    app.callback(
        *[Output(ids.field_id(name), "value", allow_duplicate=True) for name in HARDWARE_FIELDS],
        Input(ids.field_id("hardware"), "value"),
        State(ids.field_id("ranks"), "value"),
        prevent_initial_call=True,
    )(_guarded(apply_hardware, lambda message: tuple(no_update for _ in HARDWARE_FIELDS)))
    app.callback(
        Output(ids.COLL_SCENARIO, "data"),
        *[Output(ids.error_id(name), "children") for name in model.DEFAULTS],
        *fields,
    )(_guarded(validate, lambda message: (None, message, *[""] * (len(model.DEFAULTS) - 1))))
    # Two writers of one query, both in the browser: an input change is written at once (the view
    # options as State), a view change (step, colour, comparison) too; one callback with all of
    # them as Inputs would wait for the simulation, whose output the step is.
    view = [(ids.COLL_STEP, "value"), (ids.COLL_COLOR_BY, "value"), (ids.COLL_CMP_FIELD, "value"), (ids.COLL_CMP_VALUE, "value")]
    app.clientside_callback(
        url_query_js(), Output(ids.URL, "search"), Output(ids.URL_WRITTEN, "data"), *fields, *[State(*item) for item in view]
    )
    app.clientside_callback(
        url_query_js(view_first=True),
        Output(ids.URL, "search", allow_duplicate=True),
        Output(ids.URL_WRITTEN, "data", allow_duplicate=True),
        *[Input(*item) for item in view],
        *[State(ids.field_id(name), "value") for name in model.DEFAULTS],
        prevent_initial_call=True,
    )
    # The second column and the crossover take the fields themselves, as the simulation does: all
    # three start with the input change, none waits one round trip for the scenario store.
    app.callback(
        Output(ids.COLL_CMP_VALUE, "options"),
        Output(ids.COLL_CMP_VALUE, "value"),
        Output(ids.COLL_CMP_ROW, "children"),
        Output(ids.COLL_CMP_NOTE, "children"),
        Output(ids.COLL_CMP_ROW, "style"),
        Input(ids.COLL_CMP_FIELD, "value"),
        Input(ids.COLL_CMP_VALUE, "value"),
        *fields,
    )(_guarded(compare_update, lambda message: (no_update, no_update, [], message, {"display": "none"})))
    # A new scenario (or colouring) stops a running background job; the signal is set in the
    # browser only while one runs (the Cancel button is enabled), so an ordinary update sends no
    # cancel request.
    app.clientside_callback(
        "function(scenario, color, idle) { return idle ? window.dash_clientside.no_update : Date.now(); }",
        Output(ids.COLL_STOP, "data"),
        Input(ids.COLL_SCENARIO, "data"),
        Input(ids.COLL_COLOR_BY, "value"),
        State(ids.COLL_CANCEL, "disabled"),
        prevent_initial_call=True,
    )
    manager = getattr(app, "_background_manager", None)
    background = manager is not None
    app.callback(
        *[Output(*output) for output in PANEL_OUTPUTS],
        Output(ids.COLL_JOB, "data"),
        *fields,
        Input(ids.COLL_COLOR_BY, "value"),
        State(ids.COLL_STEP, "value"),
    )(_guarded(_from_fields(background), lambda message: (message, *([no_update] * (KEEP + 1)))))
    if background:
        app.callback(
            *[Output(*output, allow_duplicate=True) for output in PANEL_OUTPUTS],
            Input(ids.COLL_JOB, "data"),
            background=True,
            manager=manager,
            interval=300,
            progress=[Output(ids.COLL_PROGRESS_BAR, "value"), Output(ids.COLL_PROGRESS_TEXT, "children")],
            progress_default=["0", ""],
            running=[
                (Output(ids.COLL_PROGRESS, "style"), {"display": "flex"}, {"display": "none"}),
                (Output(ids.COLL_CANCEL, "disabled"), False, True),
            ],
            # Cancel, or any new scenario (which may be answered directly), stops the run
            cancel=[Input(ids.COLL_CANCEL, "n_clicks"), Input(ids.COLL_STOP, "data")],
            prevent_initial_call=True,
        )(_guarded(simulate_in_background, lambda message: (message, *([no_update] * KEEP))))
        app.callback(
            Output(ids.COLL_NOTICE, "children", allow_duplicate=True), Input(ids.COLL_CANCEL, "n_clicks"), prevent_initial_call=True
        )(cancelled)
    app.callback(
        Output(ids.COLL_TOPOLOGY, "figure", allow_duplicate=True),
        Output(ids.COLL_BUFFERS, "figure", allow_duplicate=True),
        Output(ids.COLL_STEP_LABEL, "children", allow_duplicate=True),
        Input(ids.COLL_STEP, "value"),
        State(ids.COLL_PLAYER_STORE, "data"),  # a new run draws its first frame itself (see panels)
        prevent_initial_call=True,
    )(_guarded(show_step, lambda message: (figures.note_figure(message), figures.note_figure(message), message)))
    app.callback(
        Output(ids.COLL_TICK, "disabled"),
        Output(ids.COLL_PLAY, "children"),
        Input(ids.COLL_PLAY, "n_clicks"),
        State(ids.COLL_TICK, "disabled"),
        prevent_initial_call=True,
    )(toggle_play)
    app.callback(
        Output(ids.COLL_STEP, "value", allow_duplicate=True),
        Input(ids.COLL_TICK, "n_intervals"),
        State(ids.COLL_STEP, "value"),
        State(ids.COLL_STEP, "max"),
        prevent_initial_call=True,
    )(tick)
    app.callback(Output(ids.COLL_CROSSOVER, "figure"), *fields)(
        _guarded(lambda *values: crossover_panel(validate(*values)[0]), lambda message: figures.note_figure(message, "Algorithm crossover"))
    )
    buttons = [ids.COLL_DL_YAML, ids.COLL_DL_JSON, ids.COLL_DL_CSV, ids.COLL_DL_TRACE]
    app.callback(
        Output(ids.COLL_DOWNLOAD, "data"),
        Output(ids.COLL_DL_ERROR, "children"),
        *[Input(b, "n_clicks") for b in buttons],
        State(ids.COLL_SCENARIO, "data"),
        prevent_initial_call=True,
    )(_guarded(lambda *args: download(ctx.triggered_id, args[-1]), lambda message: (None, message)))
    app.clientside_callback(
        _SAVE_FIGURE_JS,
        Output(ids.COLL_FIGURE_DONE, "children"),
        Input(ids.COLL_DL_PNG, "n_clicks"),
        Input(ids.COLL_DL_SVG, "n_clicks"),
        State(ids.COLL_FIGURE_PICK, "value"),
        prevent_initial_call=True,
    )
