"""DDP buckets and the training step: a DDP step's backward/communication timeline, overhead vs
bucket size with the caps within 1 % of the best, the four DDP strategies defined and side by
side; then the chosen FSDP / ZeRO sharding strategy's per-unit timeline and every training
strategy's step time and memory (activations included).

Layout and short callbacks with named outputs: each reads the form, calls one function of
:mod:`.model` / :mod:`sim.training.explain` and draws with :mod:`webapp.figures.ddp`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from dash import ClientsideFunction, Input, Output, State, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from sim.fields import form_fields
from sim.training import explain
from sim.training.memory import peak_words
from sim.units import format_size, format_time
from webapp import figures, urlstate
from webapp.callbacks import answer, events_csv, guarded
from webapp.components import field, graph, hardware_dropdown, number_card
from webapp.pages.ddp import ids, model
from webapp.pages.spec import drawn_from, drawn_into

PAGE = ids.PREFIX

# Form key -> the DDP scenario field whose label and help it shows: the entries whose group is
# this page, by their URL key (sim.fields: the CLI's text too)
SCENARIO_FIELDS = {key: info.name for key, info in form_fields("ddp").items()}
LABELS = {
    **{key: (info.label, info.hint or info.help) for key, info in form_fields("ddp").items()},
    # what only this page has: its own ranks bounds, a backward box taking a time or a rate, a log slider, FSDP's strategy
    "ranks": ("Ranks", "2 to 1024; with a hardware preset, nodes x its GPUs a node"),
    "nodes": ("Nodes", "nodes of the hardware preset: sets the ranks (nodes x GPUs a node)"),
    "backward": ("Backward time", "empty: from FLOPs (4 x tokens x params) at the MFU; or a time (120ms) or gradient rate (4GB/s)"),
    "bucket": ("Bucket size", "log scale"),
    "sharding": (
        "Sharding strategy",
        "training step: ddp, zero1 (ZeRO-1), shard_grad_op (ZeRO-2), full_shard (ZeRO-3), no_shard, hybrid_shard",
    ),
    "shard_size": ("Shard group size", "hybrid_shard: ranks per shard group, divides ranks"),
}
GROUPS = (
    ("Machine and model", ("hardware", "nodes", "preset", "ranks")),
    ("Compute and memory", ("precision", "master", "tokens", "gpu", "mfu", "backward", "forward", "optimizer", "checkpointing")),
    ("DDP buckets", ("strategy", "bucket", "first_bucket", "accumulation")),
    ("Communication", ("comm_model", "o", "w", "bandwidth", "latency", "algorithm")),
    ("Training step", ("sharding", "shard_size")),
)
OW_ONLY, NETWORK_ONLY = ("o", "w"), ("bandwidth", "latency", "algorithm")
CAPTION_FIELDS = ("hardware", "ranks", "comm_model", "o", "w")  # nodes: through ranks
ON_OFF = {"master": (" on", " off"), "checkpointing": (" on", " off"), "first_bucket": (" 1 MiB", " none")}
INTRO = (
    "A data-parallel training step: forward, then backward makes gradients ready (last layer first); DDP groups "
    "them into buckets and all-reduces each bucket as soon as it is full; the optimizer runs once every all-reduce "
    "is done. The overhead is the communication left after backward ends; the bucket size trades per-call cost "
    "against overlap. Compute times not typed come from the model's FLOPs at the stated MFU of the GPU's peak."
)
TRAIN_INTRO = (
    "The same model, compute and comm model under a sharding strategy (docs/fsdp.md). FSDP splits the model into "
    "units (one per transformer block, plus the root): full_shard all-gathers a unit's parameters before its forward "
    "and again before its backward and reduce-scatters its gradients; shard_grad_op keeps them gathered until "
    "backward ends; zero1 shards only the optimizer state; hybrid_shard shards within a group and all-reduces "
    "across groups. The forward time hides the forward all-gathers; a forward of 0 would expose every one."
)
DDP_OUTPUTS = {
    "notice": Output(ids.DDP_NOTICE, "children"),
    "cards": Output(ids.DDP_SUMMARY, "children"),
    "timeline": Output(ids.DDP_TIMELINE, "figure"),
    "overhead": Output(ids.DDP_OVERHEAD, "figure"),
    "strategies": Output(ids.DDP_STRATEGIES, "figure"),
    "explain": Output(ids.DDP_EXPLAIN, "children"),
    "compute": Output(ids.DDP_COMPUTE, "children"),
    "ow_used": Output(ids.DDP_OW_USED, "children"),
}
TRAIN_OUTPUTS = {
    "notice": Output(ids.TRAIN_NOTICE, "children"),
    "cards": Output(ids.TRAIN_SUMMARY, "children"),
    "strategies": Output(ids.TRAIN_STRATEGIES, "figure"),
    "memory": Output(ids.TRAIN_MEMORY, "figure"),
    "timeline": Output(ids.TRAIN_TIMELINE, "figure"),
    "caption": Output(ids.TRAIN_CAPTION, "children"),
}
FIX_INPUTS = (
    "Fix the highlighted inputs; nothing is computed until they are valid (figures shown, if any, are from an earlier valid scenario)."
)

# ----------------------------------------------------------------------------- layout


def _dropdown(fid: str, options: Any, value: str) -> dcc.Dropdown:
    """A link's value that is none of the options stays in the field, flagged (urlstate.with_unknown)."""
    options = [option if isinstance(option, dict) else {"label": str(option), "value": option} for option in options]
    return dcc.Dropdown(id=fid, options=urlstate.with_unknown(options, value), value=value, clearable=False)


