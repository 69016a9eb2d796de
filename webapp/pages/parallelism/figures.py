"""The Parallelism page's figures, pure functions (plain data -> Plotly figures): the step's
timeline per pipeline stage and stream, the layout drawn on the cluster, and the sweep's chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from sim.units import format_time
from webapp.figures.common import PALETTE, figure_layout, note_figure, time_unit

__all__ = ["STREAMS", "cluster_figure", "sweep_figure", "timeline_figure"]

STREAMS = ("compute", "tp", "ep", "pp", "dp")
STREAM_NAMES = {"compute": "compute", "tp": "TP", "ep": "EP", "pp": "PP", "dp": "DP"}
COLOURS = {
    "F": "#1f77b4",
    "B": "#0b3d6b",
    "I": "#1f77b4",
    "W": "#6baed6",
    "tp": "#ff7f0e",
    "ep": "#9467bd",
    "pp": "#2ca02c",
    "dp": "#d62728",
}
BUBBLE = "rgba(150,150,150,0.25)"
MAX_NODES_DRAWN = 16
MIN_WIDTH = 0.001  # of the step: a 0.2 ms all-reduce in a 2 s step stays visible (hover gives its times)
MAX_SEGMENTS = 20_000  # above this many rows the layers of one micro-batch's op are drawn as one bar


def _lanes(rows: Sequence[dict[str, Any]], stages: Sequence[int]) -> list[tuple[int, str]]:
    """(rank, stream) lanes, stage by stage, the streams each stage uses."""
    used = {(row["rank"], row["stream"]) for row in rows}
    return [(rank, stream) for rank in stages for stream in STREAMS if (rank, stream) in used or stream == "compute"]


def _idle(rows: Sequence[dict[str, Any]], rank: int, end_s: float) -> list[tuple[float, float]]:
    """The compute stream's gaps on ``rank`` within the step (the bubble, and waits)."""
    busy = sorted((row["start_s"], row["end_s"]) for row in rows if row["rank"] == rank and row["stream"] == "compute")
    gaps, at = [], 0.0
    for start, end in busy:
        if start > at + 1e-12:
            gaps.append((at, start))
        at = max(at, end)
    return gaps + ([(at, end_s)] if end_s > at + 1e-12 else [])


def timeline_figure(rows: Sequence[dict[str, Any]], stages: Sequence[int], step_s: float, title: str) -> go.Figure:
    """One lane per stage and stream (compute, TP, EP, PP, DP) of the representative pipeline;
    each kind one trace of thick segments (at least :data:`MIN_WIDTH` of the step wide, so a short
    collective shows); the compute stream's idle time shaded grey."""
    if not rows:
        return note_figure("no events to draw", title)
    factor, unit = time_unit(step_s)
    if len(rows) > MAX_SEGMENTS:
        rows, title = coarse(rows), f"{title}<br>({len(rows):,} events: each op's layers drawn as one bar)"
    lanes = _lanes(rows, stages)
    index = {lane: number for number, lane in enumerate(lanes)}
    width = max(4.0, min(16.0, 300.0 / len(lanes)))
    traces = [
        go.Scatter(x=xs, y=ys, text=texts, mode="lines", line={"width": width, "color": COLOURS.get(key, "#555")},
                   name=_kind_name(key), hoverinfo="text+x")
        for key, (xs, ys, texts) in _segments(rows, index, step_s, factor).items()
    ]  # fmt: skip
    shapes = [{"type": "rect", "x0": a * factor, "x1": b * factor, "y0": index[(rank, "compute")] - 0.45,
               "y1": index[(rank, "compute")] + 0.45, "fillcolor": BUBBLE, "line": {"width": 0}, "layer": "below"}
              for rank in stages for a, b in _idle(rows, rank, step_s)]  # fmt: skip
    labels = [f"stage {stages.index(rank)} (rank {rank}) {STREAM_NAMES[stream]}" for rank, stream in lanes]
    layout = figure_layout(
        title, max(260, 80 + 26 * len(lanes)),
        xaxis={"title": {"text": f"time ({unit})"}, "range": [0, step_s * factor * 1.01]},
        yaxis={"tickvals": list(range(len(lanes))), "ticktext": labels, "autorange": "reversed"},
        shapes=shapes, hovermode="closest", legend={"orientation": "h", "y": -0.2},
        margin={"l": 190, "r": 20, "t": 48, "b": 70},
    )  # fmt: skip
    return go.Figure(data=traces, layout=layout)


