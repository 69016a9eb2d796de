"""The Collectives page's layout: the form (with its op's algorithm choices and the two_level
fields shown or not, so nothing has to run at load), the player, the panels, the side-by-side bar,
the crossover, downloads. Built from the URL query (:func:`layout`)."""

from __future__ import annotations

from typing import Any

from dash import dcc, html, no_update
from dash.exceptions import PreventUpdate

from sim.algorithms.registry import ops
from sim.collective import pick
from sim.network.topology import TOPOLOGIES
from sim.scenario import SHARING_MODES, CollectiveScenario
from webapp import collective as model
from webapp import urlstate
from webapp.callbacks import answer
from webapp.components import field, graph, hardware_dropdown
from webapp.pages.collectives import ids
from webapp.pages.spec import drawn_into

__all__ = [
    "HARDWARE_FIELDS",
    "NCCL_ONLY",
    "PICK_FIELDS",
    "SPEEDS",
    "TICK_MS",
    "TWO_LEVEL_ONLY",
    "VIEW_DEFAULTS",
    "algorithms_for_op",
    "channels_label",
    "checked",
    "compare_choices",
    "drawn_at_load",
    "first_crossover",
    "first_view",
    "layout",
    "nccl_options",
    "scenario_of",
    "validate",
    "validation_failed",
]

LABELS = {key: (info.label, info.hint or info.help) for key, info in model.FORM.items()}  # the schema's (sim.fields)
DROPDOWNS = ("hardware", "op", "algorithm", "nccl_algo", "nccl_proto", "topology", "sharing", "placement")
HARDWARE_FIELDS = (
    "nodes",
    "ranks",
    "topology",
    "gpus_per_node",
    "bandwidth",
    "latency",
    "intra_bandwidth",
    "intra_latency",
    "reduce_bandwidth",
)
PICK_FIELDS = ("algorithm", "chunks", "sharing", "nccl_algo", "nccl_proto")  # what choosing a GPU preset sets (model.pick_form)
NCCL_ONLY = ("nccl_algo", "nccl_proto")  # shown while NCCL's pick is the algorithm
CHANNELS = {
    "pick": ("Channels", "NCCL's channels; empty: the pick's own (the summary says how many), a number overrides"),
    "nccl": ("Channels", "NCCL channels the algorithm runs on (empty: 1)"),
}
TWO_LEVEL_ONLY = ("gpus_per_node", "intra_latency", "intra_bandwidth", "placement")
VIEW_DEFAULTS = {"step": "0", "color": "step", "cmp": ""}  # view options kept in the URL beside the inputs
TICK_MS = 900  # one step per 0.9 s at 1x
SPEEDS = (("0.5x", 0.5), ("1x", 1), ("2x", 2))
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


def _options(op: str, hardware: str | None = None) -> list[dict[str, str]]:
    return [{"label": "NCCL's pick" if name == pick.NCCL else name.replace("_", " "), "value": name}
            for name in model.algorithm_options(op, hardware)]  # fmt: skip


def _choices(values: Any) -> list[dict[str, str]]:
    return [{"label": value.replace("_", " "), "value": value} for value in values]


def _input(name: str, value: str) -> Any:
    if name == "hardware":
        return hardware_dropdown(ids.field_id(name), value, model.hardware_options())
    lists = {"op": ops(), "topology": TOPOLOGIES, "sharing": (*SHARING_MODES, model.AUTO_SHARING), "placement": ("block", "round_robin")}
    if name in ("algorithm", *NCCL_ONLY):  # the page comes with its op's choices (no callback at load): see form()
        return dcc.Dropdown(id=ids.field_id(name), options=[], value=value, clearable=False)
    if name in lists:
        options = _choices(lists[name]) if name in ("op", "placement") else [{"label": v, "value": v} for v in lists[name]]
        return dcc.Dropdown(id=ids.field_id(name), options=options, value=value or model.DEFAULTS[name], clearable=False)
    return dcc.Input(id=ids.field_id(name), type="text", value=value, debounce=True, autoComplete="off", className="text-input")


def form(values: dict[str, str]) -> html.Div:
    rows = []
    for name in model.DEFAULTS:
        label, hint = LABELS[name]
        component = _input(name, values[name])
        if name == "algorithm":
            component.options, component.value = algorithms_for_op(values["op"], values["algorithm"], values["hardware"])
        if name in NCCL_ONLY:
            component.options = nccl_options(values["op"], values["nccl_algo"])[name]
        if name == "chunks":
            label, hint = channels_label(values["algorithm"]) or (label, hint)
        if name in DROPDOWNS and values[name]:  # a link's unknown value stays, flagged (urlstate.with_unknown)
            component.options, component.value = urlstate.with_unknown(component.options, values[name]), values[name]
        hidden = name in TWO_LEVEL_ONLY and values["topology"] != "two_level" and values[name] in ("", model.DEFAULTS[name])
        hidden = hidden or (name in NCCL_ONLY and values["algorithm"] != pick.NCCL and not values[name])
        hidden = hidden or (name == "nodes" and not values["hardware"] and not values["nodes"])
        box = field(name, label, hint, component, hidden=hidden)
        if name == "chunks":  # its label and hint follow the algorithm (nccl_fields)
            box.children[0].id, box.children[3].id = ids.COLL_CHUNKS_LABEL, ids.COLL_CHUNKS_HINT
        rows.append(box)
    return html.Div(rows, className="form")


