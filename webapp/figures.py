"""Pure functions: results -> Plotly figures. No Dash, no I/O; unit-tested without a browser.

Times are drawn in one unit per figure (s, ms, us or ns, picked from the largest time) so axes
read "1.2 ms", not "0.0012".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import Any

import numpy as np
import plotly.graph_objects as go

from sim.units import format_size, format_time

# No template: the look is plotly.js's own defaults (white paper, light grid, Open Sans). Until
# 2026-11-23 each figure named a registered template, "collsim", which figures built with
# _validate=False send as the bare name; plotly.js ignores a name, so that is the look users saw,
# and attaching the template as data would cost ~5 ms a figure (and a kilobyte) to change it.
RANK_COLOR = "#1f77b4"
SWITCH_COLOR = "#7f7f7f"
FLIGHT_COLOR = "#d62728"
COMPONENT_COLORS = {
    "alpha (latency)": "#1f77b4",
    "beta (bandwidth)": "#ff7f0e",
    "gamma (reduction)": "#2ca02c",
    "overhead / other": "#9467bd",
}
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def band(x: list, lows: list, highs: list, colour: str, name: str) -> go.Scatter:
    """A shaded band between ``lows`` and ``highs`` over ``x`` (intervals, spreads)."""
    return go.Scatter(x=list(x) + list(x)[::-1], y=list(highs) + list(lows)[::-1], fill="toself", fillcolor=colour,
                      line={"width": 0}, name=name, hoverinfo="skip")  # fmt: skip


def time_unit(seconds: float) -> tuple[float, str]:
    """(factor, label) so that seconds * factor reads naturally for the largest time shown."""
    seconds = abs(seconds or 0.0)
    for factor, label in ((1.0, "s"), (1e3, "ms"), (1e6, "us")):
        if seconds >= 1.0 / factor:
            return factor, label
    return 1e9, "ns"


def _how(method: str) -> str:
    """A crossover point's method in words for its hover."""
    return "extrapolated from two smaller runs" if method == "extrapolated" else method


def byte_axis(low: float, high: float) -> dict[str, Any]:
    """Log-axis ticks at powers of two written in binary units (1 KiB, 1 MiB), as the inputs are."""
    low, high = max(float(low or 1), 1.0), max(float(high or 1), 1.0)
    first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
    step = max(1, math.ceil((last - first + 1) / 8))
    values = [2.0**k for k in range(first, last + 1, step)]
    return {"tickvals": values, "ticktext": [format_size(int(v)) for v in values]}


def _layout(title: str, height: int = 360, **more: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "x": 0.01, "font": {"size": 15}},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 48, "b": 48},
        "template": {},  # none (plotly.py would otherwise attach its 7 kB default, another look)
        **more,
    }


def _base(title: str, height: int = 360) -> go.Figure:
    """A figure with its title, height and margins, built from one layout dict and not checked
    (built by this module only: property checks and update_layout cost ~5 ms a figure)."""
    return go.Figure(layout=_layout(title, height), _validate=False)


def note_figure(text: str, title: str = "", height: int = 300) -> go.Figure:
    """An empty figure that says why there is nothing to draw."""
    figure = _base(title, height)
    figure.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font={"size": 14, "color": "#555"})
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return figure


# ----------------------------------------------------------------------------- collectives


def limit_lanes(rows: Sequence[dict[str, Any]], lane: str, limit: int) -> tuple[list[dict[str, Any]], str]:
    """Whole lanes, in lane order, while the bars stay within ``limit`` (a browser draws some
    thousands of SVG bars quickly, not tens of thousands), and a note saying what was left out."""
    if len(rows) <= limit:
        return list(rows), ""
    counts: dict[Any, int] = {}
    for row in rows:
        counts[row[lane]] = counts.get(row[lane], 0) + 1
    kept, total = [], 0
    for value in sorted(counts, key=_lane_key):
        if kept and total + counts[value] > limit:
            break
        kept.append(value)
        total += counts[value]
    chosen = set(kept)
    return [row for row in rows if row[lane] in chosen], f"{len(kept)} of {len(counts)} lanes shown ({len(rows):,} bars in all)"


COLOR_BINS = 48
MAX_LANE_LABELS = 24  # a browser lays out 128 tick labels in ~0.4 s; label every k-th lane above this
SEGMENT_BARS = 2000  # above this many bars a browser takes seconds to draw segments: draw a raster
RASTER_BINS = 480  # about 2 px per bin on the page's widest timeline


def gantt_figure(
    rows: Sequence[dict[str, Any]], lane: str, color_by: str, title: str, lane_label: str = "", cut_note: str = ""
) -> go.Figure:
    """Bars from start_s to end_s, one lane per ``row[lane]``, coloured by a number.

    Each bar is a thick line segment; the segments of one colour (values binned into at most
    ``COLOR_BINS`` colours) and kind share one SVG path, so a browser draws thousands of
    messages as a few dozen paths instead of one element per bar (hover on a bar's middle).
    Above ``SEGMENT_BARS`` bars the lanes are drawn as an image of ``RASTER_BINS`` time bins
    (a heatmap), which draws in milliseconds whatever the number of messages.
    """
    if not rows:
        return note_figure("no events to draw", title)
    factor, unit = time_unit(max(row["end_s"] for row in rows))
    lanes = sorted({row[lane] for row in rows}, key=_lane_key)
    lane_index = {value: index for index, value in enumerate(lanes)}
    columns = ("src", "dst", "bytes", "step", "chunk", "start_s", "end_s")
    table = np.array(list(map(itemgetter(*columns), rows)), dtype=float)
    table[:, 5:] *= factor
    values = table[:, columns.index(color_by) if color_by in columns else 3]
    low, high = float(values.min()), float(values.max())
    bins = np.minimum(((values - low) / (high - low) * COLOR_BINS).astype(int), COLOR_BINS - 1) if high > low else np.zeros(len(rows), int)
    lane_numbers = np.fromiter((lane_index[row[lane]] for row in rows), float, len(rows))
    row_kinds = np.array([row.get("kind", "send") for row in rows])
    height = max(260, min(900, 90 + 18 * len(lanes)))
    traces: list[Any] = []  # one figure from dicts at the end: add_trace / update_* cost ~1 ms a call
    lane_texts = [_lane_text(value, lane_label) for value in lanes]
    if len(rows) > SEGMENT_BARS:
        traces.append(_raster(table, lane_numbers, lane_texts, values, low, high, color_by, unit))
        cut_note = "; ".join(filter(None, [cut_note, f"{len(rows):,} bars drawn in {RASTER_BINS} time bins"]))
    else:
        width_px = max(2.0, min(14.0, 0.7 * (height - 90) / len(lanes)))
        for kind in sorted(set(row_kinds.tolist())):
            thickness = width_px * (1.0 if kind == "send" else 0.45)
            for colour_bin in np.unique(bins):
                mask = (row_kinds == kind) & (bins == colour_bin)
                if mask.any():
                    colour = _colour(low + (colour_bin + 0.5) * (high - low) / COLOR_BINS, low, high)
                    traces.append(_segments(table[mask], lane_numbers[mask], kind, colour, thickness))
            mask = row_kinds == kind
            traces.append(_bar_hover(table[mask], lane_numbers[mask], kind, thickness, unit))
    traces.append(
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            showlegend=False,
            hoverinfo="skip",
            marker={
                "color": [low],
                "cmin": low,
                "cmax": high if high > low else low + 1,
                "colorscale": "Viridis",
                "showscale": True,
                "colorbar": {"title": {"text": color_by}, "thickness": 12, **_integer_ticks(low, high)},
            },
        )
    )
    shown = range(0, len(lanes), math.ceil(len(lanes) / MAX_LANE_LABELS))  # every lane's label costs the browser
    raster = len(rows) > SEGMENT_BARS  # the heatmap's lanes are categories (hover names them)
    yaxis = {
        "tickvals": [lane_texts[i] if raster else i for i in shown],
        "ticktext": [lane_texts[i] for i in shown],
        "range": [len(lanes) - 0.5, -0.5],
        "type": "category" if raster else "linear",
        "title": None,
        "showgrid": False,
        "zeroline": False,
    }
    annotations = []
    if cut_note:
        annotations.append(
            {"text": cut_note, "x": 1, "y": 1.06, "xref": "paper", "yref": "paper", "showarrow": False, "xanchor": "right", "font": {"size": 11, "color": "#a00"}}
        )  # fmt: skip
    layout = _layout(
        title,
        height,
        yaxis=yaxis,
        xaxis={"title": {"text": f"time ({unit})"}, "rangemode": "tozero"},
        showlegend=False,
        hovermode="closest",
        meta={"bars": len(rows), "lanes": len(lanes), "kinds": sorted(set(row_kinds.tolist()))},
        annotations=annotations,
    )
    return go.Figure(data=traces, layout=layout, _validate=False)


