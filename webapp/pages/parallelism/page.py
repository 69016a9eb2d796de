"""Parallelism: a transformer training step under TP, SP, PP, DP/ZeRO and EP (``collsim sim
train``): the step per pipeline stage and stream, the layout on the cluster, the bubble's formula
beside the simulated bubble, and the sweep of every layout as a background job.

Short callbacks with named outputs: each reads the form, calls :mod:`.model` (which calls
:mod:`sim.training.parallel`) and draws with :mod:`.figures`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from dash import ClientsideFunction, Input, Output, State, dcc, html, no_update

from sim.units import format_size, format_time
from webapp import urlstate
from webapp.callbacks import answer, guarded
from webapp.collective import hardware_options
from webapp.components import field, graph, number_card
from webapp.pages.parallelism import figures, ids, model
from webapp.pages.spec import drawn_from, drawn_into

__all__ = ["OUTPUTS", "layout", "register", "run_checked", "simulate", "sweep_view", "validate"]

PAGE = ids.PREFIX
GROUPS = (
    ("Machine", ("hardware", "nodes")),
    ("Model", ("model", "layers", "hidden", "heads", "seq_len", "vocab")),
    ("Layout", ("tp", "pp", "dp", "ep", "schedule", "vpp", "sequence_parallel", "zero")),
    ("Pipeline stages", ("first_stage_layers", "last_stage_layers", "scatter_gather")),
    ("Batch and compute", ("micro_batch", "global_batch", "recompute", "attention", "precision", "mfu")),
)
SHAPE_HINT = " (empty: the model's)"
INTRO = (
    "One iteration of a decoder-only transformer on a hardware preset, simulated event by event: each pipeline "
    "stage's compute with its inline tensor-parallel (TP) and expert (EP) collectives, the sends between stages (PP), "
    "and the data-parallel (DP) gradient buckets. The bubble is not a formula here: it comes out of the schedule. "
    "The same numbers as collsim sim train (docs/parallelism.md)."
)
OUTPUTS = {
    "notice": Output(ids.NOTICE, "children"),
    "cards": Output(ids.CARDS, "children"),
    "timeline": Output(ids.TIMELINE, "figure"),
    "cluster": Output(ids.CLUSTER, "figure"),
    "teach": Output(ids.TEACH, "children"),
}
FIX_INPUTS = "Fix the highlighted inputs; nothing is computed until they are valid."

# ----------------------------------------------------------------------------- layout


def _options(name: str) -> list[dict[str, str]]:
    if name == "hardware":
        return [{"label": preset, "value": preset} for preset in hardware_options()]
    if name in model.FLAGS:
        return [{"label": " on", "value": "on"}, {"label": " off", "value": "off"}]
    if name == "zero":
        return [{"label": f"{stage}" + (" (FSDP)" if stage == 3 else ""), "value": str(stage)} for stage in range(4)]
    extra = [{"label": "none: the shape below", "value": ""}] if name == "model" else []
    return extra + [{"label": choice, "value": choice} for choice in model.FIELDS[name].choices]


def _input(name: str, value: str) -> Any:
    fid = ids.field_id(name, PAGE)
    info = model.FIELDS[name]
    if name in model.FLAGS:
        return dcc.RadioItems(id=fid, options=_options(name), value=value, inline=True)
    if info.choices or name in ("hardware", "zero"):
        return dcc.Dropdown(id=fid, options=urlstate.with_unknown(_options(name), value), value=value, clearable=False)
    return dcc.Input(id=fid, type="text", value=value, debounce=True, autoComplete="off", className="text-input")


def _hint(name: str) -> str:
    info = model.FIELDS[name]
    bounds = f"; {info.low:g} to {info.high:g}" if info.kind in ("int", "float") and info.low is not None else ""
    return info.help + bounds + (SHAPE_HINT if name in model.SHAPE else "")


def _form(values: dict[str, str]) -> list:
    rows: list = []
    for heading, names in GROUPS:
        rows.append(html.H4(heading, className="form-group"))
        rows += [field(name, model.FIELDS[name].label, _hint(name), _input(name, values[name]), page=PAGE) for name in names]
    return rows


def _sweep_section() -> html.Div:
    return html.Div([
        html.H3("Every layout of these GPUs", className="section"),
        html.P("Every valid (tp, pp, dp[, ep]) that uses all the GPUs of the nodes, simulated and ranked: layouts that fit "
               "in the GPU's memory first, fastest first (collsim sim train --sweep). It runs in the background. The 80 % "
               "interval is the chosen layout's, on the Step time card (each row's would run its schedule twice more).",
               className="hint"),
        html.Div([html.Button("Run the sweep", id=ids.SWEEP_RUN, className="button"),
                  html.Button("Cancel", id=ids.SWEEP_CANCEL, className="button small", disabled=True)], className="downloads"),
        html.Div(id=ids.SWEEP_STATUS, className="notice", role="status"),
        html.Div(id=ids.SWEEP_TABLE),
        html.Div(graph(ids.SWEEP_CHART, 360, figures.sweep_figure([])), className="col"),
    ])  # fmt: skip


def _content() -> html.Div:
    return html.Div([
        html.Div(html.P(INTRO), className="intro"),
        html.Div(id=ids.NOTICE, className="notice"),
        html.Div(id=ids.CARDS, className="cards"),
        html.Div(graph(ids.TIMELINE, 420), className="col"),
        html.Div(id=ids.TEACH, className="explain"),
        html.Div(graph(ids.CLUSTER, 420), className="col"),
        _sweep_section(),
    ])  # fmt: skip


def layout(search: str = "") -> html.Div:
    """The form for ``search`` and the page already drawn for it."""
    values = model.form_from_query(search)
    checked = model.validate_form(values)
    content = _content()
    shown = run_checked(checked) if checked["scenario"] else {}
    drawn_into(content, drawn_from(OUTPUTS, shown))
    sidebar = html.Aside([html.H3("Training step"), html.Div(_form(values), className="form")], className="sidebar")
    for name, message in checked["errors"].items():  # a link's wrong field shows its message at once
        drawn_into(sidebar, {ids.error_id(name, PAGE): {"children": message}})
    loading = dcc.Loading(content, type="default", delay_show=250, overlay_style={"visibility": "visible", "opacity": 0.5})
    stores = [dcc.Store(id=ids.SCENARIO, data=checked["scenario"]), dcc.Store(id=ids.URL_SPEC, data=model.url_spec())]
    return html.Div([*stores, sidebar, html.Section(loading, className="content")], className="layout")


# ----------------------------------------------------------------------------- callbacks


def validate(form: dict[str, Any], previous: dict | None = None) -> dict[str, Any]:
    """The checked scenario (None where the form is wrong; left alone when unchanged) and a
    message per field."""
    checked = model.validate_form(form)
    data = checked["scenario"]
    return {"scenario": no_update if data is not None and data == previous else data, "errors": checked["errors"]}


def run_checked(checked: dict[str, Any]) -> dict[str, Any]:
    """What the page draws for :func:`validate`'s answer (the page unit's ``run``)."""
    return simulate(checked.get("scenario"))


def simulate(data: dict | None) -> dict[str, Any]:
    """Cards, timeline, cluster and the teaching layer (kept for the last scenarios)."""
    if not data:
        return answer(OUTPUTS, notice=FIX_INPUTS)
    return dict(_kept(json.dumps(data, sort_keys=True)))


@lru_cache(maxsize=16)
def _kept(key: str) -> dict[str, Any]:
    data = json.loads(key)
    result, interval = model.run_with_interval(data)
    stages = [row for row in _pipeline(result.layout)]
    numbers = model.teaching(data, result)
    notes = " ".join(f"Note: {note}." for note in result.notes)
    notice = (f"{numbers['m']} micro-batches on {data['tp'] * data['pp'] * data['dp'] * data['ep']} GPUs "
              f"(tp {data['tp']} x pp {data['pp']} x dp {data['dp']} x ep {data['ep']}), {data['schedule']}. {notes}")  # fmt: skip
    title = f"One step of the representative pipeline ({len(stages)} stage(s)); grey: the compute stream idle (bubble); short collectives drawn at least 0.1 % of the step wide"
    return answer(
        OUTPUTS, notice=notice, cards=_cards(result, interval), teach=_teach(numbers),
        timeline=figures.timeline_figure(result.events, stages, result.step_time_s, title),
        cluster=figures.cluster_figure(result.layout, data["nodes"], model.links(data, result.layout),
                                       "The layout on the cluster: GPUs coloured by stage, TP groups dotted, DP groups dashed"),
    )  # fmt: skip


def _pipeline(layout: dict[str, int]) -> list[int]:
    from sim.training.parallel.layout import Layout

    return list(Layout(**layout).pipeline())


def _cards(result: Any, interval: dict[str, Any]) -> list:
    fits = "fits" if result.fits else "does not fit"
    return [
        _step_card(result.step_time_s, interval),
        number_card("Bubble (simulated)", f"{result.bubble_fraction:.1%}", ids.BUBBLE),
        number_card("Memory / GPU", f"{format_size(result.memory_bytes)} of {format_size(result.memory_limit_bytes)} ({fits})", ids.MEMORY),
        number_card("Model FLOPs utilization", f"{result.mfu_achieved:.1%} ({result.tokens_per_s:,.0f} tokens/s)", ids.MFU),
    ]


def _step_card(step_time_s: float, interval: dict[str, Any]) -> Any:
    """The step time and, on a preset, its 80 % interval under it (sim.training.parallel.interval; its basis on hover)."""
    card = number_card("Step time", format_time(step_time_s), ids.STEP_TIME)
    found = interval.get("step_time_interval_s")
    if found:
        ends = f"80 %: {format_time(found[0])} – {format_time(found[1])}"
        card.children.append(html.Div(ends, id=ids.STEP_INTERVAL, className="hint", title=interval["step_interval_basis"]))
    return card


def _teach(n: dict[str, Any]) -> list:
    """The formulas with the scenario's numbers in, beside what the simulation gives."""
    p, m, v = n["p"], n["m"], n["v"]
    closed = f"(p-1)/(v m+p-1) = {p - 1}/({v}x{m}+{p - 1})" if v > 1 else f"(p-1)/(m+p-1) = {p - 1}/({m}+{p - 1})"
    bubble = (f"Pipeline bubble: {closed} = {n['formula']:.1%} with p = {p} stages, m = {m} micro-batches"
              + (f", v = {v} chunks a rank (interleaved)" if v > 1 else "")
              + f"; simulated {n['simulated']:.1%} (communication, the logit layer on the last stage and the schedule's own order move it).")  # fmt: skip
    pair = "an all-gather before and a reduce-scatter after each pair (sequence parallel)" if n["sp"] else "two all-reduces"
    tp = (f"TP bytes per layer: {pair} forward and two backward, each of b x s x h = {n['b']} x {n['s']} x {n['h']} elements "
          f"x {n['element_bytes']} B = {format_size(n['collective_bytes'])}; {format_size(n['layer_bytes'])} a layer a micro-batch.")  # fmt: skip
    words = [bubble, tp]
    if n["t"] > 1:
        words.append(
            f"Why TP stays inside a node: its collectives sit on every layer's critical path. Inside a node {n['fabric']} gives "
            f"{n['nvlink_Bps'] / 1e9:.0f} GB/s a GPU, one NIC {n['nic_Bps'] / 1e9:.0f} GB/s: one TP collective took "
            f"{format_time(n['tp_collective_s'])} here, where a ring over one NIC needs at least 2(t-1)/t x bytes / NIC = "
            f"{format_time(n['nic_ring_s'])}."
        )
    return [html.P(text) for text in words]


