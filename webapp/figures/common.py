"""What every page's figures share: the base figure, time units, byte axes, notes, and the
timelines (per-lane bars, or a lane x time raster of operations in flight at scale).

Pure functions: results -> Plotly figures. No Dash, no I/O; unit-tested without a browser.
Times are drawn in one unit per figure (s, ms, us or ns, picked from the largest time) so axes
read "1.2 ms", not "0.0012".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import Any

import numpy as np
import plotly.graph_objects as go

from sim.units import format_size

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
# Busy = dark, idle = light, written out: Plotly.js's own "Blues" (what the name alone gives a figure
# built as dicts) runs the other way, dark at 0, and an all-busy heatmap looked idle (issue 36 E6).
BUSY_SCALE = [[index / 8, colour] for index, colour in enumerate(
    ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")
)]  # fmt: skip
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


def byte_axis(low: float, high: float) -> dict[str, Any]:
    """Log-axis ticks at powers of two written in binary units (1 KiB, 1 MiB), as the inputs are."""
    low, high = max(float(low or 1), 1.0), max(float(high or 1), 1.0)
    first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
    step = max(1, math.ceil((last - first + 1) / 8))
    values = [2.0**k for k in range(first, last + 1, step)]
    return {"tickvals": values, "ticktext": [format_size(int(v)) for v in values]}


def figure_layout(title: str, height: int = 360, **more: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "x": 0.01, "font": {"size": 15}},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 48, "b": 48},
        "template": {},  # none (plotly.py would otherwise attach its 7 kB default, another look)
        **more,
    }


def base_figure(title: str, height: int = 360) -> go.Figure:
    """A figure with its title, height and margins, built from one layout dict and not checked
    (built by this module only: property checks and update_layout cost ~5 ms a figure)."""
    return go.Figure(layout=figure_layout(title, height), _validate=False)


class Draft:
    """A figure being built as plain dicts, with the few calls this package's figures make
    (add_trace, update_layout, update_xaxes, update_yaxes: nested dicts merged, as Plotly
    does); :meth:`figure` makes the Plotly figure once, unchecked. Plotly's own calls cost
    5-10 ms each in path parsing and checks: a player frame made ~15 of them."""

    def __init__(self, title: str, height: int = 360) -> None:
        self.data: list[dict[str, Any]] = []
        self.layout = figure_layout(title, height)

    def add_trace(self, trace: dict[str, Any]) -> None:
        self.data.append(trace)

    def update_layout(self, **changes: Any) -> None:
        _merge(self.layout, changes)

    def update_xaxes(self, **changes: Any) -> None:
        _merge(self.layout.setdefault("xaxis", {}), changes)

    def update_yaxes(self, **changes: Any) -> None:
        _merge(self.layout.setdefault("yaxis", {}), changes)

    def add_annotation(self, **annotation: Any) -> None:
        self.layout.setdefault("annotations", []).append(annotation)

    def figure(self) -> go.Figure:
        return go.Figure(data=self.data, layout=self.layout, _validate=False)


def _merge(target: dict[str, Any], changes: dict[str, Any]) -> None:
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value


def trace(kind: str, **properties: Any) -> dict[str, Any]:
    """A trace as a dict (``trace("scatter", x=..., ...)``), for :class:`Draft`: not checked."""
    return {"type": kind, **properties}


def revised(figure: go.Figure, *more: Any) -> go.Figure:
    """``figure`` with a hash of its data (and of ``more``) as ``layout.datarevision``: Plotly.react
    then redraws its traces only when the hash changed (it compares data arrays by identity, and
    every figure from the server is new), e.g. not the step player's figures at the same step of
    a run with another message size (webapp/assets/react.js keeps the rest of the layout
    comparable). ``more``: what else must force a redraw (a shape that moves the axis range)."""
    import hashlib
    import json

    from plotly.utils import PlotlyJSONEncoder

    data = json.dumps([[trace.to_plotly_json() for trace in figure.data], more], cls=PlotlyJSONEncoder)
    figure.layout["datarevision"] = hashlib.blake2b(data.encode(), digest_size=8).hexdigest()
    return figure


def note_figure(text: str, title: str = "", height: int = 300) -> go.Figure:
    """An empty figure that says why there is nothing to draw."""
    figure = base_figure(title, height)
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
    rows: Sequence[dict[str, Any]],
    lane: str,
    color_by: str,
    title: str,
    lane_label: str = "",
    cut_note: str = "",
    all_lanes: Sequence[Any] = (),
) -> go.Figure:
    """Bars from start_s to end_s, one lane per ``row[lane]``, coloured by a number.

    Each bar is a thick line segment; the segments of one colour (values binned into at most
    ``COLOR_BINS`` colours) and kind share one SVG path, so a browser draws thousands of
    messages as a few dozen paths instead of one element per bar (hover on a bar's middle).
    Above ``SEGMENT_BARS`` bars the lanes are drawn as an image of ``RASTER_BINS`` time bins
    (a heatmap), which draws in milliseconds whatever the number of messages.

    Steps are numbered as the player numbers them: from 1, in order of the recorded steps.
    ``all_lanes``: lanes drawn even when nothing happens on them (ranks that only receive).
    """
    if not rows:
        return note_figure("no events to draw", title)
    factor, unit = time_unit(max(row["end_s"] for row in rows))
    lanes = sorted({row[lane] for row in rows} | set(all_lanes), key=_lane_key)
    lane_index = {value: index for index, value in enumerate(lanes)}
    columns = ("src", "dst", "bytes", "step", "chunk", "start_s", "end_s")
    table = np.array(list(map(itemgetter(*columns), rows)), dtype=float)
    table[:, 5:] *= factor
    table[:, 3] = player_step_numbers(table[:, 3])
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
        traces += _segment_traces(table, lane_numbers, row_kinds, bins, (low, high), width_px, unit)
    traces.append(_colour_bar(low, high, color_by))
    meta = {"bars": len(rows), "lanes": len(lanes), "kinds": sorted(set(row_kinds.tolist())), "time_factor": factor}
    layout = _timeline_layout(title, height, _lane_axis(lane_texts, raster=len(rows) > SEGMENT_BARS), unit, cut_note, meta)
    return go.Figure(data=traces, layout=layout, _validate=False)


def _timeline_layout(title: str, height: int, yaxis: dict[str, Any], unit: str, cut_note: str, meta: dict[str, Any]) -> dict[str, Any]:
    """A timeline's layout: lanes down, time across, what was left out written top right."""
    annotations = []
    if cut_note:
        annotations.append(
            {"text": cut_note, "x": 1, "y": 1.06, "xref": "paper", "yref": "paper", "showarrow": False, "xanchor": "right", "font": {"size": 11, "color": "#a00"}}
        )  # fmt: skip
    return figure_layout(
        title,
        height,
        yaxis=yaxis,
        xaxis={"title": {"text": f"time ({unit})"}, "rangemode": "tozero"},
        showlegend=False,
        hovermode="closest",
        meta=meta,
        annotations=annotations,
    )


def player_step_numbers(steps: np.ndarray) -> np.ndarray:
    """Recorded step values -> the player's step numbers: 1 for the first step recorded, 2 for
    the next, ... (the player's slider counts the same way; 0 is its "inputs" position)."""
    return np.searchsorted(np.unique(steps), steps).astype(float) + 1.0


def step_mark(start_s: float, end_s: float, factor: float, label: str = "") -> dict[str, Any]:
    """A translucent vertical band over [start_s, end_s] (seconds; the figure's time axis is
    scaled by ``factor``): the player's current step on a timeline."""
    return {
        "type": "rect", "xref": "x", "yref": "paper", "x0": start_s * factor, "x1": end_s * factor, "y0": 0, "y1": 1,
        "fillcolor": "rgba(214,39,40,0.12)", "line": {"color": FLIGHT_COLOR, "width": 1, "dash": "dot"}, "layer": "below",
        "name": "player step", "label": {"text": label, "textposition": "top center", "font": {"size": 10, "color": FLIGHT_COLOR}},
    }  # fmt: skip


def _segment_traces(
    table: np.ndarray, lanes: np.ndarray, kinds: np.ndarray, bins: np.ndarray, span: tuple[float, float], width_px: float, unit: str
) -> list[go.Scatter]:
    """Per kind, one line trace per colour bin (the bars) and one hover trace (their middles)."""
    low, high = span
    traces = []
    for kind in sorted(set(kinds.tolist())):
        thickness = width_px * (1.0 if kind == "send" else 0.45)
        for colour_bin in np.unique(bins):
            mask = (kinds == kind) & (bins == colour_bin)
            if mask.any():
                colour = _colour(low + (colour_bin + 0.5) * (high - low) / COLOR_BINS, low, high)
                traces.append(_segments(table[mask], lanes[mask], kind, colour, thickness))
        mask = kinds == kind
        traces.append(_bar_hover(table[mask], lanes[mask], kind, thickness, unit))
    return traces


def _colour_bar(low: float, high: float, color_by: str) -> go.Scatter:
    """An invisible trace that carries the colour bar (whole-number ticks)."""
    bar = {"title": {"text": color_by}, "thickness": 12, **_integer_ticks(low, high)}
    marker = {
        "color": [low],
        "cmin": low,
        "cmax": high if high > low else low + 1,
        "colorscale": "Viridis",
        "showscale": True,
        "colorbar": bar,
    }
    return go.Scatter(x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip", marker=marker, _validate=False)


def _lane_axis(lane_texts: list[str], raster: bool) -> dict[str, Any]:
    """Lanes top to bottom, at most ``MAX_LANE_LABELS`` labelled (every lane's label costs the
    browser); a raster's lanes are categories (its hover names them)."""
    shown = range(0, len(lane_texts), math.ceil(len(lane_texts) / MAX_LANE_LABELS))
    return {
        "tickvals": [lane_texts[i] if raster else i for i in shown],
        "ticktext": [lane_texts[i] for i in shown],
        "range": [len(lane_texts) - 0.5, -0.5],
        "type": "category" if raster else "linear",
        "title": None,
        "automargin": True,  # long lane names ("12->switch") widen the margin instead of being cut
        "showgrid": False,
        "zeroline": False,
    }


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
    counts = last - first
    bar = np.repeat(np.arange(len(first)), counts)
    cells = lanes.astype(np.int64)[bar] * RASTER_BINS + first[bar] + np.arange(len(bar)) - np.repeat(np.cumsum(counts) - counts, counts)
    cells, latest = np.unique(cells[::-1], return_index=True)  # a bin shows the last bar covering it
    image.flat[cells] = np.asarray(values, dtype=np.float32)[bar[::-1][latest]]
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
    chunk = ", chunk %{customdata[4]:.0f}" if (table[:, 4] >= 0).any() else ""  # -1: the algorithm has no chunks
    return go.Scatter(
        x=(table[:, 5] + table[:, 6]) / 2,
        y=lanes,
        mode="markers",
        marker={"size": max(6.0, width_px), "opacity": 0, "maxdisplayed": 1},  # hover needs the points, not their SVG nodes
        customdata=table,
        hovertemplate=f"{kind} {verb}<br>%{{customdata[2]:,.0f}} bytes, step %{{customdata[3]:.0f}}{chunk}<br>%{{customdata[5]:.4g}} → %{{customdata[6]:.4g}} {unit}<extra></extra>",
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
    lane_names: Sequence[str],
    lanes: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    title: str,
    what: str = "messages in flight",
    keep_idle: bool = False,
) -> go.Figure:
    """The whole run at any size: lane x time heatmap of the mean number of ``what`` per time
    bin, and beside it each lane's busy fraction (time with at least one in flight). Lanes in
    natural order (rank 2 before rank 14); lanes with nothing on them are left out unless
    ``keep_idle`` (ranks that only receive are still ranks)."""
    if not len(starts):
        return note_figure("no events to draw", title)
    span = float(ends.max()) or 1.0
    order = sorted(range(len(lane_names)), key=lambda i: _lane_key(lane_names[i]))
    position = np.empty(len(order), dtype=int)
    position[order] = np.arange(len(order))
    used = np.unique(lanes)
    keep = order if keep_idle else [i for i in order if i in set(used.tolist())]
    rows = {lane: row for row, lane in enumerate(keep)}
    mapped = np.array([rows[lane] for lane in lanes.tolist()], dtype=int)
    grid = in_flight(mapped, starts, ends, len(keep), span)
    busy = busy_fraction(mapped, starts, ends, len(keep), span)
    factor, unit = time_unit(span)
    names = [str(lane_names[i]) for i in keep]
    centres = (np.arange(UTIL_BINS) + 0.5) * span / UTIL_BINS * factor
    figure = Draft(title, max(300, min(900, 110 + 6 * len(keep))))
    figure.add_trace(
        trace(
            "heatmap", z=grid.astype(np.float32), x=centres, y=names, colorscale=BUSY_SCALE, zmin=0, xaxis="x", yaxis="y",
            colorbar={"title": {"text": what.replace(" in ", "<br>in ", 1), "side": "top"}, "thickness": 12, "x": 1.0},
            hovertemplate=f"%{{y}}, %{{x:.4g}} {unit}: %{{z:.2f}} {what}<extra></extra>", name="in flight",
        )
    )  # fmt: skip
    figure.add_trace(
        trace(
            "bar", x=busy * 100, y=names, orientation="h", xaxis="x2", yaxis="y", marker={"color": "#ff7f0e"}, name="busy",
            hovertemplate="%{y}: busy %{x:.1f}% of the run<extra></extra>",
        )
    )  # fmt: skip
    shown = list(range(0, len(names), math.ceil(len(names) / MAX_LANE_LABELS)))
    figure.update_layout(
        xaxis={"domain": [0, 0.78], "title": {"text": f"time ({unit}), whole run in {UTIL_BINS} bins"}, "range": [0, span * factor]},
        xaxis2={"domain": [0.82, 0.95], "title": {"text": "busy (%)"}, "range": [0, 100], "anchor": "y"},
        yaxis={"type": "category", "categoryorder": "array", "categoryarray": names, "autorange": "reversed",
               "tickvals": [names[i] for i in shown], "ticktext": [names[i] for i in shown], "automargin": True},
        showlegend=False,
        meta={"utilisation": True, "lanes": len(names), "span_s": span, "bars": int(len(starts)), "time_factor": factor},
    )  # fmt: skip
    return figure.figure()


RASTER_MAX_LANES = 256  # up to here a rank timeline too busy for bars is drawn as a step-coloured image


def rank_timeline(
    result_events: Callable[[], list],
    ranks: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    color_by: str = "step",
    rank_count: int | None = None,
    values: np.ndarray | None = None,
) -> go.Figure:
    """Per-rank timeline: bars while drawable (``result_events()`` builds them); above that, up
    to ``RASTER_MAX_LANES`` ranks, the bars as an image coloured by ``values`` (each interval's
    step or chunk, so the steps stay readable where every rank is always busy); else the whole
    run as utilisation (sends and reductions in flight per rank) with each rank's busy fraction.
    ``rank_count``: every rank gets a lane, also one that only receives."""
    count = rank_count or (int(ranks.max()) + 1 if len(ranks) else 0)
    if len(starts) <= SEGMENT_BARS:
        return rank_gantt(result_events(), color_by, ranks=count)
    if values is not None and max(count, int(ranks.max()) + 1) <= RASTER_MAX_LANES:
        return interval_raster(ranks, starts, ends, values, max(count, int(ranks.max()) + 1), color_by)
    names = [f"rank {r}" for r in range(max(count, int(ranks.max()) + 1))]
    title = f"Per-rank activity, whole run ({len(starts):,} sends and reductions; too many to draw one by one)"
    return utilisation_figure(names, ranks, starts, ends, title, "operations in flight", keep_idle=True)


def interval_raster(lanes: np.ndarray, starts: np.ndarray, ends: np.ndarray, values: np.ndarray, count: int, color_by: str) -> go.Figure:
    """Per-rank timeline of many intervals as an image (:func:`_raster`): rank x time bin, each
    bin coloured by the step (or chunk) of the last interval covering it."""
    factor, unit = time_unit(float(ends.max()))
    table = np.zeros((len(starts), 7))
    table[:, 5], table[:, 6] = starts * factor, ends * factor
    if color_by == "step":
        values = player_step_numbers(values)
    low, high = float(values.min()), float(values.max())
    names = [f"rank {r}" for r in range(count)]
    traces = [_raster(table, lanes, names, values, low, high, color_by, unit), _colour_bar(low, high, color_by)]
    title = f"Per-rank timeline (colour: {color_by}; {len(starts):,} sends and reductions in {RASTER_BINS} time bins)"
    meta = {"bars": len(starts), "lanes": count, "kinds": ["reduce", "send"], "time_factor": factor, "raster": True}
    layout = _timeline_layout(title, max(260, min(900, 90 + 9 * count)), _lane_axis(names, raster=True), unit, "", meta)
    return go.Figure(data=traces, layout=layout, _validate=False)


def link_timeline(
    names: Sequence[str], lanes: np.ndarray, starts: np.ndarray, ends: np.ndarray, rows: Callable[[], list], color_by: str = "step"
) -> go.Figure:
    """Per-link timeline: bars while drawable (``rows()`` builds them), else utilisation."""
    if len(starts) <= SEGMENT_BARS:
        return link_gantt(rows(), color_by)
    title = f"Per-link utilisation, whole run ({len(starts):,} link crossings; too many to draw one by one)"
    return utilisation_figure(names, lanes, starts, ends, title)


def rank_gantt(events: Sequence[dict[str, Any]], color_by: str = "step", limit: int = GANTT_BARS, ranks: int = 0) -> go.Figure:
    """Per-rank timeline of a result's events (sends and reductions), EVENT_COLUMNS rows; with
    ``ranks``, a lane for each of ranks 0..ranks-1 (a rank that only receives has no events)."""
    rows, note = limit_lanes(events, "rank", limit)
    rows = [dict(row, src=row["rank"], dst=row["peer"]) for row in rows]
    shown = range(ranks) if not note else ()
    return gantt_figure(rows, "rank", color_by, f"Per-rank timeline (colour: {color_by})", "rank", note, all_lanes=shown)


def link_gantt(rows: Sequence[dict[str, Any]], color_by: str = "step", limit: int = GANTT_BARS) -> go.Figure:
    """Per-link timeline: rows from :func:`sim.collective.player.link_events`."""
    rows, note = limit_lanes(rows, "link", limit)
    return gantt_figure(rows, "link", color_by, f"Per-link timeline (colour: {color_by})", "", note)