def _integer_ticks(low: float, high: float) -> dict[str, Any]:
    """Colour-bar ticks on whole numbers only (steps and chunks are counts)."""
    span = max(high - low, 1.0)
    return {"tickmode": "linear", "tick0": math.floor(low), "dtick": max(1, math.ceil(span / 8)), "tickformat": "d"}


def _raster(
    table: np.ndarray, lanes: np.ndarray, lane_texts: list[str], values: np.ndarray, low: float, high: float, color_by: str, unit: str
) -> go.Heatmap:
    """The bars as an image: lane x time bin, each bin coloured by the last bar covering it
    (float32: half the bytes to send; lanes as category names, so hover says which lane)."""
    lane_count = len(lane_texts)
    start, end = table[:, 5], table[:, 6]
    span = float(end.max()) or 1.0
    first = np.clip((start / span * RASTER_BINS).astype(int), 0, RASTER_BINS - 1)
    last = np.clip(np.ceil(end / span * RASTER_BINS).astype(int), first + 1, RASTER_BINS)
    image = np.full((lane_count, RASTER_BINS), np.nan, dtype=np.float32)
    for lane, lo, hi, value in zip(lanes.astype(int), first, last, values):
        image[lane, lo:hi] = value
    centres = ((np.arange(RASTER_BINS) + 0.5) * span / RASTER_BINS).astype(np.float32)
    return go.Heatmap(
        z=image,
        x=centres,
        y=lane_texts,
        zmin=low,
        zmax=high if high > low else low + 1,
        colorscale="Viridis",
        showscale=False,
        hovertemplate=f"%{{y}}, %{{x:.4g}} {unit}: {color_by} %{{z:.0f}}<extra></extra>",
        name="bars",
    )


def _colour(value: float, low: float, high: float) -> str:
    return _viridis(round((value - low) / (high - low), 4) if high > low else 0.0)


@lru_cache(maxsize=4096)
def _viridis(fraction: float) -> str:
    from plotly.colors import sample_colorscale

    return sample_colorscale("Viridis", [fraction])[0]


def _segments(table: np.ndarray, lanes: np.ndarray, kind: str, colour: str, width_px: float) -> go.Scatter:
    """One trace of bars drawn as thick lines: per bar the points start, end and a gap (None).
    Hover comes from :func:`_bar_hover` (the lines carry no per-bar data: a third the bytes)."""
    count = len(table)
    xs = np.empty(count * 3)
    xs[0::3], xs[1::3], xs[2::3] = table[:, 5], table[:, 6], np.nan
    ys = np.repeat(lanes, 3)
    ys[2::3] = np.nan
    return go.Scatter(
        x=xs,
        y=ys,
        mode="lines",
        line={"color": colour, "width": width_px},
        hoverinfo="skip",
        name=kind,
        connectgaps=False,
        _validate=False,  # thousands of numbers already checked by numpy; validation costs ~5 ms a trace
    )


def _bar_hover(table: np.ndarray, lanes: np.ndarray, kind: str, width_px: float, unit: str) -> go.Scatter:
    """Invisible points at the middle of each bar of one kind, carrying what the bar is."""
    verb = "%{customdata[0]:.0f}→%{customdata[1]:.0f}" if kind == "send" else "on rank %{customdata[0]:.0f}"
    return go.Scatter(
        x=(table[:, 5] + table[:, 6]) / 2,
        y=lanes,
        mode="markers",
        marker={"size": max(6.0, width_px), "opacity": 0, "maxdisplayed": 1},  # hover needs the points, not their SVG nodes
        customdata=table,
        hovertemplate=f"{kind} {verb}<br>%{{customdata[2]:,.0f}} bytes, step %{{customdata[3]:.0f}}, chunk %{{customdata[4]:.0f}}<br>%{{customdata[5]:.4g}} → %{{customdata[6]:.4g}} {unit}<extra></extra>",
        name=kind,
        showlegend=False,
        _validate=False,
    )


def _lane_key(value: Any) -> tuple:
    """Numbers in numeric order, text in natural order: rank 2 before rank 14, 2->switch before 14->switch."""
    if isinstance(value, (int, float)):
        return (0, (value,))
    parts = re.split(r"(\d+)", str(value))
    return (1, tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in parts))


def _lane_text(value: Any, label: str) -> str:
    return f"{label} {value}".strip()


GANTT_BARS = 40_000
UTIL_BINS = 400  # time bins of a utilisation heatmap