def sweep_view(data: dict | None) -> dict[str, Any]:
    """The sweep's ranked table, chart and status for the checked scenario."""
    if not data:
        return {"status": FIX_INPUTS, "table": no_update, "chart": no_update}
    rows = model.sweep(data)
    chosen = (data["tp"], data["pp"], data["dp"], data["ep"])
    return {"status": f"{len(rows)} layouts of {data['nodes']} node(s) of {data['hardware']}, ranked.",
            "table": _sweep_table(rows), "chart": figures.sweep_figure(rows, chosen)}  # fmt: skip


def _sweep_table(rows: list[dict[str, Any]]) -> html.Table:
    head = html.Tr([html.Th(text) for text in ("rank", "tp", "pp", "dp", "ep", "step time", "bubble", "memory / GPU", "fits")])
    body = [
        html.Tr([html.Td(str(index)), *(html.Td(str(row[key])) for key in ("tp", "pp", "dp", "ep")),
                 html.Td(format_time(row["step_time_s"])), html.Td(f"{row['bubble_fraction']:.1%}"),
                 html.Td(format_size(row["memory_bytes"])), html.Td("yes" if row["fits"] else "does not fit")])
        for index, row in enumerate(rows, 1)
    ]  # fmt: skip
    return html.Table([html.Thead(head), html.Tbody(body)], className="table sweep-table")


