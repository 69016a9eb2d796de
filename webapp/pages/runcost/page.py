"""Failures and checkpoints: how often to checkpoint a run that fails, and what failures cost.
The form is the run (step time, GPUs, model, failure rate, checkpoint and restart); the page shows
Young's, Daly's and the simulated optimal interval, goodput against the interval, the wall time,
and the elastic choice after a failure. Numbers from :func:`sim.training.runcost.run_cost`.

Layout and short callbacks with named outputs: each reads the form, calls :mod:`.model` and draws
with :mod:`.figures`."""

from __future__ import annotations

from typing import Any

from dash import ClientsideFunction, Input, Output, dcc, html

from sim.errors import CollsimError
from sim.training.runcost_cli import duration
from webapp import urlstate
from webapp.callbacks import answer, guarded
from webapp.components import field, graph, number_card
from webapp.pages.runcost import figures, ids, model
from webapp.pages.spec import drawn_from, drawn_into

__all__ = ["OUTPUTS", "layout", "register", "show"]

PAGE = ids.PREFIX
OUTPUTS = {
    "notice": Output(ids.NOTICE, "children"),
    "cards": Output(ids.CARDS, "children"),
    "curve": Output(ids.CURVE, "figure"),
    "elastic": Output(ids.ELASTIC, "figure"),
    "details": Output(ids.DETAILS, "children"),
}
GROUPS = (
    ("The run", ("step_time", "gpus", "gpus_per_node", "params", "steps", "failure_rate")),
    ("Checkpoint", ("precision", "optimizer", "sharding", "write", "storage_bw", "node_storage_bw", "copy_bw", "interval")),
    ("Restart", ("rendezvous", "pg_init_per_rank", "warmup", "replace_wait", "nodes_lost")),
)
INTRO = (
    "A large run fails every few hours; each failure loses the work since the last checkpoint and pays a restart. "
    "Checkpoint often and the checkpoints eat the run; rarely and the failures do. Young's and Daly's formulas give "
    "the interval between, sqrt(2 delta MTBF) to first order; the simulation draws failures and checks it."
)
FIX = "Fix the highlighted field; the results below are from the last valid run."

# ----------------------------------------------------------------------------- layout


def _input(key: str, value: str) -> Any:
    info = model.INFO[key]
    fid = ids.field_id(key)
    if info.choices:
        options = urlstate.with_unknown([{"label": choice, "value": choice} for choice in info.choices], value)
        return dcc.Dropdown(id=fid, options=options, value=value, clearable=False)
    extra = {"list": ids.RATES} if key == "failure_rate" else {}
    placeholder = f"default {model.default_text(key)}" if not model.DEFAULTS[key] else ""
    return dcc.Input(id=fid, type="text", value=value, debounce=True, autoComplete="off", className="text-input",
                     placeholder=placeholder, **extra)  # fmt: skip


def _form(form: dict[str, str]) -> list[Any]:
    rates = html.Datalist(id=ids.RATES, children=[html.Option(value=name, label=words) for name, words in model.rate_options()])
    parts: list[Any] = [rates]
    for title, keys in GROUPS:
        parts.append(html.H4(title))
        for key in keys:
            info = model.INFO[key]
            unit = f" ({info.unit})" if info.unit else ""
            parts.append(field(key, info.label + unit, info.help, _input(key, form[key]), PAGE))
    return parts


def _content() -> list[Any]:
    return [
        html.P(INTRO, className="hint"),
        html.Div(id=ids.NOTICE, className="error", role="alert"),
        html.Div(id=ids.CARDS, className="cards"),
        graph(ids.CURVE, 400),
        graph(ids.ELASTIC, 260),
        html.Div(id=ids.DETAILS),
    ]


def layout(search: str = "") -> html.Div:
    """The form for ``search`` and the page already drawn for it."""
    form = model.form_from_query(search)
    checked = model.validate(form)
    sidebar = html.Aside([html.H3("Failures and checkpoints"), html.Div(_form(form), className="form")], className="sidebar")
    unknown = html.Div(urlstate.unknown_keys(search, list(model.DEFAULTS)), id=ids.LINK_KEYS, className="hint")
    content = html.Section([unknown, *_content()], className="content")
    drawn = drawn_from(OUTPUTS, show(checked))
    drawn.update({ids.error_id(key): {"children": checked["errors"].get(key, "")} for key in model.FORM_FIELDS})
    for part in (content, sidebar):
        drawn_into(part, drawn)
    return html.Div([dcc.Store(id=ids.URL_SPEC, data=model.url_spec()), sidebar, content], className="layout")