def in_flight(lanes: np.ndarray, starts: np.ndarray, ends: np.ndarray, lane_count: int, span: float, bins: int = UTIL_BINS) -> np.ndarray:
    """(lane_count x bins): the time-averaged number of intervals in flight per lane and time
    bin, exactly (each interval adds its overlap with a bin, over the bin's width)."""
    width = span / bins
    grid = np.zeros((lane_count, bins + 1))
    first = np.clip((starts / width).astype(int), 0, bins - 1)
    last = np.clip((ends / width).astype(int), 0, bins - 1)
    same = first == last
    np.add.at(grid, (lanes[same], first[same]), (ends[same] - starts[same]) / width)
    split = ~same
    lanes2, first2, last2 = lanes[split], first[split], last[split]
    np.add.at(grid, (lanes2, first2), ((first2 + 1) * width - starts[split]) / width)
    np.add.at(grid, (lanes2, last2), (ends[split] - last2 * width) / width)
    full = np.zeros((lane_count, bins + 1))  # whole bins in between, as a difference array
    np.add.at(full, (lanes2, first2 + 1), 1.0)
    np.add.at(full, (lanes2, last2), -1.0)
    return (grid + np.cumsum(full, axis=1))[:, :bins]


def busy_fraction(lanes: np.ndarray, starts: np.ndarray, ends: np.ndarray, lane_count: int, span: float) -> np.ndarray:
    """Per lane: the fraction of the run with at least one interval in flight (union of intervals)."""
    fractions = np.zeros(lane_count)
    order = np.lexsort((starts, lanes))
    lanes, starts, ends = lanes[order], starts[order], ends[order]
    bounds = np.searchsorted(lanes, np.arange(lane_count + 1))
    for lane in range(lane_count):
        lo, hi = bounds[lane], bounds[lane + 1]
        if lo == hi:
            continue
        s, e = starts[lo:hi], np.maximum.accumulate(ends[lo:hi])
        gaps = np.maximum(s[1:] - e[:-1], 0.0).sum()
        fractions[lane] = (e[-1] - s[0] - gaps) / span if span else 0.0
    return fractions


def utilisation_figure(
    lane_names: Sequence[str], lanes: np.ndarray, starts: np.ndarray, ends: np.ndarray, title: str, what: str = "messages in flight"
) -> go.Figure:
    """The whole run at any size: lane x time heatmap of the mean number of ``what`` per time
    bin, and beside it each lane's busy fraction (time with at least one in flight). Lanes in
    natural order (rank 2 before rank 14)."""
    if not len(starts):
        return note_figure("no events to draw", title)
    span = float(ends.max()) or 1.0
    order = sorted(range(len(lane_names)), key=lambda i: _lane_key(lane_names[i]))
    position = np.empty(len(order), dtype=int)
    position[order] = np.arange(len(order))
    used = np.unique(lanes)
    keep = [i for i in order if i in set(used.tolist())]
    rows = {lane: row for row, lane in enumerate(keep)}
    mapped = np.array([rows[lane] for lane in lanes.tolist()], dtype=int)
    grid = in_flight(mapped, starts, ends, len(keep), span)
    busy = busy_fraction(mapped, starts, ends, len(keep), span)
    factor, unit = time_unit(span)
    names = [str(lane_names[i]) for i in keep]
    centres = (np.arange(UTIL_BINS) + 0.5) * span / UTIL_BINS * factor
    figure = _base(title, max(300, min(900, 110 + 6 * len(keep))))
    figure.add_trace(
        go.Heatmap(
            z=grid.astype(np.float32), x=centres, y=names, colorscale="Blues", zmin=0, xaxis="x", yaxis="y",
            colorbar={"title": {"text": what.split()[0]}, "thickness": 12, "x": 1.0},
            hovertemplate=f"%{{y}}, %{{x:.4g}} {unit}: %{{z:.2f}} {what}<extra></extra>", name="in flight",
        )
    )  # fmt: skip
    figure.add_trace(
        go.Bar(
            x=busy * 100, y=names, orientation="h", xaxis="x2", yaxis="y", marker_color="#ff7f0e", name="busy",
            hovertemplate="%{y}: busy %{x:.1f}% of the run<extra></extra>",
        )
    )  # fmt: skip
    shown = list(range(0, len(names), math.ceil(len(names) / MAX_LANE_LABELS)))
    figure.update_layout(
        xaxis={"domain": [0, 0.78], "title": f"time ({unit}), whole run in {UTIL_BINS} bins", "range": [0, span * factor]},
        xaxis2={"domain": [0.82, 0.95], "title": "busy (%)", "range": [0, 100], "anchor": "y"},
        yaxis={"type": "category", "categoryorder": "array", "categoryarray": names, "autorange": "reversed",
               "tickvals": [names[i] for i in shown], "ticktext": [names[i] for i in shown]},
        showlegend=False,
        meta={"utilisation": True, "lanes": len(names), "span_s": span, "bars": int(len(starts))},
    )  # fmt: skip
    return figure


def rank_timeline(
    result_events: Callable[[], list], ranks: np.ndarray, starts: np.ndarray, ends: np.ndarray, color_by: str = "step"
) -> go.Figure:
    """Per-rank timeline: bars while drawable (``result_events()`` builds them), else the whole
    run as utilisation (sends and reductions in flight per rank) with each rank's busy fraction."""
    if len(starts) <= SEGMENT_BARS:
        return rank_gantt(result_events(), color_by)
    names = [f"rank {r}" for r in range(int(ranks.max()) + 1)]
    title = f"Per-rank activity, whole run ({len(starts):,} sends and reductions; too many to draw one by one)"
    return utilisation_figure(names, ranks, starts, ends, title, "operations in flight")


def link_timeline(
    names: Sequence[str], lanes: np.ndarray, starts: np.ndarray, ends: np.ndarray, rows: Callable[[], list], color_by: str = "step"
) -> go.Figure:
    """Per-link timeline: bars while drawable (``rows()`` builds them), else utilisation."""
    if len(starts) <= SEGMENT_BARS:
        return link_gantt(rows(), color_by)
    title = f"Per-link utilisation, whole run ({len(starts):,} link crossings; too many to draw one by one)"
    return utilisation_figure(names, lanes, starts, ends, title)


def rank_gantt(events: Sequence[dict[str, Any]], color_by: str = "step", limit: int = GANTT_BARS) -> go.Figure:
    """Per-rank timeline of a result's events (sends and reductions), EVENT_COLUMNS rows."""
    rows, note = limit_lanes(events, "rank", limit)
    rows = [dict(row, src=row["rank"], dst=row["peer"]) for row in rows]
    return gantt_figure(rows, "rank", color_by, f"Per-rank timeline (colour: {color_by})", "rank", note)


