"""DDP buckets and the training step: a DDP step's backward/communication timeline, overhead vs
bucket size with its optimum, the four DDP strategies side by side; then the chosen FSDP / ZeRO
sharding strategy's per-unit timeline and every training strategy's step time and memory."""

from __future__ import annotations

import json
from typing import Any

from dash import Input, Output, State, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from sim.errors import CollsimError
from sim.units import format_size, format_time
from webapp import ddp_model as model
from webapp import figures, ids
from webapp.components import field, graph, hardware_dropdown, number_card
from webapp.pages.collectives import _guarded, _written

PATH = "/ddp"
NAME = "ddp"
TITLE = "DDP buckets"
PAGE = "ddp"

LABELS = {
    "hardware": ("Hardware", "a preset sets ranks (whole nodes), the network and o / w (collsim hardware list)"),
    "preset": ("Model preset", "parameter list of a known model"),
    "strategy": ("Strategy", "naive, flat, overlap or bucketed (PyTorch DDP)"),
    "sharding": (
        "Sharding strategy",
        "training step: ddp, zero1 (ZeRO-1), shard_grad_op (ZeRO-2), full_shard (ZeRO-3), no_shard, hybrid_shard",
    ),
    "shard_size": ("Shard group size", "hybrid_shard: ranks per shard group, divides ranks"),
    "comm_model": ("Comm model", "ow: o + bytes/w per call; network: simulated all-reduce"),
    "ranks": ("Ranks", "2 to 1024"),
    "backward": ("Backward compute", "total time (120ms) or gradient rate (4GB/s), uniform"),
    "bucket": ("Bucket size", "log scale"),
    "o": ("o (per-call overhead)", "e.g. 50us"),
    "w": ("w (algorithm bandwidth)", "e.g. 10GB/s"),
    "bandwidth": ("Link bandwidth", "network model, e.g. 25GB/s"),
    "latency": ("Link latency", "network model, e.g. 5us"),
    "algorithm": ("All-reduce algorithm", "network model"),
    "first_bucket": ("First bucket", "PyTorch's 1 MiB first bucket"),
}
OW_ONLY, NETWORK_ONLY = ("o", "w"), ("bandwidth", "latency", "algorithm")


def _input(name: str, value: str) -> Any:
    fid = ids.field_id(name, PAGE)
    if name == "hardware":
        return hardware_dropdown(fid, value, model.hardware_options())
    if name == "preset":
        options = list(model.presets())
        if value and value not in options:  # a link's unknown preset stays in its field, flagged (it computed GPT-2)
            options = [{"label": str(name), "value": name} for name in options] + [{"label": f"{value} (unknown)", "value": value}]
        return dcc.Dropdown(id=fid, options=options, value=value, clearable=False)
    if name == "strategy":
        return dcc.Dropdown(id=fid, options=list(model.strategies()), value=value, clearable=False)
    if name == "sharding":
        return dcc.Dropdown(id=fid, options=list(model.shardings()), value=value, clearable=False)
    if name == "comm_model":
        return dcc.Dropdown(
            id=fid,
            options=[{"label": "o / w", "value": "ow"}, {"label": "network (simulated)", "value": "network"}],
            value=value,
            clearable=False,
        )
    if name == "algorithm":
        from sim.algorithms.registry import algorithms_for

        return dcc.Dropdown(id=fid, options=algorithms_for("all_reduce"), value=value, clearable=False)
    if name == "first_bucket":
        return dcc.RadioItems(
            id=fid, options=[{"label": " 1 MiB", "value": "on"}, {"label": " none", "value": "off"}], value=value, inline=True
        )
    if name == "bucket":
        marks = {k: format_size(2**k).replace(" ", "") for k in range(model.MIN_BUCKET_LOG2, model.MAX_BUCKET_LOG2 + 1, 3)}
        synced, label = sync_bucket(model.slider_from_bucket(value))
        return html.Div(
            [
                dcc.Slider(
                    id=ids.DDP_BUCKET_SLIDER,
                    min=model.MIN_BUCKET_LOG2,
                    max=model.MAX_BUCKET_LOG2,
                    step=0.05,
                    value=model.slider_from_bucket(value),
                    marks=marks,
                    updatemode="mouseup",
                ),
                # the field and label as the slider sets them (sync_bucket), so nothing runs at load
                dcc.Input(id=fid, type="text", value=synced, style={"display": "none"}),
                html.Div(label, id="ddp-bucket-label", className="hint"),
            ]
        )
    return dcc.Input(id=fid, type="text", value=value, debounce=True, autoComplete="off", className="text-input")


