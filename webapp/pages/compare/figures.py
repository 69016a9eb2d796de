"""Figures of the Sim vs measured page: (o, w) fits with bands, residuals, simulated vs measured
per size, and measured vs simulated DDP steps."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from webapp.figures.common import PALETTE, band, base_figure, byte_axis, note_figure, time_unit

# how each role is drawn: fitted points (in-sample) and predicted ones (held out) never look alike
MEASURED_SYMBOL = {None: "circle", "fitted": "circle", "predicted": "square-open"}
RESIDUAL_NAME = {None: "residual", "fitted": "fitted points: in-sample residual", "predicted": "held-out points: prediction error"}
RESIDUAL_SYMBOL = {None: "circle", "fitted": "x", "predicted": "diamond"}


def _sizes_axis(figure: go.Figure, sizes: Sequence[float]) -> None:
    figure.update_xaxes(type="log", title="message size", **byte_axis(min(sizes), max(sizes)))


def fit_figure(
    points: Sequence[dict[str, Any]], fit: dict[str, Any] | None, title: str = "Measured time vs size, fit t = o + n / w"
) -> go.Figure:
    """Measured points (size_bytes, time_s; ``role`` fitted or predicted: filled or open), the (o, w)
    line and its band; log-log axes."""
    if not points:
        return note_figure("no measurements selected", title)
    factor, unit = time_unit(max(p["time_s"] for p in points))
    figure = base_figure(title, 380)
    groups = list(dict.fromkeys(p.get("label", "measured") for p in points))
    for index, group in enumerate(groups):
        mine = [p for p in points if p.get("label", "measured") == group]
        figure.add_trace(
            go.Scatter(
                x=[p["size_bytes"] for p in mine],
                y=[p["time_s"] * factor for p in mine],
                mode="markers",
                name=group,
                meta={"role": mine[0].get("role")},
                marker={"color": PALETTE[index % len(PALETTE)], "size": 8, "symbol": MEASURED_SYMBOL[mine[0].get("role")]},
            )
        )
    if fit and fit.get("curve"):
        sizes = [x for x, _, _, _ in fit["curve"]]
        lows, highs = [lo * factor for _, _, lo, _ in fit["curve"]], [hi * factor for _, _, _, hi in fit["curve"]]
        figure.add_trace(band(sizes, lows, highs, "rgba(214,39,40,0.15)", "fit interval"))
        figure.add_trace(
            go.Scatter(
                x=sizes,
                y=[y * factor for _, y, _, _ in fit["curve"]],
                mode="lines",
                name=fit.get("label", "fit"),
                line={"color": "#d62728"},
            )
        )
    _sizes_axis(figure, [p["size_bytes"] for p in points])
    figure.update_yaxes(type="log", title=f"time ({unit})")
    return figure


def residual_figure(points: Sequence[dict[str, Any]], title: str = "Residuals (measured / fit - 1)") -> go.Figure:
    """Each point's measured / fit - 1: the fitted points' (in-sample) apart from the held-out ones'."""
    if not points:
        return note_figure("no residuals", title)
    figure = base_figure(title, 300)
    for role in dict.fromkeys(p.get("role") for p in points):
        mine = [p for p in points if p.get("role") == role]
        figure.add_trace(
            go.Scatter(
                x=[p["size_bytes"] for p in mine],
                y=[p["residual"] * 100 for p in mine],
                mode="markers",
                marker={"size": 9, "symbol": RESIDUAL_SYMBOL[role], "color": "#d62728" if role == "predicted" else "#7f7f7f"},
                name=RESIDUAL_NAME[role],
                meta={"role": role},
            )
        )
    figure.add_hline(y=0, line={"color": "#888"})
    _sizes_axis(figure, [p["size_bytes"] for p in points])
    figure.update_yaxes(title="residual (%)")
    return figure


def _measured_trace(rows: Sequence[dict[str, Any]], factor: float, name: str, colour: str) -> go.Scatter:
    """Measured times with their spread as error bars (none where a value has no spread)."""
    spread = [r for r in rows if r.get("measured_lo_s") is not None]
    error = None
    if spread:
        error = {"type": "data", "symmetric": False, "color": colour,
                 "array": [((r["measured_hi_s"] - r["measured_s"]) * factor if r.get("measured_hi_s") is not None else 0) for r in rows],
                 "arrayminus": [((r["measured_s"] - r["measured_lo_s"]) * factor if r.get("measured_lo_s") is not None else 0) for r in rows]}  # fmt: skip
    role = rows[0].get("role")
    return go.Scatter(x=[r["size_bytes"] for r in rows], y=[r["measured_s"] * factor for r in rows], mode="markers", name=name, error_y=error,
                      meta={"role": role, "what": "measured"}, marker={"color": colour, "size": 9, "symbol": MEASURED_SYMBOL[role]})  # fmt: skip


