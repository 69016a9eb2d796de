"""The step narrative of an algorithm: its phases, the phase each step belongs to, and one
sentence per step (what the phase's ranks do, and the sizes that moved), all read from the
algorithm's record (sim.algorithms.registry). The step player draws what these return."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sim.algorithms.registry import Phase, algorithm_spec
from sim.units import format_size

__all__ = [
    "decimal_units",
    "derived_phases",
    "description",
    "grid_view",
    "logical_view",
    "phase_of",
    "phase_starts",
    "size_text",
    "spanning_tree",
    "step_phases",
    "step_sentence",
    "step_sentences",
    "tree_moves",
    "tree_panel",
]


def phase_starts(op: str, algorithm: str, p: int) -> list[tuple[int, str]]:
    """(first step, name) of each phase of an algorithm on p ranks, in order, from its record."""
    spec = algorithm_spec(op, algorithm)
    return [(phase.start(p), phase.name) for phase in spec.phases] if spec else []


def _phase_at(op: str, algorithm: str, p: int, step: int) -> Phase | None:
    spec = algorithm_spec(op, algorithm)
    found = None
    for phase in spec.phases if spec else ():
        if step >= phase.start(p):
            found = phase
    return found


def phase_of(op: str, algorithm: str, p: int, step: int) -> str:
    """The name of the phase ``step`` belongs to ("" when the algorithm names none)."""
    phase = _phase_at(op, algorithm, p, step)
    return phase.name if phase else ""


def description(op: str, algorithm: str) -> str:
    """The algorithm's own one-paragraph description (its docstring's first paragraph)."""
    spec = algorithm_spec(op, algorithm)
    text = (spec.program.__doc__ or "").strip() if spec else ""
    return plain(" ".join(text.split("\n\n")[0].split()))


def plain(text: str) -> str:
    """Docstring markup out of a sentence a person reads: ``node_ranks`` -> node_ranks,
    :func:`x` -> x, *word* -> word; parenthetical asides that only name code are dropped."""
    text = re.sub(r"\s*\(``[^`]+``:[^)]*\)", "", text)  # "(``node_ranks``: each node's ranks ...)": code detail
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    text = text.replace("``", "")
    return re.sub(r"(?<!\w)\*([^*\s][^*]*)\*(?!\w)", r"\1", text)


def decimal_units(nbytes: int) -> bool:
    """Whether a size was most likely typed in decimal units: a whole number of KB (1000 bytes)
    that is no whole number of KiB (5 MB = 5,000,000 bytes; 64 MiB and 4096 are binary). The
    sizes derived from it (pieces, messages, bytes on the wire) are then shown in decimal units
    too: 5 MB came back as 4.768 MiB."""
    nbytes = int(nbytes)
    return nbytes > 0 and nbytes % 1000 == 0 and nbytes % 1024 != 0


def size_text(nbytes: float, decimal: bool = False) -> str:
    """``nbytes`` in binary units (64 MiB, as :func:`sim.units.format_size`), or in decimal ones
    (5 MB) when the scenario's size was typed so (:func:`decimal_units`)."""
    if not decimal:
        return format_size(nbytes)
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(nbytes) >= factor:
            return f"{nbytes / factor:.4g} {unit}"
    return f"{nbytes:.4g} B"


def step_sentence(move: str, sizes: Sequence[int], decimal: bool = False) -> str:
    """One sentence for a step: the phase's move in words (may be ""), and the sizes of the
    ``sizes`` messages that moved (decimal units when ``decimal``)."""
    low, high = size_text(min(sizes), decimal), size_text(max(sizes), decimal)
    size = low if low == high else f"{low} to {high}"
    count = f"{len(sizes)} message{'s' if len(sizes) != 1 else ''} of {size}"
    return f"{move[0].upper() + move[1:]}: {count}." if move else f"{count[0].upper() + count[1:]}."


def step_phases(scenario: Any, steps: Sequence[int]) -> list[str]:
    """The phase name of each of ``steps`` of the scenario's algorithm."""
    s = scenario
    return [phase_of(s.op, s.algorithm, s.ranks, step) for step in steps]