def layout(search: str = "") -> html.Div:
    absent = model.missing()
    if absent:
        return html.Div(
            [
                html.H2("DDP buckets"),
                html.P(
                    f"This page needs {', '.join(absent)}, which this checkout does not have yet. The Collectives page works without it."
                ),
            ],
            className="missing",
            id=ids.DDP_NOTICE,
        )
    values = model.form_from_query(search)
    rows = []
    for name in model.DEFAULTS:
        hidden = (name in OW_ONLY and values["comm_model"] != "ow") or (name in NETWORK_ONLY and values["comm_model"] != "network")
        hidden = hidden or (name == "shard_size" and values["sharding"] != "hybrid_shard")
        label, hint = LABELS[name]
        rows.append(field(name, label, hint, _input(name, values[name]), page=PAGE, hidden=hidden))
        if name == "hardware":
            caption = _guarded(hardware_caption, lambda message: [html.P(message, className="error")])(*[values[k] for k in CAPTION_FIELDS])
            rows[-1].children.append(html.Div(caption, id=ids.DDP_HARDWARE_CAPTION, className="hardware-caption"))
    upload = html.Div(
        [
            html.Label("Or upload a parameter list", className="label"),
            dcc.Upload(
                id=ids.DDP_UPLOAD,
                children=html.Div(["Drop or ", html.A("choose"), " a JSON/YAML file"]),
                className="upload",
                multiple=False,
            ),
            html.Div(id=ids.error_id("upload", PAGE), className="error", role="alert"),
            html.Div('{"params": [{"name", "shape" or "numel", "element_bytes"}...]} in registration order', className="hint"),
            html.Div(id="ddp-upload-info", className="hint"),
        ],
        className="field",
    )
    downloads = html.Div(
        [
            html.Span("Download:", className="muted"),
            html.Button("scenario JSON", id=ids.DDP_DL_JSON, className="button small"),
            html.Button("events CSV", id=ids.DDP_DL_CSV, className="button small"),
            html.Button("Chrome trace", id="ddp-dl-trace", className="button small"),
            dcc.Download(id=ids.DDP_DOWNLOAD),
        ],
        className="downloads",
    )
    content = html.Div(
        [
            html.Div(
                html.P(
                    "A data-parallel training step: gradients become ready during backward (last layer first), DDP groups "
                    "them into buckets and all-reduces each bucket as soon as it is full. The overhead is the communication "
                    "left after backward ends; the bucket size trades per-call cost against overlap."
                ),
                className="intro",
                id="ddp-intro",
            ),
            html.Div(id=ids.DDP_NOTICE, className="notice"),
            html.Div(id=ids.DDP_SUMMARY, className="cards"),
            html.Div(graph(ids.DDP_TIMELINE, 340), className="col"),
            html.Div(
                [
                    html.Div([graph(ids.DDP_OVERHEAD, 380), html.Div(id=ids.DDP_EXPLAIN, className="explain")], className="col wide"),
                    html.Div(graph(ids.DDP_STRATEGIES, 380), className="col narrow"),
                ],
                className="row",
            ),
            html.H3("Training step: FSDP / ZeRO sharding", className="section"),
            html.Div(
                html.P(
                    "The same model, backward and comm model under a sharding strategy (docs/fsdp.md). FSDP splits the model "
                    "into units (one per transformer block, plus the root): full_shard all-gathers a unit's parameters before "
                    "its forward and again before its backward and reduce-scatters its gradients; shard_grad_op keeps them "
                    "gathered until backward ends; zero1 shards only the optimizer state; hybrid_shard shards within a group "
                    "and all-reduces across groups."
                ),
                className="intro",
                id="ddp-train-intro",
            ),
            html.Div(id=ids.TRAIN_NOTICE, className="notice"),
            html.Div(id=ids.TRAIN_SUMMARY, className="cards"),
            html.Div(
                [
                    html.Div(graph(ids.TRAIN_STRATEGIES, 380), className="col"),
                    html.Div(graph(ids.TRAIN_MEMORY, 380), className="col"),
                ],
                className="row",
            ),
            html.Div(graph(ids.TRAIN_TIMELINE, 300), className="col"),
            html.Div(id=ids.TRAIN_CAPTION, className="explain"),
        ]
    )
    return html.Div(
        [
            dcc.Store(id=ids.DDP_SCENARIO),
            dcc.Store(id=ids.TRAIN_SCENARIO),
            dcc.Store(id=ids.DDP_UPLOAD_STORE),
            html.Aside([html.H3("DDP step"), html.Div(rows + [upload], className="form"), downloads], className="sidebar"),
            html.Section(
                dcc.Loading(content, type="default", delay_show=250, overlay_style={"visibility": "visible", "opacity": 0.5}),
                className="content",
            ),
        ],
        className="layout",
    )


