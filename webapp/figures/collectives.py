"""Figures of the Collectives page: simulated vs closed form, algorithm crossover, the side-by-side
comparison and the parts of a run. The step player (topology with messages in flight, per-rank
buffers) is :mod:`webapp.figures.player`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from sim.collective import explore
from sim.teaching import COST_PARTS, difference
from sim.units import format_size, format_time
from webapp.figures.common import (
    BUSY_SCALE,
    COMPONENT_COLORS,
    PALETTE,
    UTIL_BINS,
    Draft,
    base_figure,
    byte_axis,
    in_flight,
    note_figure,
    time_unit,
    trace,
)


def _how(method: str) -> str:
    """A crossover point's method in words for its hover."""
    return "extrapolated from two smaller runs" if method == "extrapolated" else method


def breakdown_figure(
    simulated_s: float | None, analytic_s: float | None, breakdown: dict[str, float], exact: bool = True, note: str = ""
) -> go.Figure:
    """Simulated time beside the closed form, the closed form stacked by alpha/beta/gamma terms;
    an approximate closed form is labelled so, a missing one says why (in the title, off the axes)."""
    if simulated_s is None and analytic_s is None:
        return note_figure(_wrap(note or "no simulation and no closed form for this scenario", 60), "Simulated vs closed form")
    factor, unit = time_unit(max(simulated_s or 0.0, analytic_s or 0.0))
    label = "closed form" if exact else "closed form (approx.)"
    # the reason for an approximate or missing closed form is written beside the figure (the
    # page's note) and in the bar's hover: text inside a plot lands on ticks and bars
    figure = Draft("Simulated vs closed form (alpha / beta / gamma)", 320)
    if simulated_s is not None:
        figure.add_trace(
            trace("bar", x=["simulated"], y=[simulated_s * factor], name="simulated", marker={"color": "#444"},
                   text=[format_time(simulated_s)], textposition="outside")
        )  # fmt: skip
    if analytic_s is not None and breakdown:
        for name, seconds in breakdown.items():
            if seconds:
                figure.add_trace(
                    trace("bar", x=[label], y=[seconds * factor], name=name, marker={"color": COMPONENT_COLORS.get(name)},
                           hovertemplate=f"{name}: {format_time(seconds)}<extra></extra>")
                )  # fmt: skip
    elif analytic_s is not None:
        figure.add_trace(
            trace("bar", x=[label], y=[analytic_s * factor], name=label, marker={"color": COMPONENT_COLORS["alpha (latency)"]})
        )
    else:
        figure.add_trace(
            trace(
                "bar", x=["closed form: none"], y=[0], name="no closed form", marker={"color": "#ccc"}, hovertext=[note], hoverinfo="text"
            )
        )
    if analytic_s is not None:
        figure.add_annotation(
            text=("" if exact else "≈ ") + format_time(analytic_s), x=label, y=analytic_s * factor, yshift=10, showarrow=False
        )
    figure.update_layout(barmode="stack", legend={"orientation": "h", "y": -0.2}, meta={"closed_exact": exact, "closed_note": note})
    figure.update_yaxes(title={"text": f"time ({unit})"}, rangemode="tozero")
    return figure.figure()


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "<br>".join(textwrap.wrap(text, width)) if text else ""