def link_gantt(rows: Sequence[dict[str, Any]], color_by: str = "step", limit: int = GANTT_BARS) -> go.Figure:
    """Per-link timeline: rows from :func:`webapp.collective.link_events`."""
    rows, note = limit_lanes(rows, "link", limit)
    return gantt_figure(rows, "link", color_by, f"Per-link timeline (colour: {color_by})", "", note)


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
    figure = _base("Simulated vs closed form (alpha / beta / gamma)", 320)
    if simulated_s is not None:
        figure.add_trace(
            go.Bar(x=["simulated"], y=[simulated_s * factor], name="simulated", marker_color="#444",
                   text=[format_time(simulated_s)], textposition="outside")
        )  # fmt: skip
    if analytic_s is not None and breakdown:
        for name, seconds in breakdown.items():
            if seconds:
                figure.add_trace(
                    go.Bar(x=[label], y=[seconds * factor], name=name, marker_color=COMPONENT_COLORS.get(name),
                           hovertemplate=f"{name}: {format_time(seconds)}<extra></extra>")
                )  # fmt: skip
    elif analytic_s is not None:
        figure.add_trace(go.Bar(x=[label], y=[analytic_s * factor], name=label, marker_color=COMPONENT_COLORS["alpha (latency)"]))
    else:
        figure.add_trace(
            go.Bar(x=["closed form: none"], y=[0], name="no closed form", marker_color="#ccc", hovertext=[note], hoverinfo="text")
        )
    if analytic_s is not None:
        figure.add_annotation(
            text=("" if exact else "≈ ") + format_time(analytic_s), x=label, y=analytic_s * factor, yshift=10, showarrow=False
        )
    figure.update_layout(barmode="stack", legend={"orientation": "h", "y": -0.2}, meta={"closed_exact": exact, "closed_note": note})
    figure.update_yaxes(title=f"time ({unit})", rangemode="tozero")
    return figure


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "<br>".join(textwrap.wrap(text, width)) if text else ""


def crossover_figure(
    rows: Sequence[dict[str, Any]], size_bytes: int | None = None, algorithm: str | None = None, nccl: Sequence[dict[str, Any]] = ()
) -> go.Figure:
    """Time per algorithm over message size (log-log) and which one wins at each size; with
    ``nccl`` rows (size_bytes, time_s, pick), what NCCL's tuning model would pick and its time."""
    points = [row for row in rows if row["time_s"] is not None]
    if not points:
        return note_figure("no algorithm of this op can run with these ranks / topology", "Algorithm crossover")
    factor, unit = time_unit(max(row["time_s"] for row in points))
    figure = _base("Algorithm crossover over message size", 400)
    algorithms = list(dict.fromkeys(row["algorithm"] for row in rows))
    for index, name in enumerate(algorithms):
        mine = [row for row in points if row["algorithm"] == name]
        if not mine:
            why = next((row["why"] for row in rows if row["algorithm"] == name and row["why"]), "")
            figure.add_trace(
                go.Scatter(
                    x=[None], y=[None], name=f"{name} (n/a)", mode="lines", line={"color": "#ccc"}, hovertext=why, visible="legendonly"
                )
            )
            continue
        figure.add_trace(
            go.Scatter(
                x=[row["size_bytes"] for row in mine],
                y=[row["time_s"] * factor for row in mine],
                mode="lines+markers",
                name=f"{name}" + (" (current)" if name == algorithm else ""),
                line={"color": PALETTE[index % len(PALETTE)], "width": 3.5 if name == algorithm else 1.8},
                hovertemplate=[
                    f"{name}: {format_time(row['time_s'])} at {format_size(row['size_bytes'])} ({_how(row['method'])})<extra></extra>"
                    for row in mine
                ],
            )
        )
    if nccl:
        figure.add_trace(
            go.Scatter(
                x=[row["size_bytes"] for row in nccl], y=[row["time_s"] * factor for row in nccl], mode="lines+markers+text",
                name="NCCL's pick (its model)", line={"color": "black", "dash": "dash", "width": 1.5}, marker={"symbol": "diamond"},
                text=[row["pick"] if index % 2 == 0 else "" for index, row in enumerate(nccl)], textposition="top center",
                textfont={"size": 9}, hovertemplate=[f"NCCL picks {row['pick']}: {format_time(row['time_s'])} at {format_size(row['size_bytes'])}<extra></extra>" for row in nccl],
            )
        )  # fmt: skip
    wins = winners(points)  # one trace (a trace per size costs the browser a layout pass each)
    figure.add_trace(
        go.Scatter(
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
    if size_bytes:
        figure.add_vline(x=size_bytes, line={"dash": "dot", "color": "#888"})
    sizes = [row["size_bytes"] for row in points]
    figure.update_xaxes(type="log", title="message size", **byte_axis(min(sizes), max(sizes)))
    # a label per power of ten, written out (Plotly's default labels the 2s and 5s between them
    # and switches to SI prefixes: "100μ" ms); left to Plotly when the times span under two decades
    times = [row["time_s"] * factor for row in points if row["time_s"]]
    decades = math.log10(max(times) / min(times)) if times else 0.0
    ticks = {"dtick": 1, "exponentformat": "none"} if decades >= 2 else {}
    figure.update_yaxes(type="log", title=f"time ({unit})", domain=[0.12, 1.0], **ticks)
    figure.update_layout(yaxis2={"domain": [0, 0.06], "visible": False, "range": [-1, 1]}, legend={"title": {"text": "algorithm"}})
    figure.add_annotation(text="fastest:", x=0, y=0.03, xref="paper", yref="paper", xanchor="right", showarrow=False, font={"size": 11})
    beyond = sorted({row["algorithm"] for row in rows if row["why"] == "too large to simulate here"}, key=algorithms.index)
    if beyond:  # said where the points are missing, and where to get them
        figure.add_annotation(
            text=f"not simulated here (too many messages): some sizes of {', '.join(beyond)}; `collsim sim crossover` draws more",
            x=1, y=1.02, xref="paper", yref="paper", xanchor="right", yanchor="bottom", showarrow=False, font={"size": 11, "color": "#a00"},
        )  # fmt: skip
    figure.update_layout(meta={"beyond_budget": beyond})
    return figure


def winners(rows: Iterable[dict[str, Any]]) -> dict[int, str]:
    """size -> the fastest algorithm at that size."""
    best: dict[int, tuple[float, str]] = {}
    for row in rows:
        if row["time_s"] is None:
            continue
        current = best.get(row["size_bytes"])
        if current is None or row["time_s"] < current[0]:
            best[row["size_bytes"]] = (row["time_s"], row["algorithm"])
    return {size: name for size, (_, name) in sorted(best.items())}


def player_positions(player: dict[str, Any]) -> int:
    """Slider positions: 0 is the input (before any message), k is after step ``steps[k-1]``."""
    return len(player["steps"]) + 1


def _at(player: dict[str, Any], position: int) -> tuple[int | None, list]:
    position = max(0, min(position, len(player["steps"])))
    if position == 0:
        return None, []
    return player["steps"][position - 1], player["messages"][position - 1]


def topology_figure(player: dict[str, Any], position: int) -> go.Figure:
    """The topology with the messages of the step at slider ``position`` drawn as arrows from
    sender to receiver, the links they cross highlighted and busy ranks outlined."""
    layout = player["layout"]
    step, messages = _at(player, position)
    where = {node["id"]: (node["x"], node["y"]) for node in layout["nodes"]}
    busy_links = {tuple(link) for src, dst, *_ in messages for link in player["routes"].get(f"{src}>{dst}", [])}
    busy_links |= {(b, a) for a, b in busy_links}
    title = f"Topology ({layout['name']}): " + (step_title(player, position) if step is not None else "before the first message")
    figure = _base(title, 440)
    for highlighted in (False, True):
        xs: list[float | None] = []
        ys: list[float | None] = []
        for u, v in layout["edges"]:
            if ((u, v) in busy_links) == highlighted:
                xs += [where[u][0], where[v][0], None]
                ys += [where[u][1], where[v][1], None]
        figure.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line={"color": FLIGHT_COLOR if highlighted else "#ccc", "width": 3 if highlighted else 1},
                hoverinfo="skip",
                showlegend=False,
                name="links in use" if highlighted else "links",
            )
        )
    busy = {m[0] for m in messages} | {m[1] for m in messages}
    ranks = [node for node in layout["nodes"] if node["rank"] is not None]
    others = [node for node in layout["nodes"] if node["rank"] is None]
    figure.add_trace(
        go.Scatter(
            x=[n["x"] for n in others],
            y=[n["y"] for n in others],
            mode="markers+text",
            marker={"symbol": "square", "size": 16, "color": SWITCH_COLOR},
            text=[n["id"] for n in others],
            textposition="bottom center",
            hoverinfo="text",
            showlegend=False,
            name="switches",
        )
    )
    label = len(ranks) <= 32
    figure.add_trace(
        go.Scatter(
            x=[n["x"] for n in ranks],
            y=[n["y"] for n in ranks],
            mode="markers+text" if label else "markers",
            marker={
                "size": 26 if label else 12,
                "color": RANK_COLOR,
                "line": {
                    "width": [4 if n["rank"] in busy else 1 for n in ranks],
                    "color": [FLIGHT_COLOR if n["rank"] in busy else "white" for n in ranks],
                },
            },
            text=[str(n["rank"]) for n in ranks],
            textfont={"color": "white", "size": 12},
            hovertext=[f"rank {n['rank']}" for n in ranks],
            hoverinfo="text",
            showlegend=False,
            name="ranks",
        )
    )
    standoff = 13 if label else 7
    arrows = [
        {
            "x": where[str(dst)][0],
            "y": where[str(dst)][1],
            "ax": where[str(src)][0],
            "ay": where[str(src)][1],
            "xref": "x",
            "yref": "y",
            "axref": "x",
            "ayref": "y",
            "showarrow": True,
            "arrowhead": 3,
            "arrowsize": 1.2,
            "arrowwidth": 2,
            "arrowcolor": FLIGHT_COLOR,
            "standoff": standoff,
            "startstandoff": standoff,
            "opacity": 0.8,
            "text": "",
        }
        for src, dst, *_ in messages[:256]
    ]
    figure.update_layout(annotations=arrows)
    if messages:
        figure.add_trace(_arrow_labels(messages[:256], where, label_text=len(messages) <= 32))
    figure.update_xaxes(visible=False, scaleanchor="y", scaleratio=1)
    figure.update_yaxes(visible=False)
    figure.update_layout(margin={"l": 10, "r": 10, "t": 48, "b": 10}, meta={"step": step, "in_flight": len(messages)})
    return figure


