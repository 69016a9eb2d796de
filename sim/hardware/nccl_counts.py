"""Message counts of NCCL's data path on a plain topology (the algorithm records' ``counts``):
the same cuts as :mod:`sim.hardware.nccl_path` and :mod:`sim.hardware.nccl_nvls` make, counted
without running. On a preset the DES runs collapsed channels; these count every channel."""

from __future__ import annotations

import math

from sim.algorithms.registry import Shape
from sim.collective.call import Call
from sim.hardware.nccl_path import MAX_MESSAGES, PathParams, channel_part, ring_parts
from sim.hardware.nccl_proto import chunking

__all__ = ["nvls_counts", "ring_counts", "tree_counts"]


def _call(op: str, s: Shape) -> Call:
    return Call(op, s.p, s.elements * s.element_bytes, s.element_bytes, s.k)


def ring_counts(op: str, phases: tuple[str, ...], protocol: str, algorithm: str = "Ring"):
    """Counts of NCCL's ring (or PAT, which runs the ring's schedule) for ``phases``: in each
    phase every owner's non-empty slices travel p - 1 hops (sim.hardware.nccl_path._ring_ops)."""

    def counts(s: Shape) -> tuple[int, int]:
        if s.p == 1:
            return 0, 0
        call, params = _call(op, s), PathParams(algorithm, protocol, s.k, s.k, heads=s.gpus)
        loops, slices = ring_parts(call, params, s.p, (s.p - 1) * len(phases))
        slices_sent = sum(sum(1 for cut in channel_part(call, s.k, channel, owner, loops * slices) if cut[2]) for channel in range(s.k) for owner in range(s.p))
        return len(phases) * (s.p - 1) * slices_sent, s.p * s.k  # pairs (routes): a right neighbour per channel

    return counts


def _tree_pieces(call: Call, algorithm: str, protocol: str, channels: int, nodes: int) -> list[int]:
    cut = chunking(algorithm, protocol, call.size_bytes, channels, nodes, call.ranks)
    found = []
    for piece in call.pieces(channels):
        parts = max(1, math.ceil(piece[2] / cut.chunk_bytes))
        found.append(sum(1 for chunk in call.pieces(parts, piece) if chunk[2]))
    return found


def tree_counts(protocol: str):
    """NCCL's tree all-reduce: every non-root rank sends each chunk of a channel up and receives it down."""

    def counts(s: Shape) -> tuple[int, int]:
        call = _call("all_reduce", s)
        pieces = _tree_pieces(call, "Tree", protocol, s.k, max(s.p // s.gpus, 1))
        return 2 * (s.p - 1) * sum(pieces), max(1, 2 * (s.p - 1) * s.k)  # a tree edge each way per channel

    return counts


def nvls_counts(op: str, algorithm: str):
    """NVLS moves a node's data through the switch (no point-to-point messages); across nodes the
    heads' chunks climb and descend a double binary tree over the NICs."""

    def counts(s: Shape) -> tuple[int, int]:
        nodes = max(s.p // s.gpus, 1)
        if nodes == 1:
            return 0, 0
        call = _call(op, s)
        cut = chunking(algorithm, "Simple", call.size_bytes, s.k, nodes, s.p)
        messages = 0
        for portion in call.pieces(s.gpus):
            parts = min(max(1, math.ceil(portion[2] / cut.chunk_bytes)), MAX_MESSAGES)
            messages += 2 * (nodes - 1) * sum(1 for piece in call.pieces(parts, portion) if piece[2])
        return messages, 2 * (nodes - 1) * s.gpus

    return counts
