"""NCCL's double binary tree all-reduce.

Two binary trees span the ranks; each reduces half of the buffer up to its root and broadcasts
it back down, pipelined in ``chunks`` pieces. Tree 0 is NCCL's "btree" (odd ranks are leaves,
rank 0 the root with a single child); tree 1 mirrors it (rank r -> p-1-r) for even p and shifts it
by one for odd p, so most ranks are a leaf in one tree and interior in the other, and each rank
sends and receives about one half-buffer per direction. No closed form: the DES is the model.

Tree 0 on p = 8 (parent <- children)::

    0 <- 4;   4 <- 2, 6;   2 <- 1, 3;   6 <- 5, 7
"""

from __future__ import annotations

from collections.abc import Generator

import simpy

from sim.algorithms.call import Call, Piece
from sim.algorithms.registry import Phase, register
from sim.network import Network

Tree = tuple[int, list[int]]  # (parent or -1, children)


def btree(p: int, rank: int) -> Tree:
    """NCCL's binary tree: parent and children of ``rank``."""
    if p == 1:
        return -1, []
    bit = 1
    while bit < p and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1, [bit >> 1]
    parent = (rank ^ bit) | (bit << 1)
    if parent >= p:
        parent = rank ^ bit
    low = bit >> 1
    children = [rank - low] if low else []
    while low and rank + low >= p:
        low >>= 1
    if low:
        children.append(rank + low)
    return parent, children


def double_tree(p: int, rank: int, tree: int) -> Tree:
    """Tree 0 is :func:`btree`; tree 1 mirrors it (even p) or shifts it by one (odd p)."""
    if tree == 0:
        return btree(p, rank)
    if p % 2:
        parent, children = btree(p, (rank - 1) % p)
        return (-1 if parent < 0 else (parent + 1) % p), [(child + 1) % p for child in children]
    parent, children = btree(p, p - 1 - rank)
    return (-1 if parent < 0 else p - 1 - parent), [p - 1 - child for child in children]


def _up(net: Network, rank: int, call: Call, tree: Tree, pieces: tuple[Piece, ...], tag: int) -> Generator:
    """Reduce each chunk from the children, pass it to the parent (the root starts the way down)."""
    parent, children = tree
    for chunk, piece in enumerate(pieces):
        for child in children:
            payload = yield net.recv(child, rank, tag)
            combine = net.reduce(rank, piece[2], 0, chunk)
            if combine is not None:
                yield combine
            call.add(rank, payload, piece)
        if parent >= 0:
            net.send(rank, parent, piece[2], call.take(rank, piece), 0, chunk, tag)
        else:
            for child in children:
                net.send(rank, child, piece[2], call.take(rank, piece), 1, chunk, tag + 1)


def _down(net: Network, rank: int, call: Call, tree: Tree, pieces: tuple[Piece, ...], tag: int) -> Generator:
    """Receive each reduced chunk from the parent and forward it to the children."""
    parent, children = tree
    for chunk, piece in enumerate(pieces):
        payload = yield net.recv(parent, rank, tag + 1)
        call.put(rank, payload, piece)
        for child in children:
            net.send(rank, child, piece[2], payload, 1, chunk, tag + 1)


def _halves_whole(s) -> bool:
    """Buffer frames from one scaled run: halves of p k cells, each cut into k chunks, give p / 2
    cells a chunk, whole when p is even."""
    return s.ranks % 2 == 0 or s.ranks == 1


@register(
    "all_reduce", "double_binary_tree", chunked=True, splits=True,
    form="two trees share the ranks' ports, each pipelining its half in chunks: the DES is the model",
    counts=lambda s: (4 * (s.p - 1) * s.k, 4 * (s.p - 1)),
    phases=(
        Phase(
            "reduce up and broadcast down two trees",
            "each tree's ranks send partial sums of their half up and the reduced chunks back down, chunk by chunk",
        ),
    ),
    whole_cells=_halves_whole,
)  # fmt: skip
def double_binary_tree_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    p = call.ranks
    if p == 1:
        return
    env = net.env
    halves = call.pieces(2)
    phases = []
    for tree_index, half in enumerate(halves):
        tree = double_tree(p, rank, tree_index)
        # Empty chunks (fewer elements than 2 x chunks) are not sent at all, as NCCL would not.
        pieces = tuple(piece for piece in call.pieces(call.chunks, half) if piece[2])
        tag = 2 * tree_index
        phases.append(env.process(_up(net, rank, call, tree, pieces, tag)))
        if tree[0] >= 0:
            phases.append(env.process(_down(net, rank, call, tree, pieces, tag)))
    yield simpy.AllOf(env, phases)
