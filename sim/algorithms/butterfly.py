"""Butterfly algorithms (power-of-two ranks): recursive doubling and halving, Rabenseifner.

Rank i exchanges with partner i XOR d, as MPI_Sendrecv: a step ends when both its send and
its receive have, so a rank never has two sends of its own in flight. Recursive halving reduce-scatter on p = 8 halves the
range each step (d = 4, 2, 1), so rank i ends with block i::

    d=4: i keeps the half of blocks holding i, sends the other half (n/2) to i^4, combines
    d=2: ... n/4 to i^2
    d=1: ... n/8 to i^1                      -> lg p a + (p-1)/p n b + (p-1)/p n g

Recursive doubling all-gather runs the other way (d = 1, 2, 4): the held range doubles.
Non-power-of-two rank counts are refused by the registry (``power_of_two=True``).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

from sim.algorithms.call import Call
from sim.algorithms.phases import HALVING_THEN, RECURSIVE_DOUBLING_GATHER, RECURSIVE_HALVING, THEN_DOUBLING
from sim.algorithms.registry import Form, Phase, ceil_lg, register
from sim.network import Network


def recursive_halving_steps(net: Network, rank: int, call: Call, group: Sequence[int], step0: int = 0) -> Generator:
    """Group member i ends with block i of the sum over the group (blocks in group order)."""
    m = len(group)
    i = group.index(rank)
    first, last = 0, m
    distance, step = m // 2, step0
    while distance:
        partner = group[i ^ distance]
        middle = (first + last) // 2
        if i & distance:
            send, first = call.span(first, middle), middle
        else:
            send, last = call.span(middle, last), middle
        keep = call.span(first, last)
        sent = net.send(rank, partner, send[2], call.take(rank, send), step)
        payload = yield net.recv(partner, rank)
        yield sent  # MPI_Sendrecv: the step ends when both directions have
        combine = net.reduce(rank, keep[2], step)
        if combine is not None:
            yield combine
        call.add(rank, payload, keep)
        distance //= 2
        step += 1


def recursive_doubling_gather_steps(net: Network, rank: int, call: Call, group: Sequence[int], step0: int = 0) -> Generator:
    """Group member i starts with block i and ends with all blocks."""
    m = len(group)
    i = group.index(rank)
    distance, step = 1, step0
    while distance < m:
        mine = (i // distance) * distance
        theirs = ((i ^ distance) // distance) * distance
        send, receive = call.span(mine, mine + distance), call.span(theirs, theirs + distance)
        sent = net.send(rank, group[i ^ distance], send[2], call.take(rank, send), step)
        call.put(rank, (yield net.recv(group[i ^ distance], rank)), receive)
        yield sent
        distance *= 2
        step += 1


@register(
    "reduce_scatter", "recursive_halving", power_of_two=True, splits=True,
    form=Form(lambda p, n, a, b, g, k: ceil_lg(p) * a + (p - 1) / p * n * b + (p - 1) / p * n * g, split="p"),
    counts=lambda s: (s.p * ceil_lg(s.p), s.p * ceil_lg(s.p)),
    phases=(RECURSIVE_HALVING,),
)  # fmt: skip
def recursive_halving_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from recursive_halving_steps(net, rank, call, range(call.ranks))


@register(
    "all_gather", "recursive_doubling", power_of_two=True, splits=True,
    form=Form(lambda p, n, a, b, g, k: ceil_lg(p) * a + (p - 1) / p * n * b, split="p"),
    counts=lambda s: (s.p * ceil_lg(s.p), s.p * ceil_lg(s.p)),
    phases=(RECURSIVE_DOUBLING_GATHER,),
)  # fmt: skip
def recursive_doubling_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from recursive_doubling_gather_steps(net, rank, call, range(call.ranks))


@register(
    "all_reduce", "recursive_doubling", power_of_two=True,
    form=Form(lambda p, n, a, b, g, k: ceil_lg(p) * (a + n * b + n * g)),
    counts=lambda s: (s.p * ceil_lg(s.p), s.p * ceil_lg(s.p)),
    phases=(Phase("pairwise exchange and combine", "partners at doubling distance swap their whole buffers and add what they receive"),),
)  # fmt: skip
def recursive_doubling_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    """lg p exchanges of the whole buffer, each followed by a combine: lg p (a + n b + n g)."""
    distance, step = 1, 0
    while distance < call.ranks:
        partner = rank ^ distance
        sent = net.send(rank, partner, call.size_bytes, call.take(rank), step)
        payload = yield net.recv(partner, rank)
        yield sent
        combine = net.reduce(rank, call.size_bytes, step)
        if combine is not None:
            yield combine
        call.add(rank, payload)
        distance *= 2
        step += 1


@register(
    "all_reduce", "rabenseifner", power_of_two=True, splits=True,
    form=Form(lambda p, n, a, b, g, k: 2 * ceil_lg(p) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, split="p"),
    counts=lambda s: (2 * s.p * ceil_lg(s.p), s.p * ceil_lg(s.p)),
    phases=(HALVING_THEN, THEN_DOUBLING),
)  # fmt: skip
def rabenseifner_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    """Recursive-halving reduce-scatter, then recursive-doubling all-gather:
    2 lg p a + 2 (p-1)/p n b + (p-1)/p n g."""
    group = range(call.ranks)
    yield from recursive_halving_steps(net, rank, call, group)
    yield from recursive_doubling_gather_steps(net, rank, call, group, (call.ranks - 1).bit_length())