def crossover_figure(
    rows: Sequence[dict[str, Any]], size_bytes: int | None = None, algorithm: str | None = None, nccl: Sequence[dict[str, Any]] = ()
) -> go.Figure:
    """Time per algorithm over message size (log-log) and which one wins at each size; with
    ``nccl`` rows (size_bytes, time_s, pick), what NCCL's tuning model would pick and its time.
    Built as dicts (:class:`~webapp.figures.common.Draft`): every size change sends it."""
    points = [row for row in rows if row["time_s"] is not None]
    if not points:
        return note_figure("no algorithm of this op can run with these ranks / topology", "Algorithm crossover")
    factor, unit = time_unit(max(row["time_s"] for row in points))
    figure = Draft("Algorithm crossover over message size", 400)
    algorithms = list(dict.fromkeys(row["algorithm"] for row in rows))
    same = coincident(points)
    shaded = _interval_band(points, algorithm, factor)
    if shaded is not None:  # first: the curves draw over it
        figure.add_trace(shaded)
    for index, name in enumerate(algorithms):
        curve = _algorithm_trace(name, rows, points, factor, PALETTE[index % len(PALETTE)], name == algorithm)
        if same.get(name):  # drawn exactly over another: said in the legend; the later one dashed, so both show
            curve["name"] += f" (= {', '.join(same[name])})"
            if any(algorithms.index(other) < index for other in same[name]):
                curve["line"] = {**curve["line"], "dash": "dash"}
        figure.add_trace(curve)
    if nccl:
        figure.add_trace(
            trace(
                "scatter", x=[row["size_bytes"] for row in nccl], y=[row["time_s"] * factor for row in nccl], mode="lines+markers+text",
                name="NCCL's pick (its model)", line={"color": "black", "dash": "dash", "width": 1.5}, marker={"symbol": "diamond"},
                text=[row["pick"] if index % 2 == 0 else "" for index, row in enumerate(nccl)], textposition="top center",
                textfont={"size": 9}, hovertemplate=[f"NCCL picks {row['pick']}: {format_time(row['time_s'])} at {format_size(row['size_bytes'])}<extra></extra>" for row in nccl],
            )
        )  # fmt: skip
    wins = winners(points)  # one trace (a trace per size costs the browser a layout pass each)
    figure.add_trace(
        trace(
            "scatter",
            x=list(wins),
            y=[0] * len(wins),
            yaxis="y2",
            mode="markers",
            marker={"symbol": "square", "size": 12, "color": [PALETTE[algorithms.index(name) % len(PALETTE)] for name in wins.values()]},
            showlegend=False,
            hovertemplate=[f"fastest at {format_size(size)}: {name}<extra></extra>" for size, name in wins.items()],
            name="fastest",
        )
    )
    if size_bytes:  # a vertical line at the scenario's size (what Figure.add_vline draws)
        line = {"type": "line", "x0": size_bytes, "x1": size_bytes, "xref": "x", "y0": 0, "y1": 1, "yref": "y domain"}
        figure.update_layout(shapes=[{**line, "line": {"dash": "dot", "color": "#888"}}])
    _crossover_axes(figure, points, factor, unit)
    # the sizes not simulated within the page's budget are said beside the figure, in the page
    # (a line inside it was cut off on the left at 16 ranks), with a button that simulates them
    beyond = sorted({row["algorithm"] for row in rows if row["why"] == explore.TOO_LARGE}, key=algorithms.index)
    figure.update_layout(meta={"beyond_budget": beyond, "coincident": same, "interval_band": shaded["meta"] if shaded else None})
    return figure.figure()


def _interval_band(points: list[dict[str, Any]], algorithm: str | None, factor: float) -> dict[str, Any] | None:
    """The 80 % interval (``time_interval_s``, on a hardware preset) as a band around one curve:
    the chosen algorithm's, else the fastest at each size. One band, not one per curve: the
    interval is the same factor for every algorithm at a size (how real clusters spread around
    the model, not which algorithm runs), so ten overlapping bands would hide the curves and
    say nothing more; each point's hover gives its own interval. None without intervals."""
    mine = [row for row in points if row["algorithm"] == algorithm and row.get("time_interval_s")]
    label = algorithm
    if not mine:
        best = {entry["size_bytes"]: entry["algorithm"] for entry in explore.fastest(points) if entry["algorithm"]}
        mine = [row for row in points if best.get(row["size_bytes"]) == row["algorithm"] and row.get("time_interval_s")]
        label = "the fastest"
    if not mine:
        return None
    sizes = [row["size_bytes"] for row in mine]
    lows = [row["time_interval_s"][0] * factor for row in mine]
    highs = [row["time_interval_s"][1] * factor for row in mine]
    return trace(
        "scatter", x=sizes + sizes[::-1], y=highs + lows[::-1], fill="toself", fillcolor="rgba(120,120,120,0.18)", line={"width": 0},
        mode="lines", name=f"80 % interval ({label})", hoverinfo="skip", meta={"curve": label, "level": 0.8},
    )  # fmt: skip


COINCIDENT_RELATIVE = 1e-9  # two times this close are one point (float rounding)