# ----------------------------------------------------------------------------- what the page shows


def show(checked: dict[str, Any]) -> dict[str, Any]:
    """The named outputs for a validated form; a notice (the rest kept) when it is not valid."""
    if checked["scenario"] is None:
        return answer(OUTPUTS, notice=FIX if "" not in checked["errors"] else checked["errors"][""])
    try:
        shown = model.results(checked)
    except CollsimError as error:  # a run that could never make progress: said, the last figures kept
        return _failed(str(error))
    result = shown["result"]
    return {"notice": "", "cards": _cards(result), "curve": figures.curve_figure(result, shown["curve"]),
            "elastic": figures.elastic_figure(result), "details": _details(result)}  # fmt: skip


def _failed(message: str) -> dict[str, Any]:
    return answer(OUTPUTS, notice=f"Cannot cost this run: {message}")


def _cards(result: dict[str, Any]) -> list[Any]:
    s = result["scenario"]
    steps = round(result["interval_s"] / s["step_time_s"])
    values = (
        ("mtbf", "Job MTBF", duration(result["mtbf_s"])),
        ("young", "Young's interval", duration(result["young_interval_s"])),
        ("daly", "Daly's interval", duration(result["daly_interval_s"])),
        ("simulated", "Simulated optimum", duration(result["simulated_interval_s"])),
        ("interval", "Interval used", f"{duration(result['interval_s'])} ({steps} steps)"),
        ("goodput", "Goodput", f"{result['goodput']:.2%} (simulated {result['simulated_goodput']:.2%} ± {result['simulated_goodput_stderr']:.2%})"),
        ("wall", "Wall time", f"{duration(result['wall_s'])} for {duration(result['work_s'])} of work"),
        ("failures", "Failures expected", f"{result['expected_failures']:.3g}, each losing {duration(result['lost_work_per_failure_s'])}"),
    )  # fmt: skip
    return [number_card(title, value, ids.make(PAGE, f"card-{name}")) for name, title, value in values]


def _details(result: dict[str, Any]) -> list[Any]:
    s, ck = result["scenario"], result["checkpoint"]
    parts = ", ".join(f"{name[:-2].replace('_', ' ')} {duration(value)}" for name, value in result["restart_parts"].items())
    lines = [
        f"Checkpoint: {ck['nbytes'] / 1e9:.4g} GB ({ck['bytes_per_param']} B a parameter), {s['sharding']}, {s['write']}: write "
        f"{duration(ck['write_s'])}, device-to-host copy {duration(ck['copy_s'])}, training blocked {duration(ck['blocking_s'])} (delta).",
        f"Restart: {duration(result['restart_s'])} ({parts}).",
        f"Optimum: exact (Daly's expected wall time) {duration(result['exact_interval_s'])}; at it the goodput is {result['optimal_goodput']:.2%}. "
        f"Simulated with {s['samples']:,} failure draws per point (seed {s['seed']}).",
    ]  # fmt: skip
    notes = [html.Li(note) for note in result["notes"]]
    sources = html.Details([html.Summary("sources"), html.Ul([html.Li(f"{key}: {text}") for key, text in result["sources"].items()])])
    return [*(html.P(line) for line in lines), *([html.Ul(notes)] if notes else []), sources]


# ----------------------------------------------------------------------------- callbacks


def run_form(**form: str) -> dict[str, Any]:
    """The form checked and costed: the outputs, and each field's message in its slot."""
    checked = model.validate(form)
    return {**show(checked), "errors": {key: checked["errors"].get(key, "") for key in model.FORM_FIELDS}}


def register(app: Any) -> None:
    inputs = {key: Input(ids.field_id(key), "value") for key in model.FORM_FIELDS}
    errors = {key: Output(ids.error_id(key), "children") for key in model.FORM_FIELDS}
    failed = lambda message: {**_failed(message), "errors": answer(errors)}  # noqa: E731
    app.callback(output={**OUTPUTS, "errors": errors}, inputs=inputs, prevent_initial_call=True)(guarded(run_form, failed))
    app.clientside_callback(
        ClientsideFunction("collsim", "writeUrl"),
        Output(ids.URL, "search", allow_duplicate=True), Output(ids.URL_WRITTEN, "data", allow_duplicate=True),
        *[Input(ids.field_id(key), "value") for key in model.DEFAULTS], *urlstate.writer_states(ids.URL_SPEC),
        prevent_initial_call="initial_duplicate",
    )  # fmt: skip
