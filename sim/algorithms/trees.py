"""Rooted collectives: linear, binomial tree, pipelined chain, and their compositions.

Ranks are renumbered relative to the root (v = (rank - root) mod p). Binomial broadcast on
p = 8 (the root sends to the farthest subtree first)::

    step 0: 0->4
    step 1: 0->2  4->6
    step 2: 0->1  2->3  4->5  6->7

Binomial reduce runs the same tree upwards (step 0: 1->0 3->2 5->4 7->6, ...). Scatter and
gather move only the blocks of each subtree: at step 0 of a scatter the root sends blocks
4..7 to rank 4.
"""

from __future__ import annotations

from collections.abc import Generator

from sim.algorithms.call import Call, Piece
from sim.algorithms.phases import (
    BINOMIAL_BROADCAST,
    BINOMIAL_GATHER,
    BINOMIAL_REDUCE,
    BINOMIAL_SCATTER,
    HALVING_THEN,
    after_rounds,
)
from sim.algorithms.registry import Form, Phase, Run, Shape, ceil_lg, register
from sim.algorithms.ring import non_empty, ring_all_gather_steps
from sim.network import Network


def _one_per_rank(s: Shape) -> tuple[int, int]:
    """Message counts: one message to or from every other rank, each its own pair."""
    return s.p - 1, s.p - 1


# scatter and gather: lg p rounds, and the root's port carries the (p-1)/p n bytes of the other ranks' blocks
BINOMIAL_BLOCKS_FORM = Form(lambda p, n, a, b, g, k: ceil_lg(p) * a + (p - 1) / p * n * b, power_of_two=True, split="p")


def _absolute(v: int, call: Call) -> int:
    return (v + call.root) % call.ranks


def _relative(rank: int, call: Call) -> int:
    return (rank - call.root) % call.ranks


def _rounds(p: int) -> int:
    """ceil(lg p): the number of binomial-tree rounds."""
    return (p - 1).bit_length()


def _parent_mask(v: int, p: int) -> int:
    """The mask at which relative rank v hears from its parent (its lowest set bit); p for the root."""
    mask = 1
    while mask < p:
        if v & mask:
            return mask
        mask <<= 1
    return mask


def _reduce_into(net: Network, rank: int, call: Call, payload, piece: Piece | None, step: int) -> Generator:
    nbytes = call.size_bytes if piece is None else piece[2]
    combine = net.reduce(rank, nbytes, step)
    if combine is not None:
        yield combine
    call.add(rank, payload, piece)


# -- broadcast ----------------------------------------------------------------------------------


@register(
    "broadcast", "linear",
    form=Form(lambda p, n, a, b, g, k: (p - 1) * (a + n * b)),
    counts=_one_per_rank,
    phases=(Phase("root sends to each rank in turn", "the root sends the whole buffer to the next rank"),),
)  # fmt: skip
def linear_broadcast(net: Network, rank: int, call: Call) -> Generator:
    """The root sends the whole buffer to every other rank in turn: (p-1)(a + n b)."""
    if rank == call.root:
        for v in range(1, call.ranks):  # blocking sends, one at a time, as MPICH's
            yield net.send(rank, _absolute(v, call), call.size_bytes, call.take(rank), v - 1)
    else:
        call.put(rank, (yield net.recv(call.root, rank)))


def binomial_broadcast_steps(net: Network, rank: int, call: Call, step0: int = 0) -> Generator:
    p, v = call.ranks, _relative(rank, call)
    rounds = _rounds(p)
    mask = _parent_mask(v, p)
    if v:
        call.put(rank, (yield net.recv(_absolute(v - mask, call), rank)))
    mask >>= 1
    while mask > 0:
        if v + mask < p:  # MPICH sends to each child with a blocking send, one after the other
            step = step0 + rounds - mask.bit_length()
            yield net.send(rank, _absolute(v + mask, call), call.size_bytes, call.take(rank), step)
        mask >>= 1


@register(
    "broadcast", "binomial",
    form=Form(lambda p, n, a, b, g, k: ceil_lg(p) * (a + n * b)),
    counts=_one_per_rank,
    phases=(BINOMIAL_BROADCAST,),
    runs=(("gloo", "broadcast"),),  # gloo's broadcast is a binomial tree
)  # fmt: skip
def binomial_broadcast(net: Network, rank: int, call: Call) -> Generator:
    """ceil(lg p) rounds; in round k every rank holding the data sends it once: ceil(lg p)(a + n b)."""
    yield from binomial_broadcast_steps(net, rank, call)