def _choices(name: str) -> Any:
    """Options of the dropdown fields."""
    if name == "preset":
        return list(model.presets())
    if name == "strategy":
        return list(model.strategies())
    if name == "sharding":
        return list(model.shardings())
    if name == "precision":
        return [{"label": "bf16", "value": "bf16"}, {"label": "fp16", "value": "fp16"}, {"label": "fp32", "value": "fp32"}]
    if name == "gpu":
        return model.gpu_options()
    if name == "comm_model":
        return [{"label": "o / w", "value": "ow"}, {"label": "network (simulated)", "value": "network"}]
    from sim.algorithms.registry import algorithms_for

    return [{"label": "nccl (NCCL's pick, a preset)", "value": "nccl"}] + algorithms_for("all_reduce")


def _input(name: str, value: str) -> Any:
    fid = ids.field_id(name, PAGE)
    if name == "hardware":
        return hardware_dropdown(fid, value, model.hardware_options())
    if name in ("preset", "strategy", "sharding", "precision", "gpu", "comm_model", "algorithm"):
        return _dropdown(fid, _choices(name), value)
    if name in ON_OFF:
        on, off = ON_OFF[name]
        options = [{"label": on, "value": "on"}, {"label": off, "value": "off"}]
        return dcc.RadioItems(id=fid, options=options, value=value, inline=True)
    if name == "bucket":
        return _bucket_slider(fid, value)
    return dcc.Input(id=fid, type="text", value=value, debounce=True, autoComplete="off", className="text-input")


def _bucket_slider(fid: str, value: str) -> html.Div:
    marks = {k: format_size(2**k).replace(" ", "") for k in range(model.MIN_BUCKET_LOG2, model.MAX_BUCKET_LOG2 + 1, 3)}
    position = model.slider_from_bucket(value)
    synced = sync_bucket(position)  # the field and label as the slider sets them, so nothing runs at load
    slider = dcc.Slider(
        id=ids.DDP_BUCKET_SLIDER, min=model.MIN_BUCKET_LOG2, max=model.MAX_BUCKET_LOG2, step=0.05, value=position, marks=marks,
        updatemode="mouseup",
    )  # fmt: skip
    hidden = dcc.Input(id=fid, type="text", value=synced["value"], style={"display": "none"})
    return html.Div([slider, hidden, html.Div(synced["label"], id=ids.DDP_BUCKET_LABEL, className="hint")])


def _hidden(name: str, values: dict[str, str]) -> bool:
    if name == "nodes":
        return not values["hardware"]
    if name in OW_ONLY:
        return values["comm_model"] != "ow"
    if name in NETWORK_ONLY:
        return values["comm_model"] != "network"
    return name == "shard_size" and values["sharding"] != "hybrid_shard"