# ----------------------------------------------------------------------------- callbacks


def sync_bucket(log2_value: float | None) -> tuple[str, str]:
    nbytes = model.bucket_bytes_from_slider(log2_value)
    return str(nbytes), f"bucket cap {format_size(nbytes)}"


def comm_fields(comm_model: str) -> list[dict[str, str]]:
    return [{} if comm_model == "ow" else {"display": "none"} for _ in OW_ONLY] + [
        {} if comm_model == "network" else {"display": "none"} for _ in NETWORK_ONLY
    ]


def apply_hardware(name: str | None, ranks: str | None, trigger: str | None = None) -> tuple:
    """A picked preset fills ranks (whole nodes), the NIC's bandwidth and latency, o and w; a
    change of ranks (``trigger``) under a picked preset refills o and w (NCCL's figures depend on
    the nodes). Picking "none" leaves the boxes as they are."""
    values = model.hardware_form(name, ranks, pick=trigger != ids.field_id("ranks", PAGE))
    if values is None:
        raise PreventUpdate
    return tuple(values.get(key, no_update) for key in model.HARDWARE_FIELDS)


CAPTION_FIELDS = ("hardware", "ranks", "comm_model", "o", "w")


def hardware_caption(*values: str) -> list:
    """The preset, what it sets, and the sources of its figures (nothing without a preset)."""
    words = model.hardware_caption(dict(zip(CAPTION_FIELDS, values)))
    if words is None:
        return []
    sources = html.Ul([html.Li(f"{key}: {text}") for key, text in words["sources"]])
    return [html.P(line, className="hint") for line in words["lines"]] + [
        html.Details([html.Summary("sources"), sources], className="hint")
    ]


def upload(contents: str | None, filename: str | None) -> tuple[Any, str, str]:
    params, message = model.parse_upload(contents, filename)
    if params is None:
        return None, message, ""
    total = sum(p["numel"] * p["element_bytes"] for p in params)
    return (
        params,
        "",
        f"using {filename}: {len(params)} parameters, {format_size(total)} of gradients, used instead of the preset (a shared link carries the preset, not the file)",
    )