def channels_label(algorithm: str | None) -> tuple[str, str] | None:
    """(label, hint) of the Chunks field when it counts NCCL's channels (NCCL's pick or an
    nccl_* algorithm), else None (it is pipeline chunks)."""
    if algorithm == pick.NCCL:
        return CHANNELS["pick"]
    return CHANNELS["nccl"] if str(algorithm or "").startswith("nccl_") else None


def nccl_options(op: str, nccl_algo: str | None) -> dict[str, list[dict[str, str]]]:
    """The NCCL algorithm and protocol choices for ``op`` (auto first), protocols those of ``nccl_algo``."""
    algorithms, protocols = model.nccl_choices(op, nccl_algo)
    auto = [{"label": "auto", "value": ""}]
    return {"nccl_algo": auto + _choices(algorithms), "nccl_proto": auto + _choices(protocols)}


def _player_controls(step: int) -> html.Div:
    slider = dcc.Slider(
        id=ids.COLL_STEP, min=0, max=max(1, step), step=1, value=step, marks=None, updatemode="drag", tooltip={"always_visible": False}
    )
    speed = dcc.RadioItems(
        id=ids.COLL_SPEED, options=[{"label": f" {label}", "value": value} for label, value in SPEEDS], value=1, inline=True,
        className="speed",
    )  # fmt: skip
    return html.Div(
        [
            html.Button("◀", id=ids.COLL_PREV, n_clicks=0, className="button", title="previous step"),
            html.Button("Play", id=ids.COLL_PLAY, n_clicks=0, className="button"),
            html.Button("▶", id=ids.COLL_NEXT, n_clicks=0, className="button", title="next step"),
            html.Div(slider, className="slider"),
            speed,
            dcc.Interval(id=ids.COLL_TICK, interval=TICK_MS, disabled=True),
        ],
        className="player-controls",
    )


def _downloads() -> html.Div:
    def button(text: str, button_id: str) -> html.Button:
        return html.Button(text, id=button_id, className="button small")

    pick = dcc.Dropdown(
        id=ids.COLL_FIGURE_PICK, options=[{"label": v, "value": k} for k, v in FIGURE_CHOICES.items()], value=ids.COLL_TOPOLOGY,
        clearable=False, className="figure-pick",
    )  # fmt: skip
    return html.Div(
        [
            html.Span("Download:", className="muted"),
            button("scenario YAML", ids.COLL_DL_YAML),
            button("scenario JSON", ids.COLL_DL_JSON),
            button("events CSV", ids.COLL_DL_CSV),
            button("Chrome trace", ids.COLL_DL_TRACE),
            html.Span("figure:", className="muted"),
            pick,
            button("PNG", ids.COLL_DL_PNG),
            button("SVG", ids.COLL_DL_SVG),
            html.Span(id=ids.COLL_DL_ERROR, className="error"),
            html.Span(id=ids.COLL_FIGURE_DONE, className="muted"),
            dcc.Download(id=ids.COLL_DOWNLOAD),
        ],
        className="downloads",
    )


def _results(view: dict[str, str]) -> html.Div:
    def row(*columns: tuple[Any, str], kind: str = "row") -> html.Div:
        return html.Div([html.Div(content, className=part) for content, part in columns], className=kind)

    player = [graph(ids.COLL_TOPOLOGY, 440), _player_controls(_int(view["step"])), html.Div(id=ids.COLL_STEP_LABEL, className="caption")]
    color = dcc.RadioItems(
        id=ids.COLL_COLOR_BY, options=[{"label": " step", "value": "step"}, {"label": " chunk", "value": "chunk"}],
        value=view["color"] if view["color"] in ("step", "chunk") else "step", inline=True,
    )  # fmt: skip
    return html.Div(
        [
            html.Div(id=ids.COLL_NOTICE, className="notice"),
            html.Div(id=ids.COLL_SUMMARY, className="cards"),
            row((player, "col"), (graph(ids.COLL_BUFFERS, 440), "col"), kind="row player-row"),  # side by side down to 900 px
            row((graph(ids.COLL_BREAKDOWN, 320), "col narrow"), (graph(ids.COLL_GANTT_RANK, 320), "col wide")),
            html.Div([html.Span("Colour timelines by ", className="muted"), color], className="inline"),
            graph(ids.COLL_GANTT_LINK, 320),
        ]
    )