def _arrow_labels(messages: list, where: dict[str, tuple[float, float]], label_text: bool) -> go.Scatter:
    """What each arrow carries, written at the arrow's middle (cells and bytes), with a hover."""
    xs, ys, texts, hovers = [], [], [], []
    for message in messages:
        src, dst, start, end, nbytes, chunk = message[:6]
        cells = message[6] if len(message) > 6 else ""
        (x0, y0), (x1, y1) = where[str(src)], where[str(dst)]
        xs.append(x0 + 0.55 * (x1 - x0))
        ys.append(y0 + 0.55 * (y1 - y0))
        texts.append(f"{cells} · {format_size(nbytes)}" if cells else format_size(nbytes))
        hovers.append(
            f"rank {src} → rank {dst}<br>carries {cells or 'data'}: {format_size(nbytes)}, chunk {chunk}"
            f"<br>{format_time(start)} → {format_time(end)}"
        )
    return go.Scatter(
        x=xs, y=ys, mode="text" if label_text else "markers", text=texts, textfont={"size": 10, "color": "#8b0000"},
        marker={"size": 8, "color": FLIGHT_COLOR, "opacity": 0.5}, hovertext=hovers, hoverinfo="text", showlegend=False,
        name="message labels",
    )  # fmt: skip


def step_title(player: dict[str, Any], position: int) -> str:
    """ "step 3 of 14 (reduce-scatter)": positions count from 1, the phase named when known."""
    count = len(player["steps"])
    position = max(1, min(position, count))
    phases = player.get("phases") or []
    phase = phases[position - 1] if position - 1 < len(phases) else ""
    return f"step {position} of {count}" + (f" ({phase})" if phase else "")


def step_caption(player: dict[str, Any], position: int) -> str:
    """Under the player: the step's number, phase, start-end time and one sentence on what moved."""
    step, messages = _at(player, position)
    if step is None:
        return f"Inputs, before any message. {len(player['steps'])} steps to play: press Play or drag the slider. {player.get('description', '')}"
    start = min(m[2] for m in messages)
    end = max(m[3] for m in messages)
    nbytes = sum(m[4] for m in messages)
    sentences = player.get("sentences") or []
    sentence = sentences[position - 1] if position - 1 < len(sentences) else ""
    title = step_title(player, position)
    return f"{title[0].upper() + title[1:]}: {format_time(start)} → {format_time(end)}, {format_size(nbytes)} in all. {sentence}"