def _validate(uploaded: list | None, values: tuple) -> tuple[dict | None, dict | None, dict[str, str], str]:
    """(DDP scenario dict, training-step scenario dict, errors by field, URL query)."""
    form = dict(zip(model.DEFAULTS, values))
    scenario, errors = model.parse_form(form, uploaded)
    if scenario is not None:
        try:
            model.check_network_cost(scenario)
        except CollsimError as error:
            scenario, errors = None, {"ranks": str(error)}
    training = None
    if scenario is not None:
        training, errors = model.training_scenario(scenario.to_dict(), form)
    if "upload" in errors:  # the upload box shows its own message; a list that fails later goes by the preset
        errors["preset"] = errors.pop("upload")
    data = scenario.to_dict() if scenario is not None and training is not None else None
    return data, (training.to_dict() if training is not None else None), errors, model.query_from_form(form)


def validate(uploaded: list | None, *values: str) -> tuple:
    data, _, errors, query = _validate(uploaded, values)
    return data, *[errors.get(name, "") for name in model.DEFAULTS], query


def validate_page(uploaded: list | None, *values: Any) -> tuple:
    """The page's callback: :func:`validate` plus the training-step scenario; the DDP store is
    left alone when only the sharding fields changed (its figures need no rerun)."""
    *values, previous = values
    data, training, errors, query = _validate(uploaded, tuple(values))
    same = data is not None and data == previous
    return (no_update if same else data), training, *[errors.get(name, "") for name in model.DEFAULTS], query


def simulate(data: dict | None) -> tuple:
    from sim.training.ddp import DDPScenario

    if not data:
        return ("Fix the highlighted inputs; nothing is computed until they are valid (figures shown, if any, are from an earlier valid scenario).", *[no_update] * 5)
    try:
        scenario = DDPScenario.from_dict(data)
        answer = model.run(scenario)
    except CollsimError as error:
        return (f"Cannot run this step: {error}", *[no_update] * 5)
    summary, best = answer["summary"], answer["optimum"]
    cards = [
        number_card("Step time", format_time(summary["step_time_s"]), "ddp-step-time"),
        number_card("Backward end", format_time(summary["backward_end_s"]), "ddp-backward-end"),
        number_card("Comm end", format_time(summary["comm_end_s"]), "ddp-comm-end"),
        number_card("Overhead", format_time(summary["overhead_s"]), "ddp-overhead-value"),
        number_card("Buckets", str(summary["num_buckets"]), "ddp-buckets"),
        number_card(
            "Best bucket (sim)", f"{format_size(best['best_bucket_bytes_sim'])}: {format_time(best['best_overhead_s'])}", "ddp-best"
        ),
    ]
    if scenario.comm == "ow" and best.get("best_bucket_bytes_formula"):  # o and w are inputs only here
        cards.append(number_card("b* = sqrt(s w o)", format_size(best["best_bucket_bytes_formula"]), "ddp-bstar"))
    preset = scenario.preset or ""
    overhead = figures.overhead_figure(
        model.overhead_curves(best),
        (best["best_bucket_bytes_sim"], best["best_overhead_s"]),
        summary["bucket_cap_bytes"],
        model.measured_overheads(preset) if preset else [],
    )
    timeline = figures.ddp_timeline(answer["result"].events())
    strategies = figures.strategy_figure(answer["strategies"])
    notice = f"{summary['num_params']} parameters, {format_size(summary['grad_bytes'])} of gradients, strategy {summary['strategy']}, comm model {summary['comm']}."
    if scenario.comm == "network" and scenario.hardware:
        notice += (
            f" Network: {scenario.ranks // scenario.gpus_per_node} x {scenario.hardware} ({scenario.ranks} ranks, {scenario.algorithm})."
        )
    words = model.explanation(answer, scenario)
    explain = [html.Ul([html.Li(text) for text in words["captions"]], className="captions")]
    explain += [html.P(text) for text in (words["assumes"], words["why"]) if text]
    return notice, cards, timeline, overhead, strategies, explain


