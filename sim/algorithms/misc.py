"""Barrier and point-to-point.

Dissemination barrier: in round k rank r signals r + 2^k and waits for r - 2^k (mod p); after
ceil(lg p) rounds every rank has heard, directly or not, from every other: ceil(lg p) a.
"""

from __future__ import annotations

from collections.abc import Generator

from sim.algorithms.call import Call
from sim.algorithms.registry import Form, Phase, ceil_lg, needs_a_peer, register
from sim.network import Network


@register(
    "barrier", "dissemination",
    form=Form(lambda p, n, a, b, g, k: ceil_lg(p) * a),
    counts=lambda s: (s.p * ceil_lg(s.p), s.p * ceil_lg(s.p)),
    phases=(Phase("dissemination rounds", "every rank signals the rank 2^k places on and waits for the one 2^k places back"),),
)  # fmt: skip
def dissemination_barrier(net: Network, rank: int, call: Call) -> Generator:
    p, distance, step = call.ranks, 1, 0
    while distance < p:
        sent = net.send(rank, (rank + distance) % p, 0, None, step)
        yield net.recv((rank - distance) % p, rank)
        yield sent  # MPI_Sendrecv, as MPICH's dissemination barrier
        distance *= 2
        step += 1


@register(
    "send_recv", "direct",
    form=Form(lambda p, n, a, b, g, k: a + n * b),
    counts=lambda s: (1, 1),
    phases=(Phase("rank 0 sends to the last rank", "rank 0 sends its whole buffer to the last rank"),),
    needs=needs_a_peer,
)  # fmt: skip
def send_recv(net: Network, rank: int, call: Call) -> Generator:
    """Rank 0 sends n bytes to rank p-1: a + n b."""
    last = call.ranks - 1
    if rank == 0 and last > 0:
        net.send(0, last, call.size_bytes, call.take(0), 0)
    elif rank == last and last > 0:
        call.put(rank, (yield net.recv(0, rank)))