@register(
    "broadcast", "pipelined_chain", chunked=True, splits=True,
    form=Form(lambda p, n, a, b, g, k: (p - 2 + k) * (a + n * b / k), chunked=True, split="k"),
    counts=lambda s: ((s.p - 1) * s.k, s.p - 1),
    phases=(Phase("chunks flow down the chain", "each rank forwards the chunk that just arrived to the next rank of the chain"),),
    runs=(Run("nccl", "broadcast", chunk_bytes=128 * 1024),),  # NCCL's broadcast: its ring's pipelined chain, 128 KiB chunks (an approximation)
)  # fmt: skip
def pipelined_chain_broadcast(net: Network, rank: int, call: Call) -> Generator:
    """Chunks flow down the chain root -> root+1 -> ...; each rank forwards a chunk as soon as
    it arrives: (p - 2 + k)(a + n b / k)."""
    p, v = call.ranks, _relative(rank, call)
    nxt = _absolute(v + 1, call) if v + 1 < p else None
    for chunk, piece in enumerate(non_empty(call.pieces(call.chunks))):
        if v:
            payload = yield net.recv(_absolute(v - 1, call), rank)
            call.put(rank, payload, piece)
        if nxt is not None:
            net.send(rank, nxt, piece[2], call.take(rank, piece), v + chunk, chunk)


def binomial_scatter_steps(net: Network, rank: int, call: Call, offset: int = 0) -> Generator:
    """Relative rank v ends holding block v + offset (mod p) of the root's buffer."""
    p, v = call.ranks, _relative(rank, call)
    rounds = _rounds(p)
    mask = _parent_mask(v, p)
    if v:
        pieces = call.blocks_of(v, v + mask, offset)
        call.put_pieces(rank, (yield net.recv(_absolute(v - mask, call), rank)), pieces)
    mask >>= 1
    while mask > 0:
        if v + mask < p:
            pieces = call.blocks_of(v + mask, v + 2 * mask, offset)
            nbytes = sum(piece[2] for piece in pieces)
            yield net.send(rank, _absolute(v + mask, call), nbytes, call.take_pieces(rank, pieces), rounds - mask.bit_length())
        mask >>= 1


@register("scatter", "binomial", splits=True, form=BINOMIAL_BLOCKS_FORM, counts=_one_per_rank, phases=(BINOMIAL_SCATTER,))
def binomial_scatter(net: Network, rank: int, call: Call) -> Generator:
    """Each round halves what is left to send: lg p a + (p-1)/p n b for power-of-two p.
    Rank r ends with block r."""
    yield from binomial_scatter_steps(net, rank, call, call.root)


@register(
    "broadcast", "scatter_allgather", splits=True,
    form=Form(lambda p, n, a, b, g, k: (ceil_lg(p) + p - 1) * a + 2 * (p - 1) / p * n * b, power_of_two=True, split="p"),
    counts=lambda s: (s.p - 1 + s.p * (s.p - 1), 2 * (s.p - 1) + s.p),
    phases=(
        Phase("scatter (binomial)", "ranks holding blocks hand half of them down the tree"),
        Phase("all-gather (ring)", "each rank forwards a block to its right neighbour", after_rounds),
    ),
)  # fmt: skip
def scatter_allgather_broadcast(net: Network, rank: int, call: Call) -> Generator:
    """van de Geijn: binomial scatter of blocks, then ring all-gather: (lg p + p - 1) a + 2 (p-1)/p n b."""
    yield from binomial_scatter_steps(net, rank, call)
    group = [_absolute(v, call) for v in range(call.ranks)]
    yield from ring_all_gather_steps(net, rank, call, group, call.whole(), _rounds(call.ranks))


# -- reduce and gather ----------------------------------------------------------------------------


@register(
    "reduce", "linear",
    # rendezvous: the root receives (a + n b) and combines (n g) from one rank after the other;
    # eager fifo: arrivals every n b on the root's port (latency occupies no link), the first at
    # a + n b; the root combines each on arrival
    form=Form(
        lambda p, n, a, b, g, k: (p - 1) * (a + n * b + n * g), rendezvous=True,
        eager=lambda p, n, a, b, g, k: (a + n * b + n * g) + (p - 2) * max(n * b, n * g),
    ),
    counts=_one_per_rank,
    phases=(Phase("every rank sends to the root", "every rank sends its buffer to the root, which adds them in rank order"),),
)  # fmt: skip
def linear_reduce(net: Network, rank: int, call: Call) -> Generator:
    """Every rank sends its buffer to the root, which combines them in rank order."""
    if rank != call.root:
        net.send(rank, call.root, call.size_bytes, call.take(rank), 0)
        return
    for other in range(call.ranks):
        if other != rank:
            payload = yield net.recv(other, rank)
            yield from _reduce_into(net, rank, call, payload, None, 0)


