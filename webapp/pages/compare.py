"""Sim vs measured: (o, w) fits with intervals and residuals, simulated vs measured per size with
the measurement's spread, and measured vs simulated DDP steps, from the results store (the
bundled sample data unless ``collsim ui --db FILE``).

Layout and short callbacks; the numbers come from :mod:`real.overlays`, the figures from
:mod:`webapp.figures.compare`.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlencode

from dash import Input, Output, ctx, dcc, html
from flask import current_app, has_app_context

from real import overlays
from sim.errors import CollsimError
from sim.units import format_bandwidth, format_size, format_time
from webapp import ids
from webapp.callbacks import answer, guarded, written
from webapp.components import graph, number_card
from webapp.figures import common
from webapp.figures import compare as draw
from webapp.figures.ddp import ddp_timeline
from webapp.pages import drawn_into

PATH = "/compare"
NAME = "compare"
TITLE = "Sim vs measured"
GROUP_KEYS = ("source", "backend", "device", "op", "world_size")  # a group's dropdown value joins these with "|"
OUTPUTS = {
    "notice": Output(ids.CMP_NOTICE, "children"),
    "cards": Output(ids.CMP_CARDS, "children"),
    "fit": Output(ids.CMP_FIT, "figure"),
    "residuals": Output(ids.CMP_RESIDUALS, "figure"),
    "sim": Output(ids.CMP_SIM_VS_MEASURED, "figure"),
    "table": Output(ids.CMP_TABLE, "children"),
    "ddp": Output(ids.CMP_DDP, "figure"),
    "stat_options": Output(ids.CMP_STAT, "options"),
    "stat": Output(ids.CMP_STAT, "value"),
    "algorithm_options": Output(ids.CMP_ALGORITHM, "options"),
    "algorithm": Output(ids.CMP_ALGORITHM, "value"),
    "search": Output(ids.URL, "search", allow_duplicate=True),
    "written": Output(ids.URL_WRITTEN, "data", allow_duplicate=True),
}
INTRO = (
    "Measured collectives from a results store: the fit t = o + n / w with its interval, the simulator "
    "run with those constants beside the measurement and its spread, and DDP steps measured vs simulated. "
    "Pick a group of runs and a statistic above; `collsim ui --db` reads your own store or a "
    "`collsim validate` folder."
)


def group_id(group: dict[str, Any]) -> str:
    """A group of measured runs as its dropdown value."""
    return "|".join(str(group.get(key)) for key in GROUP_KEYS)


def group_of(key: str) -> dict[str, Any]:
    """A dropdown value back to its group (``None`` written as "None" is None again)."""
    values = dict(zip(GROUP_KEYS, key.split("|")))
    return {name: None if value == "None" else value for name, value in values.items()}


def group_label(group: dict[str, Any]) -> str:
    return (
        f"{group['op']} · {group['backend']}/{group['device']} · {group['world_size']} ranks · {group['source']} "
        f"({group['sizes']} sizes, {group['runs']} runs)"
    )


def _db_path() -> str | None:
    return current_app.config.get("COLLSIM_DB") if has_app_context() else None


def _missing_notice(message: str) -> html.Div:
    return html.Div(
        [html.H2("Sim vs measured"), html.P(message), html.P("The Collectives and DDP pages work without measurements.")],
        className="missing",
        id=ids.CMP_NOTICE,
    )


# ----------------------------------------------------------------------------- layout


def layout(search: str = "") -> html.Div:
    try:
        store = overlays.open_results(_db_path())
        groups = overlays.fittable_groups(store)
    except CollsimError as error:
        return _missing_notice(f"No results store to read: {error}")
    if not groups:
        return _missing_notice(
            "The results store has no collective measurements with two or more sizes. Measure some with `collsim real bench`."
        )
    query = dict(parse_qsl(search.lstrip("?")))
    options = [{"label": group_label(g), "value": group_id(g)} for g in groups]
    values = [option["value"] for option in options]
    chosen = query.get("group") if query.get("group") in values else values[0]
    stats = overlays.stats_available(overlays.group_rows(store, group_of(chosen))) or list(overlays.STATS)
    algorithms = overlays.algorithms_for_op(group_of(chosen)["op"])
    picked = {
        "group": chosen,
        "stat": query.get("stat") if query.get("stat") in stats else stats[0],
        "algorithm": query.get("algorithm") if query.get("algorithm") in algorithms else algorithms[0],
    }
    configs = overlays.ddp_configs(store)
    drawn = first_view(picked, configs[-1] if configs else None)
    controls = drawn_into(_controls(options, stats, algorithms, picked), drawn)
    return html.Div([controls, dcc.Loading(drawn_into(_content(configs), drawn), type="default", delay_show=250)], className="compare")


def first_view(picked: dict[str, str], config: str | None) -> dict[str, dict[str, Any]]:
    """{component id: {property: value}}: what :func:`update` and :func:`overlay` answer for the
    picked group, statistic and algorithm and the last DDP config, so the page comes drawn (at load
    ``update``'s callback only writes the URL, :func:`update_or_url`). A group ``update`` cannot
    show is left to the callback (its message)."""
    drawn: dict[str, dict[str, Any]] = {}
    try:
        shown = update(picked["group"], picked["stat"], picked["algorithm"])
    except Exception:  # noqa: BLE001 - the callback at load says what is wrong
        shown = {}
    for name, value in shown.items():
        if name not in ("search", "written"):
            drawn.setdefault(OUTPUTS[name].component_id, {})[OUTPUTS[name].component_property] = value
    try:
        view = overlay(config)
    except Exception:  # noqa: BLE001 - the overlay callback at load says what is wrong
        return drawn
    drawn.setdefault(ids.CMP_DDP_NOTE, {})["children"] = view["note"]
    drawn.setdefault(ids.CMP_DDP_OVERLAY, {})["figure"] = view["figure"]
    return drawn


def update_or_url(key: str, stat: str, algorithm: str) -> dict[str, Any]:
    """:func:`update`; at load (the layout came drawn, :func:`first_view`) only the URL it writes."""
    shown = update(key, stat, algorithm)
    if ctx.triggered_id is None:
        return answer(OUTPUTS, search=shown["search"])
    return shown


def _dropdown(label: str, component_id: str, options: list, value: Any, wide: bool = False) -> html.Div:
    return html.Div(
        [html.Label(label, className="label"), dcc.Dropdown(id=component_id, options=options, value=value, clearable=False)],
        className="field wide-field" if wide else "field",
    )


def _controls(options: list, stats: list[str], algorithms: list[str], picked: dict[str, str]) -> html.Div:
    return html.Div(
        [
            _dropdown("Measured runs", ids.CMP_RUNS, options, picked["group"], wide=True),
            _dropdown("Statistic", ids.CMP_STAT, stats, picked["stat"]),
            _dropdown("Simulated algorithm", ids.CMP_ALGORITHM, algorithms, picked["algorithm"]),
        ],
        className="controls-row",
    )


def _content(configs: list[str]) -> html.Div:
    def row(*columns: Any) -> html.Div:
        return html.Div(list(columns), className="row")

    ddp_timeline = html.Div(
        [
            _dropdown("DDP timeline: measured vs simulated", ids.CMP_DDP_CONFIG, configs, configs[-1] if configs else None, wide=True),
            html.Div(id=ids.CMP_DDP_NOTE, className="notice"),
            graph(ids.CMP_DDP_OVERLAY, 420),
        ],
        className="col",
    )
    return html.Div(
        [
            html.Div(html.P(INTRO), className="intro", id=ids.CMP_INTRO),
            html.Div(id=ids.CMP_NOTICE, className="notice"),
            html.Div(id=ids.CMP_CARDS, className="cards"),
            row(html.Div(graph(ids.CMP_FIT, 380), className="col"), html.Div(graph(ids.CMP_RESIDUALS, 380), className="col")),
            row(
                html.Div(graph(ids.CMP_SIM_VS_MEASURED, 380), className="col"),
                html.Div(html.Div(id=ids.CMP_TABLE), className="col table-col"),
            ),
            html.Div(graph(ids.CMP_DDP, 360), className="col"),
            ddp_timeline,
        ]
    )


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
    return html.Table([html.Thead(head), html.Tbody(body)], className="data", id=ids.CMP_ERROR_TABLE)


def _cards(result: Any) -> list:
    """The fitted o and w with their intervals, the points and method, the rms residual."""
    o_low, o_high = result.o_ci_s
    w_low, w_high = result.w_ci_Bps
    return [
        number_card("o (per-call overhead)", f"{format_time(result.o_s)} [{format_time(o_low)}, {format_time(o_high)}]", ids.CMP_O),
        number_card(
            "w (algorithm bandwidth)",
            f"{format_bandwidth(result.w_Bps)} [{format_bandwidth(w_low)}, {format_bandwidth(w_high)}]",
            ids.CMP_W,
        ),
        number_card("points / method", f"{result.points} / {result.method}", ids.CMP_POINTS),
        number_card("rms residual", f"{result.rms_relative_residual:.1%}", ids.CMP_RMS),
    ]


# ----------------------------------------------------------------------------- callbacks


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


def update(key: str, stat: str, algorithm: str) -> dict[str, Any]:
    """Everything on the page for one group of measurements, and the statistic and algorithm
    choices this group offers (set here, with the figures, so dropdowns and figures agree: a
    statistic the group lacks falls back to one it has, and the notice says so).

    Kept per store contents: the bootstrap intervals and the DDP replays take ~0.3 s, and a
    store the page reads does not change unless its file does (see :func:`_stamp`)."""
    db_path = _db_path()
    return _update(db_path, _stamp(db_path), key, stat, algorithm)


def _choices(rows: list[dict[str, Any]], group: dict[str, Any], stat: str, algorithm: str) -> tuple[list[str], str, list[str], str]:
    """The statistics and algorithms this group offers, and the ones shown (the asked ones when offered)."""
    if len({row["size_bytes"] for row in rows}) < 2:
        raise CollsimError("this group has fewer than two sizes: nothing to fit")
    stats = overlays.stats_available(rows)
    if not stats:
        raise CollsimError("this group has no statistic measured at two or more sizes: nothing to fit")
    algorithms = overlays.algorithms_for_op(group["op"])
    return stats, stat if stat in stats else stats[0], algorithms, algorithm if algorithm in algorithms else algorithms[0]


def _sim_panel(store: Any, group: dict[str, Any], stat: str, algorithm: str) -> tuple[Any, Any, str]:
    """Simulated vs measured per size: figure, error table and notice (the reason when it cannot run)."""
    try:
        compared = overlays.sim_vs_measured(store, group, stat, algorithm)
    except CollsimError as error:
        return common.note_figure(str(error), "Simulated vs measured"), "", str(error)
    summary = compared["summary"]
    notice = (
        f"Simulated {algorithm} with o and w {compared['calibration']}; "
        f"{summary['within_spread']} of {summary['points']} sizes within the measured spread."
    )
    return draw.sim_vs_measured_figure(compared["rows"]), _table(compared["rows"]), notice


@lru_cache(maxsize=64)
def _update(db_path: str | None, stamp: tuple, key: str, stat: str, algorithm: str) -> dict[str, Any]:
    store = overlays.open_results(db_path)
    group = group_of(key)
    rows = overlays.group_rows(store, group)
    asked = stat
    stats, stat, algorithms, algorithm = _choices(rows, group, stat, algorithm)
    fitted = overlays.fit_curve(rows, stat)
    sim_figure, table, notice = _sim_panel(store, group, stat, algorithm)
    try:
        ddp_points = overlays.ddp_comparison(store)
    except CollsimError:
        ddp_points = []
    if asked != stat:
        notice = f"These runs carry no {asked} time at two or more sizes; showing {stat}. " + notice
    return answer(
        OUTPUTS,
        notice=notice,
        cards=_cards(fitted["fit"]),
        fit=draw.fit_figure(fitted["points"], {"curve": fitted["curve"], "label": fitted["label"]}),
        residuals=draw.residual_figure(fitted["points"]),
        sim=sim_figure,
        table=table,
        ddp=draw.ddp_steps_figure(ddp_points),
        stat_options=[{"label": s, "value": s} for s in stats],
        stat=stat,
        algorithm_options=algorithms,
        algorithm=algorithm,
        search="?" + urlencode({"group": key, "stat": stat, "algorithm": algorithm}),
    )


def overlay(config: str | None) -> dict[str, Any]:
    """The measured timeline of one DDP config over the simulated one."""
    if not config:
        return {
            "note": "no DDP timelines in this store (collsim real ddp --profile)",
            "figure": common.note_figure("no DDP timelines", "DDP timeline"),
        }
    db_path = _db_path()
    return _overlay(db_path, _stamp(db_path), config)


@lru_cache(maxsize=64)
def _overlay(db_path: str | None, stamp: tuple, config: str) -> dict[str, Any]:
    shown = overlays.ddp_overlay(overlays.open_results(db_path), config)
    title = f"DDP step {config}: measured (top) vs simulated (bottom), aligned at backward start"
    return {"note": shown["note"], "figure": ddp_timeline(shown["rows"], title)}


def register(app: Any) -> None:
    app.callback(
        output=OUTPUTS,
        inputs={"key": Input(ids.CMP_RUNS, "value"), "stat": Input(ids.CMP_STAT, "value"), "algorithm": Input(ids.CMP_ALGORITHM, "value")},
        prevent_initial_call="initial_duplicate",
    )(guarded(written(update_or_url), lambda message: answer(OUTPUTS, notice=message)))
    app.callback(
        output={"note": Output(ids.CMP_DDP_NOTE, "children"), "figure": Output(ids.CMP_DDP_OVERLAY, "figure")},
        inputs={"config": Input(ids.CMP_DDP_CONFIG, "value")},
        prevent_initial_call=True,  # the layout comes drawn (first_view)
    )(guarded(overlay, lambda message: {"note": message, "figure": common.note_figure(message, "DDP timeline")}))