def buffer_figure(player: dict[str, Any], position: int) -> go.Figure:
    """Each rank's buffer at slider ``position`` (rows: ranks, columns: pieces / chunks),
    coloured by how many ranks' data a cell holds; hover lists them."""
    frames = player.get("buffers")
    if not frames:
        why = (
            "barrier moves no data"
            if player["op"] == "barrier"
            else "buffer state is drawn for up to 32 ranks and 256 cells (ranks x chunks)"
        )
        return note_figure(why, "Buffers", 320)
    frame = frames[max(0, min(position, len(frames) - 1))]
    p = player["ranks"]
    cells = frame["cells"]
    counts = [[bin(value).count("1") for value in row] for row in cells]
    holders = [[_ranks_in(value) for value in row] for row in cells]
    reduces = player["reduces"]
    text = [
        [
            (f"{count}/{p}" if reduces else (holder[0] if len(holder) == 1 else str(count))) if count else ""
            for count, holder in zip(crow, hrow)
        ]
        for crow, hrow in zip(counts, holders)
    ]
    verb = "sum of ranks" if reduces else "data of rank"
    hover = [
        [f"rank {r}, cell {c}: " + (f"{verb} {', '.join(holders[r][c])}" if counts[r][c] else "empty") for c in range(len(cells[r]))]
        for r in range(len(cells))
    ]
    chunks = player["chunks"]
    columns = [f"p{c // chunks}" + (f".{c % chunks}" if chunks > 1 else "") for c in range(len(cells[0]))]
    title = f"Buffers after {step_title(player, index_of(position, frames))}" if frame["step"] >= 0 else "Buffers (inputs)"
    title += ": cell = how many ranks' data it sums" if reduces else ": cell = whose data it holds"
    figure = _base(title, max(260, 70 + 24 * p))
    small = len(columns) * p <= 1024
    figure.add_trace(
        go.Heatmap(
            z=[[count / p for count in row] for row in counts],
            x=columns,
            y=[f"rank {r}" for r in range(p)],
            text=text if small else None,
            texttemplate="%{text}" if small else None,
            hovertext=hover,
            hoverinfo="text",
            zmin=0,
            zmax=1,
            colorscale=[[0, "#f2f2f2"], [1e-9, "#c6dbef"], [1, "#08306b"]],
            showscale=False,
            xgap=1,
            ygap=1,
        )
    )
    figure.update_yaxes(autorange="reversed")
    figure.update_xaxes(title="piece" + (".chunk" if chunks > 1 else ""), side="bottom")
    full = sum(1 for row in counts for count in row if count == p)
    index = max(0, min(position, len(frames) - 1))
    changed = _changed_cells(frames[index - 1]["cells"], cells) if index > 0 else []
    if changed:
        figure.add_trace(
            go.Scatter(
                x=[columns[c] for _, c in changed], y=[f"rank {r}" for r, _ in changed], mode="markers",
                marker={"symbol": "square-open", "size": max(10, min(26, 300 // max(len(columns), p))), "color": FLIGHT_COLOR,
                        "line": {"width": 2.5}},
                hovertext=[f"rank {r}, {columns[c]}: changed in this step" for r, c in changed], hoverinfo="text",
                showlegend=False, name="changed in this step",
            )
        )  # fmt: skip
    figure.update_layout(meta={"step": frame["step"], "full_cells": full, "changed_cells": len(changed)})
    return figure


def index_of(position: int, frames: list) -> int:
    return max(0, min(position, len(frames) - 1))


def _changed_cells(before: list[list[int]], after: list[list[int]]) -> list[tuple[int, int]]:
    """(rank, cell) of the cells whose content differs between two frames (red outlines)."""
    return [(r, c) for r, (old, new) in enumerate(zip(before, after)) for c, (a, b) in enumerate(zip(old, new)) if a != b]


def _ranks_in(mask: int) -> list[str]:
    return [str(bit) for bit in range(mask.bit_length()) if mask >> bit & 1]


# ----------------------------------------------------------------------------- DDP


def ddp_timeline(events: Sequence[dict[str, Any]], title: str = "DDP step: backward compute and bucket all-reduces") -> go.Figure:
    """Compute and communication lanes of one rank, bars coloured by bucket; gradient-ready
    instants as ticks on their own lane."""
    rows = [row for row in events if row.get("rank", 0) in (0, -1)] or list(events)
    if not rows:
        return note_figure("no events", title)
    factor, unit = time_unit(max(row["end_s"] for row in rows))
    figure = _base(title, 320)
    kinds = [
        kind
        for kind in dict.fromkeys(row["kind"] for row in rows)
        if kind == "grad_ready" or any(r["end_s"] > r["start_s"] for r in rows if r["kind"] == kind)
    ]
    figure = _base(title, max(260, 90 + 36 * len(kinds)))
    for kind in kinds:
        mine = [row for row in rows if row["kind"] == kind]
        colors = [PALETTE[int(row.get("bucket", 0)) % len(PALETTE)] if int(row.get("bucket", -1)) >= 0 else "#9ecae1" for row in mine]
        hover = [
            f"{kind} {row.get('name') or ''}<br>bucket {row.get('bucket')}, {format_size(row.get('bytes', 0))}<br>{format_time(row['start_s'])} → {format_time(row['end_s'])}"
            for row in mine
        ]
        if kind.endswith("grad_ready"):
            figure.add_trace(
                go.Scatter(
                    x=[row["start_s"] * factor for row in mine],
                    y=[kind] * len(mine),
                    mode="markers",
                    marker={"symbol": "line-ns-open", "size": 14, "color": colors, "line": {"width": 2}},
                    hovertext=hover,
                    hoverinfo="text",
                    name=kind,
                )
            )
            continue
        figure.add_trace(
            go.Bar(
                y=[kind] * len(mine),
                x=[(row["end_s"] - row["start_s"]) * factor for row in mine],
                base=[row["start_s"] * factor for row in mine],
                orientation="h",
                name=kind,
                marker={"color": colors, "line": {"width": 0.5, "color": "white"}},
                hovertext=hover,
                hoverinfo="text",
            )
        )
    figure.update_xaxes(title=f"time ({unit})")
    figure.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=kinds, automargin=True)  # lane names whole
    figure.update_layout(barmode="overlay", showlegend=False, meta={"kinds": kinds})
    return figure


def overhead_figure(
    curves: dict[str, Sequence[tuple[float, float]]],
    optimum: tuple[float, float] | None = None,
    current: float | None = None,
    measured: Sequence[tuple[float, float]] = (),
) -> go.Figure:
    """Overhead (comm end - backward end) vs bucket size: named curves, measured points, optimum."""
    points = [y for curve in curves.values() for _, y in curve] + [y for _, y in measured]
    if not points:
        return note_figure("no overhead curve", "Overhead vs bucket size")
    factor, unit = time_unit(max(points))
    figure = _base("Overhead vs bucket size", 380)
    styles = {"simulated": {"width": 3}, "closed form": {"dash": "dash"}, "fitted": {"dash": "dot"}}
    for index, (name, curve) in enumerate(curves.items()):
        figure.add_trace(
            go.Scatter(
                x=[x for x, _ in curve],
                y=[y * factor for _, y in curve],
                mode="lines+markers" if name == "simulated" else "lines",
                name=name,
                line={"color": PALETTE[index], **styles.get(name, {})},
            )
        )
    if measured:
        figure.add_trace(
            go.Scatter(
                x=[x for x, _ in measured],
                y=[y * factor for _, y in measured],
                mode="markers",
                name="measured",
                marker={"size": 9, "color": "black", "symbol": "x"},
            )
        )
    if optimum:
        figure.add_trace(
            go.Scatter(
                x=[optimum[0]],
                y=[optimum[1] * factor],
                mode="markers+text",
                name="optimum",
                marker={"size": 14, "symbol": "star", "color": "#d62728"},
                text=[f"best {format_size(optimum[0])}"],
                textposition="top center",
            )
        )
    if current:
        figure.add_vline(x=current, line={"dash": "dot", "color": "#888"})
    sizes = [x for curve in curves.values() for x, _ in curve] + [x for x, _ in measured]
    figure.update_xaxes(type="log", title="bucket size", **byte_axis(min(sizes), max(sizes)))
    figure.update_yaxes(title=f"overhead ({unit})", rangemode="tozero")
    return figure


def strategy_figure(times: dict[str, dict[str, float]]) -> go.Figure:
    """Overhead per strategy (communication left after backward ends), one readable bar each:
    backward is the same for every strategy, so stacking it would leave the overheads a few pixels."""
    if not times:
        return note_figure("no strategies", "Overhead per strategy")
    overheads = {name: max(row["step_time_s"] - row["backward_end_s"], 0.0) for name, row in times.items()}
    names = sorted(overheads, key=overheads.get)
    factor, unit = time_unit(max(overheads.values()) or 1e-9)
    figure = _base("Overhead per strategy (after backward)", 340)
    figure.add_trace(
        go.Bar(
            y=names, x=[overheads[n] * factor for n in names], orientation="h", marker_color="#ff7f0e",
            text=[format_time(overheads[n]) for n in names], textposition="auto", textfont={"size": 13},
            hovertemplate=[f"{n}: overhead {format_time(overheads[n])}, step {format_time(times[n]['step_time_s'])}<extra></extra>" for n in names],
            name="overhead",
        )
    )  # fmt: skip
    figure.update_xaxes(title=f"overhead ({unit})", rangemode="tozero")
    figure.update_yaxes(tickfont={"size": 13})
    figure.update_layout(showlegend=False, meta={"overheads": overheads})
    return figure


# ----------------------------------------------------------------------------- sim vs measured


def fit_figure(
    points: Sequence[dict[str, Any]], fit: dict[str, Any] | None, title: str = "Measured time vs size, fit t = o + n / w"
) -> go.Figure:
    """Measured points (size_bytes, time_s), the (o, w) line and its band; log-log axes."""
    if not points:
        return note_figure("no measurements selected", title)
    factor, unit = time_unit(max(p["time_s"] for p in points))
    figure = _base(title, 380)
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
    figure = _base(title, 300)
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
    figure = _base(title, 380)
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

PART_COLORS = {"latency": "#1f77b4", "bandwidth": "#ff7f0e", "reduction": "#2ca02c", "overhead": "#9467bd", "contention": "#d62728"}


def side_by_side_figure(columns: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray]]) -> go.Figure:
    """Two runs' per-rank activity (operations in flight per time bin) stacked on one time axis:
    ``columns`` holds (label, rank per interval, start, end) for each run."""
    from plotly.subplots import make_subplots

    span = max(float(ends.max()) for _, _, _, ends in columns if len(ends)) or 1.0
    factor, unit = time_unit(span)
    figure = make_subplots(rows=len(columns), cols=1, shared_xaxes=True, vertical_spacing=0.12, subplot_titles=[c[0] for c in columns])
    figure.update_layout(margin={"l": 60, "r": 20, "t": 60, "b": 48}, template={})
    centres = (np.arange(UTIL_BINS) + 0.5) * span / UTIL_BINS * factor
    for row, (label, ranks, starts, ends) in enumerate(columns, start=1):
        count = int(ranks.max()) + 1 if len(ranks) else 1
        grid = in_flight(ranks, starts, ends, count, span)
        figure.add_trace(
            go.Heatmap(z=grid.astype(np.float32), x=centres, y=[f"rank {r}" for r in range(count)], colorscale="Blues", zmin=0,
                       showscale=row == 1, colorbar={"title": {"text": "in flight"}, "thickness": 12},
                       hovertemplate=f"{label}<br>%{{y}}, %{{x:.4g}} {unit}: %{{z:.2f}} in flight<extra></extra>", name=label),
            row=row, col=1,
        )  # fmt: skip
        figure.update_yaxes(autorange="reversed", row=row, col=1, nticks=min(count, 12))
        figure.add_vline(x=float(ends.max()) * factor if len(ends) else 0, line={"dash": "dot", "color": "#d62728"}, row=row, col=1)
    figure.update_xaxes(title=f"time ({unit}), one axis for both", row=len(columns), col=1, range=[0, span * factor])
    figure.update_layout(
        title={"text": "Side by side: per-rank activity on one time axis", "x": 0.01, "font": {"size": 15}},
        height=200 + 160 * len(columns),
        meta={"columns": [c[0] for c in columns], "span_s": span},
    )
    return figure