# ----------------------------------------------------------------------------- wiring


def _fid(name: str) -> str:
    return ids.field_id(name, PAGE)


def _sweep_failed(message: str) -> dict[str, Any]:
    return {"status": f"Cannot run the sweep: {message}", "table": None, "chart": figures.sweep_figure([])}


def register(app: Any) -> None:
    """Validation, the URL (written in the browser), the run, and the sweep (a background job when
    the app has a manager, else in the request)."""
    errors = {name: Output(ids.error_id(name, PAGE), "children") for name in model.DEFAULTS}
    outputs = {"scenario": Output(ids.SCENARIO, "data"), "errors": errors}
    form = {name: Input(_fid(name), "value") for name in model.DEFAULTS}
    failed = lambda message: {"scenario": None, "errors": {**answer(errors), "model": message}}  # noqa: E731
    app.callback(output=outputs, inputs={"form": form, "previous": State(ids.SCENARIO, "data")}, prevent_initial_call=True)(
        guarded(validate, failed)
    )
    app.clientside_callback(
        ClientsideFunction("collsim", "writeUrl"),
        Output(ids.URL, "search", allow_duplicate=True), Output(ids.URL_WRITTEN, "data", allow_duplicate=True),
        *form.values(), *urlstate.writer_states(ids.URL_SPEC), prevent_initial_call="initial_duplicate",
    )  # fmt: skip
    app.callback(output=OUTPUTS, inputs={"data": Input(ids.SCENARIO, "data")}, prevent_initial_call=True)(
        guarded(simulate, lambda message: answer(OUTPUTS, notice=f"Cannot run this step: {message}"))
    )
    manager = getattr(app, "_background_manager", None)
    background = {} if manager is None else {
        "background": True, "manager": manager, "interval": 300,
        "running": [(Output(ids.SWEEP_RUN, "disabled"), True, False), (Output(ids.SWEEP_CANCEL, "disabled"), False, True)],
        "cancel": [Input(ids.SWEEP_CANCEL, "n_clicks"), Input(ids.SCENARIO, "data"), Input(ids.URL, "pathname")],
    }  # fmt: skip
    app.callback(
        output={"status": Output(ids.SWEEP_STATUS, "children"),
                "table": Output(ids.SWEEP_TABLE, "children"), "chart": Output(ids.SWEEP_CHART, "figure")},
        inputs={"clicks": Input(ids.SWEEP_RUN, "n_clicks"), "data": State(ids.SCENARIO, "data")},
        prevent_initial_call=True, **background,
    )(guarded(lambda clicks, data: sweep_view(data), _sweep_failed))  # fmt: skip