def coincident(points: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """algorithm -> the other algorithms whose curve lies exactly on its own (the same sizes, each
    time within :data:`COINCIDENT_RELATIVE`): drawn one over the other, one would be hidden
    (linear under pipelined_chain at one chunk). Only algorithms with such a twin are keys."""
    curves: dict[str, dict[int, float]] = {}
    for row in points:
        curves.setdefault(row["algorithm"], {})[row["size_bytes"]] = row["time_s"]

    def same(a: dict[int, float], b: dict[int, float]) -> bool:
        return a.keys() == b.keys() and all(abs(a[size] - b[size]) <= COINCIDENT_RELATIVE * max(a[size], b[size]) for size in a)

    return {
        name: twins
        for name, curve in curves.items()
        if (twins := [other for other, theirs in curves.items() if other != name and same(curve, theirs)])
    }


def _algorithm_trace(
    name: str, rows: Sequence[dict[str, Any]], points: list[dict[str, Any]], factor: float, colour: str, current: bool
) -> dict[str, Any]:
    """One algorithm's curve over size; an algorithm that cannot run is a greyed legend entry saying why."""
    mine = [row for row in points if row["algorithm"] == name]
    if not mine:
        why = next((row["why"] for row in rows if row["algorithm"] == name and row["why"]), "")
        return trace(
            "scatter", x=[None], y=[None], name=f"{name} (n/a)", mode="lines", line={"color": "#ccc"}, hovertext=why, visible="legendonly"
        )
    return trace(
        "scatter",
        x=[row["size_bytes"] for row in mine],
        y=[row["time_s"] * factor for row in mine],
        mode="lines+markers",
        name=f"{name}" + (" (current)" if current else ""),
        line={"color": colour, "width": 3.5 if current else 1.8},
        hovertemplate=[
            f"{name}: {format_time(row['time_s'])}{_within(row)} at {format_size(row['size_bytes'])} ({_how(row['method'])})<extra></extra>"
            for row in mine
        ],
    )


def _within(row: dict[str, Any]) -> str:
    """The point's interval on a hardware preset as " (80 %: lo – hi)", "" without one."""
    found = row.get("time_interval_s")
    return f" (80 %: {format_time(found[0])} – {format_time(found[1])})" if found else ""


def _crossover_axes(figure: Draft, points: list[dict[str, Any]], factor: float, unit: str) -> None:
    """Log-log axes in the inputs' byte units, and the strip of fastest markers under them."""
    sizes = [row["size_bytes"] for row in points]
    figure.update_xaxes(type="log", title={"text": "message size"}, **byte_axis(min(sizes), max(sizes)))
    # a label per power of ten, written out (Plotly's default labels the 2s and 5s between them
    # and switches to SI prefixes: "100μ" ms); left to Plotly when the times span under two decades
    times = [row["time_s"] * factor for row in points if row["time_s"]]
    decades = math.log10(max(times) / min(times)) if times else 0.0
    ticks = {"dtick": 1, "exponentformat": "none"} if decades >= 2 else {}
    figure.update_yaxes(type="log", title={"text": f"time ({unit})"}, domain=[0.12, 1.0], **ticks)
    figure.update_layout(yaxis2={"domain": [0, 0.06], "visible": False, "range": [-1, 1]}, legend={"title": {"text": "algorithm"}})
    figure.add_annotation(text="fastest:", x=0, y=0.03, xref="paper", yref="paper", xanchor="right", showarrow=False, font={"size": 11})


def winners(rows: Iterable[dict[str, Any]]) -> dict[int, str]:
    """size -> the fastest algorithm at that size, among those with a time there (explore.fastest)."""
    return {entry["size_bytes"]: entry["algorithm"] for entry in explore.fastest(rows) if entry["algorithm"]}


# ----------------------------------------------------------------------------- DDP

PART_COLORS = {"latency": "#1f77b4", "bandwidth": "#ff7f0e", "reduction": "#2ca02c", "overhead": "#9467bd", "contention": "#d62728"}


def side_by_side_figure(columns: Sequence[tuple], rank_counts: Sequence[int] = ()) -> go.Figure:
    """Two runs' per-rank activity (operations in flight per time bin) stacked on one time axis:
    ``columns`` holds (label, rank per interval, start, end) for each run; ``rank_counts`` the
    ranks of each run (a rank that only receives still gets its row). Both panels share one
    colour scale (one zmin/zmax, one colour bar), so one shade means the same in both."""
    from plotly.subplots import make_subplots

    span = max(float(ends.max()) for _, _, _, ends in columns if len(ends)) or 1.0
    factor, unit = time_unit(span)
    figure = make_subplots(rows=len(columns), cols=1, shared_xaxes=True, vertical_spacing=0.12, subplot_titles=[c[0] for c in columns])
    figure.update_layout(margin={"l": 60, "r": 20, "t": 60, "b": 48}, template={})
    centres = (np.arange(UTIL_BINS) + 0.5) * span / UTIL_BINS * factor
    grids = []
    for index, (_, ranks, starts, ends) in enumerate(columns):
        seen = int(ranks.max()) + 1 if len(ranks) else 1
        count = max(seen, rank_counts[index] if index < len(rank_counts) else 0)
        grids.append(in_flight(ranks, starts, ends, count, span))
    top = max((float(grid.max()) for grid in grids if grid.size), default=1.0) or 1.0
    for row, ((label, *_), grid) in enumerate(zip(columns, grids), start=1):
        count = grid.shape[0]
        figure.add_trace(
            go.Heatmap(z=grid.astype(np.float32), x=centres, y=[f"rank {r}" for r in range(count)], coloraxis="coloraxis",
                       hovertemplate=f"{label}<br>%{{y}}, %{{x:.4g}} {unit}: %{{z:.2f}} in flight<extra></extra>", name=label),
            row=row, col=1,
        )  # fmt: skip
        figure.update_yaxes(autorange="reversed", row=row, col=1, nticks=min(count, 12))
        end = float(columns[row - 1][3].max()) * factor if len(columns[row - 1][3]) else 0
        figure.add_vline(x=end, line={"dash": "dot", "color": "#d62728"}, row=row, col=1)
    figure.update_xaxes(title=f"time ({unit}), one axis for both", row=len(columns), col=1, range=[0, span * factor])
    figure.update_layout(
        title={"text": "Side by side: per-rank activity on one time axis", "x": 0.01, "font": {"size": 15}},
        height=200 + 160 * len(columns),
        coloraxis={
            "colorscale": BUSY_SCALE,
            "cmin": 0,
            "cmax": top,
            "colorbar": {"title": {"text": "operations<br>in flight", "side": "top"}, "thickness": 12},
        },
        meta={"columns": [c[0] for c in columns], "span_s": span, "zmax": top},
    )
    return figure


def parts_figure(labels: Sequence[str], parts: Sequence[dict[str, float]]) -> go.Figure:
    """Each run's time split into latency, bandwidth, reduction, overhead and contention
    (stacked), and in the title the difference and the part that explains most of it."""
    if not parts:
        return note_figure("nothing to compare", "Where the difference comes from")
    factor, unit = time_unit(max(p["total"] for p in parts))
    names = list(COST_PARTS)
    title = "Where the time goes"
    if len(parts) == 2:
        title = f"{labels[1]} vs {labels[0]}: {difference(parts[0], parts[1]).sentence()}"
    figure = base_figure("Where the time goes", 340)
    for name in names:
        values = [p[name] * factor for p in parts]
        if any(values):
            figure.add_trace(
                go.Bar(x=list(labels), y=values, name=name, marker_color=PART_COLORS[name],
                       hovertemplate=[f"{label}: {name} {format_time(p[name])}<extra></extra>" for label, p in zip(labels, parts)])
            )  # fmt: skip
    for label, p in zip(labels, parts):
        figure.add_annotation(x=label, y=p["total"] * factor, text=format_time(p["total"]), yshift=10, showarrow=False)
    figure.update_layout(
        barmode="relative", legend={"orientation": "h", "y": -0.18}, meta={"parts": [dict(p) for p in parts], "summary": title}
    )
    figure.update_yaxes(title=f"time ({unit})")
    return figure


# ----------------------------------------------------------------------------- training step (FSDP / ZeRO)
