"""Figures of the Collectives page: simulated vs closed form, algorithm crossover, the step
player (topology with messages in flight, per-rank buffers), and the side-by-side comparison."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from sim.collective import explore
from sim.collective.narrative import tree_moves
from sim.units import format_size, format_time
from webapp.figures.common import (
    COMPONENT_COLORS,
    FLIGHT_COLOR,
    PALETTE,
    RANK_COLOR,
    SWITCH_COLOR,
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
    ``nccl`` rows (size_bytes, time_s, pick), what NCCL's tuning model would pick and its time."""
    points = [row for row in rows if row["time_s"] is not None]
    if not points:
        return note_figure("no algorithm of this op can run with these ranks / topology", "Algorithm crossover")
    factor, unit = time_unit(max(row["time_s"] for row in points))
    figure = base_figure("Algorithm crossover over message size", 400)
    algorithms = list(dict.fromkeys(row["algorithm"] for row in rows))
    for index, name in enumerate(algorithms):
        figure.add_trace(_algorithm_trace(name, rows, points, factor, PALETTE[index % len(PALETTE)], name == algorithm))
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
    _crossover_axes(figure, points, factor, unit)
    beyond = sorted({row["algorithm"] for row in rows if row["why"] == "too large to simulate here"}, key=algorithms.index)
    if beyond:  # said where the points are missing, and where to get them
        figure.add_annotation(
            text=f"not simulated here (too many messages): some sizes of {', '.join(beyond)}; `collsim sim crossover` draws more",
            x=1, y=1.02, xref="paper", yref="paper", xanchor="right", yanchor="bottom", showarrow=False, font={"size": 11, "color": "#a00"},
        )  # fmt: skip
    figure.update_layout(meta={"beyond_budget": beyond})
    return figure


def _algorithm_trace(
    name: str, rows: Sequence[dict[str, Any]], points: list[dict[str, Any]], factor: float, colour: str, current: bool
) -> go.Scatter:
    """One algorithm's curve over size; an algorithm that cannot run is a greyed legend entry saying why."""
    mine = [row for row in points if row["algorithm"] == name]
    if not mine:
        why = next((row["why"] for row in rows if row["algorithm"] == name and row["why"]), "")
        return go.Scatter(
            x=[None], y=[None], name=f"{name} (n/a)", mode="lines", line={"color": "#ccc"}, hovertext=why, visible="legendonly"
        )
    return go.Scatter(
        x=[row["size_bytes"] for row in mine],
        y=[row["time_s"] * factor for row in mine],
        mode="lines+markers",
        name=f"{name}" + (" (current)" if current else ""),
        line={"color": colour, "width": 3.5 if current else 1.8},
        hovertemplate=[
            f"{name}: {format_time(row['time_s'])} at {format_size(row['size_bytes'])} ({_how(row['method'])})<extra></extra>"
            for row in mine
        ],
    )


def _crossover_axes(figure: go.Figure, points: list[dict[str, Any]], factor: float, unit: str) -> None:
    """Log-log axes in the inputs' byte units, and the strip of fastest markers under them."""
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


def winners(rows: Iterable[dict[str, Any]]) -> dict[int, str]:
    """size -> the fastest algorithm at that size, among those with a time there (explore.fastest)."""
    return {entry["size_bytes"]: entry["algorithm"] for entry in explore.fastest(rows) if entry["algorithm"]}


def player_positions(player: dict[str, Any]) -> int:
    """Slider positions: 0 is the input (before any message), k is after step ``steps[k-1]``."""
    return len(player["steps"]) + 1


def step_span(player: dict[str, Any], position: int) -> tuple[float, float, int] | None:
    """(first send, last arrival, step number) of the step at slider ``position``, in seconds;
    None at the inputs (position 0)."""
    step, messages = _at(player, position)
    if step is None or not messages:
        return None
    return min(m[2] for m in messages), max(m[3] for m in messages), max(1, min(position, len(player["steps"])))


def _at(player: dict[str, Any], position: int) -> tuple[int | None, list]:
    position = max(0, min(position, len(player["steps"])))
    if position == 0:
        return None, []
    return player["steps"][position - 1], player["messages"][position - 1]


