"""Hangs: why a distributed job hangs or fails. Pick a canonical case or type per-rank programs,
break them with a mutation, and see the verdict, where each rank blocks, the wait-for graph (its
cycle or its missing party), each rank's first divergent call, and what NCCL's watchdog,
TORCH_DISTRIBUTED_DEBUG=DETAIL, gloo and the flight recorder would print.

Layout and short callbacks with named outputs: each reads the form, calls :mod:`.model` (which
calls :func:`sim.hang.explain`) and draws with :mod:`.figures`."""

from __future__ import annotations

from typing import Any

from dash import ClientsideFunction, Input, Output, State, ctx, dcc, html
from dash.exceptions import PreventUpdate

from sim.hang import CASES
from webapp import urlstate
from webapp.callbacks import answer, guarded
from webapp.components import field, graph
from webapp.pages.hang import figures, ids, model
from webapp.pages.spec import drawn_from, drawn_into

__all__ = ["OUTPUTS", "layout", "register", "show"]

PAGE = ids.PREFIX
OUTPUTS = {
    "verdict": Output(ids.VERDICT, "children"),
    "notice": Output(ids.NOTICE, "children"),
    "graph": Output(ids.GRAPH, "figure"),
    "ranks": Output(ids.RANKS, "children"),
    **{tool: Output(ids.tool_id(tool), "children") for tool, _ in model.TOOLS},
}
ERROR_FIELDS = ("case", "program", "mutation", "spec", "timeout")
MAX_ROWS = 256  # ranks listed in the table (the graph shows every rank)
MAX_LINES = 64  # lines shown per tool (one per blocked rank)
INTRO = (
    "Each rank runs a list of calls; a collective completes when every rank of its group reaches it with the same "
    "op, size and dtype. Pick a case, or type programs in the box (YAML: ranks, one list of calls per rank; groups; "
    "timeout_s), then break them: skip a call, resize one, change its dtype, swap two, kill or stall a rank."
)
FIX = "Fix the highlighted field; the results below are from the last valid program."

# ----------------------------------------------------------------------------- layout


def _case_options(value: str) -> list[dict[str, str]]:
    options = [{"label": f"{name}: {case['about']}", "value": name} for name, case in CASES.items()]
    return urlstate.with_unknown([{"label": "none: the box as typed or uploaded", "value": ""}, *options], value)


def _mutation_options(value: str) -> list[dict[str, str]]:
    options = [{"label": f"{model.FIELDS[kind].label} ({kind})", "value": kind} for kind in model.MUTATIONS]
    return urlstate.with_unknown([{"label": "none", "value": ""}, *options], value)


def _text(name: str, value: str, placeholder: str = "") -> dcc.Input:
    return dcc.Input(id=ids.field_id(name), type="text", value=value, debounce=True, autoComplete="off", className="text-input",
                     placeholder=placeholder)  # fmt: skip


def _form(form: dict[str, str]) -> list[Any]:
    timeout = model.FIELDS["timeout_s"]
    spec_help = "; ".join(f"{kind}: {model.FIELDS[kind].help.split(': ')[0].split(',')[0]}" for kind in model.MUTATIONS)
    box = dcc.Textarea(id=ids.field_id("program"), value=model.program_of(form), maxLength=model.MAX_PROGRAM_CHARS,
                       spellCheck=False, className="program-box", style={"width": "100%", "height": "260px", "fontFamily": "monospace"})  # fmt: skip
    dumps = dcc.Upload(id=ids.DUMPS, children=html.Div(["Drop or ", html.A("choose"), " the dumps"]), className="upload", multiple=True)
    upload = dcc.Upload(id=ids.UPLOAD, children=html.Div(["Drop or ", html.A("choose"), " a YAML/JSON program"]), className="upload")
    return [
        field("case", "Start from a case", "the six canonical cases (docs/hangs.md)",
              dcc.Dropdown(id=ids.field_id("case"), options=_case_options(form["case"]), value=form["case"], clearable=False), PAGE),
        html.Div(CASES.get(form["case"], {}).get("about", ""), id=ids.ABOUT, className="hint"),
        field("program", "Per-rank programs", f"YAML or JSON, up to {model.MAX_PROGRAM_CHARS // 1024} KiB; op, count, dtype, group, tag, peer, root", box, PAGE),
        html.Div(id=ids.LINK_NOTE, className="hint"),
        field("upload", "Upload a program", "fills the box (nothing is read from the server)", upload, PAGE),
        field("dumps", "Or flight-recorder dumps", "one file per rank (nccl_trace_rank_0, ...; TORCH_FR_DUMP_TEMP_FILE): the calls they record fill the box", dumps, PAGE),
        field("mutation", "Mutation", "break the program on one rank",
              dcc.Dropdown(id=ids.field_id("mutation"), options=_mutation_options(form["mutation"]), value=form["mutation"], clearable=False), PAGE),
        field("spec", "Where", spec_help + " (call: its index in the rank's program, from 0)", _text("spec", form["spec"], "e.g. 1:0"), PAGE),
        field("timeout", f"{timeout.label} ({timeout.unit})", timeout.help, _text("timeout", form["timeout"], "torch's default"), PAGE),
    ]  # fmt: skip