def parts_figure(labels: Sequence[str], parts: Sequence[dict[str, float]]) -> go.Figure:
    """Each run's time split into latency, bandwidth, reduction, overhead and contention
    (stacked), and in the title the difference and the part that explains most of it."""
    if not parts:
        return note_figure("nothing to compare", "Where the difference comes from")
    factor, unit = time_unit(max(p["total"] for p in parts))
    names = ["latency", "bandwidth", "reduction", "overhead", "contention"]
    title = "Where the time goes"
    if len(parts) == 2:
        diff = {name: parts[1][name] - parts[0][name] for name in names}
        main = max(diff, key=lambda name: abs(diff[name]))
        total = parts[1]["total"] - parts[0]["total"]
        sign = "+" if total >= 0 else "−"
        title = f"{labels[1]} vs {labels[0]}: {sign}{format_time(abs(total))}, mostly {main} ({'+' if diff[main] >= 0 else '−'}{format_time(abs(diff[main]))})"
        noise = 1e-9 * max(parts[0]["total"], parts[1]["total"])  # float rounding, not a difference (-8.674e-10 ns was shown)
        if abs(total) <= noise and all(abs(value) <= noise for value in diff.values()):
            title = f"{labels[1]} vs {labels[0]}: no difference: the same time, part for part"
    figure = _base("Where the time goes", 340)
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

