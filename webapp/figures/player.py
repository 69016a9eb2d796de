"""The Collectives page's step player: the topology with the messages of one step in flight
(every rank up to ``sim.collective.player.PLAYER_DRAW_RANKS``, groups of ranks above), the
algorithm's logical layout beside it, the step's title and caption. Its data is
:func:`sim.collective.player.player_data`; where labels may go is :mod:`webapp.figures.player_board`,
the per-rank buffers :mod:`webapp.figures.buffers`, the page's other figures
:mod:`webapp.figures.collectives`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from sim.collective.narrative import size_text, tree_moves
from sim.collective.player import rank_name
from sim.units import format_time
from webapp.figures.common import (
    FLIGHT_COLOR,
    RANK_COLOR,
    SWITCH_COLOR,
    Draft,
    trace,
)
from webapp.figures.player_board import (
    CHAR_PX,
    FIGURE_PX,
    INSET_PX,
    LINE_PX,
    LOGICAL_SHARE,
    MOTION_TRACE,
    NARROWEST_PX,
    RANK_PX,
    Board,
    free_spot,
    is_port,
    physical_board,
)


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
    title, top = _fitted_title(f"Topology ({layout['name']}): ", player, position if step is not None else 0)
    figure = Draft(title, FIGURE_PX)
    for highlighted in (False, True):
        figure.add_trace(_links(layout["edges"], where, busy_links, highlighted))
    busy = {m[0] for m in messages} | {m[1] for m in messages}
    ranks = [node for node in layout["nodes"] if node["rank"] is not None]
    others = [node for node in layout["nodes"] if node["rank"] is None]
    figure.add_trace(_switch_markers(others))
    label = len(ranks) <= 32
    logical = player.get("logical")
    height = FIGURE_PX - top - 10  # the plot area's height under the title
    board, size = physical_board(layout["nodes"], ranks, LOGICAL_SHARE if logical else 1.0, label, height)
    figure.add_trace(_rank_markers(ranks, busy, label, size))
    board.take_nodes(ranks, others, size / 2 + 4)
    annotations, dropped = _step_messages(figure, player, messages[:256], where, board, size)
    if logical:
        annotations += _logical_panel(figure, logical, messages, busy, height, [_chunk_colour(m, player) for m in messages])
    if dropped:  # too crowded to write every label: say so, the rest is in the hover
        annotations.append(_crowded_note(dropped))
    figure.update_layout(annotations=annotations)
    figure.update_xaxes(visible=False, scaleanchor="y", scaleratio=1, range=board.x_range)
    figure.update_yaxes(visible=False, range=board.y_range)
    if logical:
        figure.update_layout(xaxis={"domain": [0, LOGICAL_SHARE]}, xaxis2={"domain": [0.54, 1], "visible": False, "anchor": "y2"},
                             yaxis2={"anchor": "x2", "visible": False, "domain": [0, 1]})  # fmt: skip
    figure.update_layout(margin={"l": 10, "r": 10, "t": top, "b": 10},
                         meta={"step": step, "in_flight": len(messages), **({"labels_in_hover": dropped} if dropped else {})})  # fmt: skip
    return figure.figure()


def _switch_markers(others: list[dict[str, Any]]) -> dict[str, Any]:
    return trace(
        "scatter", x=[n["x"] for n in others], y=[n["y"] for n in others], mode="markers+text",
        marker={"symbol": "square", "size": [7 if is_port(n) else 16 for n in others], "color": SWITCH_COLOR},
        text=["" if is_port(n) else n["id"] for n in others], hovertext=[n["id"] for n in others],
        textposition="bottom center", hoverinfo="text", showlegend=False, name="switches",
    )  # fmt: skip


def _step_messages(
    figure: Draft, player: dict[str, Any], shown: list, where: dict[str, tuple[float, float]], board: Board, size: int
) -> tuple[list[dict[str, Any]], int]:
    """The step's messages on the physical drawing: an arrow each (a chunk beside the others on
    its chord), their labels placed on ``board`` and the moving chunks (traces added to
    ``figure``); returns the arrows and how many labels were left to the hover."""
    offsets = _chunk_offsets(shown, player.get("chunks", 1))
    colours = [_chunk_colour(m, player) for m in shown]
    arrows = [_arrow(where, m[0], m[1], size // 2, offset, colour) for m, offset, colour in zip(shown, offsets, colours)]
    if not shown:
        return arrows, 0
    labels, dropped = _placed_labels(shown, where, board, offsets, short=bool(player.get("logical")), decimal=bool(player.get("decimal")))
    figure.add_trace(labels)
    segments = [_shifted(*where[str(m[0])], *where[str(m[1])], offset) for m, offset in zip(shown, offsets)]
    figure.add_trace(chunk_motion(shown, segments, board, colours, size / 2 + 2))
    return arrows, dropped


def _label_texts(message: list, offset: float, sub_round: int, short: bool, decimal: bool = False) -> list[str]:
    """What an arrow's label may say, longest first: cells and bytes (a chunk's sub-round
    first when its chord carries several), then the cells or the bytes alone."""
    nbytes, chunk, cells = message[4], message[5], (message[6] if len(message) > 6 else "")
    size = size_text(nbytes, decimal)
    text = size if short or not cells else f"{cells} · {size}"
    if offset and chunk >= 0:  # a chunk's arrow says which sub-round of the step it belongs to: the pipelining, visible
        text = f"round {sub_round}: {text}" if cells and not short else f"chunk {chunk}, round {sub_round}: {text}"
    brief = cells if cells and not short else size
    return [text] if brief == text else [text, brief]


def _placed_labels(
    messages: list, where: dict[str, tuple[float, float]], board: Board, offsets: Sequence[float], short: bool = False, decimal: bool = False
) -> tuple[dict[str, Any], int]:  # fmt: skip
    """Each arrow's label where the board has room (:func:`free_spot`). Every label in its
    long form when all fit at their arrows, else every one in its short form (one wording per
    step); a label with no room anywhere is left to the hover (a dot on its arrow). Returns the trace and how many were left to the hover."""
    rounds = sub_rounds(messages)
    chords = [_shifted(*where[str(m[0])], *where[str(m[1])], offset) for m, offset in zip(messages, offsets)]
    wordings = [_label_texts(m, offset, number, short, decimal) for m, offset, number in zip(messages, offsets, rounds)]
    trial = board.copy()
    spots = _all_placed(trial, chords, [texts[0] for texts in wordings], offsets, far=False)  # every label long, at its arrow
    if spots is not None:
        board.boxes = trial.boxes
    else:  # else every one short (it may sit farther aside), the rest left to the hover
        spots = _all_placed(board, chords, [texts[-1] for texts in wordings], offsets, far=True, partial=True)
    points = [spot or ((x0 + x1) / 2, (y0 + y1) / 2, "") for spot, (x0, y0, x1, y1) in zip(spots, chords)]
    texts = [text for _, _, text in points]
    labels = trace(
        "scatter", x=[x for x, _, _ in points], y=[y for _, y, _ in points], mode="markers+text", text=texts,
        textfont={"size": 10, "color": "#8b0000"}, cliponaxis=False, hovertext=[_message_hover(m, (), decimal) for m in messages], hoverinfo="text",
        marker={"size": 7, "color": FLIGHT_COLOR, "opacity": [0 if text else 0.6 for text in texts]}, showlegend=False,
        name="message labels",
    )  # fmt: skip
    return labels, texts.count("")


def _all_placed(board: Board, chords: list, texts: list[str], offsets: Sequence[float], far: bool, partial: bool = False) -> list | None:
    """Each text's spot on ``board`` (taken), in order; None at the first that has no room
    unless ``partial`` (then that one's spot is None and the others go on)."""
    spots = []
    for chord, text, offset in zip(chords, texts, offsets):
        spot = free_spot(board, chord, [text], far=far, side=offset)
        if spot is None and not partial:
            return None
        spots.append(spot)
    return spots


def _message_hover(message: list, names: Sequence[str] = (), decimal: bool = False) -> str:
    src, dst, start, end, nbytes, chunk = message[:6]
    cells = message[6] if len(message) > 6 else ""
    part = f", chunk {chunk}" if chunk >= 0 else ""
    sender, receiver = (names[src], names[dst]) if names else (rank_name(src), rank_name(dst))
    return f"{sender} → {receiver}<br>carries {cells or 'data'}: {size_text(nbytes, decimal)}{part}<br>{format_time(start)} → {format_time(end)}"


def _crowded_note(dropped: int) -> dict[str, Any]:
    """Says that some arrows' labels are in the hover only (no room to write them apart):
    top right, above the plot (the title's second line, when it has one, is on the left)."""
    text = f"{dropped} label{'s' if dropped > 1 else ''}: hover the dots"
    return {"text": text, "x": 1, "y": 1, "xref": "paper", "yref": "paper", "xanchor": "right", "yanchor": "bottom", "showarrow": False,
            "font": {"size": 10, "color": "#555"}, "name": "crowded"}  # fmt: skip


def chunk_motion(
    messages: list,
    segments: Sequence[tuple[float, float, float, float] | None],
    board: Board,
    colours: Sequence[str],
    inset_px: float = INSET_PX,
    logical: bool = False,
) -> dict[str, Any]:
    """Each message as a marker the browser moves along its arrow (``segments``, one per
    message; None: not drawn) during the step (``assets/player-anim.js``, no server request
    per frame). Its ``customdata`` row is the path and the timing: [x0, y0, x1, y1, begin, end],
    from the sender's rim to the receiver's (``inset_px`` in), begin and end as fractions of the
    step's span (first send to last arrival), so a pipelined step's chunks move one after the
    other, at their simulated times. ``logical``: on the logical panel's axes."""
    first, last = min(m[2] for m in messages), max(m[3] for m in messages)
    span = (last - first) or 1.0
    paths, shown = [], []
    for message, segment, colour in zip(messages, segments, colours):
        if segment is None:
            continue
        x0, y0, x1, y1 = segment
        inset = min(0.45, inset_px / (math.hypot((x1 - x0) * board.scale[0], (y1 - y0) * board.scale[1]) or 1.0))
        ends = (x0 + inset * (x1 - x0), y0 + inset * (y1 - y0), x1 - inset * (x1 - x0), y1 - inset * (y1 - y0))
        paths.append([round(v, 4) for v in (*ends, (message[2] - first) / span, (message[3] - first) / span)])
        shown.append(colour)
    axes = {"xaxis": "x2", "yaxis": "y2"} if logical else {}
    return trace(
        "scatter", x=[p[0] for p in paths], y=[p[1] for p in paths], mode="markers", customdata=paths, hoverinfo="skip",
        marker={"size": 8 if logical else 10, "color": shown, "line": {"width": 1.5, "color": "white"}}, showlegend=False,
        name=MOTION_TRACE, **axes,
    )  # fmt: skip


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


LOGICAL_WIDTH_PX = NARROWEST_PX[0] * 0.46  # the logical panel's width at the narrowest (x2 domain 0.54-1)
LOGICAL_X_RANGE = [-0.12, 1.12]
TITLE_CHAR_PX = 6.2  # an 11 px panel title's width per character


def _logical_panel(
    figure: Draft, logical: dict[str, Any], messages: list, busy: set, height_px: float = NARROWEST_PX[1], colours: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The logical layout on the figure's second axes: each tree (root on top, its edges grey)
    or the node grid, ranks numbered, this step's messages as arrows on it (their
    chunks moving along them, as on the physical drawing); returns the arrows, panel titles and
    sub-round numbers (annotations), each number only where it has room."""
    kind = _logical_trees if logical["kind"] == "trees" else _logical_grid
    points, edges_x, edges_y, annotations, numbers, segments = kind(logical, messages)
    board = _logical_board(points, annotations, height_px)
    size = _logical_marker_px(points, board)
    annotations += _placed_round_labels(numbers, board, size)
    figure.add_trace(
        trace("scatter", x=edges_x, y=edges_y, mode="lines", line={"color": "#ccc", "width": 1}, xaxis="x2", yaxis="y2",
              hoverinfo="skip", showlegend=False, name="logical edges")
    )  # fmt: skip
    figure.add_trace(
        trace(
            "scatter", x=[x for _, x, _ in points], y=[y for _, _, y in points], mode="markers+text", xaxis="x2", yaxis="y2",
            marker={"size": size, "color": RANK_COLOR, "line": {"width": [3 if r in busy else 1 for r, _, _ in points],
                    "color": [FLIGHT_COLOR if r in busy else "white" for r, _, _ in points]}},
            text=[rank_name(r) for r, _, _ in points], textfont={"color": "white", "size": 10 if size >= 16 else 8},
            hovertext=[rank_name(r) for r, _, _ in points], hoverinfo="text", showlegend=False, name="logical ranks",
        )
    )  # fmt: skip
    if any(segments):
        colours = list(colours) or [FLIGHT_COLOR] * len(messages)
        figure.add_trace(chunk_motion(messages, segments, board, colours, size / 2 + 2, logical=True))
    figure.update_layout(xaxis2={"range": board.x_range}, yaxis2={"range": board.y_range})
    return annotations


def _logical_board(points: list[tuple[int, float, float]], titles: list[dict[str, Any]], height_px: float = NARROWEST_PX[1]) -> Board:
    """The logical panel's board (its own scales: x and y apart), holding its points and its
    titles (taken: numbers keep off them)."""
    ys = [y for _, _, y in points] + [t["y"] for t in titles if not t.get("showarrow")]
    low, high = min(ys), max(ys)
    pad = (high - low) * 0.06 or 0.5
    board = Board(LOGICAL_X_RANGE, [low - pad, high + pad], (LOGICAL_WIDTH_PX, height_px), equal=False)
    for title in titles:
        if not title.get("showarrow"):
            lines = title["text"].split("<br>")
            board.take(board.box(title["x"], title["y"], TITLE_CHAR_PX * max(map(len, lines)), LINE_PX * len(lines)))
    return board


def _logical_marker_px(points: list[tuple[int, float, float]], board: Board) -> int:
    """The logical ranks' marker size: 18 px, smaller where neighbours in a row sit closer."""
    rows: dict[float, list[float]] = {}
    for _, x, y in points:
        rows.setdefault(round(y, 6), []).append(x)
    gaps = [b - a for xs in rows.values() for a, b in zip(sorted(xs), sorted(xs)[1:])]
    closest = min(gaps, default=1.0) * board.scale[0]
    size = int(max(10, min(18, closest - 5)))
    for _, x, y in points:
        board.take(board.box(x, y, size + 4, size + 4))
    return size


def _placed_round_labels(numbers: list[tuple[tuple[float, float], tuple[float, float], list[int]]], board: Board, size: int) -> list:
    """The sub-round numbers on the logical arrows (where in the step each chunk crosses the
    edge), each where the board has room along its edge, else in the arrow's hover."""
    placed = []
    for a, b, rounds in numbers:
        text = ",".join(map(str, rounds[:4])) + ("…" if len(rounds) > 4 else "")
        spot = free_spot(board, (*a, *b), [text], width_px=CHAR_PX * 0.9 * len(text) + 4)
        if spot:
            placed.append(_round_label(spot[0], spot[1], text))
    return placed


Drawn = tuple[
    list[tuple[int, float, float]], list, list, list[dict[str, Any]], list, list
]  # ranks (rank, x, y), edges x, edges y, annotations, sub-rounds, each message's segment (None: not on the panel)


def _logical_trees(logical: dict[str, Any], messages: list) -> Drawn:
    """Each tree stacked under the previous one, its edges, and this step's messages as arrows
    on the tree they travel (with their sub-rounds, when the step holds several, to place)."""
    points, edges_x, edges_y, annotations, numbers = [], [], [], [], []
    pairs = [(m[0], m[1]) for m in messages]
    segments: list = [None] * len(messages)
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
        annotations.append(_panel_title(f"logical {panel['title']}, root {panel['root']} on top", 0.5, top + 1.2))
        used: dict[tuple[int, int], list[int]] = {}
        for at, ((src, dst), (tree, _), number) in enumerate(zip(pairs, moves, rounds)):
            if tree == index:
                used.setdefault((src, dst), []).append(number)
                segments[at] = (*spots[src], *spots[dst])
        for (src, dst), crossed in used.items():
            annotations.append(
                _logical_arrow(spots[src], spots[dst], hover=f"{rank_name(src)} → {rank_name(dst)}: sub-round {_listed(crossed)}")
            )
            if max(rounds) > 1:  # pipelined: which sub-round of the step each chunk crosses this edge in
                numbers.append((spots[src], spots[dst], sorted(set(crossed))))
    if rounds and max(rounds) > 1:
        key = f"numbers: sub-round (1-{max(rounds)}) of the step"
        annotations.append(_panel_title(key, 0.5, -1.35 * len(panels) + 1.2))
    return points, edges_x, edges_y, annotations, numbers, segments


def _listed(numbers: list[int]) -> str:
    return ", ".join(map(str, sorted(set(numbers))))


def _logical_grid(logical: dict[str, Any], messages: list) -> Drawn:
    """Hierarchical's node grid (a column per node) and this step's messages as arrows; a
    ring's way back (first to last) runs beside the others, not over them."""
    spots = {rank: (x, y) for rank, (x, y) in enumerate(logical["positions"])}
    nodes = logical["nodes"]
    annotations = [_panel_title(f"node {column}", spots[ranks[0]][0], 1.15) for column, ranks in enumerate(nodes)]
    annotations.append(_panel_title("logical: column = node,<br>row = local rank", 0.5, 1.42))
    cell = 1 / max(len(nodes) - 1, 1), 1 / max(max(map(len, nodes)) - 1, 1)
    drawn = {}
    for src, dst in dict.fromkeys((m[0], m[1]) for m in messages):
        (x0, y0), (x1, y1) = spots[src], spots[dst]
        far = abs(x1 - x0) > cell[0] * 1.01 or abs(y1 - y0) > cell[1] * 1.01
        if far:
            dx, dy = (0.0, -0.07) if y0 == y1 else (0.05, 0.0)
            (x0, y0), (x1, y1) = (x0 + dx, y0 + dy), (x1 + dx, y1 + dy)
        annotations.append(_logical_arrow((x0, y0), (x1, y1)))
        drawn[(src, dst)] = (x0, y0, x1, y1)
    segments = [drawn[(m[0], m[1])] for m in messages]
    return [(rank, x, y) for rank, (x, y) in spots.items()], [], [], annotations, [], segments


def sub_rounds(messages: list) -> list[int]:
    """Each message's sub-round within its step: 1 for those that start first, 2 for the next
    start time, ... (a pipelined step holds several rounds at different times)."""
    starts = sorted({round(m[2], 12) for m in messages})
    return [starts.index(round(m[2], 12)) + 1 for m in messages]


def _round_label(x: float, y: float, text: str) -> dict[str, Any]:
    return {"text": text, "x": x, "y": y, "xref": "x2", "yref": "y2", "showarrow": False,
            "font": {"size": 9, "color": "#8b0000"}, "bgcolor": "rgba(255,255,255,0.85)", "name": "sub-round"}  # fmt: skip


def _panel_title(text: str, x: float, y: float) -> dict[str, Any]:
    return {"text": text, "x": x, "y": y, "xref": "x2", "yref": "y2", "showarrow": False, "font": {"size": 11, "color": "#444"},
            "name": "panel title"}  # fmt: skip


def _logical_arrow(a: tuple[float, float], b: tuple[float, float], hover: str = "") -> dict[str, Any]:
    """An arrow on the logical layout (x2/y2 axes), with what it carries in its hover."""
    arrow = {
        "x": b[0], "y": b[1], "ax": a[0], "ay": a[1], "xref": "x2", "yref": "y2", "axref": "x2", "ayref": "y2",
        "showarrow": True, "arrowhead": 3, "arrowsize": 1, "arrowwidth": 2, "arrowcolor": FLIGHT_COLOR,
        "standoff": 9, "startstandoff": 9, "opacity": 0.75, "text": "",
    }  # fmt: skip
    return {**arrow, "hovertext": hover} if hover else arrow


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
    decimal = bool(player.get("decimal"))
    inside = {m[0]: m for m in messages if m[0] == m[1]}
    busy = {m[0] for m in messages} | {m[1] for m in messages}
    largest = max(group["size"] for group in groups)
    figure.add_trace(
        trace(
            "scatter", x=[g["x"] for g in groups], y=[g["y"] for g in groups], mode="markers+text",
            marker={"size": [16 + 22 * math.sqrt(g["size"] / largest) for g in groups], "color": RANK_COLOR,
                    "line": {"width": [4 if i in busy else 1 for i in range(len(groups))],
                             "color": [FLIGHT_COLOR if i in busy else "white" for i in range(len(groups))]}},
            text=[g["name"] + (f"<br>↻ {_many(inside[i], decimal=decimal)} inside" if i in inside else "") for i, g in enumerate(groups)],
            textposition=[_outward(g["x"], g["y"]) for g in groups], textfont={"size": 10}, hoverinfo="text", showlegend=False,
            name="groups", cliponaxis=False,
            hovertext=[f"{g['name']}: {g['size']} ranks" + (f"<br>inside: {_many(inside[i], decimal=decimal)}" if i in inside else "") for i, g in enumerate(groups)],
        )
    )  # fmt: skip
    between = [m for m in messages if m[0] != m[1]]
    where = {str(i): (g["x"], g["y"]) for i, g in enumerate(groups)}
    offsets = [0.5 if any(o[0] == m[1] and o[1] == m[0] for o in between) else 0.0 for m in between]  # a pair both ways: side by side
    arrows = [_arrow(where, m[0], m[1], 20, offset) for m, offset in zip(between, offsets)]
    if between:
        labels = [[m[0], m[1], m[2], m[3], m[4], -1, _many(m, bytes_too=False)] for m in between]
        figure.add_trace(
            _arrow_labels(labels, where, label_text=len(between) <= 24, offsets=offsets, names=[g["name"] for g in groups], decimal=decimal)
        )
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


def _many(row: list, bytes_too: bool = True, decimal: bool = False) -> str:
    """An aggregate row's messages (and bytes): "12 messages, 96 MiB"."""
    count = f"{row[5]:,} message{'s' if row[5] != 1 else ''}" if not bytes_too else f"{row[5]:,} msg{'s' if row[5] != 1 else ''}"
    return f"{count}, {size_text(row[4], decimal)}" if bytes_too else count


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


def _rank_markers(ranks: list[dict[str, Any]], busy: set, label: bool, size: int = RANK_PX) -> dict[str, Any]:
    """The ranks, numbered when there are few, outlined in red while they send or receive."""
    outline = {
        "width": [4 if n["rank"] in busy else 1 for n in ranks],
        "color": [FLIGHT_COLOR if n["rank"] in busy else "white" for n in ranks],
    }
    return trace(
        "scatter", x=[n["x"] for n in ranks], y=[n["y"] for n in ranks], mode="markers+text" if label else "markers",
        marker={"size": size, "color": RANK_COLOR, "line": outline}, text=[rank_name(n["rank"]) for n in ranks],
        textfont={"color": "white", "size": 12 if size >= RANK_PX else 10}, hovertext=[f"{rank_name(n['rank'])} (rank {n['rank']})" for n in ranks], hoverinfo="text",
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


LABEL_AT = 0.55  # where on an aggregate's arrow its label sits (from the sender)
LABEL_SPREAD = 1.5  # a label sits this many times farther aside than its arrow (a pair's two ways apart)
LABEL_SLIDE = 0.2  # ... and slides this far along it


def _arrow_labels(
    messages: list, where: dict[str, tuple[float, float]], label_text: bool, offsets: Sequence[float], names: Sequence[str], decimal: bool = False
) -> dict[str, Any]:  # fmt: skip
    """The aggregate's arrow labels: what each arrow stands for, written a bit past its middle
    (a pair's two ways apart), with a hover. (The drawable player places its labels on a
    :class:`Board`.)"""
    xs, ys = [], []
    for message, offset in zip(messages, offsets):
        x0, y0, x1, y1 = _shifted(*where[str(message[0])], *where[str(message[1])], offset * LABEL_SPREAD)
        at = LABEL_AT + LABEL_SLIDE * offset
        xs.append(x0 + at * (x1 - x0))
        ys.append(y0 + at * (y1 - y0))
    return trace(
        "scatter", x=xs, y=ys, mode="text" if label_text else "markers", text=[_label_texts(m, 0, 1, False, decimal)[0] for m in messages],
        textfont={"size": 10, "color": "#8b0000"}, marker={"size": 8, "color": FLIGHT_COLOR, "opacity": 0.5},
        hovertext=[_message_hover(m, names, decimal) for m in messages], hoverinfo="text", showlegend=False, name="message labels",
    )  # fmt: skip


TITLE_CHARS = 52  # a 15 px title's characters that fit the topology figure at its narrowest


def _fitted_title(prefix: str, player: dict[str, Any], position: int) -> tuple[str, int]:
    """The figure's title and top margin: one line when it fits ``TITLE_CHARS``, else the
    step's phase on a second, smaller line (never cut at the card's edge)."""
    if not position:
        return prefix + "before the first message", 48
    title = prefix + step_title(player, position)
    phases = player.get("phases") or []
    if len(title) <= TITLE_CHARS or position > len(phases) or not phases[position - 1]:
        return title, 48
    count = len(player["steps"])
    return f"{prefix}step {position} of {count}<br><span style='font-size:12px;color:#555'>{phases[position - 1]}</span>", 66


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
        steps = len(player["steps"])
        return f"Inputs, before any message. {steps} step{'s' if steps != 1 else ''} to play: press Play or drag the slider. {player.get('description', '')}"
    start = min(m[2] for m in messages)
    end = max(m[3] for m in messages)
    nbytes = sum(m[4] for m in messages) * player.get("wire_copies", 1)  # NCCL's channels run as one: each a copy of it
    sentences = player.get("sentences") or []
    sentence = sentences[position - 1] if position - 1 < len(sentences) else ""
    title = step_title(player, position)
    copies = player.get("wire_copies", 1)
    if copies > 1 and sentence:  # the sentence counts the messages of the one channel simulated
        sentence = f"{sentence.rstrip('.')} on each channel; the other {copies - 1:g} channel copies carry the same."
    return f"{title[0].upper() + title[1:]}: {format_time(start)} → {format_time(end)}, {size_text(nbytes, bool(player.get('decimal')))} in all. {sentence}"