def topology_figure(player: dict[str, Any], position: int) -> go.Figure:
    """The topology with the messages of the step at slider ``position`` drawn as arrows from
    sender to receiver, the links they cross highlighted and busy ranks outlined; with chunks,
    each chunk's arrow beside the others (its own colour, its label apart); beside it the
    algorithm's logical layout (its trees, or hierarchical's node grid) with this step's edges.
    Above the drawable size, :func:`aggregate_figure`."""
    if player.get("aggregate"):
        return aggregate_figure(player, position)
    layout = player["layout"]
    step, messages = _at(player, position)
    where = {node["id"]: (node["x"], node["y"]) for node in layout["nodes"]}
    busy_links = {tuple(link) for src, dst, *_ in messages for link in player["routes"].get(f"{src}>{dst}", [])}
    busy_links |= {(b, a) for a, b in busy_links}
    title = f"Topology ({layout['name']}): " + (step_title(player, position) if step is not None else "before the first message")
    figure = Draft(title, 440)
    for highlighted in (False, True):
        figure.add_trace(_links(layout["edges"], where, busy_links, highlighted))
    busy = {m[0] for m in messages} | {m[1] for m in messages}
    ranks = [node for node in layout["nodes"] if node["rank"] is not None]
    others = [node for node in layout["nodes"] if node["rank"] is None]
    figure.add_trace(
        trace(
            "scatter", x=[n["x"] for n in others], y=[n["y"] for n in others], mode="markers+text",
            marker={"symbol": "square", "size": 16, "color": SWITCH_COLOR}, text=[n["id"] for n in others],
            textposition="bottom center", hoverinfo="text", showlegend=False, name="switches",
        )
    )  # fmt: skip
    label = len(ranks) <= 32
    figure.add_trace(_rank_markers(ranks, busy, label))
    shown = messages[:256]
    offsets = _chunk_offsets(shown, player.get("chunks", 1))
    annotations = [_arrow(where, m[0], m[1], 13 if label else 7, offset, _chunk_colour(m, player)) for m, offset in zip(shown, offsets)]
    hubs = [(n["x"], n["y"]) for n in others]
    logical = player.get("logical")
    if messages:  # beside a logical panel the drawing is half as wide: words for a few arrows only
        chords = len({(m[0], m[1]) for m in messages})
        figure.add_trace(_arrow_labels(shown, where, label_text=chords <= (4 if logical else 32), avoid=hubs, offsets=offsets,
                                       short=bool(logical)))  # fmt: skip
    if logical:
        annotations += _logical_panel(figure, logical, messages, busy)
    figure.update_layout(annotations=annotations)
    figure.update_xaxes(visible=False, scaleanchor="y", scaleratio=1)
    figure.update_yaxes(visible=False)
    if logical:
        figure.update_layout(xaxis={"domain": [0, 0.5]}, xaxis2={"domain": [0.54, 1], "visible": False},
                             yaxis2={"anchor": "x2", "visible": False, "domain": [0, 1]})  # fmt: skip
    figure.update_layout(margin={"l": 10, "r": 10, "t": 48, "b": 10}, meta={"step": step, "in_flight": len(messages)})
    return figure.figure()