TRAINING_LANES = {
    "forward": "compute",
    "backward": "compute",
    "optimizer": "compute",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "all_reduce": "all-reduce",
    "comm": "all-reduce",  # ddp / zero1: sim.training.ddp's bucket all-reduces
}
MEMORY_PARTS = (
    ("params_bytes", "params", "#1f77b4"),
    ("grads_bytes", "grads", "#2ca02c"),
    ("optimizer_bytes", "optimizer", "#9467bd"),
    ("unsharded_peak_bytes", "unsharded (peak)", "#ff7f0e"),
)


def training_timeline(events: Sequence[dict[str, Any]], title: str = "Training step per unit") -> go.Figure:
    """One rank's step from ``FSDPResult.events()``: lanes compute / all-gather / reduce-scatter
    (and all-reduce where the strategy has them), bars coloured by unit, forward and optimizer
    compute drawn lighter than backward."""
    rows = [row for row in events if row.get("kind") in TRAINING_LANES and row["end_s"] > row["start_s"]]
    if not rows:
        return note_figure("no events", title)
    order = ("compute", "all-gather", "reduce-scatter", "all-reduce")
    lanes = [lane for lane in order if any(TRAINING_LANES[row["kind"]] == lane for row in rows)]
    factor, unit = time_unit(max(row["end_s"] for row in rows))
    figure = _base(title, max(240, 110 + 44 * len(lanes)))
    for kind in dict.fromkeys(row["kind"] for row in rows):
        mine = [row for row in rows if row["kind"] == kind]
        lane = TRAINING_LANES[kind]
        colors = [PALETTE[int(row.get("bucket", 0)) % len(PALETTE)] if int(row.get("bucket", -1)) >= 0 else "#7f7f7f" for row in mine]
        figure.add_trace(
            go.Bar(
                y=[lane] * len(mine),
                x=[(row["end_s"] - row["start_s"]) * factor for row in mine],
                base=[row["start_s"] * factor for row in mine],
                orientation="h",
                name=kind,
                opacity=0.55 if kind in ("forward", "optimizer") else 1.0,
                marker={"color": colors, "line": {"width": 0.5, "color": "white"}},
                hovertext=[
                    f"{kind} {row.get('name') or ''} (unit {row.get('bucket')})<br>{format_size(row.get('bytes', 0))}<br>"
                    f"{format_time(row['start_s'])} → {format_time(row['end_s'])} ({format_time(row['end_s'] - row['start_s'])})"
                    for row in mine
                ],
                hoverinfo="text",
            )
        )
    figure.update_xaxes(title=f"time ({unit})", rangemode="tozero")
    figure.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=lanes, automargin=True)
    figure.update_layout(
        barmode="overlay", showlegend=False, margin={"l": 110}, meta={"lanes": lanes, "kinds": sorted({row["kind"] for row in rows})}
    )
    return figure


def training_strategies_figure(rows: Sequence[dict[str, Any]], chosen: str | None = None) -> go.Figure:
    """Step time and exposed communication per strategy (rows from ``sim.training.fsdp.compare``),
    grouped horizontal bars; the chosen strategy's label is bold."""
    title = "Step time and exposed comm per strategy"
    if not rows:
        return note_figure("no strategies", title)
    names = [row["sharding"] for row in rows]
    labels = [f"<b>{name}</b>" if name == chosen else name for name in names]
    factor, unit = time_unit(max(row["step_time_s"] for row in rows))
    figure = _base(title, max(340, 150 + 48 * len(rows)))
    for key, name, colour in (("step_time_s", "step time", "#1f77b4"), ("exposed_comm_s", "exposed comm", "#ff7f0e")):
        figure.add_trace(
            go.Bar(
                y=labels, x=[row[key] * factor for row in rows], orientation="h", name=name, marker_color=colour,
                text=[format_time(row[key]) for row in rows], textposition="auto",
                hovertemplate=[f"{n}: {name} {format_time(row[key])}<extra></extra>" for n, row in zip(names, rows)],
            )
        )  # fmt: skip
    figure.update_xaxes(title=f"time ({unit})", rangemode="tozero")
    figure.update_yaxes(autorange="reversed", automargin=True)
    figure.update_layout(
        barmode="group",
        margin={"l": 110, "b": 90},
        legend={"orientation": "h", "y": -0.3, "traceorder": "normal"},
        meta={
            "step_time_s": dict(zip(names, [r["step_time_s"] for r in rows])),
            "exposed_comm_s": dict(zip(names, [r["exposed_comm_s"] for r in rows])),
        },
    )
    return figure


def training_memory_figure(rows: Sequence[dict[str, Any]], chosen: str | None = None) -> go.Figure:
    """Memory per rank per strategy, stacked: parameters, gradients, optimizer state and the peak
    of unsharded (gathered) buffers; activations are not modelled."""
    title = "Memory per rank (no activations)"
    if not rows:
        return note_figure("no strategies", title)
    names = [row["sharding"] for row in rows]
    labels = [f"<b>{name}</b>" if name == chosen else name for name in names]
    figure = _base(title, max(340, 150 + 48 * len(rows)))
    gib = 2**30
    for key, name, colour in MEMORY_PARTS:
        figure.add_trace(
            go.Bar(
                y=labels, x=[row["memory"][key] / gib for row in rows], orientation="h", name=name, marker_color=colour,
                hovertemplate=[f"{n}: {name} {format_size(row['memory'][key])}<extra></extra>" for n, row in zip(names, rows)],
            )
        )  # fmt: skip
    figure.add_trace(
        go.Scatter(
            y=labels, x=[row["memory"]["peak_bytes"] / gib for row in rows], mode="text", name="peak",
            text=[" " + format_size(row["memory"]["peak_bytes"]) for row in rows], textposition="middle right",
            showlegend=False, hoverinfo="skip",
        )
    )  # fmt: skip
    top = max(row["memory"]["peak_bytes"] for row in rows) / gib
    figure.update_xaxes(title="GiB per rank", range=[0, top * 1.3 or 1])
    figure.update_yaxes(autorange="reversed", automargin=True)
    figure.update_layout(
        barmode="stack",
        margin={"l": 110, "b": 90},
        legend={"orientation": "h", "y": -0.3, "traceorder": "normal"},
        meta={"peak_bytes": {n: r["memory"]["peak_bytes"] for n, r in zip(names, rows)}},
    )
    return figure