def step_sentences(scenario: Any, steps: Sequence[int], sizes: Sequence[Sequence[int]]) -> list[str]:
    """One sentence per step of the scenario's algorithm: ``sizes[i]`` are the bytes of the
    messages of ``steps[i]``."""
    s = scenario
    sentences = []
    decimal = decimal_units(s.size_bytes)
    for step, nbytes in zip(steps, sizes):
        phase = _phase_at(s.op, s.algorithm, s.ranks, step)
        sentences.append(step_sentence(phase.sentence if phase else "", nbytes, decimal))
    return sentences


# --------------------------------------------------------------------------- logical layout
# A tree algorithm's steps drawn on its tree (root on top) and a hierarchical run's on its
# node x local-index grid, beside the physical topology; and, for the algorithms whose record
# names one compound phase (double binary tree, NCCL's tree, hierarchical), the phase of each
# step read from what its messages do (up or down the tree, inside or across nodes).

COMPOUND_TREES = ("double_binary_tree", "nccl_tree")


def logical_view(
    algorithm: str, p: int, root: int, pairs: Sequence[tuple[int, int]], node_ranks: Sequence[Sequence[int]] = ()
) -> dict | None:
    """The logical layout of a run: ``{"kind": "trees", "panels": [...]}`` (each panel a tree:
    its title, each rank's parent, each rank's position with the root on top) when the
    algorithm is a double binary tree or its messages (``pairs``, the whole run's) span a tree;
    ``{"kind": "grid", ...}`` for hierarchical (nodes as columns, local indices as rows); else None."""
    if algorithm == "hierarchical" and len(node_ranks) > 1:
        return grid_view(node_ranks)
    if algorithm == "double_binary_tree" and p > 2:
        from sim.algorithms.dbtree import double_tree

        return {"kind": "trees", "panels": [tree_panel(f"tree {t}", [double_tree(p, r, t)[0] for r in range(p)]) for t in (0, 1)]}
    parents = spanning_tree(p, root, pairs)
    return {"kind": "trees", "panels": [tree_panel("tree", parents)]} if parents else None


def spanning_tree(p: int, root: int, pairs: Sequence[tuple[int, int]]) -> list[int] | None:
    """Each rank's parent (-1 for the root) when the run's messages, as undirected edges, form
    a tree over all p ranks (binomial trees, chains, NCCL's tree); None otherwise (rings, butterflies)."""
    neighbours: dict[int, set[int]] = {}
    for a, b in pairs:
        if a != b:
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
    edges = sum(len(n) for n in neighbours.values()) // 2
    if edges != p - 1 or len(neighbours) != p or root not in neighbours:
        return None
    parents = [-2] * p
    parents[root], frontier = -1, [root]
    while frontier:
        node = frontier.pop()
        for other in sorted(neighbours[node]):
            if parents[other] == -2:
                parents[other] = node
                frontier.append(other)
    return None if -2 in parents else parents


def tree_panel(title: str, parents: Sequence[int]) -> dict:
    """A tree drawn root on top: leaves spread evenly in depth-first order, a parent above the
    middle of its children; x and y in [0, 1]."""
    children: dict[int, list[int]] = {}
    for rank, parent in enumerate(parents):
        if parent >= 0:
            children.setdefault(parent, []).append(rank)
    root = parents.index(-1)
    depth, x, leaves = {root: 0}, {}, []

    def place(rank: int) -> None:
        for child in sorted(children.get(rank, ())):
            depth[child] = depth[rank] + 1
            place(child)
        kids = children.get(rank)
        if kids:
            x[rank] = sum(x[c] for c in kids) / len(kids)
        else:
            x[rank] = float(len(leaves))
            leaves.append(rank)

    place(root)
    width, height = max(len(leaves) - 1, 1), max(max(depth.values()), 1)
    positions = [[x[r] / width, 1 - depth[r] / height] for r in range(len(parents))]
    return {"title": title, "parents": list(parents), "positions": positions, "root": root}