def _form(values: dict[str, str]) -> list:
    """The form's fields, grouped under headings; the hardware field carries the preset's caption."""
    rows: list = []
    for heading, names in GROUPS:
        rows.append(html.H4(heading, className="form-group"))
        for name in names:
            label, hint = LABELS[name]
            box = field(name, label, hint, _input(name, values[name]), page=PAGE, hidden=_hidden(name, values))
            if name == "hardware":
                caption = guarded(hardware_caption, lambda message: [html.P(message, className="error")])(
                    **{k: values[k] for k in CAPTION_FIELDS}
                )
                box.children.append(html.Div(caption, id=ids.DDP_HARDWARE_CAPTION, className="hardware-caption"))
            if name == "w":  # the o and w the results used (a preset's refit differs from the boxes)
                box.children.append(html.Div(id=ids.DDP_OW_USED, className="hint ow-used", role="status"))
            rows.append(box)
    return rows


def _upload() -> html.Div:
    return html.Div(
        [
            html.Label("Or upload a parameter list", className="label"),
            dcc.Upload(id=ids.DDP_UPLOAD, children=html.Div(["Drop or ", html.A("choose"), " a JSON/YAML file"]), className="upload"),
            html.Div(id=ids.error_id("upload", PAGE), className="error", role="alert"),
            html.Div('{"params": [{"name", "shape" or "numel", "element_bytes"}...]} in registration order', className="hint"),
            html.Div(id=ids.DDP_UPLOAD_INFO, className="hint"),
        ],
        className="field",
    )


def _downloads() -> html.Div:
    buttons = [(ids.DDP_DL_JSON, "scenario JSON"), (ids.DDP_DL_CSV, "events CSV"), (ids.DDP_DL_TRACE, "Chrome trace")]
    return html.Div(
        [html.Span("Download:", className="muted")]
        + [html.Button(text, id=button, className="button small") for button, text in buttons]
        + [dcc.Download(id=ids.DDP_DOWNLOAD)],
        className="downloads",
    )


def _strategy_words() -> html.Div:
    items = [html.Li(explain.STRATEGY_WORDS[name]) for name in model.strategies()]
    return html.Div(
        [html.P("The four DDP strategies:", className="hint"), html.Ul(items, className="captions")],
        id=ids.DDP_STRATEGY_WORDS,
        className="explain",
    )


def _content() -> html.Div:
    def row(*columns: Any) -> html.Div:
        return html.Div(list(columns), className="row")

    return html.Div(
        [
            html.Div(html.P(INTRO), className="intro", id=ids.DDP_INTRO),
            html.Div(id=ids.DDP_NOTICE, className="notice"),
            html.Div(id=ids.DDP_COMPUTE, className="notice"),
            html.Div(id=ids.DDP_SUMMARY, className="cards"),
            html.Div(graph(ids.DDP_TIMELINE, 340), className="col"),
            row(
                html.Div([graph(ids.DDP_OVERHEAD, 380), html.Div(id=ids.DDP_EXPLAIN, className="explain")], className="col wide"),
                html.Div([graph(ids.DDP_STRATEGIES, 380), _strategy_words()], className="col narrow"),
            ),
            html.H3("Training step: FSDP / ZeRO sharding", className="section"),
            html.Div(html.P(TRAIN_INTRO), className="intro", id=ids.TRAIN_INTRO),
            html.P(["Tensor, pipeline and expert parallelism: ", dcc.Link("the Parallelism page", href="/parallelism")], className="hint"),
            html.Div(id=ids.TRAIN_NOTICE, className="notice"),
            html.Div(id=ids.TRAIN_SUMMARY, className="cards"),
            row(html.Div(graph(ids.TRAIN_STRATEGIES, 380), className="col"), html.Div(graph(ids.TRAIN_MEMORY, 380), className="col")),
            html.Div(graph(ids.TRAIN_TIMELINE, 300), className="col"),
            html.Div(id=ids.TRAIN_CAPTION, className="explain"),
        ]
    )


