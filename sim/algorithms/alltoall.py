"""All-to-all (MoE token dispatch, expert parallelism): rank r's block j goes to rank j.

Every rank holds n bytes as p equal blocks of floor(n / p) elements; afterwards rank r's block
j is rank j's former block r. The n mod p trailing elements (when p does not divide n) take no
part and stay where they are, as nccl-tests rounds its count down to a multiple of p. Costs on switch(p), b = n / p bytes a block,
after Thakur, Rabenseifner & Gropp (2005):

- ``pairwise`` (exchange): p - 1 steps; in step s rank r sends its block for r + s and receives
  from r - s (r XOR s when p is a power of two): (p - 1) a + (p - 1)/p n beta.
- ``bruck``: rotate locally, then ceil(lg p) steps; in step k rank r sends to r + 2^k every
  block whose index has bit k set, then rotates back: lg p a + lg p (n/2) beta for
  power-of-two p. Fewer, larger messages: it wins for small blocks.
- ``direct``: NCCL's: every send and receive posted at once (ncclGroupStart, p - 1 ncclSend and
  ncclRecv, ncclGroupEnd); the network decides how they share ports and links.

Every exchange issues its send without waiting, then waits on the receive, then on its own
send's delivery, so it is correct when messages wait for the matching receive (rendezvous).
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import numpy as np

from sim.algorithms.call import Call
from sim.algorithms.registry import Form, Phase, ceil_lg, register
from sim.network import Network


def _block(call: Call, index: int) -> tuple[int, int, int]:
    size = call.elements // call.ranks
    return (index * size, (index + 1) * size, size * call.element_bytes)


@register(
    "all_to_all", "pairwise", splits=True,
    # Thakur et al. 2005, section 4.4; n = bytes a rank holds (p blocks of n/p)
    form=Form(lambda p, n, a, b, g, k: (p - 1) * a + (p - 1) / p * n * b, split="p"),
    counts=lambda s: (s.p * (s.p - 1), s.p * (s.p - 1)),
    phases=(
        Phase("pairwise exchange of blocks", "every rank sends its block for the rank s places on and receives the one from s places back"),
    ),
)  # fmt: skip
def pairwise_all_to_all(net: Network, rank: int, call: Call) -> Generator:
    p = call.ranks
    mine = call.take(rank)  # the blocks to send: snapshot before any arrives
    power_of_two = p & (p - 1) == 0
    for step in range(1, p):
        dst = rank ^ step if power_of_two else (rank + step) % p
        src = rank ^ step if power_of_two else (rank - step) % p
        lo, hi, nbytes = _block(call, dst)
        sent = net.send(rank, dst, nbytes, None if mine is None else mine[lo:hi], step - 1)
        payload = yield net.recv(src, rank)
        call.put(rank, payload, _block(call, src))
        if not sent.processed:
            yield sent


@register(
    "all_to_all", "direct", splits=True,
    form="every send is posted at once: the time depends on how the network shares ports and links",
    counts=lambda s: (s.p * (s.p - 1), s.p * (s.p - 1)),
    phases=(Phase("all blocks at once", "every rank sends each other rank its block at once, and the network shares the ports"),),
    runs=(("gloo", "all_to_all"),),  # gloo/alltoall.cc posts every send and receive at once
)  # fmt: skip
def direct_all_to_all(net: Network, rank: int, call: Call) -> Generator:
    yield from all_blocks_at_once(net, rank, call)


def all_blocks_at_once(net: Network, rank: int, call: Call, wire: Callable[[int], int] | None = None) -> Generator:
    """Send each other rank its block at once (to rank + d, from rank - d), then wait for every
    block and every send; ``wire`` gives the bytes on the wire of a block's bytes (a protocol's
    lines: sim.nccl.p2p)."""
    p = call.ranks
    mine = call.take(rank)
    sends = []
    for offset in range(1, p):
        dst = (rank + offset) % p
        lo, hi, nbytes = _block(call, dst)
        sends.append(net.send(rank, dst, wire(nbytes) if wire else nbytes, None if mine is None else mine[lo:hi], 0))
    receives = [((rank - offset) % p, net.recv((rank - offset) % p, rank)) for offset in range(1, p)]
    for src, event in receives:
        payload = yield event
        call.put(rank, payload, _block(call, src))
    for sent in sends:
        if not sent.processed:
            yield sent


@register(
    "all_to_all", "bruck", splits=True,
    form=Form(lambda p, n, a, b, g, k: ceil_lg(p) * (a + n / 2 * b), power_of_two=True, split="p"),
    counts=lambda s: (s.p * ceil_lg(s.p), s.p * ceil_lg(s.p)),
    phases=(Phase("Bruck rounds", "in round k every rank sends the blocks whose index has bit k set to the rank 2^k places on"),),
)  # fmt: skip
def bruck_all_to_all(net: Network, rank: int, call: Call) -> Generator:
    p = call.ranks
    size = call.elements // p  # elements a block
    verify = call.buffers is not None
    # slot i holds the block that (after the steps) belongs to rank - i; start: my block for rank + i
    slots = np.roll(call.buffers[rank][: p * size].reshape(p, size), -rank, axis=0).copy() if verify else None
    distance, step = 1, 0
    while distance < p:
        indices = [i for i in range(p) if i & distance]
        nbytes = len(indices) * size * call.element_bytes
        sent = net.send(rank, (rank + distance) % p, nbytes, slots[indices].copy() if verify else None, step)
        payload = yield net.recv((rank - distance) % p, rank)
        if verify:
            slots[indices] = payload
        if not sent.processed:
            yield sent
        distance *= 2
        step += 1
    if verify:
        # slot i now holds rank (rank - i)'s block for me: it goes to position (rank - i) mod p
        call.buffers[rank][: p * size] = slots[(rank - np.arange(p)) % p].reshape(-1)