def simulate_training(data: dict | None) -> tuple:
    """Cards, strategy comparison, memory bars and per-unit timeline of the training step."""
    from sim.training.fsdp import FSDPScenario

    if not data:
        return ("Fix the highlighted inputs; nothing is computed until they are valid (figures shown, if any, are from an earlier valid scenario).", *[no_update] * 5)
    try:
        scenario = FSDPScenario.from_dict(data)
        answer = model.run_training(scenario)
    except CollsimError as error:
        return (f"Cannot run this training step: {error}", *[no_update] * 5)
    summary, memory, chosen = answer["summary"], answer["summary"]["memory"], scenario.sharding
    cards = [
        number_card(f"Step time ({chosen})", format_time(summary["step_time_s"]), "ddp-train-step"),
        number_card("Exposed comm", format_time(summary["exposed_comm_s"]), "ddp-train-exposed"),
        number_card("Comm busy", format_time(summary["comm_busy_s"]), "ddp-train-comm"),
        number_card("Peak memory / rank", format_size(memory["peak_bytes"]), "ddp-train-peak"),
        number_card("Units", str(summary["num_units"]), "ddp-train-units"),
    ]
    group = f", shard group {summary['shard_group']} of {summary['ranks']} ranks" if chosen == "hybrid_shard" else ""
    notice = f"Training step with {chosen}{group}: {summary['num_units']} units, {format_size(summary['grad_bytes'])} of gradients."
    if scenario.comm == "network" and scenario.hardware:
        nodes = scenario.ranks // scenario.gpus_per_node
        notice += f" Every strategy on one network: {nodes} x {scenario.hardware}, its links and NICs ({scenario.algorithm})."
    notice += "".join(f" Note: {note}." for note in summary["notes"])
    notice += "".join(f" Not compared: {name} ({reason})." for name, reason in answer["skipped"].items())
    title = f"{chosen}: one rank's step, bars coloured by unit"
    timeline = figures.training_timeline(answer["result"].events(), title)
    strategies = figures.training_strategies_figure(answer["compare"], chosen)
    memory_bars = figures.training_memory_figure(answer["compare"], chosen)
    caption = html.Ul(
        [
            html.Li(
                "Step time and exposed comm: the step's length and the part of it the compute stream spends waiting for "
                "communication (step time minus compute), every strategy at the same inputs; the chosen one is bold."
            ),
            html.Li(
                "Memory per rank: parameters, gradients and optimizer state as each strategy stores them (sharded over the "
                "group or whole), plus the peak of unsharded buffers (gathered parameters, unsharded gradients); "
                "activations are not counted."
            ),
            html.Li(
                f"Timeline of {chosen}: compute (forward and optimizer light, backward solid), and the collectives on the "
                "comm stream one at a time: all-gathers of unit parameters, reduce-scatters of unit gradients (all-reduces "
                "for ddp, no_shard and across hybrid groups). Same colour, same unit; hover for names and sizes. Forward takes "
                "no time here (the page has no forward input), so the forward all-gathers run back to back at the start."
            ),
        ],
        className="captions",
    )
    return notice, cards, strategies, memory_bars, timeline, caption


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
        from webapp.pages.collectives import events_csv

        return {"content": events_csv(result), "filename": "ddp-events.csv", "type": "text/csv"}
    return {"content": json.dumps(result.chrome_trace()), "filename": "ddp-trace.json", "type": "application/json"}