def grid_view(node_ranks: Sequence[Sequence[int]]) -> dict:
    """Hierarchical's logical layout: node i's ranks in column i, local index j in row j, so
    rings inside a node run down a column and rings across nodes along a row."""
    positions: dict[int, list[float]] = {}
    nodes, gpus = len(node_ranks), max(len(ranks) for ranks in node_ranks)
    for column, ranks in enumerate(node_ranks):
        for row, rank in enumerate(ranks):
            positions[rank] = [column / max(nodes - 1, 1), 1 - row / max(gpus - 1, 1)]
    return {"kind": "grid", "positions": [positions[r] for r in sorted(positions)], "nodes": [list(r) for r in node_ranks]}


def tree_moves(parents_by_panel: Sequence[Sequence[int]], messages: Sequence[tuple[int, int]]) -> list[tuple[int, bool]]:
    """For each (src, dst) of one step: (panel, up) — the tree whose edge it crosses and whether
    it goes up (child to parent). A pair that is an edge of two trees (a double binary tree's
    mirrored halves) goes with the direction most of the step's other messages take; (-1, False)
    for a message on no tree edge."""
    options = []
    for src, dst in messages:
        found = [(t, parents[src] == dst) for t, parents in enumerate(parents_by_panel) if parents[src] == dst or parents[dst] == src]
        options.append(found)
    clear = [found[0][1] for found in options if len({up for _, up in found}) == 1]
    up_step = sum(clear) * 2 >= len(clear) if clear else True
    moves = []
    for found in options:
        match = [item for item in found if item[1] == up_step] or found
        moves.append(match[0] if match else (-1, False))
    return moves


def derived_phases(algorithm: str, steps_messages: Sequence[Sequence[tuple[int, int]]], view: dict | None) -> list[tuple[str, str]] | None:
    """(phase, sentence) per step, read from what the step's messages do, for the algorithms
    whose record names one compound phase; None for the others (their record's phases stand)."""
    if view is None:
        return None
    if algorithm == "hierarchical" and view["kind"] == "grid":
        return _hierarchical_phases(view["nodes"], steps_messages)
    if algorithm in COMPOUND_TREES and view["kind"] == "trees":
        parents = [panel["parents"] for panel in view["panels"]]
        out = []
        for pairs in steps_messages:
            moves = [up for panel, up in tree_moves(parents, pairs) if panel >= 0]
            ups = sum(moves)
            out.append(_tree_phase(ups, len(moves) - ups, len(parents)))
        return out
    return None


def _tree_phase(ups: int, downs: int, trees: int) -> tuple[str, str]:
    which = "each of the two trees" if trees == 2 else "the tree"
    if ups and downs:
        return (
            "reduce up and broadcast down at once (pipelined chunks)",
            f"in {which}, chunks already reduced at the root come back down while later chunks still go up",
        )
    if ups:
        return ("reduce up the tree" + ("s" if trees == 2 else ""),
                f"in {which}, children send their partial sums to their parent, which adds them, up to the root")  # fmt: skip
    return ("broadcast down the tree" + ("s" if trees == 2 else ""),
            f"in {which}, the root sends the reduced data to its children, and every rank forwards it to its own")  # fmt: skip


def _hierarchical_phases(node_ranks: Sequence[Sequence[int]], steps_messages: Sequence[Sequence[tuple[int, int]]]) -> list[tuple[str, str]]:
    node_of = {rank: index for index, ranks in enumerate(node_ranks) for rank in ranks}
    across = [any(node_of[a] != node_of[b] for a, b in pairs) for pairs in steps_messages]
    first = across.index(True) if True in across else len(across)
    out = []
    for index, inter in enumerate(across):
        if inter:
            out.append(
                (
                    "inter-node all-reduce",
                    "across nodes, the ranks with the same local index run a ring all-reduce of the piece they reduced",
                )
            )
        elif index < first:
            out.append(
                (
                    "intra-node reduce-scatter",
                    "inside each node, every rank passes a piece to the next rank of the node's ring, which adds it",
                )
            )
        else:
            out.append(("intra-node all-gather", "inside each node, ranks pass the fully reduced pieces around the node's ring"))
    return out
