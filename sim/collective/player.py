"""What the Collectives page's step player and timelines draw, as plain data (JSON lists and numpy
arrays) read from a :class:`~sim.collective.results.CollectiveResult`: the topology's layout,
messages per step with the buffer cells they carried, the aggregate player's rank groups above
``PLAYER_DRAW_RANKS`` ranks, and per-rank / per-link intervals for the timelines and heatmaps.
No Dash or plotly here (webapp.figures draws these)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sim.collective import narrative
from sim.collective.results import CollectiveResult
from sim.collective.runner import build_topology
from sim.network.layout import node_positions
from sim.scenario import CollectiveScenario

PLAYER_DRAW_RANKS = 32  # every rank drawn up to here; above, ranks are summed in groups
SAMPLE_HEAD, SAMPLE_TAIL = 6, 2  # ranks (or nodes) drawn alone above that: the first six and the last two
MAX_GROUPS = SAMPLE_HEAD + SAMPLE_TAIL + 1


def _reduces(op: str) -> bool:
    return op in ("all_reduce", "reduce", "reduce_scatter")


def topology_layout(scenario: CollectiveScenario) -> dict[str, Any]:
    """Node positions (:func:`sim.network.layout.node_positions`) and edges of the scenario's
    topology graph, and each node's ranks (several nodes only), as JSON for drawing."""
    topology = build_topology(scenario)
    positions = node_positions(topology)
    nodes = [{"id": str(node), "rank": node if isinstance(node, int) else None, "x": x, "y": y} for node, (x, y) in positions.items()]
    node_ranks = topology.node_ranks()
    return {
        "nodes": nodes,
        "edges": [[str(u), str(v)] for u, v in topology.graph.edges],
        "name": topology.name,
        "node_ranks": node_ranks if len(node_ranks) > 1 and max(map(len, node_ranks)) > 1 else [],
    }


def player_data(
    scenario: CollectiveScenario, result: CollectiveResult | None, frames: list[dict[str, Any]] | None = None
) -> dict[str, Any] | None:
    """Everything the step player draws, as JSON: layout, messages per step (each with the
    cells it carried, read from the buffer frames), phases, one sentence per step, frames, and
    the algorithm's logical layout (its trees, or hierarchical's node grid). Above
    ``PLAYER_DRAW_RANKS`` ranks the messages are summed per group of ranks (:func:`aggregate_player`)."""
    if result is None or result.truncated or not result.messages:
        return None
    s = scenario
    table = message_array(result)
    layout = topology_layout(s)
    if s.ranks > PLAYER_DRAW_RANKS:
        return {**aggregate_player(s, table, layout), "wire_copies": result.wire_copies}
    steps: dict[int, list] = {}
    ends = result.links["src"], result.links["dst"]
    # times to a millionth of the run (captions show 4 digits): half the JSON the browser stores and resends
    decimals = 6 - math.floor(math.log10(float(table[:, 3].max()) or 1.0))
    times = np.round(table[:, 2:4], decimals).tolist()
    columns = table[:, [0, 1, 4, 5, 6]].astype(np.int64).tolist()
    for (src, dst, nbytes, step, chunk), (start, end) in zip(columns, times):
        steps.setdefault(step, []).append([src, dst, start, end, nbytes, chunk])
    pairs = {(row[0], row[1]) for row in columns}
    routes = {}
    for src, dst in pairs:
        routes[(src, dst)] = [[str(ends[0][i]), str(ends[1][i])] for i in result.routes[(src, dst)]]
    ordered = sorted(steps)
    if frames is not None and len(frames) != len(ordered) + 1:
        frames = None  # steps that do not line up with the frames: show messages only
    view = narrative.logical_view(s.algorithm, s.ranks, s.root, sorted(pairs), layout["node_ranks"])
    sizes = [[m[4] for m in steps[step]] for step in ordered]
    phases, sentences = narrative.step_phases(s, ordered), narrative.step_sentences(s, ordered, sizes)
    derived = narrative.derived_phases(s.algorithm, [[(m[0], m[1]) for m in steps[step]] for step in ordered], view)
    if derived:
        phases = [phase for phase, _ in derived]
        sentences = [
            narrative.step_sentence(move, nbytes, narrative.decimal_units(s.size_bytes)) for (_, move), nbytes in zip(derived, sizes)
        ]
    return {
        "op": s.op,
        "algorithm": s.algorithm,
        "ranks": s.ranks,
        "chunks": s.chunks,
        "reduces": _reduces(s.op),
        "decimal": narrative.decimal_units(s.size_bytes),  # sizes shown in the units the size was typed in
        "layout": layout,
        "steps": ordered,
        "messages": [_with_cells(steps[step][:512], frames, index, s.chunks) for index, step in enumerate(ordered)],
        "phases": phases,
        "sentences": sentences,
        "description": narrative.description(s.op, s.algorithm),
        "routes": {f"{src}>{dst}": route for (src, dst), route in routes.items()},
        "buffers": frames,
        "logical": view,
        "wire_copies": result.wire_copies,  # NCCL's channels each simulated one stands for: a step's bytes on the wire x this
    }