def register(app: Any) -> None:
    if model.missing():
        return
    fid = lambda name: ids.field_id(name, PAGE)  # noqa: E731
    # The layout sets what these set (bucket field and label, visible fields, the preset's caption):
    # none runs at load, so the first simulation starts one round trip after the page arrives.
    app.callback(
        Output(fid("bucket"), "value"),
        Output("ddp-bucket-label", "children"),
        Input(ids.DDP_BUCKET_SLIDER, "value"),
        prevent_initial_call=True,
    )(sync_bucket)
    app.callback(
        *[Output(f"{PAGE}-field-{name}", "style") for name in OW_ONLY + NETWORK_ONLY],
        Input(fid("comm_model"), "value"),
        prevent_initial_call=True,
    )(comm_fields)
    app.callback(
        Output(ids.DDP_UPLOAD_STORE, "data"),
        Output(ids.error_id("upload", PAGE), "children"),
        Output("ddp-upload-info", "children"),
        Input(ids.DDP_UPLOAD, "contents"),
        State(ids.DDP_UPLOAD, "filename"),
        prevent_initial_call=True,
    )(_guarded(upload, lambda message: (None, message, "")))
    names = list(model.DEFAULTS)
    app.callback(Output(f"{PAGE}-field-shard_size", "style"), Input(fid("sharding"), "value"), prevent_initial_call=True)(shard_size_field)
    app.callback(
        *[Output(fid(name), "value") for name in model.HARDWARE_FIELDS],
        Input(fid("hardware"), "value"),
        Input(fid("ranks"), "value"),
        prevent_initial_call=True,
    )(
        _guarded(
            lambda name, ranks: apply_hardware(name, ranks, ctx.triggered_id),
            lambda message: tuple(no_update for _ in model.HARDWARE_FIELDS),
        )
    )
    app.callback(
        Output(ids.DDP_HARDWARE_CAPTION, "children"), *[Input(fid(name), "value") for name in CAPTION_FIELDS], prevent_initial_call=True
    )(_guarded(hardware_caption, lambda message: [html.P(message, className="error")]))
    app.callback(
        Output(ids.DDP_SCENARIO, "data"),
        Output(ids.TRAIN_SCENARIO, "data"),
        *[Output(ids.error_id(name, PAGE), "children") for name in names],
        Output(ids.URL, "search", allow_duplicate=True),
        Output(ids.URL_WRITTEN, "data", allow_duplicate=True),
        Input(ids.DDP_UPLOAD_STORE, "data"),
        *[Input(fid(name), "value") for name in model.DEFAULTS],
        State(ids.DDP_SCENARIO, "data"),
        prevent_initial_call="initial_duplicate",
    )(_guarded(_written(validate_page), lambda message: (None, None, message, *[""] * (len(names) - 1), no_update, no_update)))
    app.callback(
        Output(ids.TRAIN_NOTICE, "children"),
        Output(ids.TRAIN_SUMMARY, "children"),
        Output(ids.TRAIN_STRATEGIES, "figure"),
        Output(ids.TRAIN_MEMORY, "figure"),
        Output(ids.TRAIN_TIMELINE, "figure"),
        Output(ids.TRAIN_CAPTION, "children"),
        Input(ids.TRAIN_SCENARIO, "data"),
    )(_guarded(simulate_training, lambda message: (message, *[no_update] * 5)))
    app.callback(
        Output(ids.DDP_NOTICE, "children"),
        Output(ids.DDP_SUMMARY, "children"),
        Output(ids.DDP_TIMELINE, "figure"),
        Output(ids.DDP_OVERHEAD, "figure"),
        Output(ids.DDP_STRATEGIES, "figure"),
        Output(ids.DDP_EXPLAIN, "children"),
        Input(ids.DDP_SCENARIO, "data"),
    )(_guarded(simulate, lambda message: (message, *[no_update] * 5)))
    app.callback(
        Output(ids.DDP_DOWNLOAD, "data"),
        Input(ids.DDP_DL_JSON, "n_clicks"),
        Input(ids.DDP_DL_CSV, "n_clicks"),
        Input("ddp-dl-trace", "n_clicks"),
        State(ids.DDP_SCENARIO, "data"),
        prevent_initial_call=True,
    )(_guarded(lambda *args: download(ctx.triggered_id, args[-1]), lambda message: no_update))