def layout(search: str = "") -> html.Div:
    values, notes = model.read_link(search)
    view = urlstate.form_from_query(search, VIEW_DEFAULTS)
    unknown = urlstate.unknown_keys(search, [*model.DEFAULTS, *VIEW_DEFAULTS])
    compare_field, _, compare_value = view["cmp"].partition(":")
    compare_field = compare_field if compare_field in COMPARE_FIELDS else "algorithm"
    url_names = urlstate.url_spec(list(model.DEFAULTS), {**model.DEFAULTS, **VIEW_DEFAULTS}, path=ids.PATH)
    drawn = first_view(values, view)
    crossover = first_crossover(values)
    results = drawn_into(_results(view), drawn)  # the panels as the simulation callback would answer them
    content = [
        intro(),
        progress_box(),
        dcc.Loading(results, type="default", delay_show=250, overlay_style={"visibility": "visible", "opacity": 0.5}),
        compare_section(compare_field, compare_value, values),
        dcc.Loading(graph(ids.COLL_CROSSOVER, 400, figure=crossover), type="dot", delay_show=250),
        crossover_more(crossover),
        dcc.Store(id=ids.COLL_CROSSOVER_DRAWN, data=crossover is not None),
    ]
    stores = [
        dcc.Store(id=store_id, **drawn.get(store_id, {}))
        for store_id in (ids.COLL_SCENARIO, ids.COLL_PLAYER_STORE, ids.COLL_JOB, ids.COLL_STOP)
    ]
    page = html.Div(
        [
            *stores,
            dcc.Store(id=ids.COLL_URL_NAMES, data=url_names),
            html.Aside([html.H3("Scenario"), form_note([*unknown, *notes]), form(values), _downloads()], className="sidebar"),
            html.Section(content, className="content"),
        ],
        className="layout",
    )
    return drawn_into(page, checked(values))


def form_note(lines: list[str]) -> html.Div:
    """What the page made of a link or a choice, above the form (one line each): unknown keys,
    the algorithm an op set, what a preset set. Written again by the form's callbacks."""
    return html.Div(note_lines(lines), id=ids.COLL_FORM_NOTE, className="notice form-note", role="status", style={"color": "#8a4b00"})


def note_lines(lines: list[str]) -> list:
    return [html.Div(line) for line in lines if line]


def validation_failed(message: str) -> dict[str, Any]:
    """What validation answers when it fails unexpectedly: no scenario, the message under Hardware."""
    return {"scenario": None, "errors": {**answer(model.DEFAULTS), "hardware": message}}


def validate(form: dict[str, Any]) -> dict[str, Any]:
    """The form's values -> the scenario (as a dict, None when invalid) and a message per field."""
    scenario, errors = model.parse_form(form)
    return {"scenario": scenario.to_dict() if scenario else None, "errors": {name: errors.get(name, "") for name in model.DEFAULTS}}


def drawn_at_load(values: dict[str, Any], background: bool) -> bool:
    """Whether the page for these form ``values`` comes drawn (:func:`first_view`): a valid
    scenario the simulation callback would run here and now, not as a background job. That
    callback's call at load then answers nothing (``callbacks.simulate_form``)."""
    from sim.collective import explore

    try:
        data = validate(values)["scenario"]
        if not data:
            return False
        cost = explore.work(scenario_of(data)).cost
    except Exception:  # noqa: BLE001 - the callback at load runs and says what is wrong
        return False
    return not (background and model.MAX_SIM_MESSAGES < cost <= model.BACKGROUND_MAX_MESSAGES)


def first_view(values: dict[str, str], view: dict[str, str]) -> dict[str, dict[str, Any]]:
    """{component id: {property: value}}: the panels the simulation callback would answer at load
    (the same call), when :func:`drawn_at_load`; else {} (the callback runs at load). The page's
    figures come with its layout: they draw as the page first renders, one round trip and one
    render sooner than from the callback, and no empty figure is drawn before them."""
    import dash
    import dash.exceptions

    from webapp.callbacks import answer, guarded
    from webapp.pages.collectives import callbacks

    try:
        app = dash.get_app()
    except dash.exceptions.AppNotFoundError:  # the layout built outside a served app (tests, scripts)
        app = None
    background = getattr(app, "_background_manager", None) is not None
    if not drawn_at_load(values, background):
        return {}
    run = guarded(callbacks.simulate, lambda message: answer(callbacks.RUN, notice=message))
    color = view["color"] if view["color"] in ("step", "chunk") else "step"
    shown = run(callbacks.validate(values)["scenario"], color, background, _int(view["step"]), values.get("algorithm") == pick.NCCL)
    drawn: dict[str, dict[str, Any]] = {}
    for name, (component_id, prop) in {**callbacks.PANELS, "job": (ids.COLL_JOB, "data")}.items():
        if shown[name] is not no_update:
            drawn.setdefault(component_id, {})[prop] = shown[name]
    return drawn