def _content() -> list[Any]:
    tabs = dcc.Tabs(id=ids.TOOLS, value="nccl", children=[
        dcc.Tab(label=title, value=tool, children=html.Div(id=ids.tool_id(tool), className="tool-lines")) for tool, title in model.TOOLS
    ])  # fmt: skip
    return [
        html.P(INTRO, className="hint"),
        html.Div(id=ids.NOTICE, className="error", role="alert"),
        html.Div(id=ids.VERDICT, className="card"),
        html.Div([html.Div(graph(ids.GRAPH, 420), style={"flex": "2"}), html.Div(id=ids.RANKS, style={"flex": "3", "overflowX": "auto"})],
                 style={"display": "flex", "gap": "1em", "flexWrap": "wrap"}),
        html.H3("What each tool would print"),
        tabs,
    ]  # fmt: skip


def layout(search: str = "") -> html.Div:
    """The form for ``search`` and the page already drawn for it."""
    form = model.form_from_query(search)
    checked = model.validate(form)
    sidebar = html.Aside([html.H3("Hangs"), html.Div(_form(form), className="form")], className="sidebar")
    unknown = html.Div(urlstate.unknown_keys(search, list(model.DEFAULTS)), id=ids.LINK_KEYS, className="hint")
    content = html.Section([unknown, *_content()], className="content")
    drawn = drawn_from(OUTPUTS, show(checked))
    drawn.update({ids.error_id(name): {"children": checked["errors"].get(name, "")} for name in ERROR_FIELDS})
    for part in (content, sidebar):
        drawn_into(part, drawn)
    stores = [dcc.Store(id=ids.LINKED, data=form["program"]), dcc.Store(id=ids.URL_SPEC, data=model.url_spec())]
    return html.Div([*stores, sidebar, content], className="layout")


# ----------------------------------------------------------------------------- what the page shows


def show(checked: dict[str, Any]) -> dict[str, Any]:
    """The named outputs for a validated form: the report drawn, or a notice (the rest kept)."""
    if checked["programs"] is None:
        return answer(OUTPUTS, notice=FIX)
    report = model.explained(checked)
    return {"verdict": _verdict(report), "notice": "", "graph": figures.wait_for_figure(report), "ranks": _rank_table(report["ranks"]),
            **_tools(report)}  # fmt: skip


def _verdict(report: dict[str, Any]) -> list[Any]:
    timeout = report["timeout_s"]
    after = f"{timeout:g} s" if timeout is not None else "torch's defaults: 600 s NCCL, 1800 s gloo"
    return [
        html.Div([html.B(report["verdict"].replace("_", " "), className=f"verdict verdict-{report['verdict']}"), ": ", report["summary"]]),
        html.Div(f"Process-group timeout: {after}.", className="hint"),
    ]


def _rank_table(ranks: list[dict[str, Any]]) -> html.Table:
    head = html.Tr([html.Th(name) for name in ("rank", "state", "stopped at", "waits for", "first divergent call")])
    rows = []
    for r in ranks[:MAX_ROWS]:
        tag = f" ({r['tag']})" if r["tag"] else ""
        where = f"{r['group']} #{r['seq']} {r['op']}{tag}" if r["op"] else f"call {r['call_index']}"
        waits = ", ".join(map(str, r["waits_for"])) or "-"
        rows.append(html.Tr([html.Td(r["rank"]), html.Td(r["state"], className=f"state-{r['state']}"), html.Td(where), html.Td(waits),
                             html.Td(r["first_divergence"] or "-")]))  # fmt: skip
    more = [html.Caption(f"the first {MAX_ROWS} of {len(ranks)} ranks")] if len(ranks) > MAX_ROWS else []
    return html.Table(
        [*more, html.Thead(head), html.Tbody(rows)], className="rank-table", style={"borderSpacing": "12px 2px", "textAlign": "left"}
    )