def layout(search: str = "") -> html.Div:
    """The form for ``search`` and the page already drawn for it (:func:`first_view`)."""
    values = model.form_from_query(search)
    sidebar = html.Aside([html.H3("DDP step"), html.Div(_form(values) + [_upload()], className="form"), _downloads()], className="sidebar")
    view = first_view(values)
    content = _content()
    drawn = {**drawn_from(DDP_OUTPUTS, view.get("ddp_shown") or {}), **drawn_from(TRAIN_OUTPUTS, view.get("training_shown") or {})}
    for part in (content, sidebar):  # the sidebar too: the o and w used sit under the boxes
        drawn_into(part, drawn)
    loading = dcc.Loading(content, type="default", delay_show=250, overlay_style={"visibility": "visible", "opacity": 0.5})
    stores = [dcc.Store(id=ids.DDP_SCENARIO, data=view.get("ddp")), dcc.Store(id=ids.TRAIN_SCENARIO, data=view.get("training")),
              dcc.Store(id=ids.DDP_UPLOAD_STORE), dcc.Store(id=ids.DDP_URL_SPEC, data=model.url_spec())]  # fmt: skip
    return html.Div([*stores, sidebar, html.Section(loading, className="content")], className="layout")


def first_view(values: dict[str, str]) -> dict[str, Any]:
    """What the page's two runs draw for the form ``values``, and the scenarios they ran: the page
    comes drawn, and at load validation finds the stores as they are and runs nothing (one round
    trip and ~0.1 s of server CPU less on a first load; the runs are kept per scenario). A section
    whose form is not valid, or whose run fails, is left to the callbacks (they say why)."""
    try:
        checked = model.validate_form(values, None)
    except Exception:  # noqa: BLE001 - the page must build; validation at load says what is wrong
        return {}
    view: dict[str, Any] = {}
    for name, run in (("ddp", simulate), ("training", simulate_training)):
        try:
            if checked[name] is not None:
                view[f"{name}_shown"], view[name] = run(checked[name]), checked[name]
        except Exception:  # noqa: BLE001 - left to the callback, which shows the message
            continue
    return view


# ----------------------------------------------------------------------------- callbacks


def sync_bucket(log2_value: float | None) -> dict[str, str]:
    """The bucket field (bytes) and its label from the log-scale slider."""
    nbytes = model.bucket_bytes_from_slider(log2_value)
    return {"value": str(nbytes), "label": f"bucket cap {format_size(nbytes)}"}


def comm_fields(comm_model: str) -> dict[str, dict[str, str]]:
    """Which comm fields show: o and w for ow, the network's for network."""
    shown = OW_ONLY if comm_model == "ow" else NETWORK_ONLY
    return {name: {} if name in shown else {"display": "none"} for name in OW_ONLY + NETWORK_ONLY}


def apply_hardware(name: str | None, ranks: str | None, trigger: str | None = None, nodes: str | None = None) -> dict[str, Any]:
    """A picked preset fills nodes and ranks (whole nodes), the NIC's bandwidth and latency, o and
    w, the algorithm (NCCL's pick) and the GPU; typing nodes (``trigger``) sets the ranks from
    them; a change of ranks under a picked preset refills nodes, o and w (NCCL's figures depend
    on the nodes). Picking "none" leaves the boxes."""
    typed = nodes if trigger == ids.field_id("nodes", PAGE) else None
    values = model.hardware_form(name, ranks, pick=trigger != ids.field_id("ranks", PAGE), nodes=typed)
    if values is None:
        raise PreventUpdate
    if typed is not None:  # typed nodes move the ranks and o / w, not the links or the algorithm typed
        values = {key: value for key, value in values.items() if key in ("nodes", "ranks", "o", "w")}
    return answer(PICKED_FIELDS, **values)


PICKED_FIELDS = (*model.HARDWARE_FIELDS, "nodes")


def nodes_field(hardware: str | None) -> dict[str, str]:
    """The Nodes field shows with a hardware preset only."""
    return {} if hardware else {"display": "none"}


def hardware_caption(**form: str) -> list:
    """The preset, what it sets, and the sources of its figures (nothing without a preset)."""
    words = model.hardware_caption(form)
    if words is None:
        return []
    sources = html.Ul([html.Li(f"{key}: {text}") for key, text in words["sources"]])
    return [html.P(line, className="hint") for line in words["lines"]] + [
        html.Details([html.Summary("sources"), sources], className="hint")
    ]


def upload(contents: str | None, filename: str | None) -> dict[str, Any]:
    params, message = model.parse_upload(contents, filename)
    if params is None:
        return {"store": None, "error": message, "info": ""}
    total = sum(p["numel"] * p["element_bytes"] for p in params)
    info = (
        f"using {filename}: {len(params)} parameters, {format_size(total)} as the file gives them, used instead of the preset "
        "(the precision field sets the bytes per gradient element; a shared link carries the preset, not the file)"
    )
    return {"store": params, "error": "", "info": info}


