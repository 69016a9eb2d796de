"""Figures of the Sim vs measured page: (o, w) fits with bands, residuals, simulated vs measured
per size, and measured vs simulated DDP steps."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from webapp.figures.common import PALETTE, band, base_figure, byte_axis, note_figure, time_unit


def fit_figure(
    points: Sequence[dict[str, Any]], fit: dict[str, Any] | None, title: str = "Measured time vs size, fit t = o + n / w"
) -> go.Figure:
    """Measured points (size_bytes, time_s), the (o, w) line and its band; log-log axes."""
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
                marker={"color": PALETTE[index % len(PALETTE)], "size": 8},
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
    figure.update_xaxes(
        type="log", title="message size", **byte_axis(min(p["size_bytes"] for p in points), max(p["size_bytes"] for p in points))
    )
    figure.update_yaxes(type="log", title=f"time ({unit})")
    return figure


def residual_figure(points: Sequence[dict[str, Any]], title: str = "Residuals (measured / fit - 1)") -> go.Figure:
    if not points:
        return note_figure("no residuals", title)
    figure = base_figure(title, 300)
    figure.add_trace(
        go.Scatter(
            x=[p["size_bytes"] for p in points],
            y=[p["residual"] * 100 for p in points],
            mode="markers",
            marker={"size": 8},
            name="residual",
        )
    )
    figure.add_hline(y=0, line={"color": "#888"})
    figure.update_xaxes(
        type="log", title="message size", **byte_axis(min(p["size_bytes"] for p in points), max(p["size_bytes"] for p in points))
    )
    figure.update_yaxes(title="residual (%)")
    return figure


def sim_vs_measured_figure(rows: Sequence[dict[str, Any]], title: str = "Simulated vs measured per size") -> go.Figure:
    """rows: size_bytes, measured_s, measured_lo_s, measured_hi_s, simulated_s."""
    if not rows:
        return note_figure("nothing to compare", title)
    factor, unit = time_unit(max(max(r["measured_s"], r["simulated_s"] or 0) for r in rows))
    figure = base_figure(title, 380)
    sizes = [r["size_bytes"] for r in rows]
    lows, highs = [r["measured_lo_s"] * factor for r in rows], [r["measured_hi_s"] * factor for r in rows]
    figure.add_trace(band(sizes, lows, highs, "rgba(31,119,180,0.18)", "measured spread"))
    figure.add_trace(
        go.Scatter(x=sizes, y=[r["measured_s"] * factor for r in rows], mode="lines+markers", name="measured", line={"color": "#1f77b4"})
    )
    figure.add_trace(
        go.Scatter(
            x=sizes,
            y=[(r["simulated_s"] or math.nan) * factor for r in rows],
            mode="lines+markers",
            name="simulated",
            line={"color": "#d62728", "dash": "dash"},
        )
    )
    figure.update_xaxes(
        type="log", title="message size", **byte_axis(min(p["size_bytes"] for p in rows), max(p["size_bytes"] for p in rows))
    )
    figure.update_yaxes(type="log", title=f"time ({unit})")
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
