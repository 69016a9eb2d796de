"""Message counts of NCCL's data path on a plain topology (the algorithm records' ``counts``):
the same cuts as :mod:`sim.nccl.path` and :mod:`sim.nccl.nvls` make, counted
without running. On a preset the DES runs collapsed channels; these count every channel."""

from __future__ import annotations

import math

from sim.algorithms.call import Call
from sim.algorithms.registry import Shape
from sim.nccl.path import MAX_MESSAGES, PathParams, ring_parts
from sim.nccl.proto import chunking

__all__ = ["nvls_counts", "ring_counts", "tree_counts"]


def _call(op: str, s: Shape) -> Call:
    return Call(op, s.p, s.elements * s.element_bytes, s.element_bytes, s.k)


def _nonempty(elements: int, parts: int, cut: int) -> int:
    """Non-empty pieces when ``elements`` are split into ``parts`` near-equal parts and each of
    those into ``cut`` (Call.pieces: the first ``elements % parts`` parts one larger)."""
    base, extra = divmod(elements, parts)
    return extra * min(cut, base + 1) + (parts - extra) * min(cut, base)


def ring_counts(op: str, phases: tuple[str, ...], protocol: str, algorithm: str = "Ring"):
    """Counts of NCCL's ring (or PAT, which runs the ring's schedule) for ``phases``: in each
    phase every owner's non-empty slices travel p - 1 hops (sim.nccl.path.ring_ops),
    counted in O(p) whatever the channel count."""

    def counts(s: Shape) -> tuple[int, int]:
        if s.p == 1:
            return 0, 0
        call, params = _call(op, s), PathParams(algorithm, protocol, s.k, s.k, heads=s.gpus)
        loops, slices = ring_parts(call, params, s.p, (s.p - 1) * len(phases))
        base, extra = divmod(s.elements, s.p)  # each owner's block, cut into k channel parts, each into loops x slices
        slices_sent = sum(_nonempty(base + (owner < extra), s.k, loops * slices) for owner in range(s.p))
        return len(phases) * (s.p - 1) * slices_sent, s.p * min(
            s.k, s.gpus
        )  # routes: a right neighbour per distinct ring (a rotation of the node)

    return counts


def tree_counts(protocol: str):
    """NCCL's tree all-reduce: every non-root rank sends each chunk of a channel up and receives
    it down; a channel's slice is cut into ceil(bytes / chunk) tree chunks."""

    def counts(s: Shape) -> tuple[int, int]:
        call = _call("all_reduce", s)
        chunk = chunking("Tree", protocol, call.size_bytes, s.k, max(s.p // s.gpus, 1), s.p).chunk_bytes
        base, extra = divmod(s.elements, s.k)
        pieces = sum(
            count * min(max(1, math.ceil(e * s.element_bytes / chunk)), e) for e, count in ((base + 1, extra), (base, s.k - extra))
        )
        return 2 * (s.p - 1) * pieces, max(1, 2 * (s.p - 1) * min(s.k, s.gpus))  # a tree edge each way per distinct tree

    return counts


def nvls_counts(op: str, algorithm: str):
    """NVLS moves a node's data through the switch (no point-to-point messages); across nodes the
    heads' chunks climb and descend NCCL's double binary tree over the NICs, channel c on tree c
    mod 2: the DES runs one channel a head for each tree and lets it stand for the others."""

    def counts(s: Shape) -> tuple[int, int]:
        nodes = max(s.p // s.gpus, 1)
        if nodes == 1:
            return 0, 0
        call = _call(op, s)
        cut = chunking(algorithm, "Simple", call.size_bytes, s.k, nodes, s.p, s.gpus)
        messages = 0
        trees = 2 if s.k > 1 else 1  # one channel a head for each tree of the pair (nccl_nvls: lanes)
        for portion in call.pieces(s.gpus):
            for lane in call.pieces(max(1, s.k), portion)[:trees]:
                parts = min(max(1, math.ceil(lane[2] / cut.chunk_bytes)), MAX_MESSAGES // trees)
                messages += 2 * (nodes - 1) * sum(1 for piece in call.pieces(parts, lane) if piece[2])
        return messages, 2 * (nodes - 1) * s.gpus

    return counts
