"""The step player's buffers: each rank's buffer at a slider position (rows ranks, columns pieces /
chunks), coloured by how many ranks' data a cell holds, the cells the step changed outlined. Its
data is the player's (:func:`sim.collective.player.player_data`); the topology beside it is
:mod:`webapp.figures.player`.

Readable at every size (issue 21): the grid is laid out for its narrowest drawing (the card at
1024x768, :data:`NARROWEST_PLOT_PX`). A piece's chunks (NCCL's channels) sit side by side as a
small sub-grid with one label per piece while a column keeps :data:`MIN_COLUMN_PX`; narrower,
the chunks of a piece merge into one cell (its colour their mean, the hover each chunk). Tick
labels are thinned so that none overlap, cell words shown only where they fit, and a title
too long for one line puts the step's phase on a second one."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import plotly.graph_objects as go

from sim.collective.player import cell_name, rank_name, ranks_text
from webapp.figures.common import FLIGHT_COLOR, Draft, note_figure, trace
from webapp.figures.player import step_title

FIGURE_PX = 386  # the buffers figure's width at 1024x768, the page's floor
MARGIN_PX = {"l": 60, "r": 20}  # fixed, so the plot area's width is known: rank labels ("r31") fit in 60 px
NARROWEST_PLOT_PX = FIGURE_PX - MARGIN_PX["l"] - MARGIN_PX["r"]  # 306 px of columns at the narrowest
TICK_FONT_PX = 11
TICK_CHAR_PX = 6.8  # an 11 px tick label's width per character in Chromium's widest fallback font, rounded up
TICK_GAP_PX = 6  # kept between two tick labels
CELL_FONT_PX, CELL_CHAR_PX = 10, 6.2  # the words inside a cell ("r0+r3")
TITLE_CHAR_PX = 8.2  # a 15 px title's width per character, rounded up
LINE_PX = 20  # a title line (15 px text, Plotly's 1.3 line height)
TITLE_TOP_PX = 22  # the title's anchor below the figure's top: its first line's top then about 8 px down
MIN_COLUMN_PX = 6  # a narrower column and its outline cannot be told from its neighbours: chunks merge per piece
ROW_PX = 24


class Grid(NamedTuple):
    """How the buffer's cells become columns at the narrowest drawing: ``per_column`` cells
    (1, or a piece's ``chunks`` merged) in each of ``columns`` columns of ``column_px``; a tick
    every ``stride`` pieces at ``tickvals`` (the centre of the piece's columns) named ``ticktext``."""

    pieces: int
    chunks: int
    per_column: int
    columns: int
    column_px: float
    stride: int
    tickvals: list[float]
    ticktext: list[str]


def column_grid(cells: int, chunks: int, plot_px: float = NARROWEST_PLOT_PX) -> Grid:
    """The columns for ``cells`` cells of ``chunks`` chunks per piece drawn ``plot_px`` wide: each
    chunk its own column while a column is at least :data:`MIN_COLUMN_PX`, else one column per
    piece; one label per piece, every ``stride``-th (1, 2, 4, ...) when they would not fit apart."""
    chunks = max(1, chunks)
    pieces = max(1, cells // chunks)
    per_column = chunks if chunks > 1 and cells % chunks == 0 and plot_px / cells < MIN_COLUMN_PX else 1
    columns = cells // per_column
    column_px = plot_px / columns
    piece_px = plot_px / pieces
    widest = label_px(f"p{pieces - 1}") + TICK_GAP_PX
    stride = 1
    while stride * piece_px < widest and stride < pieces:
        stride *= 2
    width = chunks // per_column  # columns per piece
    tickvals = [piece * width + (width - 1) / 2 for piece in range(0, pieces, stride)]
    return Grid(pieces, chunks, per_column, columns, column_px, stride, tickvals, [f"p{p}" for p in range(0, pieces, stride)])


def label_px(text: str, char_px: float = TICK_CHAR_PX) -> float:
    """A label's width in pixels as Chromium draws it at most (``char_px`` a character)."""
    return len(text) * char_px


def buffer_figure(player: dict[str, Any], position: int) -> go.Figure:
    """Each rank's buffer at slider ``position`` (rows: ranks, columns: pieces / chunks),
    coloured by how many ranks' data a cell holds; hover lists them."""
    frames = player.get("buffers")
    if not frames:
        return _note(player)
    index = index_of(position, frames)
    frame = frames[index]
    p = player["ranks"]
    cells = frame["cells"]
    grid = column_grid(len(cells[0]), player["chunks"])
    unit = _chunk_word(player)
    counts = [[bin(value).count("1") for value in row] for row in cells]
    reduces = player["reduces"]
    z, text, hover = _columns(cells, counts, grid, p, reduces, unit)
    heading = _heading(player, frame["step"], index)
    lines = heading.count("<br>") + 2  # the heading's lines and the key's
    height = max(280, 90 + ROW_PX * p + LINE_PX * (lines - 2))
    figure = Draft(_title(heading, reduces), height)
    # hung from the top (Plotly anchors a title by its first line only, so it is moved down by
    # hand): centred in the margin as before, a third line ran into the first row
    top = {"y": 1 - TITLE_TOP_PX / height, "yref": "container", "yanchor": "top"}
    figure.update_layout(title=top, margin={"t": 12 + LINE_PX * lines, **MARGIN_PX})
    figure.add_trace(_heatmap(z, text, hover, grid, p))
    figure.update_yaxes(range=[p - 0.5, -0.5], fixedrange=True)  # reversed, exact: the hover points padded an autorange
    figure.update_xaxes(**_x_axis(grid, unit))
    changed = _changed_cells(frames[index - 1]["cells"], cells) if index > 0 else []
    shapes = _separators(grid, p) + _node_lines(player, grid)
    if changed:
        points, outlines = _changed_outlines(changed, grid, p, unit)
        figure.add_trace(points)
        shapes += outlines
    figure.update_layout(shapes=shapes)
    full = sum(1 for row in counts for count in row if count == p)
    figure.update_layout(meta={"step": frame["step"], "full_cells": full, "changed_cells": len(changed), "columns": grid.columns,
                               "cells_per_column": grid.per_column, "tick_stride": grid.stride, "column_px": round(grid.column_px, 2)})  # fmt: skip
    return figure.figure()


def _note(player: dict[str, Any]) -> go.Figure:
    """Why no grid: a barrier moves no data; above 32 ranks or 256 cells the player keeps no
    buffer frames. Words on short lines: one long line was cut on both sides of the card."""
    if player["op"] == "barrier":
        return note_figure("a barrier moves no data", "Buffers", 320)
    why = "buffers are drawn for up to 32 ranks<br>and 256 cells (ranks x chunks);<br>the timelines below show<br>the ranks' messages"
    return note_figure(why, "Buffers", 320)


def _chunk_word(player: dict[str, Any]) -> str:
    """What a piece is cut into: NCCL's channels (the Channels field) or chunks."""
    return "channel" if str(player.get("algorithm", "")).startswith("nccl_") else "chunk"


def _heading(player: dict[str, Any], step: int, index: int) -> str:
    """ "Buffers after step 3 of 14 (reduce-scatter)", the phase on a second line when the whole
    would not fit the narrowest card ("... (reduce and multicast in the switch)" was cut)."""
    if step < 0:
        return "Buffers (inputs)"
    whole = f"Buffers after {step_title(player, index)}"
    if label_px(whole, TITLE_CHAR_PX) <= FIGURE_PX - 16 or " (" not in whole:
        return whole
    head, phase = whole.split(" (", 1)
    return f"{head}<br>({phase}"


def _title(heading: str, reduces: bool) -> str:
    # the key on its own, smaller line: one line was cut at the card's width
    key = "cell = the ranks it sums, r0+r3" if reduces else "cell = whose data it holds, r3"
    return heading + f"<br><span style='font-size:12px;color:#555'>{key}; red outline: changed in this step</span>"


def _x_axis(grid: Grid, unit: str) -> dict[str, Any]:
    """Numbers as x (cell or piece index), a tick at each labelled piece's centre, never turned;
    the title says what one column is."""
    pieces = grid.pieces
    named = f"piece p0–p{pieces - 1}" if pieces > 1 else "piece p0"
    if grid.chunks == 1:
        words = f"{named} (the buffer cut in {pieces})"
    elif grid.per_column == 1:
        words = f"{named} (the buffer cut in {pieces}): its {grid.chunks} {unit}s side by side"
    else:
        words = f"{named} (the buffer cut in {pieces}): one cell<br>= its {grid.chunks} {unit}s (hover: each)"
    return {
        "title": {"text": words, "font": {"size": 12}, "standoff": 6},
        "tickmode": "array", "tickvals": grid.tickvals, "ticktext": grid.ticktext, "tickangle": 0,
        "tickfont": {"size": TICK_FONT_PX}, "range": [-0.5, grid.columns - 0.5], "showgrid": False,
        "zeroline": False, "fixedrange": True, "automargin": True,
    }  # fmt: skip


def _heatmap(z: list, text: list, hover: list, grid: Grid, ranks: int) -> dict[str, Any]:
    widest = max((len(word) for row in text for word in row), default=0)
    fits = widest * CELL_CHAR_PX + 4 <= grid.column_px and grid.columns * ranks <= 1024  # words only where they fit
    return trace(
        "heatmap", z=z, x=list(range(grid.columns)), y=[rank_name(r) for r in range(ranks)],
        text=text if fits else None, texttemplate="%{text}" if fits else None, textfont={"size": CELL_FONT_PX},
        hovertext=hover, hoverinfo="text", zmin=0, zmax=1, colorscale=[[0, "#f2f2f2"], [1e-9, "#c6dbef"], [1, "#08306b"]],
        showscale=False, xgap=1 if grid.column_px >= 8 else 0, ygap=1,
    )  # fmt: skip


def _columns(cells: list[list[int]], counts: list[list[int]], grid: Grid, ranks: int, reduces: bool, unit: str) -> tuple[list, list, list]:
    """Colour (share of the ranks summed / held), words and hover of every column: one cell, or
    a piece's chunks merged (their mean share; the words when they agree; the hover each chunk)."""
    holders = [[_ranks_in(value) for value in row] for row in cells]
    if grid.per_column == 1:
        columns = [cell_name(c, grid.chunks) for c in range(len(cells[0]))]
        text, hover = _cell_words(counts, holders, ranks, reduces, columns)
        return [[count / ranks for count in row] for row in counts], text, hover
    k = grid.per_column
    z, text, hover = [], [], []
    for r, row in enumerate(cells):
        z.append([sum(counts[r][g * k : (g + 1) * k]) / (k * ranks) for g in range(grid.columns)])
        text.append(
            [_merged_word(counts[r][g * k : (g + 1) * k], holders[r][g * k : (g + 1) * k], ranks, reduces) for g in range(grid.columns)]
        )
        hover.append(
            [
                f"{rank_name(r)}, p{g}, its {k} {unit}s: " + _merged_hover(row[g * k : (g + 1) * k], reduces, unit)
                for g in range(grid.columns)
            ]
        )
    return z, text, hover


def _merged_word(counts: Sequence[int], holders: Sequence[list[str]], ranks: int, reduces: bool) -> str:
    """A merged cell's words: the chunks' common word, or how many ranks' data they hold ("2–3 ranks")."""
    words = {_word(count, holder, ranks, reduces) for count, holder in zip(counts, holders)}
    if len(words) == 1:
        return words.pop()
    if not reduces and len(words - {""}) == 1:
        return (words - {""}).pop()  # whose data has arrived; the colour says how much of it
    low, high = min(counts), max(counts)
    return f"{low}–{high} ranks"


def _merged_hover(masks: Sequence[int], reduces: bool, unit: str) -> str:
    """What a piece's chunks hold, the chunks with the same content together: "channels 0–11:
    the sum of ranks 2, 3 and 4; channels 12–15: rank 4's data" (at most four groups named)."""
    groups: dict[int, list[int]] = {}
    for chunk, mask in enumerate(masks):
        groups.setdefault(mask, []).append(chunk)
    if len(groups) == 1:
        holders = _ranks_in(masks[0])
        return f"each holds {_holding(holders, reduces)}" if holders else "all empty"
    parts = [f"{unit}s {_spans(chunks)}: {_holding(_ranks_in(mask), reduces)}" for mask, chunks in list(groups.items())[:4]]
    more = len(groups) - 4
    return "; ".join(parts) + (f"; {more} more different" if more > 0 else "")


def _spans(numbers: list[int]) -> str:
    """0, 1, 2, 5 -> "0–2, 5"."""
    spans, start = [], numbers[0]
    for previous, number in zip(numbers, numbers[1:] + [math.inf]):
        if number != previous + 1:
            spans.append(str(start) if start == previous else f"{start}–{previous}")
            start = number
    return ", ".join(spans)


def _word(count: int, holder: list[str], ranks: int, reduces: bool) -> str:
    if not count:
        return ""
    return ranks_text(holder, "+" if reduces else ",")


def _cell_words(
    counts: list[list[int]], holders: list[list[list[str]]], ranks: int, reduces: bool, columns: Sequence[str] = ()
) -> tuple[list, list]:
    """Each cell's label (r0+r3: the sum of ranks 0 and 3; or whose data it holds, r3) and its
    hover, in the words the axes use (the column's name, p4; "r0's data", "the sum of r0 and r1")."""
    text = [[_word(count, holder, ranks, reduces) for count, holder in zip(crow, hrow)] for crow, hrow in zip(counts, holders)]
    hover = [
        [
            f"{rank_name(r)}, {columns[c] if c < len(columns) else f'p{c}'}: " + _holding(holders[r][c], reduces)
            for c in range(len(counts[r]))
        ]
        for r in range(len(counts))
    ]
    return text, hover


def _holding(holders: list[str], reduces: bool) -> str:
    """What a cell holds, in words: empty, r3's data, the sum of r0, r1 and r2, or the data of
    r0 and r1 (copies side by side)."""
    if not holders:
        return "empty"
    names = [f"r{holder}" for holder in holders]
    if len(names) == 1:
        return f"{names[0]}'s data"
    listed = ", ".join(names[:-1]) + f" and {names[-1]}"
    return f"the sum of {listed}" if reduces else f"the data of {listed}"


def _separators(grid: Grid, ranks: int) -> list[dict[str, Any]]:
    """White lines between the pieces of a sub-grid (a piece's chunks side by side), so that one
    label reads as one piece's group of columns."""
    if grid.per_column != 1 or grid.chunks == 1:
        return []
    width = 3 if grid.column_px >= 8 else 2
    return [
        {"type": "line", "xref": "x", "yref": "y", "x0": piece * grid.chunks - 0.5, "x1": piece * grid.chunks - 0.5,
         "y0": -0.5, "y1": ranks - 0.5, "line": {"color": "white", "width": width}, "layer": "above"}
        for piece in range(1, grid.pieces)
    ]  # fmt: skip


def _node_lines(player: dict[str, Any], grid: Grid) -> list[dict[str, Any]]:
    """Dark lines between the nodes' rows on a two-level topology (each node's ranks in a row
    block), so the grid reads per node as the topology beside it does."""
    nodes = (player.get("layout") or {}).get("node_ranks") or []
    starts = [ranks[0] for ranks in nodes[1:] if ranks and ranks == list(range(ranks[0], ranks[0] + len(ranks)))]
    return [
        {"type": "line", "xref": "x", "yref": "y", "x0": -0.5, "x1": grid.columns - 0.5, "y0": start - 0.5, "y1": start - 0.5,
         "line": {"color": "#444", "width": 2}, "layer": "above"}
        for start in starts
    ]  # fmt: skip


def _changed_outlines(changed: list[tuple[int, int]], grid: Grid, ranks: int, unit: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Red outlines around what changed in this step, inside the cells they mark: one per run of
    changed chunks of one piece in a row (one per cell without chunks), one per merged cell;
    invisible points at their centres for the hover."""
    runs = _runs(changed, grid)
    shapes = [
        {"type": "rect", "xref": "x", "yref": "y", "x0": first - 0.46, "x1": last + 0.46, "y0": r - 0.44, "y1": r + 0.44,
         "line": {"color": FLIGHT_COLOR, "width": 2 if grid.column_px >= 10 else 1.5}, "fillcolor": "rgba(0,0,0,0)", "layer": "above"}
        for r, first, last, _ in runs
    ]  # fmt: skip
    words = [_changed_words(r, first, last, count, grid, unit) for r, first, last, count in runs]
    hover = trace(
        "scatter", x=[(first + last) / 2 for _, first, last, _ in runs], y=[rank_name(r) for r, *_ in runs], mode="markers",
        marker={"size": 6, "opacity": 0}, hovertext=words, hoverinfo="text", showlegend=False, name="changed in this step",
    )  # fmt: skip
    return hover, shapes


def _runs(changed: list[tuple[int, int]], grid: Grid) -> list[tuple[int, int, int, int]]:
    """(rank, first column, last column, cells changed) of each outline: consecutive changed
    cells of one piece in one row make one run; merged, a piece's column with its count."""
    runs: list[list[int]] = []
    for r, cell in sorted(changed):
        column, piece = cell // grid.per_column, cell // grid.chunks
        last = runs[-1] if runs else None
        if last and last[0] == r and last[4] == piece and column - last[2] <= 1:
            last[2], last[3] = column, last[3] + 1
        else:
            runs.append([r, column, column, 1, piece])
    return [(r, first, last, count) for r, first, last, count, _ in runs]


def _changed_words(r: int, first: int, last: int, count: int, grid: Grid, unit: str) -> str:
    if grid.per_column > 1:
        return f"{rank_name(r)}, p{first}: {count} of its {grid.chunks} {unit}s changed in this step"
    if first == last:
        return f"{rank_name(r)}, {cell_name(first, grid.chunks)}: changed in this step"
    return f"{rank_name(r)}, {cell_name(first, grid.chunks)}–{cell_name(last, grid.chunks)}: changed in this step"


def index_of(position: int, frames: list) -> int:
    return max(0, min(position, len(frames) - 1))


def _changed_cells(before: list[list[int]], after: list[list[int]]) -> list[tuple[int, int]]:
    """(rank, cell) of the cells whose content differs between two frames (red outlines)."""
    return [(r, c) for r, (old, new) in enumerate(zip(before, after)) for c, (a, b) in enumerate(zip(old, new)) if a != b]


def _ranks_in(mask: int) -> list[str]:
    return [str(bit) for bit in range(mask.bit_length()) if mask >> bit & 1]