def binomial_reduce_steps(net: Network, rank: int, call: Call) -> Generator:
    p, v = call.ranks, _relative(rank, call)
    mask, step = 1, 0
    while mask < p:
        if v & mask:
            net.send(rank, _absolute(v - mask, call), call.size_bytes, call.take(rank), step)
            return
        if v + mask < p:
            payload = yield net.recv(_absolute(v + mask, call), rank)
            yield from _reduce_into(net, rank, call, payload, None, step)
        mask <<= 1
        step += 1


@register(
    "reduce", "binomial",
    form=Form(lambda p, n, a, b, g, k: ceil_lg(p) * (a + n * b + n * g), rendezvous=True),
    counts=_one_per_rank,
    phases=(BINOMIAL_REDUCE,),
    # gloo's reduce (gloo/reduce.cc) is a ring reduce-scatter then a gather to the root: no record has it
    runs=(Run("gloo", "reduce", note="gloo's reduce is a ring reduce-scatter then a gather to the root (gloo/reduce.cc), "
                                     "which collsim does not simulate: binomial runs instead; give --algorithm to choose"),),
)  # fmt: skip
def binomial_reduce(net: Network, rank: int, call: Call) -> Generator:
    """ceil(lg p) rounds of receive-and-combine: ceil(lg p)(a + n b + n g)."""
    yield from binomial_reduce_steps(net, rank, call)


def binomial_gather_steps(net: Network, rank: int, call: Call, step0: int = 0, offset: int = 0) -> Generator:
    """Relative rank v holds block v + offset (mod p); the root ends with every block."""
    p, v = call.ranks, _relative(rank, call)
    mask, step = 1, step0
    while mask < p:
        if v & mask:
            pieces = call.blocks_of(v, v + mask, offset)
            nbytes = sum(piece[2] for piece in pieces)
            net.send(rank, _absolute(v - mask, call), nbytes, call.take_pieces(rank, pieces), step)
            return
        if v + mask < p:
            pieces = call.blocks_of(v + mask, v + 2 * mask, offset)
            call.put_pieces(rank, (yield net.recv(_absolute(v + mask, call), rank)), pieces)
        mask <<= 1
        step += 1


@register("gather", "binomial", splits=True, form=BINOMIAL_BLOCKS_FORM, counts=_one_per_rank, phases=(BINOMIAL_GATHER,))
def binomial_gather(net: Network, rank: int, call: Call) -> Generator:
    """Subtrees send their gathered blocks up: lg p a + (p-1)/p n b for power-of-two p.
    Rank r contributes block r."""
    yield from binomial_gather_steps(net, rank, call, 0, call.root)


@register(
    "reduce", "reduce_scatter_gather", power_of_two=True, splits=True,
    form=Form(
        lambda p, n, a, b, g, k: 2 * ceil_lg(p) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, split="p"
    ),
    counts=lambda s: (s.p * ceil_lg(s.p) + s.p - 1, s.p * ceil_lg(s.p) + s.p - 1),
    phases=(HALVING_THEN, Phase("gather (binomial)", "subtrees send the blocks they collected to their parent", after_rounds)),
)  # fmt: skip
def reduce_scatter_gather_reduce(net: Network, rank: int, call: Call) -> Generator:
    """Rabenseifner's reduce: recursive-halving reduce-scatter, then binomial gather to the root:
    2 lg p a + 2 (p-1)/p n b + (p-1)/p n g."""
    from sim.algorithms.butterfly import recursive_halving_steps

    group = [_absolute(v, call) for v in range(call.ranks)]
    yield from recursive_halving_steps(net, rank, call, group)
    yield from binomial_gather_steps(net, rank, call, _rounds(call.ranks))


@register(
    "all_reduce", "reduce_broadcast",
    form=Form(lambda p, n, a, b, g, k: ceil_lg(p) * (2 * a + 2 * n * b + n * g), rendezvous=True),
    counts=lambda s: (2 * (s.p - 1), 2 * (s.p - 1)),
    phases=(
        Phase("reduce (up the tree)", "children send their partial sums to their parent, which adds them"),
        Phase("broadcast (down the tree)", "every rank holding the result sends it to a child", after_rounds),
    ),
)  # fmt: skip
def reduce_broadcast_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    """Binomial reduce to the root, then binomial broadcast: ceil(lg p)(2a + 2 n b + n g)."""
    yield from binomial_reduce_steps(net, rank, call)
    yield from binomial_broadcast_steps(net, rank, call, _rounds(call.ranks))