def _simulated_trace(rows: Sequence[dict[str, Any]], factor: float, level: float) -> go.Scatter:
    """Simulated times: at the fitted sizes grey crosses (in-sample), at the predicted ones red
    diamonds with the interval as error bars."""
    role = rows[0].get("role") or "fitted"
    common = {"x": [r["size_bytes"] for r in rows], "y": [(r["simulated_s"] or math.nan) * factor for r in rows], "mode": "markers",
              "meta": {"role": role, "what": "simulated"}}  # fmt: skip
    if role == "fitted":
        return go.Scatter(**common, name="simulated at the fitted points (in-sample, not a prediction)",
                          marker={"color": "#555", "size": 10, "symbol": "x-thin", "line": {"width": 2, "color": "#555"}})  # fmt: skip
    error = {"type": "data", "symmetric": False, "color": "#d62728",
             "array": [(r["high_s"] - r["simulated_s"]) * factor for r in rows], "arrayminus": [(r["simulated_s"] - r["low_s"]) * factor for r in rows]}  # fmt: skip
    return go.Scatter(**common, name=f"predicted (held out), {level:.0%} interval", error_y=error,
                      marker={"color": "#d62728", "size": 10, "symbol": "diamond"})  # fmt: skip


def sim_vs_measured_figure(rows: Sequence[dict[str, Any]], title: str = "Simulated vs measured per size", level: float = 0.8) -> go.Figure:
    """rows: size_bytes, measured_s, measured_lo_s / measured_hi_s (None: no spread), simulated_s,
    ``role`` fitted (in-sample; the default) or predicted (held out, with low_s / high_s), and an
    optional ``series`` (which log). Measured and simulated are drawn per series and role, so a
    fitted point never appears as a prediction."""
    if not rows:
        return note_figure("nothing to compare", title)
    factor, unit = time_unit(max(max(r["measured_s"], r["simulated_s"] or 0) for r in rows))
    figure = base_figure(title, 400)
    keys = list(dict.fromkeys((r.get("series"), r.get("role")) for r in rows))
    for index, (series, role) in enumerate(keys):
        mine = [r for r in rows if (r.get("series"), r.get("role")) == (series, role)]
        part = {None: "", "fitted": ", fitted on", "predicted": ", held out"}[role]
        name = f"measured {series}{part}" if series else f"measured{part}"
        figure.add_trace(_measured_trace(mine, factor, name, ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b")[index % 4]))
    for role in ("fitted", "predicted"):
        mine = [r for r in rows if (r.get("role") or "fitted") == role]
        if mine:
            figure.add_trace(_simulated_trace(mine, factor, level))
    _sizes_axis(figure, [r["size_bytes"] for r in rows])
    figure.update_yaxes(type="log", title=f"time ({unit})")
    figure.update_layout(legend={"orientation": "h", "y": -0.25})
    return figure


# ----------------------------------------------------------------------------- side by side


def ddp_steps_figure(points: Sequence[dict[str, Any]]) -> go.Figure:
    """Measured (with its spread) beside simulated step time per DDP model and config."""
    if not points:
        return note_figure("no DDP measurements in this store (collsim real ddp)", "DDP: measured vs simulated step")
    factor, unit = time_unit(max(p["measured_s"] for p in points))
    names = [f"{p['model']} {p['config']}" for p in points]
    figure = base_figure("DDP: measured vs simulated step", 360)
    spread = {
        "type": "data",
        "symmetric": False,
        "array": [(p["spread_high_s"] - p["measured_s"]) * factor for p in points],
        "arrayminus": [(p["measured_s"] - p["spread_low_s"]) * factor for p in points],
    }
    figure.add_trace(go.Bar(x=names, y=[p["measured_s"] * factor for p in points], name="measured", marker_color="#1f77b4", error_y=spread))
    figure.add_trace(go.Bar(x=names, y=[p["simulated_s"] * factor for p in points], name="simulated", marker_color="#d62728"))
    figure.update_yaxes(title=f"step time ({unit})")
    return figure