def validate(
    uploaded: list | None, form: dict[str, Any], previous: dict | None = None, previous_training: dict | None = None
) -> dict[str, Any]:
    """The DDP and training-step scenarios (None where the form is wrong) and a message per field
    (the URL query is written in the browser, :func:`webapp.urlstate.url_spec`); a store is left
    alone when its scenario did not change (the DDP store when only the sharding fields changed;
    both at load, where the layout brings them drawn)."""
    checked = model.validate_form(form, uploaded)
    data, training = checked["ddp"], checked["training"]
    return {
        "ddp": no_update if data is not None and data == previous else data,
        "training": no_update if training is not None and training == previous_training else training,
        "errors": {name: checked["errors"].get(name, "") for name in model.DEFAULTS},
    }


def simulate(data: dict | None) -> dict[str, Any]:
    """The DDP section: cards, timeline, overhead with the near-best caps, strategies, words
    (kept for the last scenarios: a first load or a value set back costs no run)."""
    if not data:
        return answer(DDP_OUTPUTS, notice=FIX_INPUTS)
    return dict(_kept(_simulate, json.dumps(data, sort_keys=True)))


@lru_cache(maxsize=16)
def _kept(run: Callable[[dict], dict[str, Any]], key: str) -> dict[str, Any]:
    """``run(data)`` for the scenario ``key`` (its JSON), kept (an error is not kept)."""
    return run(json.loads(key))


def _simulate(data: dict) -> dict[str, Any]:
    from sim.training.ddp import DDPScenario

    scenario = DDPScenario.from_dict(data)
    shown = model.explore(scenario)
    summary, best, near = shown["summary"], shown["optimum"], shown["near"]
    overhead = figures.overhead_figure(
        model.overhead_curves(best), (near["best"]["bucket_cap_bytes"], near["best"]["overhead_s"]), summary["bucket_cap_bytes"],
        model.measured_overheads(scenario.preset) if scenario.preset else [], (near["low"], near["high"]),
    )  # fmt: skip
    words = shown["words"]
    caption = [html.Ul([html.Li(text) for text in words["captions"]], className="captions")]
    caption += [html.P(text) for text in (words["near"], words["assumes"], words["why"]) if text]
    return answer(
        DDP_OUTPUTS, notice=shown["notice"], cards=_ddp_cards(scenario, summary, best, near), overhead=overhead,
        timeline=figures.ddp_timeline(shown["result"].events()), strategies=figures.strategy_figure(shown["strategies"]),
        explain=caption, compute=shown["compute"], ow_used=shown["ow_used"],
    )  # fmt: skip


def _ddp_cards(scenario: Any, summary: dict[str, Any], best: dict[str, Any], near: dict[str, Any]) -> list:
    caps = f"{format_size(near['low'])} – {format_size(near['high'])}" if near["high"] > near["low"] else format_size(near["low"])
    cards = [
        number_card("Step time", format_time(summary["step_time_s"]) + _step_range(summary), ids.DDP_STEP_TIME),
        number_card("Backward end", format_time(summary["backward_end_s"]), ids.DDP_BACKWARD_END),
        number_card("Comm end", format_time(summary["comm_end_s"]), ids.DDP_COMM_END),
        number_card("Overhead", format_time(summary["overhead_s"]), ids.DDP_OVERHEAD_VALUE),
        number_card("Buckets", str(summary["num_buckets"]), ids.DDP_BUCKETS),
        number_card(
            "Bucket caps within 1 % of best",
            f"{caps} (best {format_time(near['best']['overhead_s'])})" + _cap_range(scenario, near["best"]["bucket_cap_bytes"]),
            ids.DDP_BEST,
        ),
    ]
    if scenario.comm == "ow" and best.get("best_bucket_bytes_formula"):  # o and w are inputs only here
        b_star = best["best_bucket_bytes_formula"]
        cards.append(number_card("b* = sqrt(s w o)", format_size(b_star) + _cap_range(scenario, b_star), ids.DDP_BSTAR))
    return cards


def _cap_range(scenario: Any, cap_bytes: float) -> str:
    """ " (lo – hi)": the range a preset's uncertainty allows (sim.hardware.uncertainty), "" without one."""
    from sim.hardware.uncertainty import bucket_cap_range

    found = bucket_cap_range(scenario.hardware, cap_bytes)
    return "" if found is None else f" (80 %: {format_size(found[0])} – {format_size(found[1])})"