def rank_groups(ranks: int, node_ranks: list[list[int]]) -> tuple[list[dict[str, Any]], np.ndarray]:
    """The groups an aggregate player draws, and each rank's group: one per node on a topology
    with nodes (up to ``MAX_GROUPS`` nodes), else a sample of units (ranks, or nodes when there
    are many): the first ``SAMPLE_HEAD`` and the last ``SAMPLE_TAIL`` alone, the rest as one group."""
    units = node_ranks or [[rank] for rank in range(ranks)]
    kind = "node" if node_ranks else "rank"
    if len(units) <= MAX_GROUPS:
        chosen: list[tuple[str, list[int]]] = [(_unit_name(kind, i, u), u) for i, u in enumerate(units)]
    else:
        keep = [*range(SAMPLE_HEAD), *range(len(units) - SAMPLE_TAIL, len(units))]
        chosen = [(_unit_name(kind, i, units[i]), units[i]) for i in keep[:SAMPLE_HEAD]]
        rest = [rank for unit in units[SAMPLE_HEAD : len(units) - SAMPLE_TAIL] for rank in unit]
        span = f"{kind}s {SAMPLE_HEAD}–{len(units) - SAMPLE_TAIL - 1}"
        chosen.append((f"{span} ({len(rest)} ranks)", rest))
        chosen += [(_unit_name(kind, i, units[i]), units[i]) for i in keep[SAMPLE_HEAD:]]
    group_of = np.zeros(ranks, dtype=np.int64)
    groups = []
    for index, (name, members) in enumerate(chosen):
        group_of[members] = index
        angle = math.pi / 2 - 2 * math.pi * index / len(chosen)
        groups.append({"name": name, "size": len(members), "x": math.cos(angle), "y": math.sin(angle)})
    return groups, group_of


def _unit_name(kind: str, index: int, members: list[int]) -> str:
    return rank_name(members[0]) if kind == "rank" else f"node {index} ({len(members)} ranks)"