def _tools(report: dict[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for tool, _ in model.TOOLS[:-1]:
        lines = [line for line in report["tools"] if line["tool"] == tool]
        text = "\n".join(f"rank {line['rank']} {line['outcome']}: {line['message']}" for line in lines[:MAX_LINES])
        text += f"\n... and {len(lines) - MAX_LINES} more ranks' lines (collsim sim hang prints them all)" if len(lines) > MAX_LINES else ""
        shown[tool] = html.Pre(text or "nothing: no rank blocks, so no tool reports an error", style={"whiteSpace": "pre-wrap"})
    fr = report["flight_recorder"]
    culprits = ", ".join(f"rank {rank}: {kind}" for rank, kind in fr["culprits"].items()) or "none"
    where = f" at group {fr['group']} #{fr['seq']}" if fr["group"] is not None else ""
    shown["flight"] = html.Pre(f"classification: {fr['classification']}{where}\nculprits: {culprits}", style={"whiteSpace": "pre-wrap"})
    return shown


# ----------------------------------------------------------------------------- callbacks


def fill_box(case: str | None, trigger: str | None, **uploads: Any) -> dict[str, Any]:
    """A picked case puts its program in the box; an upload puts the file's text there, and
    flight-recorder dumps the calls they record."""
    names = ("box", "about", "upload_error", "dumps_error")
    if trigger == ids.UPLOAD:
        return answer(names, box=model.upload_text(uploads["contents"], uploads["filename"]), upload_error="")
    if trigger == ids.DUMPS:
        return answer(names, box=model.dumps_text(uploads["dumps"], uploads["dump_names"]), dumps_error="")
    if not case:
        raise PreventUpdate  # "none": the box stays as it is
    return answer(names, box=model.case_text(case), about=CASES.get(case, {}).get("about", ""))


def _upload_failed(message: str) -> dict[str, Any]:
    """An upload's message under the upload it is about (a dumps message names the dumps)."""
    slot = "dumps_error" if message.startswith("flight-recorder") else "upload_error"
    return answer(("box", "about", "upload_error", "dumps_error"), **{slot: message})


def link(text: str | None, case: str | None) -> dict[str, Any]:
    """What the link carries for the box, and why not when it is too long."""
    linked, note = model.linked_program(text, case)
    return {"linked": linked, "note": note}


def explain_form(text: str | None, case: str | None, **form: str) -> dict[str, Any]:
    """The form checked and explained: the outputs, and each field's message in its slot."""
    checked = model.validate({**form, "case": case or ""}, text or "")
    return {**show(checked), "errors": {name: checked["errors"].get(name, "") for name in ERROR_FIELDS}}


def _failed(message: str) -> dict[str, Any]:
    return {**answer(OUTPUTS, notice=message), "errors": answer(ERROR_FIELDS)}


def register(app: Any) -> None:
    box = Output(ids.field_id("program"), "value")
    slots = {"upload_error": Output(ids.error_id("upload"), "children"), "dumps_error": Output(ids.error_id("dumps"), "children")}
    app.callback(
        output={"box": box, "about": Output(ids.ABOUT, "children"), **slots},
        inputs={"case": Input(ids.field_id("case"), "value"), "contents": Input(ids.UPLOAD, "contents"), "filename": State(ids.UPLOAD, "filename"),
                "dumps": Input(ids.DUMPS, "contents"), "dump_names": State(ids.DUMPS, "filename")},
        prevent_initial_call=True,
    )(guarded(lambda **kw: fill_box(trigger=ctx.triggered_id, **kw), _upload_failed))  # fmt: skip
    app.callback(
        output={"linked": Output(ids.LINKED, "data"), "note": Output(ids.LINK_NOTE, "children")},
        inputs={"text": Input(ids.field_id("program"), "value"), "case": State(ids.field_id("case"), "value")},
        prevent_initial_call=True,
    )(link)  # fmt: skip
    form = {name: Input(ids.field_id(name), "value") for name in ("mutation", "spec", "timeout")}
    app.callback(
        output={**OUTPUTS, "errors": {name: Output(ids.error_id(name), "children") for name in ERROR_FIELDS}},
        inputs={"text": Input(ids.field_id("program"), "value"), "case": State(ids.field_id("case"), "value"), **form},
        prevent_initial_call=True,
    )(guarded(explain_form, _failed))  # fmt: skip
    app.clientside_callback(
        ClientsideFunction("collsim", "writeUrl"),
        Output(ids.URL, "search", allow_duplicate=True), Output(ids.URL_WRITTEN, "data", allow_duplicate=True),
        *[Input(ids.field_id(name), "value") for name in model.DEFAULTS if name != "program"], Input(ids.LINKED, "data"),
        *urlstate.writer_states(ids.URL_SPEC),
        prevent_initial_call="initial_duplicate",
    )  # fmt: skip