def _step_range(summary: dict[str, Any]) -> str:
    """The step time's interval on a preset as " (80 %: a – b)" (sim.training.step_interval), "" without one."""
    found = summary.get("step_time_interval_s")
    return "" if not found else f" (80 %: {format_time(found[0])} – {format_time(found[1])})"


def simulate_training(data: dict | None) -> dict[str, Any]:
    """Cards, strategy comparison, memory bars and per-unit timeline of the training step (kept
    per scenario, as :func:`simulate`)."""
    if not data:
        return answer(TRAIN_OUTPUTS, notice=FIX_INPUTS)
    return dict(_kept(_simulate_training, json.dumps(data, sort_keys=True)))


def _simulate_training(data: dict) -> dict[str, Any]:
    from sim.training.fsdp import FSDPScenario

    scenario = FSDPScenario.from_dict(data)
    shown = model.explore_training(scenario)
    chosen = scenario.sharding
    title = f"{chosen}: one rank's step, bars coloured by unit"
    return answer(
        TRAIN_OUTPUTS, notice=shown["notice"], cards=_training_cards(shown["summary"], chosen),
        strategies=figures.training_strategies_figure(shown["compare"], chosen),
        memory=figures.training_memory_figure(shown["compare"], chosen),
        timeline=figures.training_timeline(shown["result"].events(), title),
        caption=html.Ul([html.Li(text) for text in shown["captions"]], className="captions"),
    )  # fmt: skip


def _training_cards(summary: dict[str, Any], chosen: str) -> list:
    memory = summary["memory"]
    activations = format_size(memory["activations_bytes"]) if memory["activations_bytes"] else "not known for this model"
    return [
        number_card(f"Step time ({chosen})", format_time(summary["step_time_s"]) + _step_range(summary), ids.TRAIN_STEP),
        number_card("Exposed comm", format_time(summary["exposed_comm_s"]), ids.TRAIN_EXPOSED),
        number_card("Comm busy", format_time(summary["comm_busy_s"]), ids.TRAIN_COMM),
        number_card("Peak memory / rank", peak_words(summary), ids.TRAIN_PEAK),
        number_card("Activations / rank", activations, ids.TRAIN_ACTIVATIONS),
        number_card("Units", str(summary["num_units"]), ids.TRAIN_UNITS),
    ]


def shard_size_field(sharding: str) -> dict[str, str]:
    return {} if sharding == "hybrid_shard" else {"display": "none"}


def download(trigger: str | None, data: dict | None) -> Any:
    from sim.training.ddp import DDPScenario, run_ddp

    if not trigger or not data:
        return no_update
    scenario = DDPScenario.from_dict(data)
    if trigger == ids.DDP_DL_JSON:
        return {"content": scenario.to_json(), "filename": "ddp-scenario.json", "type": "application/json"}
    result = run_ddp(scenario)
    if trigger == ids.DDP_DL_CSV:
        return {"content": events_csv(result.events()), "filename": "ddp-events.csv", "type": "text/csv"}
    return {"content": json.dumps(result.chrome_trace()), "filename": "ddp-trace.json", "type": "application/json"}


# ----------------------------------------------------------------------------- wiring


def _fid(name: str) -> str:
    return ids.field_id(name, PAGE)