def _segments(rows: Sequence[dict[str, Any]], index: dict, step_s: float, factor: float) -> dict[str, tuple[list, list, list]]:
    """kind -> (x, y, hover texts) of its segments, None between them (one SVG path a kind)."""
    segments: dict[str, tuple[list, list, list]] = {}
    for row in rows:
        lane = index.get((row["rank"], row["stream"]))
        if lane is None:
            continue
        key = row["kind"] if row["stream"] == "compute" else row["stream"]
        xs, ys, texts = segments.setdefault(key, ([], [], []))
        xs += [row["start_s"] * factor, max(row["end_s"], row["start_s"] + MIN_WIDTH * step_s) * factor, None]
        ys += [lane, lane, None]
        texts += [f"{row['name']} ({row['kind']}, {format_time(row['end_s'] - row['start_s'])})"] * 2 + [None]
    return segments


def coarse(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per rank, stream, kind and op of a micro-batch ("F mb3 stage1"), from its first
    layer's start to its last layer's end."""
    merged: dict[tuple, dict[str, Any]] = {}
    for row in rows:
        key = (row["rank"], row["stream"], row["kind"], row["name"].rsplit(" layer", 1)[0])
        if key in merged:
            merged[key]["start_s"] = min(merged[key]["start_s"], row["start_s"])
            merged[key]["end_s"] = max(merged[key]["end_s"], row["end_s"])
        else:
            merged[key] = {**row, "name": key[3]}
    return list(merged.values())


def _kind_name(key: str) -> str:
    return {"F": "forward", "B": "backward", "I": "backward (input)", "W": "backward (weights)"}.get(key, STREAM_NAMES.get(key, key))


def _cell(rank: int, per_node: int) -> tuple[float, float]:
    """The GPU's cell (x, y) in its node's box: nodes in a column of boxes, GPUs in two rows."""
    node, local = divmod(rank, per_node)
    half = max(1, (per_node + 1) // 2)
    return local % half, -(node * 3 + local // half)


def cluster_figure(layout: dict[str, int], nodes: int, links: Sequence[dict[str, Any]], title: str) -> go.Figure:
    """Nodes as boxes, GPUs as cells coloured by pipeline stage (labelled tp/dp rank), TP groups
    outlined inside their node, and the first GPU of each TP group joined to its DP peers across
    nodes (its NIC rail); GPUs the job leaves idle are grey."""
    per_node = layout["gpus_per_node"]
    ranks = layout["tp"] * layout["ep"] * layout["dp"] * layout["pp"]
    shown = min(nodes, MAX_NODES_DRAWN)
    half = max(1, (per_node + 1) // 2)
    shapes = [{"type": "rect", "x0": -0.6, "x1": half - 0.4, "y0": -(n * 3 + 1) - 0.6, "y1": -n * 3 + 0.6,
               "line": {"color": "#444", "width": 2}, "fillcolor": "rgba(0,0,0,0)"} for n in range(shown)]  # fmt: skip
    shapes += _tp_outlines(layout, ranks, shown * per_node)
    traces = [_cells(layout, ranks, shown * per_node), *_dp_rails(layout, ranks, shown * per_node)]
    notes = [f"{row['kind'].upper()} x{row['size']}: {_span(row['nodes'])}, "
             f"{row['link']} {row['bandwidth_Bps'] / 1e9:.0f} GB/s" for row in links]  # fmt: skip
    notes += [f"first {shown} of {nodes} nodes drawn"] if nodes > shown else []
    annotations = [{"text": f"node {n}", "x": -0.7, "y": -n * 3 - 0.5, "showarrow": False, "xanchor": "right", "font": {"size": 11}}
                   for n in range(shown)]  # fmt: skip
    annotations.append({"text": "<br>".join(notes) or "one GPU", "x": 1.0, "y": 1.0, "xref": "paper", "yref": "paper",
                        "showarrow": False, "xanchor": "right", "yanchor": "bottom", "align": "right", "font": {"size": 11}})  # fmt: skip
    layout_ = figure_layout(
        title, max(220, 80 + 95 * shown + 16 * len(notes)), shapes=shapes, annotations=annotations, showlegend=False,
        xaxis={"visible": False, "range": [-2.2, half + 0.5]}, yaxis={"visible": False, "scaleanchor": "x"},
        margin={"l": 20, "r": 20, "t": 60 + 14 * len(notes), "b": 10},
    )  # fmt: skip
    return go.Figure(data=traces, layout=layout_)


def _cells(layout: dict[str, int], ranks: int, drawn: int) -> go.Scatter:
    """The GPUs as square cells: coloured by stage, labelled stage, tp and dp rank; idle ones grey."""
    xs, ys, colours, texts, hovers = [], [], [], [], []
    for gpu in range(drawn):
        x, y = _cell(gpu, layout["gpus_per_node"])
        xs.append(x), ys.append(y)
        if gpu < ranks:
            tp, ep, dp, pp = _coords(gpu, layout)
            colours.append(PALETTE[pp % len(PALETTE)])
            texts.append(f"s{pp}<br>t{tp} d{dp}")
            hovers.append(f"rank {gpu}: stage {pp}, tp {tp}, dp {dp}, ep {ep}")
        else:
            colours.append("#dddddd"), texts.append(""), hovers.append(f"GPU {gpu}: idle")
    return go.Scatter(x=xs, y=ys, mode="markers+text", text=texts, hovertext=hovers, hoverinfo="text", showlegend=False,
                      marker={"symbol": "square", "size": 34, "color": colours, "line": {"color": "#fff", "width": 1}},
                      textfont={"size": 9, "color": "#fff"})  # fmt: skip


def _span(nodes: int) -> str:
    return "inside a node" if nodes == 1 else f"across {nodes} nodes"


def _coords(rank: int, layout: dict[str, int]) -> tuple[int, int, int, int]:
    """(tp, ep, dp, pp) of a rank, as sim's Layout numbers them (Megatron-LM's order, tp fastest)."""
    from sim.training.parallel.layout import Layout

    at = Layout(**layout).coordinates(rank)
    return at.tp, at.ep, at.dp, at.pp


def _tp_outlines(layout: dict[str, int], ranks: int, drawn: int) -> list[dict[str, Any]]:
    """A dashed box round each TP group's cells that lie in one node row."""
    shapes, per_node, tp = [], layout["gpus_per_node"], layout["tp"]
    if tp < 2:
        return shapes
    for first in range(0, min(ranks, drawn), tp):
        cells = [_cell(rank, per_node) for rank in range(first, min(first + tp, drawn))]
        for row in sorted({y for _, y in cells}):
            xs = [x for x, y in cells if y == row]
            shapes.append({"type": "rect", "x0": min(xs) - 0.48, "x1": max(xs) + 0.48, "y0": row - 0.48, "y1": row + 0.48,
                           "line": {"color": "#ff7f0e", "width": 2, "dash": "dot"}})  # fmt: skip
    return shapes


