"""Sim vs measured, held out: (o, w) fitted on a part of a group's measurements (the split, shown
and changeable), the simulator run with them, and only the other part judged as predictions, with
their interval and its coverage; beside them the published GPU nccl-tests logs validated the same
way (fit on some logs, predict the others), and measured vs simulated DDP steps. From the results
store (the bundled sample data unless ``collsim ui --db FILE``).

Layout and short callbacks; the numbers come from :mod:`real.overlays` and :mod:`real.gpu_heldout`
(precomputed: the GPU fits run the DES for a minute), the figures from :mod:`.figures`.
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl

from dash import ClientsideFunction, Input, Output, ctx, dcc, html
from flask import current_app, has_app_context

from real import gpu_heldout, overlays
from real.heldout_ow import DEFAULT_SPLIT, SPLITS
from sim.errors import CollsimError
from sim.units import format_bandwidth, format_size, format_time
from webapp import urlstate
from webapp.callbacks import answer, guarded
from webapp.components import graph, number_card
from webapp.figures import common
from webapp.figures.ddp import ddp_timeline
from webapp.pages.compare import figures as draw
from webapp.pages.compare import ids
from webapp.pages.spec import drawn_from, drawn_into

GROUP_KEYS = ("source", "backend", "device", "op", "world_size")  # a group's dropdown value joins these with "|"
OUTPUTS = {
    "notice": Output(ids.CMP_NOTICE, "children"),
    "cards": Output(ids.CMP_CARDS, "children"),
    "fit": Output(ids.CMP_FIT, "figure"),
    "residuals": Output(ids.CMP_RESIDUALS, "figure"),
    "sim": Output(ids.CMP_SIM_VS_MEASURED, "figure"),
    "table": Output(ids.CMP_TABLE, "children"),
    "stat_options": Output(ids.CMP_STAT, "options"),
    "stat": Output(ids.CMP_STAT, "value"),
    "algorithm_options": Output(ids.CMP_ALGORITHM, "options"),
    "algorithm": Output(ids.CMP_ALGORITHM, "value"),
    "split_options": Output(ids.CMP_SPLIT, "options"),
    "split": Output(ids.CMP_SPLIT, "value"),
    "split_shown": Output(ids.CMP_SPLIT_SHOWN, "children"),
    "gpu_note": Output(ids.CMP_GPU_NOTE, "children"),
    "gpu_figure": Output(ids.CMP_GPU_FIG, "figure"),
    "gpu_table": Output(ids.CMP_GPU_TABLE, "children"),
    "gpu": Output(ids.CMP_GPU, "value"),
}
# the query: every choice the page shows (written in the browser from the dropdowns, webapp.urlstate)
URL_INPUTS = {"group": ids.CMP_RUNS, "stat": ids.CMP_STAT, "algorithm": ids.CMP_ALGORITHM, "split": ids.CMP_SPLIT, "gpu": ids.CMP_GPU}
URL_SPEC = urlstate.url_spec(list(URL_INPUTS), dict.fromkeys(URL_INPUTS, ""), path=ids.PATH)
INTRO = (
    "Measured collectives from a results store: the fit t = o + n / w with its interval, fitted on one part of "
    "the measurements (the split above), and the simulator run with those constants, judged only on the other part. "
    "Below, the published GPU nccl-tests logs validated the same way, and DDP steps measured vs simulated. "
    "Pick a group of runs, a statistic and a split above; `collsim ui --db` reads your own store or a "
    "`collsim validate` folder."
)
SCOPE = (
    "What this shows: how far the simulator, given o and w fitted on the fitted part, lands from measurements it was "
    "not fitted to (the predicted points, red diamonds), and how often their 80 % interval holds the measurement. "
    "What it does not show: the fitted points (grey crosses) agree by construction and are no test; a few held-out "
    "sizes of one host, backend and rank count say little about other sizes, rank counts or machines; the GPU part "
    "tests hardware presets on published logs of other people's clusters, not your runs; a spread shown 'n/a' "
    "(one published value) cannot tell an error from noise."
)
GPU_INTRO = (
    "GPU: the published nccl-tests logs shipped with collsim (real/data/nccl-tests), per preset with two or more logs: "
    "the preset's constants fitted on one log (by default the smallest node count), the other log predicted by the DES "
    "with its 80 % interval (collsim validate nccl-tests). Precomputed by {command}."
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
        "split": query.get("split") if query.get("split") in SPLITS else DEFAULT_SPLIT,  # one the group lacks: update says so
        "gpu": query.get("gpu"),
    }
    configs = overlays.ddp_configs(store)
    drawn = first_view(picked, configs[-1] if configs else None)
    controls = drawn_into(_controls(options, stats, algorithms, picked), drawn)
    content = dcc.Loading(drawn_into(_content(configs), drawn), type="default", delay_show=250)
    return html.Div([dcc.Store(id=ids.CMP_URL_SPEC, data=URL_SPEC), controls, content], className="compare")


def first_view(picked: dict[str, str], config: str | None) -> dict[str, dict[str, Any]]:
    """{component id: {property: value}}: what :func:`update` and :func:`overlay` answer for the
    picked group, statistic, algorithm, split and GPU split and the last DDP config, so the page
    comes drawn (at load ``update``'s callback draws nothing, :func:`update_or_url`). A group
    ``update`` cannot show is left to the callback (its message)."""
    try:
        shown = update(picked["group"], picked["stat"], picked["algorithm"], picked["split"], picked["gpu"])
    except Exception:  # noqa: BLE001 - the callback at load says what is wrong
        shown = {}
    drawn = drawn_from(OUTPUTS, shown)
    db_path = _db_path()
    drawn[ids.CMP_DDP] = {"figure": _ddp_steps(db_path, _stamp(db_path))}
    try:
        view = overlay(config)
    except Exception:  # noqa: BLE001 - the overlay callback at load says what is wrong
        return drawn
    drawn.setdefault(ids.CMP_DDP_NOTE, {})["children"] = view["note"]
    drawn.setdefault(ids.CMP_DDP_OVERLAY, {})["figure"] = view["figure"]
    return drawn


def update_or_url(key: str, stat: str, algorithm: str, split: str | None = None, gpu: str | None = None) -> dict[str, Any]:
    """:func:`update`; at load (the layout came drawn, :func:`first_view`) nothing, or why it cannot."""
    shown = update(key, stat, algorithm, split, gpu)
    if ctx.triggered_id is None:
        return answer(OUTPUTS)
    return shown


def _dropdown(label: str, component_id: str, options: list, value: Any, wide: bool = False) -> html.Div:
    return html.Div(
        [html.Label(label, className="label"), dcc.Dropdown(id=component_id, options=options, value=value, clearable=False)],
        className="field wide-field" if wide else "field",
    )


def _split_options(names: list[str]) -> list[dict[str, str]]:
    return [{"label": f"{name}: {SPLITS[name]}", "value": name} for name in names]


def _controls(options: list, stats: list[str], algorithms: list[str], picked: dict[str, str]) -> html.Div:
    return html.Div(
        [
            _dropdown("Measured runs", ids.CMP_RUNS, options, picked["group"], wide=True),
            _dropdown("Statistic", ids.CMP_STAT, stats, picked["stat"]),
            _dropdown("Simulated algorithm", ids.CMP_ALGORITHM, algorithms, picked["algorithm"]),
            _dropdown("Split: fit o, w on", ids.CMP_SPLIT, _split_options(list(SPLITS)), picked["split"], wide=True),
        ],
        className="controls-row",
    )


@lru_cache(maxsize=1)
def _gpu_document() -> dict[str, Any]:
    """The precomputed GPU validations, read once per process (the file ships with collsim)."""
    return gpu_heldout.load()


def _gpu_section() -> html.Div:
    try:
        document = _gpu_document()
        options, intro = gpu_heldout.gpu_choices(document), GPU_INTRO.format(command=document.get("command", gpu_heldout.COMMAND))
    except CollsimError as error:
        options, intro = [], str(error)
    return html.Div(
        [
            html.H3("GPU: published nccl-tests logs, held out"),
            html.P(intro, className="intro"),
            _dropdown(
                "Preset and the log fitted (the other is predicted)",
                ids.CMP_GPU,
                options,
                options[0]["value"] if options else None,
                wide=True,
            ),
            html.Div(id=ids.CMP_GPU_NOTE, className="notice"),
            html.Div(
                [
                    html.Div(graph(ids.CMP_GPU_FIG, 400), className="col"),
                    html.Div(html.Div(id=ids.CMP_GPU_TABLE), className="col table-col"),
                ],
                className="row",
            ),
        ],
        className="col",
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
            html.Div([html.P(INTRO), html.P(SCOPE, id=ids.CMP_SCOPE)], className="intro", id=ids.CMP_INTRO),
            html.Div(id=ids.CMP_SPLIT_SHOWN, className="notice"),
            html.Div(id=ids.CMP_NOTICE, className="notice"),
            html.Div(id=ids.CMP_CARDS, className="cards"),
            row(html.Div(graph(ids.CMP_FIT, 380), className="col"), html.Div(graph(ids.CMP_RESIDUALS, 380), className="col")),
            row(
                html.Div(graph(ids.CMP_SIM_VS_MEASURED, 400), className="col"),
                html.Div(html.Div(id=ids.CMP_TABLE), className="col table-col"),
            ),
            _gpu_section(),
            html.Div(graph(ids.CMP_DDP, 360), className="col"),
            ddp_timeline,
        ]
    )


def _yes_no(value: bool | None) -> str:
    return "n/a" if value is None else "yes" if value else "no"


def _table(rows: list[dict[str, Any]], level: float) -> html.Table:
    """Per size and part: measured with its spread ("n/a" for one value), simulated, the interval
    (predicted points only), the error and the two verdicts."""
    names = ("size", "part", "measured", "spread", "simulated", f"{level:.0%} interval", "error", "within spread", "in interval")
    body = [
        html.Tr(
            [
                html.Td(format_size(r["size_bytes"])),
                html.Td("predicted (held out)" if r["role"] == "predicted" else "fitted (in-sample)", className=f"role-{r['role']}"),
                html.Td(format_time(r["measured_s"])),
                html.Td("n/a" if r["measured_lo_s"] is None else f"{format_time(r['measured_lo_s'])} – {format_time(r['measured_hi_s'])}"),
                html.Td(format_time(r["simulated_s"])),
                html.Td("— (fitted)" if r["low_s"] is None else f"{format_time(r['low_s'])} – {format_time(r['high_s'])}"),
                html.Td(f"{r['relative_error']:+.1%}" if r["relative_error"] is not None else "—"),
                html.Td(_yes_no(r["within"])),
                html.Td("—" if r["role"] == "fitted" else _yes_no(r["covered"])),
            ]
        )
        for r in rows
    ]
    caption = html.Caption("error = simulated / measured - 1; only predicted rows are predictions")
    return html.Table(
        [caption, html.Thead(html.Tr([html.Th(name) for name in names])), html.Tbody(body)], className="data", id=ids.CMP_ERROR_TABLE
    )


def _interval(bounds: tuple[float, float], written: Any) -> str:
    """A fit's interval as [low, high]; n/a where the fit has none (two sizes: no degrees of freedom)."""
    if any(math.isnan(bound) for bound in bounds):
        return "[interval n/a: no degrees of freedom]"
    return f"[{written(bounds[0])}, {written(bounds[1])}]"


def _cards(shown: dict[str, Any]) -> list:
    """The fitted o and w with their intervals, what they were fitted on, the held-out coverage
    and error, and the in-sample rms residual."""
    result, summary = shown["fit"], shown["summary"]
    coverage = (f"{summary['covered']} of {summary['predicted']} ({summary['coverage']:.0%})" if summary["predicted"]
                else "n/a: nothing held out")  # fmt: skip
    error = (f"{summary['median_abs_error']:.1%} (max {summary['max_abs_error']:.1%})" if summary["median_abs_error"] is not None
             else "n/a: nothing held out")  # fmt: skip
    return [
        number_card("o (per-call overhead)", f"{format_time(result.o_s)} {_interval(result.o_ci_s, format_time)}", ids.CMP_O),
        number_card(
            "w (algorithm bandwidth)", f"{format_bandwidth(result.w_Bps)} {_interval(result.w_ci_Bps, format_bandwidth)}", ids.CMP_W
        ),
        number_card("fitted on: points (sizes) / method", f"{result.points} ({len(result.sizes_bytes)}) / {result.method}", ids.CMP_POINTS),
        number_card(f"held out: inside the {summary['level']:.0%} interval", coverage, ids.CMP_COVERAGE),
        number_card("held out: median |error|", error, ids.CMP_HELD_ERROR),
        number_card("fitted points: rms residual (in-sample)", f"{result.rms_relative_residual:.1%}", ids.CMP_RMS),
    ]


def _split_shown(split: dict[str, Any], interval: str) -> html.Div:
    """The split in words: what was fitted and what is predicted; how the interval is made."""

    def sizes(values: list[int]) -> str:
        return ", ".join(format_size(value) for value in values) or "none"

    fitted = f"{len(split['fitted_runs'])} launch(es)" if split["fitted_runs"] else "every launch"
    predicted = f"launch {', '.join(split['predicted_runs'])}" if split["predicted_runs"] else "every launch"
    text = f"Split '{split['name']}': {SPLITS[split['name']]}. Fitted on sizes {sizes(split['fitted_sizes'])} ({fitted})"
    if split["predicted_sizes"]:
        text += f"; predicted: sizes {sizes(split['predicted_sizes'])} ({predicted})."
    else:
        text += "; nothing predicted: every point below is in-sample."
    return html.Div([html.P(text), html.P(f"Interval of a predicted point: {interval}.", className="small")])


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


def update(key: str, stat: str, algorithm: str, split: str | None = None, gpu: str | None = None) -> dict[str, Any]:
    """Everything on the page for one group of measurements and split, the GPU split, and the
    statistic, algorithm and split choices this group offers (set here, with the figures, so
    dropdowns and figures agree: a choice the group lacks falls back to one it has, and the notice
    says so).

    Kept per store contents: the bootstrap intervals and the DDP replays take ~0.3 s, and a
    store the page reads does not change unless its file does (see :func:`_stamp`); the GPU part
    reads the precomputed validations once."""
    db_path = _db_path()
    shown = _update(db_path, _stamp(db_path), key, stat, algorithm, split or DEFAULT_SPLIT)
    gpu_part = gpu_panel(gpu)
    return {**shown, **gpu_part}


def query(key: str, shown: dict[str, Any]) -> str:
    """The query the browser writes once the page shows :func:`update`'s answer for the group ``key``."""
    return urlstate.query_of(URL_SPEC, {"group": key, **{name: shown[name] for name in ("stat", "algorithm", "split", "gpu")}})


def _choices(rows: list[dict[str, Any]], group: dict[str, Any], stat: str, algorithm: str) -> tuple[list[str], str, list[str], str]:
    """The statistics and algorithms this group offers, and the ones shown (the asked ones when offered)."""
    if len({row["size_bytes"] for row in rows}) < 2:
        raise CollsimError("this group has fewer than two sizes: nothing to fit")
    stats = overlays.stats_available(rows)
    if not stats:
        raise CollsimError("this group has no statistic measured at two or more sizes: nothing to fit")
    algorithms = overlays.algorithms_for_op(group["op"])
    return stats, stat if stat in stats else stats[0], algorithms, algorithm if algorithm in algorithms else algorithms[0]


def _notice(shown: dict[str, Any], algorithm: str) -> str:
    split, summary = shown["split"], shown["summary"]
    launches = f"{len(split['fitted_runs'])} launch(es) at " if split["fitted_runs"] else ""
    text = f"Simulated {algorithm} with o and w fitted on {launches}{len(split['fitted_sizes'])} sizes (split '{split['name']}'); "
    if not summary["predicted"]:
        return text + "nothing is held out, so nothing here is a prediction: the fitted points agree by construction."
    text += f"{summary['covered']} of {summary['predicted']} held-out points inside their {summary['level']:.0%} interval"
    if summary["spread_judged"]:
        return text + f", {summary['within_spread']} of {summary['spread_judged']} within the measured spread."
    return text + "; the measured spread is n/a (one published value a size): an error cannot be told from noise here."


@lru_cache(maxsize=64)
def _update(db_path: str | None, stamp: tuple, key: str, stat: str, algorithm: str, split: str = DEFAULT_SPLIT) -> dict[str, Any]:
    store = overlays.open_results(db_path)
    group = group_of(key)
    rows = overlays.group_rows(store, group)
    asked, asked_split = stat, split
    stats, stat, algorithms, algorithm = _choices(rows, group, stat, algorithm)
    allowed = overlays.held_out_splits(rows)
    split = split if split in allowed else allowed[0]
    shown = overlays.held_out(store, group, stat, algorithm, split)
    notice = _notice(shown, algorithm)
    if asked_split != split:
        notice = f"These runs do not allow the split {asked_split!r}; showing {split!r}. " + notice
    if asked != stat:
        notice = f"These runs carry no {asked} time at two or more sizes; showing {stat}. " + notice
    return answer(
        OUTPUTS,
        notice=notice,
        cards=_cards(shown),
        fit=draw.fit_figure(
            shown["points"],
            {"curve": shown["curve"], "label": shown["label"]},
            "Measured time vs size, fit t = o + n / w on the fitted part",
        ),
        residuals=draw.residual_figure(shown["points"]),
        sim=draw.sim_vs_measured_figure(
            shown["rows"], "Simulated vs measured: fitted (in-sample) and predicted (held out)", shown["summary"]["level"]
        ),
        table=_table(shown["rows"], shown["summary"]["level"]),
        stat_options=[{"label": s, "value": s} for s in stats],
        stat=stat,
        algorithm_options=algorithms,
        algorithm=algorithm,
        split_options=_split_options(allowed),
        split=split,
        split_shown=_split_shown(shown["split"], shown["summary"]["interval"]),
    )


def _gpu_table(view: dict[str, Any]) -> html.Table:
    """Per part and size regime: points, median and worst busbw error, the interval's coverage and width."""
    names = ("part", "regime", "points", "median |busbw error|", "worst", f"inside {view['level']:.0%} interval", "median width x/÷")
    body = [
        html.Tr(
            [
                html.Td("predicted (held out)" if role == "predicted" else "fitted (in-sample)"),
                html.Td(r["regime"]),
                html.Td(r["points"]),
                html.Td(f"{r['median_abs_error']:.1%}"),
                html.Td(f"{r['worst_error']:+.1%}"),
                html.Td("—" if r["covered"] is None else f"{r['covered']} of {r['points']}"),
                html.Td("—" if r["median_width"] is None else f"{r['median_width']:.2f}"),
            ]
        )
        for role in ("predicted", "fitted")
        for r in view["regimes"][role]
    ]
    caption = html.Caption("busbw error = measured time / predicted time - 1, as collsim validate nccl-tests prints it")
    return html.Table([caption, html.Thead(html.Tr([html.Th(name) for name in names])), html.Tbody(body)], className="data")


@lru_cache(maxsize=16)
def gpu_panel(choice: str | None) -> dict[str, Any]:
    """The GPU part for one preset and split (:func:`real.gpu_heldout.gpu_view` of the precomputed
    validations): note, figure, regime table and the split shown (its dropdown value)."""
    try:
        view = gpu_heldout.gpu_view(_gpu_document(), choice)
    except CollsimError as error:
        return {"gpu_note": str(error), "gpu_figure": common.note_figure(str(error), "GPU logs"), "gpu_table": "", "gpu": None}
    summary, split = view["summary"], view["split"]
    single = ", ".join(f"{row['log']} ({row['preset']})" for row in view["single"])
    note = (
        f"{view['preset']}: fitted on {', '.join(row['log'] for row in split['fitted'])}; predicted "
        f"{', '.join(row['log'] for row in split['predicted'])}: {summary['covered']} of {summary['predicted']} points inside their "
        f"{view['level']:.0%} interval ({summary['coverage']:.0%}). Not validated here (the only log of their preset): {single or 'none'}."
    )
    title = f"{view['preset']}: DES vs nccl-tests, fitted log (in-sample) and predicted log (held out)"
    return {"gpu_note": note, "gpu_figure": draw.sim_vs_measured_figure(view["rows"], title, view["level"]), "gpu_table": _gpu_table(view),
            "gpu": view["choice"]}  # fmt: skip


@lru_cache(maxsize=8)
def _ddp_steps(db_path: str | None, stamp: tuple) -> Any:
    """Measured vs simulated DDP steps of the whole store, drawn with the layout: they depend on no
    control, and a callback runs refusing server files (:func:`webapp.callbacks.guarded`), which
    the DDP replay's own profile file is not exempt from."""
    try:
        points = overlays.ddp_comparison(overlays.open_results(db_path))
    except CollsimError:
        points = []
    return draw.ddp_steps_figure(points)


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
        inputs={
            "key": Input(ids.CMP_RUNS, "value"),
            "stat": Input(ids.CMP_STAT, "value"),
            "algorithm": Input(ids.CMP_ALGORITHM, "value"),
            "split": Input(ids.CMP_SPLIT, "value"),
            "gpu": Input(ids.CMP_GPU, "value"),
        },
    )(guarded(update_or_url, lambda message: answer(OUTPUTS, notice=message)))
    app.clientside_callback(
        ClientsideFunction("collsim", "writeUrl"),
        Output(ids.URL, "search", allow_duplicate=True),
        Output(ids.URL_WRITTEN, "data", allow_duplicate=True),
        *[Input(component_id, "value") for component_id in URL_INPUTS.values()],
        *urlstate.writer_states(ids.CMP_URL_SPEC),
        prevent_initial_call="initial_duplicate",
    )
    app.callback(
        output={"note": Output(ids.CMP_DDP_NOTE, "children"), "figure": Output(ids.CMP_DDP_OVERLAY, "figure")},
        inputs={"config": Input(ids.CMP_DDP_CONFIG, "value")},
        prevent_initial_call=True,  # the layout comes drawn (first_view)
    )(guarded(overlay, lambda message: {"note": message, "figure": common.note_figure(message, "DDP timeline")}))