def _register_form(app: Any) -> None:
    """Bucket slider, visible fields, upload, hardware picker and its caption. The layout sets what
    these set: none runs at load, so the first simulation starts one round trip after the page."""
    app.callback(
        output={"value": Output(_fid("bucket"), "value"), "label": Output(ids.DDP_BUCKET_LABEL, "children")},
        inputs={"log2_value": Input(ids.DDP_BUCKET_SLIDER, "value")},
        prevent_initial_call=True,
    )(sync_bucket)
    boxes = {name: Output(ids.field_box_id(name, PAGE), "style") for name in OW_ONLY + NETWORK_ONLY}
    app.callback(output=boxes, inputs={"comm_model": Input(_fid("comm_model"), "value")}, prevent_initial_call=True)(comm_fields)
    app.callback(
        output=Output(ids.field_box_id("shard_size", PAGE), "style"), inputs={"sharding": Input(_fid("sharding"), "value")},
        prevent_initial_call=True,
    )(shard_size_field)  # fmt: skip
    app.callback(
        output={"store": Output(ids.DDP_UPLOAD_STORE, "data"), "error": Output(ids.error_id("upload", PAGE), "children"),
                "info": Output(ids.DDP_UPLOAD_INFO, "children")},
        inputs={"contents": Input(ids.DDP_UPLOAD, "contents"), "filename": State(ids.DDP_UPLOAD, "filename")},
        prevent_initial_call=True,
    )(guarded(upload, lambda message: {"store": None, "error": message, "info": ""}))  # fmt: skip
    app.callback(
        output={name: Output(_fid(name), "value") for name in PICKED_FIELDS},
        inputs={"name": Input(_fid("hardware"), "value"), "ranks": Input(_fid("ranks"), "value"), "nodes": Input(_fid("nodes"), "value")},
        prevent_initial_call=True,
    )(guarded(lambda name, ranks, nodes: apply_hardware(name, ranks, ctx.triggered_id, nodes), lambda message: answer(PICKED_FIELDS)))
    app.callback(
        output=Output(ids.field_box_id("nodes", PAGE), "style"),
        inputs={"hardware": Input(_fid("hardware"), "value")},
        prevent_initial_call=True,
    )(nodes_field)
    app.callback(
        output=Output(ids.DDP_HARDWARE_CAPTION, "children"), inputs={name: Input(_fid(name), "value") for name in CAPTION_FIELDS},
        prevent_initial_call=True,
    )(guarded(hardware_caption, lambda message: [html.P(message, className="error")]))  # fmt: skip


def _register_runs(app: Any) -> None:
    """Validation, the URL (written in the browser), the two sections' runs, the downloads."""
    errors = {name: Output(ids.error_id(name, PAGE), "children") for name in model.DEFAULTS}
    outputs = {"ddp": Output(ids.DDP_SCENARIO, "data"), "training": Output(ids.TRAIN_SCENARIO, "data"), "errors": errors}
    failed = lambda message: {**answer(outputs, ddp=None, training=None), "errors": {**answer(errors), "preset": message}}  # noqa: E731
    app.callback(
        output=outputs,
        inputs={"uploaded": Input(ids.DDP_UPLOAD_STORE, "data"), "form": {name: Input(_fid(name), "value") for name in model.DEFAULTS},
                "previous": State(ids.DDP_SCENARIO, "data"), "previous_training": State(ids.TRAIN_SCENARIO, "data")},
    )(guarded(validate, failed))  # fmt: skip
    app.clientside_callback(
        ClientsideFunction("collsim", "writeUrl"),
        Output(ids.URL, "search", allow_duplicate=True), Output(ids.URL_WRITTEN, "data", allow_duplicate=True),
        *[Input(_fid(name), "value") for name in model.DEFAULTS], *urlstate.writer_states(ids.DDP_URL_SPEC),
        prevent_initial_call="initial_duplicate",
    )  # fmt: skip
    # not at load: the layout comes drawn (first_view), or validation at load sets the stores
    app.callback(output=DDP_OUTPUTS, inputs={"data": Input(ids.DDP_SCENARIO, "data")}, prevent_initial_call=True)(
        guarded(simulate, lambda message: answer(DDP_OUTPUTS, notice=f"Cannot run this step: {message}"))
    )
    app.callback(output=TRAIN_OUTPUTS, inputs={"data": Input(ids.TRAIN_SCENARIO, "data")}, prevent_initial_call=True)(
        guarded(simulate_training, lambda message: answer(TRAIN_OUTPUTS, notice=f"Cannot run this training step: {message}"))
    )
    buttons = {
        "json": Input(ids.DDP_DL_JSON, "n_clicks"),
        "csv": Input(ids.DDP_DL_CSV, "n_clicks"),
        "trace": Input(ids.DDP_DL_TRACE, "n_clicks"),
    }
    app.callback(
        output=Output(ids.DDP_DOWNLOAD, "data"), inputs={**buttons, "data": State(ids.DDP_SCENARIO, "data")}, prevent_initial_call=True
    )(guarded(lambda data, **clicks: download(ctx.triggered_id, data), lambda message: no_update))


def register(app: Any) -> None:
    _register_form(app)
    _register_runs(app)