def checked(values: dict[str, str]) -> dict[str, dict[str, Any]]:
    """{component id: {property: value}}: what validation answers for the form ``values`` (the
    scenario store, the message under each field) and the Channels field's placeholder it sets:
    the layout carries them, so neither callback runs at load (they run on a change)."""
    from webapp.callbacks import guarded
    from webapp.pages.collectives import callbacks

    shown = guarded(callbacks.validate, callbacks.validation_failed)(values)
    drawn: dict[str, dict[str, Any]] = {ids.COLL_SCENARIO: {"data": shown["scenario"]}}
    for name, message in shown["errors"].items():
        if message is not no_update:
            drawn[ids.error_id(name)] = {"children": message}
    drawn[ids.field_id("chunks")] = {"placeholder": callbacks.channels_placeholder(shown["scenario"], values.get("algorithm"))}
    return drawn


def first_crossover(values: dict[str, str]) -> Any | None:
    """The crossover the crossover callback would answer at load (the same call: the helper's,
    kept per network), or None when the form is not valid (the callback says why). The layout
    carries it, and says so in :data:`webapp.ids.COLL_CROSSOVER_DRAWN` (the callback's call at load then answers
    nothing): the whole page is drawn in its first render; no answer after it has anything to draw."""
    from webapp.pages.collectives import callbacks

    try:
        data = callbacks.validate(values)["scenario"]
        figure = callbacks.crossover_panel(data) if data else None
    except Exception:  # noqa: BLE001 - the callback at load runs and says what is wrong
        return None
    return None if figure is no_update else figure


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
    pick_field = dcc.Dropdown(
        id=ids.COLL_CMP_FIELD, options=[{"label": text, "value": key} for key, text in COMPARE_FIELDS.items()], value=compare_field,
        clearable=False, className="compare-pick",
    )  # fmt: skip
    pick_value = dcc.Dropdown(
        id=ids.COLL_CMP_VALUE, options=options, value=compare_value or None, placeholder="pick one to compare", className="compare-pick"
    )
    bar = [html.B("Side by side:"), html.Span("the same inputs with", className="muted"), pick_field, pick_value]
    return html.Div(
        [
            html.Div([*bar, html.Span(id=ids.COLL_CMP_NOTE, className="muted")], className="compare-bar"),
            # the two graphs come with the comparison (compare_update): none to draw until one is picked
            dcc.Loading(html.Div([], className="row", id=ids.COLL_CMP_ROW, style={"display": "none"}), type="dot", delay_show=250),
        ]
    )


def crossover_more(figure: Any | None) -> html.Div:
    """Under the crossover: which sizes were not simulated here and a button that simulates them
    in the background (as a large scenario's run); hidden while every size is drawn."""
    from webapp.pages.collectives import callbacks

    shown = callbacks.crossover_note(figure) if figure is not None else {"note": "", "more_style": {"display": "none"}}
    return html.Div(
        [
            html.Span(shown["note"], id=ids.COLL_CROSSOVER_NOTE, className="muted"),
            html.Button(
                "Simulate them in the background",
                id=ids.COLL_CROSSOVER_MORE,
                n_clicks=0,
                className="button small",
                style=shown["more_style"],
            ),  # fmt: skip
        ],
        className="inline crossover-more",
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


def algorithms_for_op(op: str, current: str | None, hardware: str | None = None) -> tuple[list[dict[str, str]], str | None]:
    """Algorithm choices for ``op`` (NCCL's pick first on a GPU preset); keeps the current one
    when the op offers it."""
    options = _options(op, hardware)
    names = [option["value"] for option in options]
    return options, current if current in names else (names[0] if names else None)


def scenario_of(data: dict | None) -> CollectiveScenario | None:
    """The scenario store's data as a scenario (None when the form is invalid)."""
    return None if not data else CollectiveScenario.from_dict(data)


def compare_choices(compare_field: str | None, data: dict | None, current: str | None) -> tuple[list[dict[str, str]], str | None]:
    """The values the second column may take (all but the scenario's own); keeps the current one."""
    if not data:
        raise PreventUpdate
    s = scenario_of(data)
    if compare_field == "topology":
        values = [name for name in TOPOLOGIES if name != s.topology]
    elif compare_field == "sharing":
        values = [mode for mode in SHARING_MODES if mode != s.sharing]
    else:
        values = [name for name in model.algorithm_options(s.op) if name != s.algorithm]
    # the value is set only when it must change: setting it (even to itself) fires the URL
    # writer, which could push an old query after Back
    return _choices(values), no_update if (current in values or current is None) else None
