"""Initial buffers and the definition of each collective, to check what the algorithms moved.

Buffer conventions (n = scenario size, p = ranks, block r = piece r of ``split(n, p)``):

- broadcast, scatter: the root holds n bytes; broadcast ends with every rank holding them,
  scatter with rank r holding block r of the root's buffer.
- reduce, all_reduce: every rank holds n bytes; the root / every rank ends with the sum.
- all_gather, gather: rank r holds its block r (n = gathered size); every rank / the root ends
  with all blocks.
- reduce_scatter: every rank holds n bytes; rank r ends with block r of the sum.
- send_recv: rank 0's n bytes end on rank p-1. barrier: no payload.
- all_to_all: every rank holds p blocks of n // p elements; rank r ends with block r of every
  rank, in rank order (the n mod p trailing elements take no part).
"""

from __future__ import annotations

import numpy as np

from sim.algorithms.call import Call, split


def initial_buffers(op: str, ranks: int, elements: int, root: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    # int32 keeps memory down; sums of up to 65536 values in [-1000, 1000) cannot overflow it
    inputs = [rng.integers(-1000, 1000, size=elements, dtype=np.int32) for _ in range(ranks)]
    blocks = split(elements, ranks)
    if op in ("all_gather", "gather"):
        for rank, buffer in enumerate(inputs):
            lo, hi = blocks[rank]
            mask = np.ones(elements, dtype=bool)
            mask[lo:hi] = False
            buffer[mask] = 0
    if op in ("broadcast", "scatter"):
        for rank, buffer in enumerate(inputs):
            if rank != root:
                buffer[:] = 0
    if op == "send_recv":
        for rank in range(1, ranks):
            inputs[rank][:] = 0
    return inputs


_SUMMED = ("reduce", "all_reduce", "all_gather", "gather", "reduce_scatter")  # the ops whose result is the inputs' sum


def _summed(inputs: list[np.ndarray]) -> np.ndarray:
    """The element-wise sum, added in place: ``np.sum(inputs, axis=0)`` first stacks every rank's
    buffer into one new array (512 MiB more for 8 ranks of 64 MiB, most of ``--verify``'s time)."""
    total = inputs[0].copy()
    for buffer in inputs[1:]:
        np.add(total, buffer, out=total)
    return total


def prepare(call: Call, inputs: list[np.ndarray], repetitions: int = 1) -> None:
    """A verified call's start: its buffers are ``inputs`` and what :func:`check` compares them
    with at the end is computed now, before the run moves anything (:func:`expected`: the sum,
    the root's buffer, ...). The inputs are kept only where a later repetition starts again from
    them; else each rank's buffer is its input itself, not a copy (8 ranks x 64 MiB kept both, 1 GB)."""
    call.inputs = inputs
    call.expected = expected(call)
    if repetitions > 1:
        call.buffers = [buffer.copy() for buffer in inputs]
    else:
        call.buffers, call.inputs = inputs, None


def expected(call: Call) -> list[tuple[int, tuple[int, int], np.ndarray]]:
    """(rank, element range, expected values) that the final buffers must match, from the call's
    inputs; no row shares memory with an input (the run may write into the inputs: :func:`prepare`)."""
    inputs, p, n, root = call.inputs, call.ranks, call.elements, call.root
    op = call.op
    total = _summed(inputs) if inputs and op in _SUMMED else None
    blocks = split(n, p)
    whole = (0, n)
    if op in ("broadcast", "scatter"):
        source = inputs[root].copy()  # a copy: the root's buffer may be its input, which the run writes
        if op == "broadcast":
            return [(r, whole, source) for r in range(p)]
        return [(r, blocks[r], source[blocks[r][0] : blocks[r][1]]) for r in range(p)]
    if op == "reduce":
        return [(root, whole, total)]
    if op == "all_reduce":
        return [(r, whole, total) for r in range(p)]
    if op == "all_gather":
        return [(r, whole, total) for r in range(p)]  # blocks are disjoint: their sum is the concatenation
    if op == "gather":
        return [(root, whole, total)]
    if op == "reduce_scatter":
        return [(r, blocks[r], total[blocks[r][0] : blocks[r][1]]) for r in range(p)]
    if op == "send_recv":
        return [(p - 1, whole, inputs[0].copy())]
    if op == "all_to_all":  # rank r's block j is rank j's block r (p blocks of n // p; the tail stays)
        size = n // p
        return [(r, (0, p * size), np.concatenate([inputs[j][r * size : (r + 1) * size] for j in range(p)])) for r in range(p)]
    return []


def check(call: Call) -> bool:
    """True when every rank's final buffer matches the collective's definition (computed before
    the run where :func:`prepare` set the call up)."""
    for rank, (lo, hi), values in call.expected if call.expected is not None else expected(call):
        if not np.array_equal(call.buffers[rank][lo:hi], values):
            return False
    return True
