"""Ring algorithms: reduce-scatter, all-gather, all-reduce, and the hierarchical all-reduce.

The ring helpers work on any group of ranks and any element range, so the hierarchical
all-reduce reuses them inside a node and across nodes. With ``chunks`` k each piece travels as
k sub-chunks and a chunk is forwarded as soon as it is reduced, so reduction overlaps transfer.

Ring reduce-scatter, p = 4, piece j = j-th quarter; rank i sends piece (i-s-1) at step s::

    step 0: 0->1 p3   1->2 p0   2->3 p1   3->0 p2
    step 1: 0->1 p2   1->2 p3   2->3 p0   3->0 p1
    step 2: 0->1 p1   1->2 p2   2->3 p3   3->0 p0   -> rank i holds the sum of piece i
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from sim.algorithms.call import Call, Piece
from sim.algorithms.phases import RING_ALL_GATHER, RING_REDUCE_SCATTER, RS_THEN, THEN_AG
from sim.algorithms.registry import Form, Phase, Run, register
from sim.errors import CollsimError
from sim.network import Network
from sim.network.machine import Machine


def _chunked(call: Call, parts: int, within: Piece) -> list[tuple[Piece, ...]]:
    """``within`` cut into ``parts`` pieces, each cut into ``call.chunks`` sub-chunks; built once
    per call and shared by its ranks (one list per rank would be p lists of p entries: a million
    objects at p = 1024, and cache misses on every step)."""
    key = ("ring-chunks", parts, within[0], within[1])
    cached = call._pieces.get(key)
    if cached is None:
        pieces = call.pieces(parts, within)
        if call.chunks == 1:
            cached = [(piece,) for piece in pieces]
        else:  # chunks beyond a piece's elements are not sent; an empty piece still sends one message
            cached = [non_empty(call.pieces(call.chunks, piece)) for piece in pieces]
        call._pieces[key] = cached
    return cached


def non_empty(chunks: tuple[Piece, ...]) -> tuple[Piece, ...]:
    """The chunks that hold elements, or the first (empty) one when none does: an empty piece
    still costs one message, as with one chunk, but k chunks of nothing are not k messages."""
    return tuple(chunk for chunk in chunks if chunk[2]) or chunks[:1]


def ring_position(group: Sequence[int], rank: int) -> tuple[int, int, int, int]:
    """(group size, this rank's place, its right and left neighbours) on the ring ``group``."""
    m = len(group)
    i = group.index(rank)
    return m, i, group[(i + 1) % m], group[(i - 1) % m]


def ring_reduce_scatter_steps(
    net: Network, rank: int, call: Call, group: Sequence[int], within: Piece, step0: int = 0, tag: int = 0
) -> Generator:
    """Group member i ends holding piece i of ``within`` summed over the group."""
    if len(group) == 1:
        return
    m, i, right, left = ring_position(group, rank)
    send, recv, reduce = net.send, net.recv, net.reduce
    verify = call.buffers is not None
    subs = _chunked(call, m, within)
    for chunk, sub in enumerate(subs[(i - 1) % m]):
        send(rank, right, sub[2], call.take(rank, sub), step0, chunk, tag)
    for step in range(m - 1):
        for chunk, sub in enumerate(subs[(i - step - 2) % m]):
            payload = yield recv(left, rank, tag)
            combine = reduce(rank, sub[2], step0 + step, chunk)
            if combine is not None:
                yield combine
            if verify:
                call.add(rank, payload, sub)
            if step < m - 2:
                send(rank, right, sub[2], call.take(rank, sub) if verify else None, step0 + step + 1, chunk, tag)


def ring_all_gather_steps(
    net: Network, rank: int, call: Call, group: Sequence[int], within: Piece, step0: int = 0, tag: int = 0
) -> Generator:
    """Group member i starts with piece i of ``within`` and ends with all pieces."""
    if len(group) == 1:
        return
    m, i, right, left = ring_position(group, rank)
    send, recv = net.send, net.recv
    verify = call.buffers is not None
    subs = _chunked(call, m, within)
    for chunk, sub in enumerate(subs[i]):
        send(rank, right, sub[2], call.take(rank, sub), step0, chunk, tag)
    for step in range(m - 1):
        for chunk, sub in enumerate(subs[(i - step - 1) % m]):
            payload = yield recv(left, rank, tag)
            if verify:
                call.put(rank, payload, sub)
            if step < m - 2:
                send(rank, right, sub[2], payload, step0 + step + 1, chunk, tag)


@register(
    "reduce_scatter", "ring", chunked=True, splits=True,
    form=Form(lambda p, n, a, b, g, k: (p - 1) * k * a + (p - 1) / p * n * b + (p - 1) / p * n * g, chunked=True, split="pk"),
    counts=lambda s: (s.p * (s.p - 1) * s.k, s.p),
    phases=(RING_REDUCE_SCATTER,),
    runs=(("nccl", "reduce_scatter"),),
)  # fmt: skip
def ring_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from ring_reduce_scatter_steps(net, rank, call, range(call.ranks), call.whole())


@register(
    "all_gather", "ring", chunked=True, splits=True,
    form=Form(lambda p, n, a, b, g, k: (p - 1) * k * a + (p - 1) / p * n * b, chunked=True, split="pk"),
    counts=lambda s: (s.p * (s.p - 1) * s.k, s.p),
    phases=(RING_ALL_GATHER,),
    runs=(("gloo", "all_gather"), ("nccl", "all_gather")),  # all_gather_into_tensor: gloo's ring allgather
)  # fmt: skip
def ring_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from ring_all_gather_steps(net, rank, call, range(call.ranks), call.whole())


@register(
    "all_reduce", "ring", chunked=True, splits=True,
    # k chunks: (p-1) k messages of n/(p k) bytes per rank and phase, one at a time
    form=Form(
        lambda p, n, a, b, g, k: 2 * (p - 1) * k * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, chunked=True, split="pk"
    ),
    counts=lambda s: (2 * s.p * (s.p - 1) * s.k, s.p),
    phases=(RS_THEN, THEN_AG),
    # gloo: ProcessGroupGloo leaves the allreduce algorithm unset and gloo runs ring; its
    # reduce_scatter_tensor is an all-reduce of the whole input and a local copy of this rank's
    # chunk. nccl: ring (its tree is for all-reduce only, and on one node it picks ring for large sizes)
    runs=(
        ("gloo", "all_reduce"),
        Run("gloo", "reduce_scatter", note="gloo runs reduce_scatter_tensor as an all-reduce of the whole input (all_reduce/ring), then keeps "
                                            "this rank's chunk; collsim runs reduce_scatter/ring, half the bytes of gloo's run "
                                            "(--op all_reduce gives gloo's time); give --algorithm to choose"),
        ("nccl", "all_reduce"),
    ),
)  # fmt: skip
def ring_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    """Reduce-scatter then all-gather around the ring: 2(p-1) steps of n/p bytes.

    The two phases of ring_reduce_scatter_steps and ring_all_gather_steps, inlined: one
    generator frame per rank instead of three, which is most of what a rank costs to resume
    (the hot path of the 1,024-rank benchmark; docs/scale.md). A plain function that returns
    the rank's generator, so that choosing the variant adds no generator level either.
    """
    if call.chunks == 1 and call.buffers is None and call.ranks > 1:
        return _ring_all_reduce_plain(net, rank, call.ranks, call.pieces(call.ranks))
    return _ring_all_reduce_chunked(net, rank, call)


def _ring_all_reduce_chunked(net: Network, rank: int, call: Call) -> Generator:
    m = call.ranks
    if m == 1:
        return
    right, left = (rank + 1) % m, (rank - 1) % m
    send, recv, reduce = net.send, net.recv, net.reduce
    verify = call.buffers is not None
    subs = _chunked(call, m, call.whole())
    for chunk, sub in enumerate(subs[(rank - 1) % m]):
        send(rank, right, sub[2], call.take(rank, sub), 0, chunk, 0)
    for step in range(m - 1):
        for chunk, sub in enumerate(subs[(rank - step - 2) % m]):
            payload = yield recv(left, rank, 0)
            combine = reduce(rank, sub[2], step, chunk)
            if combine is not None:
                yield combine
            if verify:
                call.add(rank, payload, sub)
            if step < m - 2:
                send(rank, right, sub[2], call.take(rank, sub) if verify else None, step + 1, chunk, 0)
    step0 = m - 1
    for chunk, sub in enumerate(subs[rank]):
        send(rank, right, sub[2], call.take(rank, sub), step0, chunk, 0)
    for step in range(m - 1):
        for chunk, sub in enumerate(subs[(rank - step - 1) % m]):
            payload = yield recv(left, rank, 0)
            if verify:
                call.put(rank, payload, sub)
            if step < m - 2:
                send(rank, right, sub[2], payload, step0 + step + 1, chunk, 0)


def _ring_all_reduce_plain(net: Network, rank: int, m: int, pieces: tuple[Piece, ...], machine: Machine | None = None) -> Generator:
    """ring_all_reduce with one chunk and no payloads: the same messages in the same order,
    without the per-step chunk loop, and no reduce call when reductions are free.

    With ``machine`` (:class:`sim.network.machine.Machine`: no ``Process._resume`` per message)
    the generator first yields once (primed), and each ``yield event`` becomes "append the
    machine's ``resume`` to the event's callbacks unless it has been processed, then yield"
    (what ``Process._resume`` does for it); at the end it calls ``machine.done()``."""
    resume = None
    if machine is not None:
        yield  # primed by Machine; the Initialize event resumes from here
        resume = machine.resume
    right, left = (rank + 1) % m, (rank - 1) % m
    send, recv, reduce = net.send, net.recv, net.reduce
    gamma = net.gamma
    send(rank, right, pieces[(rank - 1) % m][2], None, 0, 0, 0)
    last = m - 2
    for k in range(2 * m - 2):  # reduce-scatter steps 0 .. m - 2, then all-gather steps 0 .. m - 2
        delivery = recv(left, rank, 0)
        if resume is None:
            yield delivery
        elif delivery.callbacks is not None:
            delivery.callbacks.append(resume)
            yield
        if k <= last:  # reduce-scatter step k
            nbytes = pieces[(rank - k - 2) % m][2]
            if gamma and nbytes:
                combine = reduce(rank, nbytes, k, 0)
                if resume is None:
                    yield combine
                elif combine.callbacks is not None:
                    combine.callbacks.append(resume)
                    yield
            if k < last:
                send(rank, right, nbytes, None, k + 1, 0, 0)
            else:  # the all-gather starts: this rank's reduced piece goes right
                send(rank, right, pieces[rank][2], None, m - 1, 0, 0)
        elif k - m + 1 < last:  # all-gather step k - (m - 1) forwards what it received
            send(rank, right, pieces[(rank - k + m - 2) % m][2], None, k + 1, 0, 0)
    if machine is not None:
        machine.done()
        yield  # never resumed


@register(
    "all_reduce", "hierarchical", chunked=True, splits=True, topology="two_level",
    form="its time depends on the two-level topology: rings inside nodes and across them on different links",
    counts=lambda s: (2 * s.p * (s.gpus - 1) * s.k + 2 * s.p * (max(s.p // s.gpus, 1) - 1) * s.k, 2 * s.p),
    phases=(
        Phase(
            "intra-node reduce-scatter, inter-node all-reduce, intra-node all-gather",
            "ranks run a ring inside their node, then one across nodes among the ranks with the same local index, then one inside the node again",
        ),
    ),
)  # fmt: skip
def hierarchical_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    """Intra-node ring reduce-scatter, inter-node ring all-reduce of each rank's piece among the
    ranks with the same local index, intra-node ring all-gather. Nodes and local indices come
    from the topology's placement (``node_ranks``: each node's ranks in endpoint order)."""
    node_ranks = net.topology.node_ranks()
    gpus, nodes = len(node_ranks[0]), len(node_ranks)
    if any(len(members) != gpus for members in node_ranks):
        sizes = sorted({len(members) for members in node_ranks})
        raise CollsimError(f"algorithm hierarchical needs as many ranks on every node; these ranks sit {sizes} to a node")
    intra = next(members for members in node_ranks if rank in members)
    local = intra.index(rank)
    inter = [members[local] for members in node_ranks]
    whole = call.whole()
    mine = call.pieces(gpus, whole)[local]
    yield from ring_reduce_scatter_steps(net, rank, call, intra, whole, 0, tag=1)
    step = gpus - 1
    yield from ring_reduce_scatter_steps(net, rank, call, inter, mine, step, tag=2)
    step += nodes - 1
    yield from ring_all_gather_steps(net, rank, call, inter, mine, step, tag=2)
    step += nodes - 1
    yield from ring_all_gather_steps(net, rank, call, intra, whole, step, tag=1)


def _plain_machine(env: Any, net: Network, rank: int, call: Call) -> Machine | None:
    """The plain ring all-reduce as a :class:`sim.network.machine.Machine` (no ``Process._resume``
    per message), where ring_all_reduce would run :func:`_ring_all_reduce_plain`."""
    if call.chunks == 1 and call.buffers is None and call.ranks > 1:
        pieces = call.pieces(call.ranks)
        return Machine(env, lambda machine: _ring_all_reduce_plain(net, rank, call.ranks, pieces, machine))
    return None


ring_all_reduce.machine = _plain_machine  # type: ignore[attr-defined]  # read by sim.collective.runner
