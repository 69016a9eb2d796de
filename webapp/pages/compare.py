"""Sim vs measured: (o, w) fits with intervals and residuals, simulated vs measured per size with
the measurement's spread, and measured vs simulated DDP steps, from the results store (the
bundled sample data unless ``collsim ui --db FILE``)."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlencode

from dash import Input, Output, dcc, html, no_update
from flask import current_app, has_app_context

from sim.errors import CollsimError
from sim.units import format_bandwidth, format_size, format_time
from webapp import compare_model as model
from webapp import figures, ids
from webapp.components import graph, number_card
from webapp.pages.collectives import _guarded, _written

PATH = "/compare"
NAME = "compare"
TITLE = "Sim vs measured"


def _db_path() -> str | None:
    return current_app.config.get("COLLSIM_DB") if has_app_context() else None


def _missing_notice(message: str) -> html.Div:
    return html.Div(
        [html.H2("Sim vs measured"), html.P(message), html.P("The Collectives and DDP pages work without measurements.")],
        className="missing",
        id=ids.CMP_NOTICE,
    )


def layout(search: str = "") -> html.Div:
    absent = model.missing()
    if absent:
        return _missing_notice(f"This page needs {', '.join(absent)}, which this checkout does not have yet.")
    try:
        store = model.open_results(_db_path())
        groups = model.groups(store)
    except CollsimError as error:
        return _missing_notice(f"No results store to read: {error}")
    if not groups:
        return _missing_notice(
            "The results store has no collective measurements with two or more sizes. Measure some with `collsim real bench`."
        )
    query = dict(parse_qsl(search.lstrip("?")))
    options = [{"label": model.group_label(g), "value": model.group_id(g)} for g in groups]
    values = [option["value"] for option in options]
    chosen = query.get("group") if query.get("group") in values else values[0]
    stats = model.stats_for(model.group_rows(store, chosen)) or list(model.STATS)
    stat = query.get("stat") if query.get("stat") in stats else stats[0]
    algorithms = model.algorithms_for_group(chosen)
    algorithm = query.get("algorithm") if query.get("algorithm") in algorithms else algorithms[0]
    configs = model.ddp_configs(store)
    controls = html.Div(
        [
            html.Div(
                [
                    html.Label("Measured runs", className="label"),
                    dcc.Dropdown(id=ids.CMP_RUNS, options=options, value=chosen, clearable=False),
                ],
                className="field wide-field",
            ),
            html.Div(
                [
                    html.Label("Statistic", className="label"),
                    dcc.Dropdown(id=ids.CMP_STAT, options=stats, value=stat, clearable=False),
                ],
                className="field",
            ),
            html.Div(
                [
                    html.Label("Simulated algorithm", className="label"),
                    dcc.Dropdown(id="cmp-algorithm", options=algorithms, value=algorithm, clearable=False),
                ],
                className="field",
            ),
        ],
        className="controls-row",
    )
    content = html.Div(
        [
            html.Div(
                html.P(
                    "Measured collectives from a results store: the fit t = o + n / w with its interval, the simulator "
                    "run with those constants beside the measurement and its spread, and DDP steps measured vs simulated. "
                    "Pick a group of runs and a statistic above; `collsim ui --db` reads your own store or a "
                    "`collsim validate` folder."
                ),
                className="intro",
                id="cmp-intro",
            ),
            html.Div(id=ids.CMP_NOTICE, className="notice"),
            html.Div(id="cmp-cards", className="cards"),
            html.Div(
                [html.Div(graph(ids.CMP_FIT, 380), className="col"), html.Div(graph(ids.CMP_RESIDUALS, 380), className="col")],
                className="row",
            ),
            html.Div(
                [
                    html.Div(graph(ids.CMP_SIM_VS_MEASURED, 380), className="col"),
                    html.Div(html.Div(id=ids.CMP_TABLE), className="col table-col"),
                ],
                className="row",
            ),
            html.Div(graph(ids.CMP_DDP, 360), className="col"),
            html.Div(
                [
                    html.Div(
                        [
                            html.Label("DDP timeline: measured vs simulated", className="label"),
                            dcc.Dropdown(id="cmp-ddp-config", options=configs, value=configs[-1] if configs else None, clearable=False),
                        ],
                        className="field wide-field",
                    ),
                    html.Div(id="cmp-ddp-note", className="notice"),
                    graph("cmp-ddp-overlay", 420),
                ],
                className="col",
            ),
        ]
    )
    return html.Div([controls, dcc.Loading(content, type="default", delay_show=250)], className="compare")


def _table(rows: list[dict[str, Any]]) -> html.Table:
    head = html.Tr([html.Th(name) for name in ("size", "measured", "spread", "simulated", "error", "within spread")])
    body = [
        html.Tr(
            [
                html.Td(format_size(r["size_bytes"])),
                html.Td(format_time(r["measured_s"])),
                html.Td(f"{format_time(r['measured_lo_s'])} – {format_time(r['measured_hi_s'])}"),
                html.Td(format_time(r["simulated_s"])),
                html.Td(f"{r['relative_error']:+.1%}" if r["relative_error"] is not None else "—"),
                html.Td("yes" if r["within"] else "no"),
            ]
        )
        for r in rows
    ]
    return html.Table([html.Thead(head), html.Tbody(body)], className="data", id="cmp-error-table")


def _stamp(db_path: str | None) -> tuple:
    """What identifies the store's contents: the bundled data (None) never changes; a file is
    known by its size and modification time (and its write-ahead log's, where one exists)."""
    if not db_path:
        return ()
    stamp: tuple = ()
    for path in (db_path, db_path + "-wal"):
        try:
            info = os.stat(path)
        except OSError:
            continue
        stamp += (path, info.st_size, info.st_mtime_ns)
    return stamp


def update(key: str, stat: str, algorithm: str) -> tuple:
    """Everything on the page for one group of measurements, and the statistic and algorithm
    choices this group offers (set here, with the figures, so dropdowns and figures agree: a
    statistic the group lacks falls back to one it has, and the notice says so).

    Kept per store contents: the bootstrap intervals and the DDP replays take ~0.3 s, and a
    store the page reads does not change unless its file does (see :func:`_stamp`)."""
    db_path = _db_path()
    return _update(db_path, _stamp(db_path), key, stat, algorithm)


@lru_cache(maxsize=64)
def _update(db_path: str | None, stamp: tuple, key: str, stat: str, algorithm: str) -> tuple:
    store = model.open_results(db_path)
    rows = model.group_rows(store, key)
    if len({row["size_bytes"] for row in rows}) < 2:
        raise CollsimError("this group has fewer than two sizes: nothing to fit")
    stats = model.stats_for(rows)
    if not stats:
        raise CollsimError("this group has no statistic measured at two or more sizes: nothing to fit")
    asked, stat = stat, stat if stat in stats else stats[0]
    algorithms = model.algorithms_for_group(key)
    algorithm = algorithm if algorithm in algorithms else algorithms[0]
    fitted = model.fit(rows, stat)
    result = fitted["fit"]
    cards = [
        number_card(
            "o (per-call overhead)",
            f"{format_time(result.o_s)} [{format_time(result.o_ci_s[0])}, {format_time(result.o_ci_s[1])}]",
            "cmp-o",
        ),
        number_card(
            "w (algorithm bandwidth)",
            f"{format_bandwidth(result.w_Bps)} [{format_bandwidth(result.w_ci_Bps[0])}, {format_bandwidth(result.w_ci_Bps[1])}]",
            "cmp-w",
        ),
        number_card("points / method", f"{result.points} / {result.method}", "cmp-points"),
        number_card("rms residual", f"{result.rms_relative_residual:.1%}", "cmp-rms"),
    ]
    fit_figure = figures.fit_figure(fitted["points"], {"curve": fitted["curve"], "label": fitted["label"]})
    residuals = figures.residual_figure(fitted["points"])
    try:
        compared = model.sim_vs_measured(store, key, stat, algorithm)
        sim_figure, table = figures.sim_vs_measured_figure(compared["rows"]), _table(compared["rows"])
        notice = f"Simulated {algorithm} with o and w {compared['calibration']}; {compared['summary']['within_spread']} of {compared['summary']['points']} sizes within the measured spread."
    except CollsimError as error:
        sim_figure, table, notice = figures.note_figure(str(error), "Simulated vs measured"), "", str(error)
    try:
        ddp_points = model.ddp_comparison(store)
    except CollsimError:
        ddp_points = []
    if asked != stat:
        notice = f"These runs carry no {asked} time at two or more sizes; showing {stat}. " + notice
    search = "?" + urlencode({"group": key, "stat": stat, "algorithm": algorithm})
    choices = ([{"label": s, "value": s} for s in stats], stat, algorithms, algorithm)
    return notice, cards, fit_figure, residuals, sim_figure, table, figures.ddp_steps_figure(ddp_points), *choices, search


def overlay(config: str | None) -> tuple:
    """The measured timeline of one DDP config over the simulated one."""
    if not config:
        return "no DDP timelines in this store (collsim real ddp --profile)", figures.note_figure("no DDP timelines", "DDP timeline")
    db_path = _db_path()
    return _overlay(db_path, _stamp(db_path), config)


@lru_cache(maxsize=64)
def _overlay(db_path: str | None, stamp: tuple, config: str) -> tuple:
    answer = model.ddp_overlay(model.open_results(db_path), config)
    return answer["note"], figures.ddp_timeline(
        answer["rows"], f"DDP step {config}: measured (top) vs simulated (bottom), aligned at backward start"
    )


def register(app: Any) -> None:
    if model.missing():
        return
    outputs = [
        Output(ids.CMP_NOTICE, "children"),
        Output("cmp-cards", "children"),
        Output(ids.CMP_FIT, "figure"),
        Output(ids.CMP_RESIDUALS, "figure"),
        Output(ids.CMP_SIM_VS_MEASURED, "figure"),
        Output(ids.CMP_TABLE, "children"),
        Output(ids.CMP_DDP, "figure"),
        Output(ids.CMP_STAT, "options"),
        Output(ids.CMP_STAT, "value"),
        Output("cmp-algorithm", "options"),
        Output("cmp-algorithm", "value"),
        Output(ids.URL, "search", allow_duplicate=True),
        Output(ids.URL_WRITTEN, "data", allow_duplicate=True),
    ]
    app.callback(
        *outputs,
        Input(ids.CMP_RUNS, "value"),
        Input(ids.CMP_STAT, "value"),
        Input("cmp-algorithm", "value"),
        prevent_initial_call="initial_duplicate",
    )(_guarded(_written(update), lambda message: (message, *[no_update] * 12)))
    app.callback(Output("cmp-ddp-note", "children"), Output("cmp-ddp-overlay", "figure"), Input("cmp-ddp-config", "value"))(
        _guarded(overlay, lambda message: (message, figures.note_figure(message, "DDP timeline")))
    )
