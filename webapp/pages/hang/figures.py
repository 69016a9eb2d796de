"""The Hangs page's figure: the wait-for graph of :func:`sim.hang.explain`'s report (plain data
in, a Plotly figure out; no Dash, no I/O)."""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

__all__ = ["MAX_EDGES", "STATE_COLORS", "drawn_edges", "wait_for_figure"]

STATE_COLORS = {"completed": "#2ca02c", "blocked": "#ff7f0e", "mismatched": "#d62728", "dead": "#222222", "stalled": "#7f7f7f"}
CYCLE_COLOR, EDGE_COLOR, MISSING_COLOR = "#d62728", "#9a9a9a", "#d62728"
SIDE = 0.04  # how far an edge is moved to its right (axis units; the circle has radius 1)
MAX_ARROWS = 200  # beyond this many edges, lines without arrow heads (annotations are slow to draw)
MAX_EDGES = 2000  # edges drawn at most (the cycle's always): 512 ranks waiting for 512 others are 262,144 edges


def _positions(count: int) -> list[tuple[float, float]]:
    """Ranks round a circle, rank 0 at the top, clockwise."""
    return [(math.sin(2 * math.pi * r / count), math.cos(2 * math.pi * r / count)) for r in range(count)]


def _ends(xy: list[tuple[float, float]], a: int, b: int) -> tuple[float, float, float, float]:
    """An edge a -> b moved a little to its right: a -> b and b -> a are two arrows side by side."""
    (x0, y0), (x1, y1) = xy[a], xy[b]
    length = math.hypot(x1 - x0, y1 - y0) or 1.0
    dx, dy = SIDE * (y1 - y0) / length, -SIDE * (x1 - x0) / length
    return x0 + dx, y0 + dy, x1 + dx, y1 + dy


def _cycle_edges(cycle: list[int]) -> set[tuple[int, int]]:
    return {(cycle[i], cycle[(i + 1) % len(cycle)]) for i in range(len(cycle))} if cycle else set()


def wait_for_figure(report: dict[str, Any]) -> go.Figure:
    """Ranks as nodes (coloured by state), an arrow a -> b where rank a waits for rank b; the
    cycle's edges in red, the missing party's ranks ringed in red."""
    ranks, cycle, missing = report["ranks"], list(report["cycle"]), set(report["missing"])
    xy = _positions(len(ranks))
    red = _cycle_edges(cycle)
    drawn = drawn_edges(report["wait_for"], red)
    figure = go.Figure()
    for in_cycle in (False, True):
        edges = [(a, b) for a, b in drawn if ((a, b) in red) == in_cycle]
        ends = [_ends(xy, a, b) for a, b in edges]
        xs = [v for x0, _, x1, _ in ends for v in (x0, x1, None)]
        ys = [v for _, y0, _, y1 in ends for v in (y0, y1, None)]
        name = "waits for (the cycle)" if in_cycle else "waits for"
        figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name, hoverinfo="skip",
                                    line={"color": CYCLE_COLOR if in_cycle else EDGE_COLOR, "width": 3 if in_cycle else 1.5}))  # fmt: skip
    for state, colour in STATE_COLORS.items():
        members = [r for r in ranks if r["state"] == state]
        if not members:
            continue
        figure.add_trace(go.Scatter(
            x=[xy[r["rank"]][0] for r in members], y=[xy[r["rank"]][1] for r in members], mode="markers+text", name=state,
            text=[str(r["rank"]) for r in members], textposition="middle center", textfont={"color": "white"},
            marker={"size": 28 if len(ranks) <= 32 else 10, "color": colour,
                    "line": {"width": [4 if r["rank"] in missing else 0 for r in members], "color": MISSING_COLOR}},
            hovertext=[_hover(r, r["rank"] in missing) for r in members], hoverinfo="text",
        ))  # fmt: skip
    if len(drawn) <= MAX_ARROWS:
        for a, b in drawn:
            colour = CYCLE_COLOR if (a, b) in red else EDGE_COLOR
            x0, y0, x1, y1 = _ends(xy, a, b)
            figure.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                                  showarrow=True, arrowhead=3, arrowsize=1.4, arrowwidth=2, arrowcolor=colour, standoff=15, startstandoff=15)  # fmt: skip
    figure.update_layout(
        title={"text": _title(report, len(drawn)), "font": {"size": 14}}, height=420, margin={"l": 20, "r": 20, "t": 60, "b": 20},
        xaxis={"visible": False, "range": [-1.35, 1.35]}, yaxis={"visible": False, "range": [-1.3, 1.3], "scaleanchor": "x"},
        legend={"orientation": "h", "y": -0.02}, plot_bgcolor="white",
    )  # fmt: skip
    return figure


def drawn_edges(edges: list, red: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """The edges drawn: the cycle's, then the others in order, :data:`MAX_EDGES` in all at most."""
    cycle = [tuple(edge) for edge in edges if tuple(edge) in red]
    others = [tuple(edge) for edge in edges if tuple(edge) not in red]
    return cycle + others[: max(0, MAX_EDGES - len(cycle))]


def _ranks_text(ranks: list[int]) -> str:
    shown = ", ".join(map(str, ranks[:8]))
    return shown if len(ranks) <= 8 else f"{shown}, ... ({len(ranks)} ranks)"


def _hover(rank: dict[str, Any], missing: bool) -> str:
    where = f"{rank['group']} #{rank['seq']} {rank['op']}" if rank["op"] else f"call {rank['call_index']}"
    waits = ", ".join(map(str, rank["waits_for"])) or "nobody"
    return f"rank {rank['rank']}: {rank['state']} at {where}; waits for {waits}" + (" (a missing party)" if missing else "")


def _title(report: dict[str, Any], drawn: int) -> str:
    total = len(report["wait_for"])
    some = f"; {drawn:,} of its {total:,} edges drawn" if drawn < total else ""
    if report["cycle"]:
        loop = " → ".join(map(str, [*report["cycle"], report["cycle"][0]]))
        return f"wait-for graph: cycle {loop} (red){some}"
    if report["missing"]:
        return f"wait-for graph: missing party {_ranks_text(list(report['missing']))} (ringed red){some}"
    if report["wait_for"]:
        return f"wait-for graph{some}"
    return "wait-for graph: no rank waits for another"
