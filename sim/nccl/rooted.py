"""NCCL's Ring broadcast and reduce on NCCL's data path (NCCL v2.27.7-1; docs/nccl-model.md,
"Broadcast and reduce").

Each channel runs a chain along its ring (:func:`sim.nccl.path.channel_ring`):

- **broadcast** (``src/device/broadcast.h:38-53``): the root sends, every other rank receives,
  copies and sends on (``directRecvCopyDirectSend``), and the rank before the root in the ring
  only receives;
- **reduce** (``src/device/reduce.h:32-52``): the rank after the root sends, every next rank
  receives, reduces and sends on (``recvReduceSend``), and the root receives and reduces last.

Both move the channel's share of the buffer in chunks of one slot (BROADCAST/REDUCE_CHUNKSTEPS =
SLICESTEPS = 1, ``src/include/collectives.h:23-26``; ``calcCollChunking`` ``src/enqueue.cc:1985-1990``:
Simple 512 KiB, LL 32 KiB, LL128 576,000 B of data), up to NCCL_STEPS slots in flight per
connection. A Simple slot is forwarded once whole; LL and LL128 forward line by line, which the DES
approximates by pieces of one pass of the thread block (:data:`WAVE_BYTES`: 8 and 15 a slot). Wire
bytes, latencies, protocol caps and channels are the ring path's (:mod:`sim.nccl.path`,
:mod:`sim.nccl.topo`): the same machinery, a different schedule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator

from sim.algorithms.call import Call, Piece
from sim.algorithms.registry import Phase, Shape, register
from sim.nccl.path import NAMES, PathParams, channel_ring, params, run_connection
from sim.nccl.proto import LL, LL128, NCCL_STEPS, SIMPLE, Chunking, chunking
from sim.network import Network

__all__ = [
    "pick_note",
    "WAVE_BYTES",
    "chain",
    "chain_pieces",
    "rooted",
    "rooted_chunking",
    "window",
]
_TAG = 3000
_TAGS_PER_CHANNEL = 128  # a channel's receive window at most: NCCL_STEPS x 15 LL128 waves
# pieces per channel, at most (merged beyond): a chain's fill is (p - 2) pieces, so merging to the
# ring's 256 messages would keep a 32-rank broadcast 12 % slow at any size; 4096 keeps NCCL's own
# one-slot Simple chunks up to 16 channels x 4096 x 512 KiB = 32 GiB
MAX_CHAIN_CHUNKS = 4096
# What a protocol forwards at once, i.e. what the next hop can start on (data bytes): Simple a whole
# slot (its tail pointer moves per slice, prims_simple.h); LL one trip of the block's 512 threads
# over 16-byte lines of 8 data bytes (prims_ll.h:239 eltPerTrip = nthreads x EltPerLine); LL128 one
# pass of its 20 warps, each 32 threads x 8 words, 120 of 128 bytes data (prims_ll128.h:288-316).
WAVE_BYTES = {"Simple": SIMPLE.step_bytes, "LL": LL.max_threads * 8, "LL128": LL128.max_threads * 8 * 8 * 120 // 128}
_FORM = (
    "each channel pipelines NCCL's slots (LL, LL128: line passes) down a chain along its ring, 8 slots a connection: the DES is the model"
)
_PHASES = {
    "broadcast": (Phase("chunks flow from the root down each channel's chain", "each rank copies the chunk that just arrived and sends it to the next rank of its channel's ring"),),
    "reduce": (Phase("partial sums flow along each channel's chain to the root", "each rank adds its own data to the chunk that just arrived and sends the sum to the next rank of its channel's ring"),),
}  # fmt: skip


def rooted_chunking(protocol: str) -> Chunking:
    """calcCollChunking for Broadcast and Reduce: one slot a chunk and a slice for every
    protocol (Simple's ring takes BROADCAST/REDUCE_CHUNKSTEPS = 1, not all_reduce's 4)."""
    if protocol == "Simple":
        return Chunking(SIMPLE.step_bytes, SIMPLE.step_bytes, 1)
    return chunking("Ring", protocol, 0, 1, 1, 1)  # LL and LL128 step one slot in every ring op


def chain(ranks: int, gpus_per_node: int, channel: int, root: int, op: str) -> list[int]:
    """Channel ``channel``'s chain: its ring from the root (broadcast), or from the rank after
    the root so that the root receives last (reduce)."""
    order = channel_ring(ranks, gpus_per_node, channel)
    start = (order.index(root) + (op == "reduce")) % ranks
    return order[start:] + order[:start]


def chain_pieces(call: Call, channels: int, channel: int, protocol: str) -> tuple[Piece, ...]:
    """The channel's share of the buffer (ncclCollCbdPart: one contiguous part a channel) cut in
    waves (:data:`WAVE_BYTES`: Simple's one-slot chunks, LL's and LL128's line passes), merged to
    at most MAX_CHAIN_CHUNKS (exact for the bandwidth term; the fill grows by (p - 2) x
    (merged - wave) / bandwidth)."""
    share = call.pieces(channels)[channel]
    parts = min(max(1, math.ceil(share[2] / WAVE_BYTES[protocol])), MAX_CHAIN_CHUNKS)
    return tuple(piece for piece in call.pieces(parts, share) if piece[2])


def window(protocol: str, pieces: tuple[Piece, ...]) -> int:
    """Pieces in flight per connection: NCCL_STEPS slots' worth of bytes (8 slots of one-wave
    pieces for Simple; 8 x 8 LL and 8 x 15 LL128 waves), never fewer than NCCL_STEPS pieces."""
    largest = max((piece[2] for piece in pieces), default=1)
    waves = rooted_chunking(protocol).chunk_bytes // max(largest, 1)
    return max(NCCL_STEPS, min(NCCL_STEPS * waves, _TAGS_PER_CHANNEL))


def _ops(op: str, position: int, length: int, pieces: tuple[Piece, ...]) -> list:
    """The chain's ``position``-th rank's operations (nccl_path's op format): receive the piece
    from the left (put it, or add it for reduce), then send it to the right; step = hop + chunk."""
    ops = []
    for index, piece in enumerate(pieces):
        if position:
            ops.append(("a" if op == "reduce" else "r", piece, position - 1 + index))
        if position < length - 1:
            ops.append(("s", piece, position + index))
    return ops


def rooted(net: Network, rank: int, call: Call, op: str, protocol: str) -> Generator:
    """NCCL's Ring broadcast or reduce on every simulated channel at once, after NCCL's call start
    (baseLat x the fitted scale + the fitted base latency; 0 off a preset)."""
    p = params(net, call, "Ring", protocol)
    yield net.env.timeout(p.start_s)
    channels = range(p.first, p.first + p.simulated) if call.ranks > 1 else range(0)
    yield net.env.all_of([net.env.process(_channel(net, rank, call, op, p, channel)) for channel in channels])


def _channel(net: Network, rank: int, call: Call, op: str, p: PathParams, channel: int) -> Generator:
    """One channel's chain through this rank: slices from the left through NCCL_STEPS slots, on to the right."""
    order = chain(call.ranks, net.topology.gpus_per_node, channel, call.root, op)
    i = order.index(rank)
    pieces = chain_pieces(call, p.channels, channel, p.protocol)
    ops = _ops(op, i, len(order), pieces)
    left, right, tag = order[i - 1], order[(i + 1) % len(order)], _TAG + channel * _TAGS_PER_CHANNEL
    yield from run_connection(net, rank, call, left, right, ops, tag, window(p.protocol, pieces), p, channel)


def rooted_counts(protocol: str):
    """Every channel's non-empty chunks travel p - 1 hops; pairs bounded by a right neighbour
    per distinct ring (a rotation of the node)."""

    def counts(s: Shape) -> tuple[int, int]:
        if s.p == 1:
            return 0, 0
        call = Call("broadcast", s.p, s.elements * s.element_bytes, s.element_bytes, s.k)
        chunks = sum(len(chain_pieces(call, s.k, channel, protocol)) for channel in range(s.k))
        return (s.p - 1) * chunks, s.p * min(s.k, s.gpus)

    return counts


def _record(op: str, protocol: str) -> dict:
    return dict(chunked=True, splits=True, form=_FORM, counts=rooted_counts(protocol), phases=_PHASES[op], whole_cells=False, listed=False)


def _program(op: str, protocol: str) -> Callable[[Network, int, Call], Generator]:
    def program(net: Network, rank: int, call: Call) -> Generator:
        yield from rooted(net, rank, call, op, protocol)

    program.__name__ = program.__qualname__ = f"{NAMES[('Ring', protocol)]}_{op}"
    return program


# nccl_ring, nccl_ring_ll, nccl_ring_ll128 for broadcast and reduce (hidden: NCCL's pick runs them)
for _op in ("broadcast", "reduce"):
    for _protocol in ("Simple", "LL", "LL128"):
        register(_op, NAMES[("Ring", _protocol)], **_record(_op, _protocol))(_program(_op, _protocol))


def pick_note(scenario, preset=None) -> str | None:
    """What the default pick on a preset ran, where the output should say so (all_to_all and send_recv; on a
    gloo preset, where the run is not gloo's own algorithm: sim.hardware.gloo). ``preset``: the
    scenario's, loaded already (sim.collective.plan)."""
    if scenario.hardware and preset is None:
        from sim.hardware.presets import load_preset  # yaml: only where a preset is used

        preset = load_preset(scenario.hardware)
    if scenario.hardware and preset.nccl is None:
        from sim.hardware.gloo import gloo_note

        return gloo_note(scenario.op, scenario.algorithm)
    if scenario.hardware and scenario.algorithm == "nccl_p2p":
        from sim.nccl.p2p import P2P_NOTE

        return P2P_NOTE
    return None
