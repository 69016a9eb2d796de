"""NCCL's point-to-point path on a preset: all_to_all and send_recv (NCCL v2.27.7-1; no tuner pick).

NCCL has no all_to_all kernel: nccl-tests' alltoall runs ncclGroupStart, an ncclSend and an
ncclRecv for every peer, ncclGroupEnd; sendrecv one pair. The DES runs the messages on NCCL's own
topology for the preset (:func:`sim.nccl.topo.topology`): the same effective constants as the
collectives (``presets.effective``: the NICs and NVLink at their fitted rates, NCCL's per-hop
latencies times the fitted scales, baseLat plus the fitted per-call cost), so a machine has one
description whichever op runs on it. How NCCL lays the ops out across nodes (channels, schedule,
batches, PXN) is :mod:`sim.nccl.p2p_plan`, with its citations.

- **Protocol** (``src/enqueue.cc:815-835`` addP2pToPlan): across nodes Simple: a p2p network
  connection has no LL buffer, and the network peers bound the call (the NVLink peers, LL up to
  16 KiB a channel, would finish earlier still; the DES runs one protocol a call). Inside one
  node LL up to NCCL_P2P_LL_THRESHOLD (16 KiB) x p2pnChannelsPerPeer a peer (enqueue.cc:822; on
  NVSwitch nodes 32 channels a peer, so 512 KiB), Simple above; LL moves 8-byte lines
  carrying 4 bytes of data.
- **Latency**: NCCL's tuning model has none for p2p; the DES charges the ring's hwLat of the
  protocol for each hop a message crosses (NVLink inside a node, NET between nodes) and the
  ring's baseLat once a call, both times the fitted scales, plus the fitted per-call cost.
- **Batches** (across nodes): each of a rank's p2p channels runs its batches of up to 8 ops one
  after another, the ops of a batch side by side, a peer's bytes split in parts over 1-2
  channels; a channel waits for every send and receive of a batch before its next. On 2-16
  nodes every channel runs one batch; beyond, the rounds queue (32 x 8 GPUs: two a channel).
- **PXN**: a send to a remote peer on another rail first crosses NVLink to the GPU by that rail's
  NIC: the DES starts it one NVLink hwLat later. Its bytes on NVLink (as many as the NIC's, at
  the NVLink rate) are not charged.
- **Whole parts**: NCCL pipelines a part through slots of NCCL_P2P_NET_CHUNKSIZE (128 KiB)
  chunks, min(8, 16 / ops in the batch) a connection in flight (``transport/net.cc:1127``):
  more than a NIC's bandwidth-delay product per rank on every preset
  (:func:`sim.nccl.p2p_plan.in_flight_bytes`), so the slots never bind and a part sent whole on
  its route (no store-and-forward on it) takes the same time.
- **Sharing**: the messages in flight share the ports and links (:data:`P2P_SHARING`, fair, as
  the ``direct`` algorithm); a NIC shared by GPUs carries all of their bytes.

Not charged, for want of a cited figure: the proxy thread's CPU cost per chunk it posts and
polls (a GPU's proxy serves every local GPU whose bytes PXN routes through its NIC), and a
NIC's rate with many queue pairs (one a connection, NCCL_IB_QPS_PER_CONNECTION 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass

from sim.algorithms.alltoall import all_blocks_at_once
from sim.algorithms.call import Call
from sim.algorithms.registry import Phase, needs_a_peer, register
from sim.errors import CollsimError
from sim.nccl.p2p_plan import P2pPlan, channel_batches, crosses_rail, p2p_plan, parts
from sim.nccl.path import PathParams, params, wire_bytes
from sim.network import Network

__all__ = [
    "P2P_LL_THRESHOLD", "P2P_NOTE", "P2P_OPS", "P2P_SHARING", "P2pParams", "all_to_all_messages", "peer_bytes", "p2p_fields", "p2p_params",
    "protocol_for", "refuse_selection",
]  # fmt: skip

P2P_LL_THRESHOLD = 16384  # src/enqueue.cc:859 NCCL_P2P_LL_THRESHOLD
P2P_OPS = ("all_to_all", "send_recv")
# Every peer's message is in flight at once on channels of its own: they share a GPU's links (fair),
# where fifo's one send port a rank would queue its NVLink messages behind its NIC messages
# (2 x dgx-h100 all_to_all 16 MiB: 206.5 us fair, the NICs' bound; 226.9 us fifo).
P2P_SHARING = "fair"
P2P_NOTE = (
    "NCCL runs grouped ncclSend/ncclRecv (nccl-tests alltoall.cu / sendrecv.cu; no tuner pick; --model nccl gives its closed form, sim.nccl.p2p_model): each message on "
    "NCCL's p2p path, LL up to 16 KiB x its channels a peer inside a node, else Simple (always across nodes), a channel's batches of peers one after another, "
    "cross-rail sends one NVLink hop later (PXN), at the preset's effective rates and NCCL's latencies"
)


def peer_bytes(op: str, ranks: int, size_bytes: int) -> int:
    """Bytes one rank sends one peer: a block of all_to_all's buffer, send_recv's whole buffer."""
    return size_bytes // ranks if op == "all_to_all" else size_bytes


def protocol_for(op: str, ranks: int, size_bytes: int, nodes: int = 1, per_peer: int = 1) -> str:
    """NCCL's p2p protocol for the call (addP2pToPlan): across ``nodes`` > 1 Simple, the network
    peers' only protocol (p2p network connections have no LL buffer: sim.nccl.p2p_plan), which
    bound the call; inside one node LL up to NCCL_P2P_LL_THRESHOLD x p2pnChannelsPerPeer
    (``per_peer``) bytes a peer (enqueue.cc:822 thresholdLL = nChannelsMax x 16 KiB)."""
    if nodes > 1:
        return "Simple"
    return "LL" if peer_bytes(op, ranks, size_bytes) <= per_peer * P2P_LL_THRESHOLD else "Simple"


@dataclass(frozen=True)
class P2pParams(PathParams):
    """NCCL's p2p path on a preset: the path's parameters, NCCL's p2p plan across nodes (None
    inside one) and the NVLink hop PXN adds before a cross-rail network send."""

    plan: P2pPlan | None = None
    pxn_latency_s: float = 0.0


def p2p_params(scenario, preset, hop_latencies_s: Callable, comm_channels: Callable) -> P2pParams:
    """NCCL's point-to-point run's parameters (read by :func:`sim.nccl.topo.p2p_path_params`): one
    connection a peer, the ring's latencies of its protocol, the p2p plan across nodes.
    ``hop_latencies_s``, ``comm_channels``: :mod:`sim.nccl.model`'s (passed in: it imports this module)."""
    nodes = max(scenario.ranks // preset.gpus_per_node, 1)
    domains = preset.nccl_nodes(nodes)[0]
    layout = p2p_plan(preset, nodes, comm_channels) if preset.nccl else None
    protocol = protocol_for(scenario.op, scenario.ranks, scenario.size_bytes, domains, layout.per_peer if layout else 1)
    intra, _, start = hop_latencies_s(preset, "Ring", protocol, domains)
    plan = layout if domains > 1 else None
    return P2pParams(
        "Ring", protocol, 1, 1, start_s=start, simple_buff_bytes=preset.nccl.buffsize if preset.nccl else None,
        plan=plan, pxn_latency_s=intra if plan and plan.pxn else 0.0,
    )  # fmt: skip


def all_to_all_messages(plan: P2pPlan | None, ranks: int, elements: int, element_bytes: int) -> int:
    """Messages the DES's all_to_all sends (:func:`nccl_p2p_all_to_all`): with NCCL's p2p plan, each
    rank's non-empty parts (:func:`sim.nccl.p2p_plan.parts`: 1-2 a peer or more) to each other rank;
    without one (inside an NVLink domain), a block to each other rank."""
    if plan is None or plan.ranks != ranks:
        return ranks * (ranks - 1)
    block = elements // ranks
    count = parts(plan, block * element_bytes)
    return ranks * (ranks - 1) * sum(1 for part in range(count) if _part_bounds(block, element_bytes, part, count)[0] < block)


def refuse_selection(op: str, nccl_algo: str | None, nccl_proto: str | None) -> None:
    """NCCL_ALGO / NCCL_PROTO select nothing for grouped ncclSend/ncclRecv: say so."""
    if nccl_algo or nccl_proto:
        raise CollsimError(
            f"--nccl-algo/--nccl-proto: NCCL's {op} is grouped ncclSend/ncclRecv, which NCCL_ALGO and NCCL_PROTO do not select; drop them"
        )


def p2p_fields(hardware: str, nodes: int, op: str, size_bytes: int, nccl_algo: str | None = None, nccl_proto: str | None = None,
               preset=None, **fields):  # fmt: skip
    """The scenario mapping NCCL's all_to_all or send_recv on a preset runs; NCCL_ALGO / NCCL_PROTO
    select nothing for p2p. ``preset``: ``hardware``'s, loaded already."""
    from sim.hardware.presets import scenario_fields

    refuse_selection(op, nccl_algo, nccl_proto)
    base = {
        **scenario_fields(hardware, nodes, preset),
        "op": op,
        "size_bytes": size_bytes,
        "algorithm": "nccl_p2p",
        "chunks": 1,
        "sharing": P2P_SHARING,
    }
    return {**base, **fields}


@register(
    "all_to_all", "nccl_p2p", splits=True, listed=False,
    form="every peer's message at once on NCCL's p2p path: the time depends on how the network shares ports and links",
    # a block a peer (no plan on a plain topology); on a preset NCCL's plan parts a peer's bytes: the
    # budget counts those by the DES's own plan (sim.collective.budget.messages_of)
    counts=lambda s: (all_to_all_messages(None, s.p, s.elements, s.element_bytes), s.p * (s.p - 1)),
    phases=(Phase("all blocks at once", "every rank sends each other rank its block at once (grouped ncclSend/ncclRecv)"),),
)  # fmt: skip
def nccl_p2p_all_to_all(net: Network, rank: int, call: Call) -> Generator:
    p = params(net, call, "Ring", "Simple")
    if p.start_s:
        yield net.env.timeout(p.start_s)
    plan = getattr(p, "plan", None)
    if plan is None or call.ranks != plan.ranks:  # inside one node: every round on a channel of its own
        yield from all_blocks_at_once(net, rank, call, lambda nbytes: wire_bytes(nbytes, p.protocol))
        return
    block = call.elements // call.ranks
    mine = call.take(rank)
    queues = channel_batches(plan, block * call.element_bytes).items()
    yield net.env.all_of([net.env.process(_channel(net, rank, call, p, mine, channel, queue)) for channel, queue in queues])


def _peer(plan: P2pPlan, rank: int, node_delta: int, local_delta: int) -> int:
    node, local = divmod(rank, plan.gpus)
    return (node + node_delta) % plan.nodes * plan.gpus + (local + local_delta) % plan.gpus


def _part(call: Call, owner: int, part: int, count: int) -> tuple[int, int, int]:
    """Elements [lo, hi) of ``owner``'s block that part ``part`` of ``count`` moves, and its bytes."""
    size = call.elements // call.ranks
    lo, hi = _part_bounds(size, call.element_bytes, part, count)
    return owner * size + lo, owner * size + hi, (hi - lo) * call.element_bytes


def _part_bounds(block: int, element_bytes: int, part: int, count: int) -> tuple[int, int]:
    """Elements [lo, hi) of a ``block`` of elements that part ``part`` of ``count`` moves
    (include/device.h ncclP2pPartBounds: parts of divUp(bytes, count) rounded up to 4 KiB)."""
    part_bytes = math.ceil(math.ceil(block * element_bytes / count) / 4096) * 4096
    step = part_bytes // element_bytes
    return min(part * step, block), min((part + 1) * step, block)


def _channel(net: Network, rank: int, call: Call, p: P2pParams, mine, channel: int, queue: list) -> Generator:
    """One channel's batches, one after another (the kernel's block for the channel); a batch's
    ops side by side: every part sent and received, cross-rail sends after PXN's NVLink hop."""
    plan = p.plan
    for batch in queue:
        receives, now, later = [], [], []
        for node_delta, local_delta, part, count in batch:
            dst, src = _peer(plan, rank, node_delta, local_delta), _peer(plan, rank, -node_delta, -local_delta)
            if dst == rank or not _part(call, dst, part, count)[2]:
                continue  # the self copy moves nothing on a wire; a part past the end is empty
            receives.append((_part(call, src, part, count), net.recv(src, rank, channel)))
            (later if crosses_rail(plan, rank, dst) else now).append((dst, _part(call, dst, part, count)))
        sends = [_send(net, rank, dst, piece, mine, channel, p.protocol) for dst, piece in now]
        if later and p.pxn_latency_s:
            yield net.env.timeout(p.pxn_latency_s)
        sends += [_send(net, rank, dst, piece, mine, channel, p.protocol) for dst, piece in later]
        for piece, event in receives:
            call.put(rank, (yield event), piece)
        for sent in sends:
            if not sent.processed:
                yield sent


def _send(net: Network, rank: int, dst: int, piece: tuple, mine, channel: int, protocol: str):
    """Send ``piece`` of ``rank``'s buffer (a part of its block for ``dst``) on ``channel``'s tag."""
    lo, hi, nbytes = piece
    return net.send(rank, dst, wire_bytes(nbytes, protocol), None if mine is None else mine[lo:hi], 0, tag=channel)


@register(
    "send_recv", "nccl_p2p", listed=False,
    form="one message on NCCL's p2p path: baseLat + the hops' hwLat + its wire bytes at the route's effective rate",
    counts=lambda s: (1, 1),
    phases=(Phase("rank 0 sends to the last rank", "rank 0 sends its whole buffer to the last rank (ncclSend / ncclRecv)"),),
    needs=needs_a_peer,
)  # fmt: skip
def nccl_p2p_send_recv(net: Network, rank: int, call: Call) -> Generator:
    p = params(net, call, "Ring", "Simple")
    last = call.ranks - 1
    if last == 0 or rank not in (0, last):
        return
    if p.start_s:
        yield net.env.timeout(p.start_s)
    if rank == 0:
        plan = getattr(p, "plan", None)
        if plan is not None and plan.ranks == call.ranks and crosses_rail(plan, 0, last) and p.pxn_latency_s:
            yield net.env.timeout(p.pxn_latency_s)  # PXN: over NVLink to the GPU by the peer's rail's NIC first
        net.send(0, last, wire_bytes(call.size_bytes, p.protocol), call.take(0), 0)
    else:
        call.put(rank, (yield net.recv(0, rank)))