def aggregate_player(s: CollectiveScenario, table: np.ndarray, layout: dict[str, Any]) -> dict[str, Any]:
    """The player above ``PLAYER_DRAW_RANKS`` ranks: per step, the messages summed per (sending
    group, receiving group) as [from, to, first start, last end, bytes, messages], and inside a
    group (a node's own traffic, or the summarised ranks') as a loop on it."""
    groups, group_of = rank_groups(s.ranks, layout["node_ranks"])
    src, dst = group_of[table[:, 0].astype(np.int64)], group_of[table[:, 1].astype(np.int64)]
    steps = table[:, 5].astype(np.int64)
    ordered = np.unique(steps)
    step_index = np.searchsorted(ordered, steps)
    count = len(groups)
    key = (step_index * count + src) * count + dst
    keys, inverse, messages = np.unique(key, return_inverse=True, return_counts=True)
    starts = np.full(len(keys), np.inf)
    ends = np.zeros(len(keys))
    nbytes = np.zeros(len(keys))
    np.minimum.at(starts, inverse, table[:, 2])
    np.maximum.at(ends, inverse, table[:, 3])
    np.add.at(nbytes, inverse, table[:, 4])
    rows: list[list[list]] = [[] for _ in ordered]
    for k, first, last, size, many in zip(keys.tolist(), starts.tolist(), ends.tolist(), nbytes.tolist(), messages.tolist()):
        rows[k // (count * count)].append([k // count % count, k % count, first, last, int(size), int(many)])
    sizes = [table[step_index == i, 4].astype(np.int64).tolist() for i in range(len(ordered))]
    phases, sentences = narrative.step_phases(s, ordered.tolist()), narrative.step_sentences(s, ordered.tolist(), sizes)
    if s.algorithm == "hierarchical" and layout["node_ranks"]:  # its phases from where each step's messages go
        node_of = np.zeros(s.ranks, dtype=np.int64)
        for index, members in enumerate(layout["node_ranks"]):
            node_of[members] = index
        across = node_of[table[:, 0].astype(np.int64)] != node_of[table[:, 1].astype(np.int64)]
        crossing = np.zeros(len(ordered), dtype=bool)
        np.logical_or.at(crossing, step_index, across)
        firsts = [[(0, 1)] if crossing[i] else [(0, 0)] for i in range(len(ordered))]
        derived = narrative.derived_phases(s.algorithm, firsts, {"kind": "grid", "nodes": [[0], [1]]})
        phases = [phase for phase, _ in derived or ()]
        sentences = [
            narrative.step_sentence(move, nbytes, narrative.decimal_units(s.size_bytes)) for (_, move), nbytes in zip(derived or (), sizes)
        ]
    return {
        "aggregate": True,
        "op": s.op,
        "algorithm": s.algorithm,
        "ranks": s.ranks,
        "chunks": s.chunks,
        "reduces": _reduces(s.op),
        "decimal": narrative.decimal_units(s.size_bytes),
        "layout": {"name": layout["name"], "groups": groups},
        "steps": ordered.tolist(),
        "messages": rows,
        "phases": phases,
        "sentences": sentences,
        "description": narrative.description(s.op, s.algorithm),
        "buffers": None,
    }


def rank_name(rank: int) -> str:
    """A rank's name on the Collectives page: r3 (pieces are p0, p1, ...: the two never mix)."""
    return f"r{rank}"


def ranks_text(ranks: Sequence[int | str], joiner: str = "+") -> str:
    """Which ranks a cell holds, in order, runs of three or more as a range: "r3", "r0+r3",
    "r0–r5+r7" (``joiner`` "," for copies side by side rather than a sum)."""
    numbers = sorted(int(rank) for rank in ranks)
    parts, start = [], None
    for index, rank in enumerate(numbers):
        start = rank if start is None else start
        if index + 1 == len(numbers) or numbers[index + 1] != rank + 1:
            run = rank - start + 1
            parts += [rank_name(start) + "–" + rank_name(rank)] if run >= 3 else [rank_name(r) for r in range(start, rank + 1)]
            start = None
    return joiner.join(parts)


def cell_name(cell: int, chunks: int) -> str:
    """A buffer cell's name: piece p3, or piece.chunk p3.1 with chunks."""
    return f"p{cell // chunks}" + (f".{cell % chunks}" if chunks > 1 else "")


def _with_cells(messages: list[list], frames: list[dict[str, Any]] | None, index: int, chunks: int) -> list[list]:
    """Each message with the names of the receiver's cells that changed in this step (what it
    carried, as seen in the buffers); a receiver fed by several messages shares them out by chunk."""
    if not frames:
        return [[*message, ""] for message in messages]
    before, after = frames[index]["cells"], frames[index + 1]["cells"]
    senders: dict[int, int] = {}
    for message in messages:
        senders[message[1]] = senders.get(message[1], 0) + 1
    out = []
    for src, dst, start, end, nbytes, chunk in messages:
        changed = [c for c, (old, new) in enumerate(zip(before[dst], after[dst])) if old != new]
        if senders[dst] > 1 and chunks > 1:
            changed = [c for c in changed if c % chunks == chunk] or changed
        changed = _carried_by(changed, before, after, src, dst)
        out.append([src, dst, start, end, nbytes, chunk, _cells_text(changed, len(before[dst]), chunks)])
    return out


def _carried_by(changed: list[int], before: list[list[int]], after: list[list[int]], src: int, dst: int) -> list[int]:
    """Of the receiver's changed cells, those this message carried: first the cells whose new
    data is exactly what the sender held at the step's start (a copy or partial sum sent on),
    else those whose new data the sender held at all. A step of an NCCL algorithm can hold
    several rounds, so a receiver's cell may also change by a later message of the same step
    (through another sender's forward): that cell is not named on this arrow."""

    def new(c: int) -> int:
        return after[dst][c] & ~before[dst][c]

    exact = [c for c in changed if new(c) and new(c) == before[src][c] & ~before[dst][c]]
    some = [c for c in changed if new(c) & (before[src][c] | after[src][c])]
    return exact or some or changed


def _cells_text(cells: list[int], total: int, chunks: int) -> str:
    if not cells:
        return ""
    if len(cells) == total:
        return "all pieces"
    if len(cells) > 3:
        return f"{len(cells)} pieces"
    return ", ".join(cell_name(cell, chunks) for cell in cells)


def _table(records: Any, width: int) -> np.ndarray:
    """Recorded rows as one float array (numpy straight from the record's columns when it has them)."""
    columns = getattr(records, "columns", None)  # a results Table's named numpy columns
    if callable(columns):
        columns = columns()
    if isinstance(columns, dict):
        arrays = list(columns.values())
        if len(arrays) == width:
            return np.column_stack(arrays).astype(float) if len(arrays[0]) else np.zeros((0, width))
    rows = list(records)
    return np.array(rows, dtype=float).reshape(len(rows), width)


def message_array(result: CollectiveResult) -> np.ndarray:
    """The recorded messages as one float array: src, dst, start, end, nbytes, step, chunk."""
    return _table(result.messages, 7)


def compute_array(result: CollectiveResult) -> np.ndarray:
    """The recorded reductions as one float array: rank, start, end, nbytes, step, chunk."""
    return _table(result.computes, 6)


def rank_intervals(result: CollectiveResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every send (on its sender) and reduction (on its rank), whole run: rank, start, end."""
    sends = message_array(result)
    computes = compute_array(result)
    ranks = np.concatenate([sends[:, 0], computes[:, 0]]).astype(int)
    return ranks, np.concatenate([sends[:, 2], computes[:, 1]]), np.concatenate([sends[:, 3], computes[:, 2]])


def rank_values(result: CollectiveResult, color_by: str = "step") -> np.ndarray:
    """Each interval of :func:`rank_intervals` (sends, then reductions): its recorded step, or
    its chunk with ``color_by="chunk"``."""
    column = 6 if color_by == "chunk" else 5
    return np.concatenate([message_array(result)[:, column], compute_array(result)[:, column - 1]])


def link_intervals(result: CollectiveResult) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Every recorded message on every directed link it crossed, whole run: (link names,
    link index per crossing, start, end) as arrays, for utilisation heatmaps at any size.
    Each (sender, receiver) pair's route is looked up once."""
    table = message_array(result)
    if not len(table):
        return [], np.zeros(0, int), np.zeros(0), np.zeros(0)
    ranks = int(table[:, :2].max()) + 1
    codes = table[:, 0].astype(np.int64) * ranks + table[:, 1].astype(np.int64)
    pairs, inverse = np.unique(codes, return_inverse=True)
    routes = [list(result.routes[(int(code // ranks), int(code % ranks))]) for code in pairs.tolist()]
    lengths = np.array([len(route) for route in routes], dtype=np.int64)
    flat = np.array([link for route in routes for link in route], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    per_message = lengths[inverse]
    message = np.repeat(np.arange(len(table)), per_message)
    # the k-th link of a message's route: its pair's offset + k
    within = np.arange(len(message)) - np.repeat(np.cumsum(per_message) - per_message, per_message)
    index_of = flat[offsets[inverse][message] + within]
    names = [str(name) for name in result.links["name"]]
    return names, index_of, table[message, 2], table[message, 3]


def link_events(result: CollectiveResult, limit: int) -> list[dict[str, Any]]:
    """One row per (message, directed link it crossed): link, start, end, bytes, step, chunk."""
    names = result.links["name"]
    rows: list[dict[str, Any]] = []
    for src, dst, start, end, nbytes, step, chunk in result.messages:
        for index in result.routes[(src, dst)]:
            rows.append(
                {
                    "link": str(names[index]),
                    "src": src,
                    "dst": dst,
                    "start_s": start,
                    "end_s": end,
                    "bytes": nbytes,
                    "step": step,
                    "chunk": chunk,
                }
            )
            if len(rows) >= limit:
                return rows
    return rows