CHUNK_COLOURS = (FLIGHT_COLOR, "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
CHUNK_SPREAD = 0.09  # how far apart (unit-circle units) the arrows of a pair's chunks run


def _chunk_colour(message: list, player: dict[str, Any]) -> str:
    chunk = message[5]
    return CHUNK_COLOURS[chunk % len(CHUNK_COLOURS)] if player.get("chunks", 1) > 1 and chunk >= 0 else FLIGHT_COLOR


def _chunk_offsets(messages: list, chunks: int) -> list[float]:
    """Each message's sideways place on its chord: 0 when the chord carries one (sender, chunk)
    in the step, else spread evenly around 0 in the chord's own frame (both directions and
    each chunk an arrow of its own: two chunks on one chord are two arrows, not one; slices
    of one chunk, as NCCL's, share their chunk's arrow)."""
    chords: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for message in messages:
        chords.setdefault((min(message[:2]), max(message[:2])), set()).add((message[0], message[5]))
    offsets = []
    for message in messages:
        carried = sorted(chords[(min(message[:2]), max(message[:2]))])
        place = carried.index((message[0], message[5])) - (len(carried) - 1) / 2 if len(carried) > 1 else 0.0
        offsets.append(place if message[0] < message[1] else -place)  # the same side whichever way it runs
    return offsets


def _shifted(x0: float, y0: float, x1: float, y1: float, offset: float) -> tuple[float, float, float, float]:
    """The chord moved sideways by ``offset`` spreads (perpendicular to it)."""
    length = math.hypot(x1 - x0, y1 - y0) or 1.0
    dx, dy = -(y1 - y0) / length * offset * CHUNK_SPREAD, (x1 - x0) / length * offset * CHUNK_SPREAD
    return x0 + dx, y0 + dy, x1 + dx, y1 + dy


def _logical_panel(figure: Draft, logical: dict[str, Any], messages: list, busy: set) -> list[dict[str, Any]]:
    """The logical layout on the figure's second axes: each tree (root on top, its edges grey)
    or the node grid, ranks numbered, this step's messages as arrows on it; returns the arrows
    and panel titles (annotations)."""
    drawn = _logical_trees(logical, messages) if logical["kind"] == "trees" else _logical_grid(logical, messages)
    points, edges_x, edges_y, annotations = drawn
    figure.add_trace(
        trace("scatter", x=edges_x, y=edges_y, mode="lines", line={"color": "#ccc", "width": 1}, xaxis="x2", yaxis="y2",
              hoverinfo="skip", showlegend=False, name="logical edges")
    )  # fmt: skip
    figure.add_trace(
        trace(
            "scatter", x=[x for _, x, _ in points], y=[y for _, _, y in points], mode="markers+text", xaxis="x2", yaxis="y2",
            marker={"size": 18, "color": RANK_COLOR, "line": {"width": [3 if r in busy else 1 for r, _, _ in points],
                    "color": [FLIGHT_COLOR if r in busy else "white" for r, _, _ in points]}},
            text=[str(r) for r, _, _ in points], textfont={"color": "white", "size": 10}, hovertext=[f"rank {r}" for r, _, _ in points],
            hoverinfo="text", showlegend=False, name="logical ranks",
        )
    )  # fmt: skip
    return annotations


Drawn = tuple[list[tuple[int, float, float]], list, list, list[dict[str, Any]]]  # ranks (rank, x, y), edges x, edges y, annotations


def _logical_trees(logical: dict[str, Any], messages: list) -> Drawn:
    """Each tree stacked under the previous one, its edges, and this step's messages as arrows
    on the tree they travel (with their sub-rounds when the step holds several)."""
    points, edges_x, edges_y, annotations = [], [], [], []
    pairs = [(m[0], m[1]) for m in messages]
    panels = logical["panels"]
    moves = tree_moves([panel["parents"] for panel in panels], pairs)
    rounds = sub_rounds(messages)
    for index, panel in enumerate(panels):
        top = -1.35 * index
        spots = {rank: (x, top + y) for rank, (x, y) in enumerate(panel["positions"])}
        for rank, parent in enumerate(panel["parents"]):
            if parent >= 0:
                edges_x += [spots[rank][0], spots[parent][0], None]
                edges_y += [spots[rank][1], spots[parent][1], None]
        points += [(rank, x, y) for rank, (x, y) in spots.items()]
        annotations.append(_panel_title(f"logical: {panel['title']} (root {panel['root']} on top)", 0.5, top + 1.2))
        used: dict[tuple[int, int], list[int]] = {}
        for (src, dst), (tree, _), number in zip(pairs, moves, rounds):
            if tree == index:
                used.setdefault((src, dst), []).append(number)
        for (src, dst), numbers in used.items():
            annotations.append(_logical_arrow(spots[src], spots[dst]))
            if max(rounds) > 1:  # pipelined: which sub-round of the step each chunk crosses this edge in
                annotations.append(_round_label(spots[src], spots[dst], sorted(set(numbers))))
    if rounds and max(rounds) > 1:
        key = f"numbers on arrows: sub-round (1 to {max(rounds)}) of this step"
        annotations.append(_panel_title(key, 0.5, -1.35 * len(panels) + 1.2))
    return points, edges_x, edges_y, annotations


def _logical_grid(logical: dict[str, Any], messages: list) -> Drawn:
    """Hierarchical's node grid (a column per node) and this step's messages as arrows; a
    ring's way back (first to last) runs beside the others, not over them."""
    spots = {rank: (x, y) for rank, (x, y) in enumerate(logical["positions"])}
    nodes = logical["nodes"]
    annotations = [_panel_title(f"node {column}", spots[ranks[0]][0], 1.15) for column, ranks in enumerate(nodes)]
    annotations.append(_panel_title("logical: a column per node, a row per local index", 0.5, 1.32))
    cell = 1 / max(len(nodes) - 1, 1), 1 / max(max(map(len, nodes)) - 1, 1)
    for src, dst in dict.fromkeys((m[0], m[1]) for m in messages):
        (x0, y0), (x1, y1) = spots[src], spots[dst]
        far = abs(x1 - x0) > cell[0] * 1.01 or abs(y1 - y0) > cell[1] * 1.01
        if far:
            dx, dy = (0.0, -0.07) if y0 == y1 else (0.05, 0.0)
            (x0, y0), (x1, y1) = (x0 + dx, y0 + dy), (x1 + dx, y1 + dy)
        annotations.append(_logical_arrow((x0, y0), (x1, y1)))
    return [(rank, x, y) for rank, (x, y) in spots.items()], [], [], annotations


def sub_rounds(messages: list) -> list[int]:
    """Each message's sub-round within its step: 1 for those that start first, 2 for the next
    start time, ... (a pipelined step holds several rounds at different times)."""
    starts = sorted({round(m[2], 12) for m in messages})
    return [starts.index(round(m[2], 12)) + 1 for m in messages]


def _round_label(a: tuple[float, float], b: tuple[float, float], numbers: list[int]) -> dict[str, Any]:
    text = ",".join(map(str, numbers[:4])) + ("…" if len(numbers) > 4 else "")
    return {"text": text, "x": (a[0] + b[0]) / 2, "y": (a[1] + b[1]) / 2, "xref": "x2", "yref": "y2", "showarrow": False,
            "font": {"size": 9, "color": "#8b0000"}, "bgcolor": "rgba(255,255,255,0.85)", "name": "sub-round"}  # fmt: skip


def _panel_title(text: str, x: float, y: float) -> dict[str, Any]:
    return {"text": text, "x": x, "y": y, "xref": "x2", "yref": "y2", "showarrow": False, "font": {"size": 11, "color": "#444"}}


def _logical_arrow(a: tuple[float, float], b: tuple[float, float], curve: bool = False) -> dict[str, Any]:
    """An arrow on the logical layout (x2/y2 axes)."""
    return {
        "x": b[0], "y": b[1], "ax": a[0], "ay": a[1], "xref": "x2", "yref": "y2", "axref": "x2", "ayref": "y2",
        "showarrow": True, "arrowhead": 3, "arrowsize": 1, "arrowwidth": 2, "arrowcolor": FLIGHT_COLOR,
        "standoff": 9, "startstandoff": 9, "opacity": 0.75, "text": "",
    }  # fmt: skip


def aggregate_figure(player: dict[str, Any], position: int) -> go.Figure:
    """The player above the drawable size: groups of ranks (one per node, or a sample of ranks
    with the rest summarised) on a circle, each drawn as large as its share of the ranks; per
    step an arrow per (sending group, receiving group) labelled with its messages and bytes,
    and a group's own traffic (inside a node, or among the summarised ranks) written under it."""
    groups = player["layout"]["groups"]
    step, messages = _at(player, position)
    title = f"{player['ranks']} ranks in {len(groups)} groups: " + (
        step_title(player, position) if step is not None else "before the first message"
    )
    figure = Draft(title, 440)
    inside = {m[0]: m for m in messages if m[0] == m[1]}
    busy = {m[0] for m in messages} | {m[1] for m in messages}
    largest = max(group["size"] for group in groups)
    figure.add_trace(
        trace(
            "scatter", x=[g["x"] for g in groups], y=[g["y"] for g in groups], mode="markers+text",
            marker={"size": [16 + 22 * math.sqrt(g["size"] / largest) for g in groups], "color": RANK_COLOR,
                    "line": {"width": [4 if i in busy else 1 for i in range(len(groups))],
                             "color": [FLIGHT_COLOR if i in busy else "white" for i in range(len(groups))]}},
            text=[g["name"] + (f"<br>↻ {_many(inside[i])} inside" if i in inside else "") for i, g in enumerate(groups)],
            textposition=[_outward(g["x"], g["y"]) for g in groups], textfont={"size": 10}, hoverinfo="text", showlegend=False,
            name="groups", cliponaxis=False,
            hovertext=[f"{g['name']}: {g['size']} ranks" + (f"<br>inside: {_many(inside[i])}" if i in inside else "") for i, g in enumerate(groups)],
        )
    )  # fmt: skip
    between = [m for m in messages if m[0] != m[1]]
    where = {str(i): (g["x"], g["y"]) for i, g in enumerate(groups)}
    offsets = [0.5 if any(o[0] == m[1] and o[1] == m[0] for o in between) else 0.0 for m in between]  # a pair both ways: side by side
    arrows = [_arrow(where, m[0], m[1], 20, offset) for m, offset in zip(between, offsets)]
    if between:
        labels = [[m[0], m[1], m[2], m[3], m[4], -1, _many(m, bytes_too=False)] for m in between]
        figure.add_trace(_arrow_labels(labels, where, label_text=len(between) <= 24, offsets=offsets, names=[g["name"] for g in groups]))
    figure.update_layout(annotations=arrows)
    figure.update_xaxes(visible=False, scaleanchor="y", scaleratio=1, range=[-1.9, 1.9])
    figure.update_yaxes(visible=False, range=[-1.55, 1.45])
    figure.update_layout(
        margin={"l": 10, "r": 10, "t": 48, "b": 10},
        meta={"step": step, "groups": len(groups), "in_flight": sum(m[5] for m in messages), "aggregate": True},
    )
    return figure.figure()


def _outward(x: float, y: float) -> str:
    """A group's label position away from the circle's centre (where the arrows run)."""
    vertical = "top" if y > 0.35 else ("bottom" if y < -0.35 else "middle")
    horizontal = "center" if abs(x) < 0.1 else ("right" if x > 0 else "left")
    return f"{vertical} {horizontal}" if vertical != "middle" or horizontal != "center" else "top center"


def _many(row: list, bytes_too: bool = True) -> str:
    """An aggregate row's messages (and bytes): "12 messages, 96 MiB"."""
    count = f"{row[5]:,} message{'s' if row[5] != 1 else ''}" if not bytes_too else f"{row[5]:,} msg{'s' if row[5] != 1 else ''}"
    return f"{count}, {format_size(row[4])}" if bytes_too else count


def _links(edges: list, where: dict[str, tuple[float, float]], busy_links: set, highlighted: bool) -> dict[str, Any]:
    """The links in use (red, thick) or the others (grey), as one line trace broken at each link."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for u, v in edges:
        if ((u, v) in busy_links) == highlighted:
            xs += [where[u][0], where[v][0], None]
            ys += [where[u][1], where[v][1], None]
    line = {"color": FLIGHT_COLOR if highlighted else "#ccc", "width": 3 if highlighted else 1}
    return trace(
        "scatter", x=xs, y=ys, mode="lines", line=line, hoverinfo="skip", showlegend=False, name="links in use" if highlighted else "links"
    )


def _rank_markers(ranks: list[dict[str, Any]], busy: set, label: bool) -> dict[str, Any]:
    """The ranks, numbered when there are few, outlined in red while they send or receive."""
    outline = {
        "width": [4 if n["rank"] in busy else 1 for n in ranks],
        "color": [FLIGHT_COLOR if n["rank"] in busy else "white" for n in ranks],
    }
    return trace(
        "scatter", x=[n["x"] for n in ranks], y=[n["y"] for n in ranks], mode="markers+text" if label else "markers",
        marker={"size": 26 if label else 12, "color": RANK_COLOR, "line": outline}, text=[str(n["rank"]) for n in ranks],
        textfont={"color": "white", "size": 12}, hovertext=[f"rank {n['rank']}" for n in ranks], hoverinfo="text",
        showlegend=False, name="ranks",
    )  # fmt: skip


def _arrow(
    where: dict[str, tuple[float, float]], src: int, dst: int, standoff: int, offset: float = 0.0, colour: str = FLIGHT_COLOR
) -> dict[str, Any]:
    """An arrow annotation from sender to receiver, stopping short of both markers; moved
    sideways by ``offset`` spreads (a pair's chunks side by side)."""
    x0, y0, x1, y1 = _shifted(*where[str(src)], *where[str(dst)], offset)
    return {
        "x": x1, "y": y1, "ax": x0, "ay": y0,
        "xref": "x", "yref": "y", "axref": "x", "ayref": "y", "showarrow": True, "arrowhead": 3, "arrowsize": 1.2,
        "arrowwidth": 2, "arrowcolor": colour, "standoff": standoff, "startstandoff": standoff, "opacity": 0.8, "text": "",
    }  # fmt: skip


LABEL_AT = 0.55  # where on an arrow its label sits (from the sender)
LABEL_NEAR_HUB = 0.28  # ... when that point would sit on a switch (sender and receiver opposite)


LABEL_SPREAD = 1.5  # a chunk's label sits this many times farther aside than its arrow (a text line apart)
LABEL_SLIDE = 0.2  # how far along its arrow each further chunk's label moves (labels apart on any chord)


def _label_point(
    x0: float, y0: float, x1: float, y1: float, avoid: Sequence[tuple[float, float]], offset: float = 0.0
) -> tuple[float, float]:
    """Where an arrow's label goes: a bit past the middle, or nearer the sender when the middle
    lies on a switch (its label is there, and every chord between opposite ranks crosses it);
    a chunk's label (``offset`` spreads sideways) also slides along its arrow, so labels of one
    chord's chunks sit apart whichever way the chord runs."""
    x0, y0, x1, y1 = _shifted(x0, y0, x1, y1, offset * LABEL_SPREAD)
    length = math.hypot(x1 - x0, y1 - y0) or 1.0
    at = LABEL_AT + LABEL_SLIDE * offset
    x, y = x0 + at * (x1 - x0), y0 + at * (y1 - y0)
    if any(math.hypot(x - hx, y - hy) < 0.2 * length for hx, hy in avoid):
        at = LABEL_NEAR_HUB + LABEL_SLIDE * offset
        x, y = x0 + at * (x1 - x0), y0 + at * (y1 - y0)
    return x, y


def _arrow_labels(
    messages: list,
    where: dict[str, tuple[float, float]],
    label_text: bool,
    avoid: Sequence[tuple[float, float]] = (),
    offsets: Sequence[float] = (),
    names: Sequence[str] = (),
    short: bool = False,
) -> dict[str, Any]:
    """What each arrow carries, written on the arrow (cells and bytes; a chunk's number and
    start when the pair carries several), with a hover; off the switches in ``avoid``."""
    xs, ys, texts, hovers = [], [], [], []
    rounds = sub_rounds(messages) if any(offsets) else []
    for index, message in enumerate(messages):
        src, dst, start, end, nbytes, chunk = message[:6]
        cells = message[6] if len(message) > 6 else ""
        (x0, y0), (x1, y1) = where[str(src)], where[str(dst)]
        offset = offsets[index] if index < len(offsets) else 0.0
        x, y = _label_point(x0, y0, x1, y1, avoid, offset)
        xs.append(x)
        ys.append(y)
        text = f"{cells} · {format_size(nbytes)}" if cells else format_size(nbytes)
        if short:  # a half-wide drawing: the size only (the cells are in the hover)
            text = format_size(nbytes)
        # a chunk's arrow says which sub-round of the step it belongs to: the pipelining, visible
        if offset and chunk >= 0:  # the cells name the chunk (p3.1: piece 3, chunk 1)
            text = f"round {rounds[index]}: {text}" if cells and not short else f"chunk {chunk}, round {rounds[index]}: {text}"
        texts.append(text)
        part = f", chunk {chunk}" if chunk >= 0 else ""
        hovers.append(
            f"{names[src] if names else f'rank {src}'} → {names[dst] if names else f'rank {dst}'}<br>carries {cells or 'data'}: {format_size(nbytes)}{part}"
            f"<br>{format_time(start)} → {format_time(end)}"
        )
    return trace(
        "scatter", x=xs, y=ys, mode="text" if label_text else "markers", text=texts, textfont={"size": 10, "color": "#8b0000"},
        marker={"size": 8, "color": FLIGHT_COLOR, "opacity": 0.5}, hovertext=hovers, hoverinfo="text", showlegend=False,
        name="message labels",
    )  # fmt: skip


def step_title(player: dict[str, Any], position: int) -> str:
    """ "step 3 of 14 (reduce-scatter)": positions count from 1, the phase named when known; a
    phase named with its own parentheses follows a colon ("step 1 of 6: reduce (up the tree)"),
    never "((...))"."""
    count = len(player["steps"])
    position = max(1, min(position, count))
    phases = player.get("phases") or []
    phase = phases[position - 1] if position - 1 < len(phases) else ""
    if not phase:
        return f"step {position} of {count}"
    return f"step {position} of {count}" + (f", {phase}" if "(" in phase else f" ({phase})")


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
    chunks = player["chunks"]
    columns = [f"p{c // chunks}" + (f".{c % chunks}" if chunks > 1 else "") for c in range(len(cells[0]))]
    text, hover = _cell_words(counts, holders, p, reduces, columns)
    title = f"Buffers after {step_title(player, index_of(position, frames))}" if frame["step"] >= 0 else "Buffers (inputs)"
    # the key on a second, smaller line: one line was cut at the card's width
    key = "cell = how many ranks' data it sums" if reduces else "cell = whose data it holds"
    title += f"<br><span style='font-size:12px;color:#555'>{key}; red outline: changed in this step</span>"
    figure = Draft(title, max(280, 90 + 24 * p))
    figure.update_layout(margin={"t": 64})
    small = len(columns) * p <= 1024
    figure.add_trace(
        trace(
            "heatmap",
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
    figure.update_xaxes(title={"text": "piece" + (".chunk" if chunks > 1 else "")}, side="bottom")
    full = sum(1 for row in counts for count in row if count == p)
    index = max(0, min(position, len(frames) - 1))
    changed = _changed_cells(frames[index - 1]["cells"], cells) if index > 0 else []
    if changed:
        hover, shapes = _changed_outlines(changed, columns, p)
        figure.add_trace(hover)
        figure.update_layout(shapes=shapes)
    figure.update_layout(meta={"step": frame["step"], "full_cells": full, "changed_cells": len(changed)})
    return figure.figure()


def _cell_words(
    counts: list[list[int]], holders: list[list[list[str]]], ranks: int, reduces: bool, columns: Sequence[str] = ()
) -> tuple[list, list]:
    """Each cell's label (3/8: a partial sum of 3 ranks; or whose data it holds) and its hover,
    in the words the axes use (the column's name, p4; "rank 0's data", "the sum of ranks 0, 1")."""
    text = [
        [
            (f"{count}/{ranks}" if reduces else (holder[0] if len(holder) == 1 else str(count))) if count else ""
            for count, holder in zip(crow, hrow)
        ]
        for crow, hrow in zip(counts, holders)
    ]
    hover = [
        [f"rank {r}, {columns[c] if c < len(columns) else f'p{c}'}: " + _holding(holders[r][c], reduces) for c in range(len(counts[r]))]
        for r in range(len(counts))
    ]
    return text, hover


def _holding(holders: list[str], reduces: bool) -> str:
    """What a cell holds, in words: empty, rank 3's data, the sum of ranks 0, 1 and 2, or the
    data of ranks 0 and 1 (copies side by side)."""
    if not holders:
        return "empty"
    if len(holders) == 1:
        return f"rank {holders[0]}'s data"
    listed = ", ".join(holders[:-1]) + f" and {holders[-1]}"
    return f"the sum of ranks {listed}" if reduces else f"the data of ranks {listed}"


def _changed_outlines(changed: list[tuple[int, int]], columns: list[str], ranks: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Red outlines around the cells that changed in this step: rectangles exactly one cell
    large (inset a little, inside the gaps), whatever the grid's size, and invisible points at
    their centres for the hover."""
    shapes = [
        {"type": "rect", "xref": "x", "yref": "y", "x0": c - 0.46, "x1": c + 0.46, "y0": r - 0.44, "y1": r + 0.44,
         "line": {"color": FLIGHT_COLOR, "width": 2}, "fillcolor": "rgba(0,0,0,0)", "layer": "above"}
        for r, c in changed
    ]  # fmt: skip
    hover = trace(
        "scatter", x=[columns[c] for _, c in changed], y=[f"rank {r}" for r, _ in changed], mode="markers",
        marker={"size": 6, "opacity": 0}, hovertext=[f"rank {r}, {columns[c]}: changed in this step" for r, c in changed],
        hoverinfo="text", showlegend=False, name="changed in this step",
    )  # fmt: skip
    return hover, shapes


def index_of(position: int, frames: list) -> int:
    return max(0, min(position, len(frames) - 1))


def _changed_cells(before: list[list[int]], after: list[list[int]]) -> list[tuple[int, int]]:
    """(rank, cell) of the cells whose content differs between two frames (red outlines)."""
    return [(r, c) for r, (old, new) in enumerate(zip(before, after)) for c, (a, b) in enumerate(zip(old, new)) if a != b]


def _ranks_in(mask: int) -> list[str]:
    return [str(bit) for bit in range(mask.bit_length()) if mask >> bit & 1]


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
        coloraxis={"colorscale": "Blues", "cmin": 0, "cmax": top, "colorbar": {"title": {"text": "in flight"}, "thickness": 12}},
        meta={"columns": [c[0] for c in columns], "span_s": span, "zmax": top},
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