def _dp_rails(layout: dict[str, int], ranks: int, drawn: int) -> list[go.Scatter]:
    """Lines joining the DP groups of each TP group's first GPU (the rail their all-reduce uses)."""
    from sim.training.parallel.layout import Layout

    grid = Layout(**layout)
    if grid.dp < 2:
        return []
    xs: list[Any] = []
    ys: list[Any] = []
    for group in grid.groups("dp"):
        if grid.coordinates(group[0]).tp != 0:
            continue
        for rank in (rank for rank in group if rank < drawn):
            x, y = _cell(rank, grid.gpus_per_node)
            xs.append(x - 0.3), ys.append(y)
        xs.append(None), ys.append(None)
    return [go.Scatter(x=xs, y=ys, mode="lines", line={"color": "#d62728", "width": 2, "dash": "dash"}, hoverinfo="skip", name="DP group")]


def sweep_figure(rows: Sequence[dict[str, Any]], chosen: tuple[int, int, int, int] | None = None) -> go.Figure:
    """Step time of each layout, fastest first; "does not fit" bars hatched grey and marked."""
    title = "Step time by layout (tp x pp x dp x ep)"
    if not rows:
        return note_figure("run the sweep to rank every layout", title)
    names = [f"tp{r['tp']} pp{r['pp']} dp{r['dp']}" + (f" ep{r['ep']}" if r["ep"] > 1 else "") for r in rows]
    factor, unit = time_unit(max(r["step_time_s"] for r in rows))
    colours = ["#2ca02c" if (r["tp"], r["pp"], r["dp"], r["ep"]) == chosen else "#1f77b4" if r["fits"] else "#bbbbbb" for r in rows]
    texts = ["" if r["fits"] else "does not fit" for r in rows]
    bar = go.Bar(x=names, y=[r["step_time_s"] * factor for r in rows], marker={"color": colours}, text=texts, textposition="outside",
                 hovertext=[f"bubble {r['bubble_fraction']:.1%}, {r['memory_bytes'] / 1e9:.1f} GB/GPU" for r in rows])  # fmt: skip
    return go.Figure(data=[bar], layout=figure_layout(title, 360, yaxis={"title": {"text": f"step time ({unit})"}}, showlegend=False))
