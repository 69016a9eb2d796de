"""``report.html`` of ``collsim validate``: plotly figures and tables from a summary document.

Pure functions of the summary.json document (``real.validate.summary_document``), so the webapp
can draw the same figures from a stored summary. plotly is the webapp extra: it is imported here
only, lazily, and a missing plotly is one clear error.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

from sim.errors import CollsimError
from sim.units import format_size

HELD_OUT_STYLE = {"size": "solid", "launch": "dash", "world_size": "dot"}
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def _plotly() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise CollsimError(
            "the HTML report needs plotly: pip install 'collsim[webapp]' (summary.json and calibration.yaml need nothing more)"
        ) from None
    return go


def collective_figures(document: dict[str, Any]) -> list[Any]:
    """Per op: measured medians with the launch range, and each held-out prediction, by size."""
    go = _plotly()
    figures = []
    rows = document["collectives"]
    for op in sorted({row["op"] for row in rows}):
        figure = go.Figure()
        world_sizes = sorted({row["world_size"] for row in rows if row["op"] == op})
        for index, world_size in enumerate(world_sizes):
            color = COLORS[index % len(COLORS)]
            members = [row for row in rows if row["op"] == op and row["world_size"] == world_size]
            measured = {row["size_bytes"]: row for row in members}
            sizes = sorted(measured)
            figure.add_scatter(
                x=sizes, y=[measured[n]["measured_s"] * 1e3 for n in sizes], mode="markers", name=f"p={world_size} measured (median of launches)",
                marker={"color": color, "size": 8},
                error_y={"type": "data", "symmetric": False, "array": [(measured[n]["spread_high_s"] - measured[n]["measured_s"]) * 1e3 for n in sizes],
                         "arrayminus": [(measured[n]["measured_s"] - measured[n]["spread_low_s"]) * 1e3 for n in sizes]},
            )  # fmt: skip
            for kind, dash in HELD_OUT_STYLE.items():
                held = sorted((row for row in members if row["held_out"] == kind), key=lambda row: row["size_bytes"])
                if held:
                    figure.add_scatter(x=[row["size_bytes"] for row in held], y=[row["predicted_s"] * 1e3 for row in held], mode="lines",
                                       name=f"p={world_size} predicted, held out by {kind}", line={"color": color, "dash": dash})  # fmt: skip
        figure.update_layout(title=f"{op}: measured vs held-out predictions", xaxis={"type": "log", "title": "size (bytes)"},
                             yaxis={"type": "log", "title": "time per call (ms)"}, height=420, legend={"font": {"size": 10}})  # fmt: skip
        figures.append(figure)
    return figures


def error_figure(document: dict[str, Any]) -> Any:
    """Relative error of every held-out prediction, beside the launch spread (the band it is judged against)."""
    go = _plotly()
    figure = go.Figure()
    rows = document["collectives"]
    for kind, symbol in zip(HELD_OUT_STYLE, ("circle", "square", "diamond")):
        members = [row for row in rows if row["held_out"] == kind]
        if not members:
            continue
        figure.add_scatter(
            x=[row["size_bytes"] for row in members], y=[row["error"] * 100 for row in members], mode="markers", name=f"held out by {kind}",
            marker={"symbol": symbol, "size": 7}, text=[f"{row['op']} p={row['world_size']}" for row in members],
            error_y={"type": "data", "symmetric": False, "array": [(row["spread_high_s"] / row["measured_s"] - 1) * 100 for row in members],
                     "arrayminus": [(1 - row["spread_low_s"] / row["measured_s"]) * 100 for row in members], "thickness": 0.8},
        )  # fmt: skip
    figure.add_hline(y=0, line={"color": "grey"})
    figure.update_layout(title="prediction error (bars: the measurement's range over launches)", xaxis={"type": "log", "title": "size (bytes)"},
                         yaxis={"title": "(predicted - measured) / measured (%)"}, height=420)  # fmt: skip
    return figure


def ddp_figures(document: dict[str, Any]) -> list[Any]:
    """Overhead vs bucket cap (measured, formula, optima) and step time per strategy (measured vs simulated)."""
    go = _plotly()
    ddp, detail = document["ddp"], document.get("ddp_detail") or {}
    configs = detail.get("configs") or []
    if not configs:
        return []
    bucketed = sorted((row for row in configs if row["strategy"] == "bucketed"), key=lambda row: row["bucket_bytes"])
    overhead = go.Figure()
    overhead.add_scatter(
        x=[row["bucket_bytes"] for row in bucketed], y=[row["overhead_s"] * 1e3 for row in bucketed], mode="markers+lines", name="measured overhead (step - no-comm step)",
        error_y={"type": "data", "symmetric": False, "array": [(row["overhead_high_s"] - row["overhead_s"]) * 1e3 for row in bucketed],
                 "arrayminus": [(row["overhead_s"] - row["overhead_low_s"]) * 1e3 for row in bucketed]},
    )  # fmt: skip
    formula, total = detail.get("formula") or {}, detail.get("grad_bytes") or 0
    if formula.get("identifiable") and math.isfinite(formula.get("w_Bps") or math.inf):
        counts = [row["num_buckets"] for row in bucketed]
        overhead.add_scatter(x=[row["bucket_bytes"] for row in bucketed], y=[(n * formula["o_s"] + total / (n * formula["w_Bps"])) * 1e3 for n in counts],
                             mode="lines", name="n_b o + s/(n_b w), fitted (in-sample)", line={"dash": "dash"})  # fmt: skip
    sim_rows = [row for row in bucketed if row.get("simulated_step_s") is not None]
    if sim_rows:
        base = min(row["simulated_step_s"] for row in sim_rows) - min(row["overhead_s"] for row in bucketed)
        overhead.add_scatter(x=[row["bucket_bytes"] for row in sim_rows], y=[(row["simulated_step_s"] - base) * 1e3 for row in sim_rows], mode="lines",
                             name="simulator step time (shifted to the measured minimum)", line={"dash": "dot"})  # fmt: skip
    for name, key, color in (
        ("best measured", "best_measured_bytes", "black"),
        ("sqrt(s w o)", "best_formula_bytes", "green"),
        ("simulator best", "best_sim_bytes", "purple"),
    ):
        if ddp.get(key):  # a legend entry per optimum (vline annotations overlap on a log axis)
            top = max(row["overhead_high_s"] for row in bucketed) * 1e3
            overhead.add_scatter(x=[ddp[key], ddp[key]], y=[0, top], mode="lines", name=f"{name}: {format_size(ddp[key])}",
                                 line={"color": color, "dash": "dot"})  # fmt: skip
    overhead.update_layout(
        title="DDP overhead vs bucket cap",
        xaxis={"type": "log", "title": "bucket cap (bytes)"},
        yaxis={"title": "overhead (ms)"},
        height=420,
    )
    steps = go.Figure()
    labels = [row["config"] for row in configs]
    steps.add_bar(x=labels, y=[row["step_s"] * 1e3 for row in configs], name="measured step (median over launches)",
                  error_y={"type": "data", "symmetric": False, "array": [(row["step_high_s"] - row["step_s"]) * 1e3 for row in configs],
                           "arrayminus": [(row["step_s"] - row["step_low_s"]) * 1e3 for row in configs]})  # fmt: skip
    steps.add_scatter(x=labels, y=[(row.get("simulated_step_s") or float("nan")) * 1e3 for row in configs], mode="markers", name="simulated (bench o, w)",
                      marker={"size": 10, "symbol": "x"})  # fmt: skip
    steps.update_layout(title="DDP step time per strategy and cap", yaxis={"title": "step (ms)"}, height=420)
    return [overhead, steps]


def fsdp_figures(document: dict[str, Any]) -> list[Any]:
    """FSDP / ZeRO step per strategy: measured (median, spread) as bars, sim fsdp as markers."""
    rows = document.get("fsdp") or []
    if not rows:
        return []
    go = _plotly()
    figure = go.Figure()
    labels = [row["strategy"] for row in rows]
    figure.add_bar(x=labels, y=[row["measured_s"] * 1e3 for row in rows], name="measured step (median)",
                   error_y={"type": "data", "symmetric": False, "array": [(row["spread_high_s"] - row["measured_s"]) * 1e3 for row in rows],
                            "arrayminus": [(row["measured_s"] - row["spread_low_s"]) * 1e3 for row in rows]})  # fmt: skip
    figure.add_scatter(x=labels, y=[row["predicted_s"] * 1e3 for row in rows], mode="markers", name="sim fsdp (measured no-comm step, o, w)",
                       marker={"size": 10, "symbol": "x"})  # fmt: skip
    figure.update_layout(title="FSDP / ZeRO step time per strategy: measured vs simulated", yaxis={"title": "step (ms)"}, height=420)
    return [figure]


def fsdp_section(document: dict[str, Any]) -> str:
    """The FSDP table and the constants the simulation used; empty when FSDP was not measured."""
    rows, detail = document.get("fsdp") or [], document.get("fsdp_detail") or {}
    if not rows:
        return f"<h2>FSDP / ZeRO</h2><p>Not analysed: {html.escape(detail['error'])}</p>" if detail.get("error") else ""
    table = _table(["strategy", "measured (ms)", "spread (ms)", "simulated (ms)", "error", "within spread"],
                   [[row["strategy"], _num(row["measured_s"], 1e3), f"[{_num(row['spread_low_s'], 1e3)}, {_num(row['spread_high_s'], 1e3)}]",
                     _num(row["predicted_s"], 1e3), f"{row['error']:+.1%}", "yes" if row["within_spread"] else "NO"] for row in rows])  # fmt: skip
    base = detail.get("baseline") or {}
    note = (
        f"<p>sim fsdp (comm ow) replays the no-communication step measured in the same rounds (forward {_num(base.get('forward_s'), 1e3)} ms, "
        f"backward {_num(base.get('backward_s'), 1e3)} ms, optimizer {_num(base.get('optimizer_s'), 1e3)} ms); "
        f"{html.escape(str(detail.get('source', '')))}. The simulator never sees the strategies' step times. Spread: "
        f"{html.escape(str(detail.get('spread', '')))}. Ranking, fastest first: measured {html.escape(', '.join(detail.get('ranking_measured', [])))}; "
        f"simulated {html.escape(', '.join(detail.get('ranking_simulated', [])))}.</p>"
    )
    return f"<h2>FSDP / ZeRO: step time per strategy, {detail.get('world_size', '?')} ranks</h2>" + table + note


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _num(value: Any, scale: float = 1.0, digits: str = ".3g") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return format(value * scale, digits)


def tables(document: dict[str, Any]) -> str:
    fits = _table(["op", "p", "o (us)", "o 95% (us)", "w (GB/s)", "w 95% (GB/s)"],
                  [[f["op"], f["world_size"], _num(f["o_s"], 1e6), f"[{_num(f['o_low_s'], 1e6)}, {_num(f['o_high_s'], 1e6)}]", _num(f["w_Bps"], 1e-9),
                    f"[{_num(f['w_low_Bps'], 1e-9)}, {_num(f['w_high_Bps'], 1e-9)}]"] for f in document["fits"]])  # fmt: skip
    links = _table(["op", "algorithm", "world sizes", "o_call (us)", "a (us)", "B (GB/s)", "gamma (GB/s)", "not identifiable", "rms rel. residual (in-sample)"],
                   [[m["op"], m["algorithm"], m["world_sizes"], _link(m, "o_call_s", 1e6), _link(m, "latency_s", 1e6),
                     _link(m, "inverse_bandwidth_s_per_B", inverse=True), _link(m, "inverse_reduce_bandwidth_s_per_B", inverse=True),
                     ", ".join(m["not_identifiable"]) or "-", f"{m['rms_relative_residual']:.1%}"] for m in document["link_models"]])  # fmt: skip
    target_rows = [
        [t["target"], {True: "met", False: "NOT met", None: "not measured"}[t["met"]], json.dumps(t["value"], default=str)]
        for t in document["targets"]
    ]
    ddp, detail = document["ddp"], document.get("ddp_detail") or {}
    ddp_rows = [
        ["o from DDP overhead fit (in-sample)", _num(ddp.get("fitted_o_s"), 1e3) + " ms", "o from the all-reduce bench", _num(detail.get("bench_o_s"), 1e3) + " ms"],
        ["w from DDP overhead fit (in-sample)", _num(ddp.get("fitted_w_Bps"), 1e-9) + " GB/s", "w from the all-reduce bench", _num(detail.get("bench_w_Bps"), 1e-9) + " GB/s"],
        ["best cap measured", _size(ddp.get("best_measured_bytes")), "b* = sqrt(s w o), DDP fit", _size(ddp.get("best_formula_bytes"))],
        ["best cap simulated", _size(ddp.get("best_sim_bytes")), "b* with bench o, w", _size(detail.get("best_formula_bytes_from_bench"))],
    ]  # fmt: skip
    slowdown = detail.get("backward_slowdown") or {}
    slow_rows = [
        [config, f"{row['median']:.2f}x", f"[{row['p10']:.2f}, {row['p90']:.2f}]", row["rounds"]]
        for config, row in sorted(slowdown.items())
        if config != "none"
    ]
    return (
        "<h2>Targets</h2>" + _table(["target", "verdict", "figures"], target_rows)
        + "<h2>Fits: t(n) = o + n/w per op and world size (bounded o, w &ge; 0; 95% bootstrap intervals; in-sample)</h2>" + fits
        + "<h2>Link model per op, for the algorithm the backend runs (in-sample over all world sizes)</h2>" + links
        + "<h2>DDP: overhead formula n_b o + s/(n_b w)</h2>" + _table(["", "", "", ""], ddp_rows)
        + "<h3>Backward slowdown with communication beside it (median over rounds, p10-p90)</h3>" + _table(["config", "median", "p10-p90", "rounds"], slow_rows)
    )  # fmt: skip


def _link(model: dict[str, Any], name: str, scale: float = 1.0, inverse: bool = False) -> str:
    """A link-model constant: 'not identifiable' where the points cannot fix it; B and gamma as GB/s."""
    if name in model["not_identifiable"]:
        return "not identifiable"
    value = model[name]
    if inverse:
        return _num(1 / value / 1e9) if value else "inf"
    return _num(value, scale)


def _size(value: Any) -> str:
    return format_size(value) if value else "n/a"


def write_report(document: dict[str, Any], path: Path, plotlyjs: str = "inline") -> None:
    """One HTML file; ``plotlyjs='inline'`` embeds plotly.js (opens offline, ~4.8 MB), ``'cdn'`` links it."""
    figures = collective_figures(document) + [error_figure(document)] + ddp_figures(document) + fsdp_figures(document)
    include: Any = True if plotlyjs == "inline" else "cdn"
    parts = [figure.to_html(full_html=False, include_plotlyjs=include if index == 0 else False) for index, figure in enumerate(figures)]
    meta = document.get("meta") or {}
    noise = document.get("noise") or {}
    head = (
        f"<h1>collsim validate: {html.escape(str(meta.get('backend', '')))}, world sizes {html.escape(str(meta.get('world_sizes', '')))}</h1>"
        f"<p>{html.escape(str(meta.get('host', '')))} ({html.escape(str(meta.get('cpu_model', '')))}, {meta.get('cpu_count', '?')} cores), torch "
        f"{html.escape(str(meta.get('torch_version', '')))}, measured {html.escape(str(meta.get('started_at', '')))}"
        f"{' (quick)' if meta.get('quick') else ''}{' &mdash; INTERRUPTED: partial data' if meta.get('interrupted') else ''}.</p>"
        f"<p><b>Noise.</b> {html.escape(noise.get('sentence', ''))} Stall rate {_num(noise.get('stall_rate'), 100, '.2f')}% of "
        f"{noise.get('calls', 0)} calls.</p>"
        "<p>Every prediction below is <b>held out</b>: by size (o, w fitted on alternate sizes), by launch (fitted without that launch), "
        "or by world size (link model fitted on the smallest world size only). Fits and link models are in-sample and labelled so.</p>"
    )
    style = "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}</style>"
    body = head + "".join(f"<div>{part}</div>" for part in parts) + tables(document) + fsdp_section(document)
    path.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>collsim validate</title>{style}</head><body>{body}</body></html>"
    )
