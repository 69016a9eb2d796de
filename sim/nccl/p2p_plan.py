"""How NCCL lays out grouped ncclSend/ncclRecv (all_to_all, send_recv) across nodes: its p2p
channels, the peer schedule, the work batches each channel runs one after another, and PXN.

All from NCCL v2.27.7-1 (``git show v2.27.7-1:src/...``):

- **Channels** (``graph/paths.cc:841-870`` ncclTopoComputeP2pChannels): p2pnChannels is the
  communicator's channels (at most NCCL_MAX_P2P_NCHANNELS = MAXCHANNELS 64) rounded up to a power
  of two; p2pnChannelsPerPeer the least over the peers of ncclTopoGetNchannels (``paths.cc:798-835``):
  a network peer gets NCCL_NCHANNELS_PER_NET_PEER = 2, halved while 2 x nRanks > 4 x p2pnChannels,
  at least the NICs a GPU drives by bandwidth; an NVLink peer 2 x its NVLinks (never fewer than 2).
- **Parts** (``enqueue.cc:893-902`` addP2pToPlan): a peer's bytes go on nChannelsMin channels
  (nChannelsMin: p2pnChannelsPerPeer halved while nChannelsMin x nRanks > p2pnChannels,
  ``enqueue.cc:1039-1042``), at least one a half step (NCCL_P2P_NET_CHUNKSIZE 128 KiB across
  nodes, ``init.cc:625,637``), doubled up to p2pnChannelsPerPeer while a part exceeds a step;
  part k of round r runs on channel base(r) + bitreverse(k) (``include/device.h:269``), base(r)
  = nodeDelta x ceil(localRanks / 8) + localDelta / 8 across nodes (``include/channel.h:19-30``).
- **Schedule** (``init.cc:1092-1140``): round r pairs "send to node + nodeDelta, local +
  localDelta" with "receive from node - nodeDelta, local - localDelta", both deltas stepping by
  the quadratic sequence (x^2 + x) / 2 mod a power of two; rounds are enqueued in that order.
- **Batches** (``enqueue.cc:95-120`` addWorkBatchToPlan): a channel's work goes in batches of at
  most NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8 p2p ops (``include/device.h:369``); the kernel's block
  for the channel runs its batches one after another, the ops of a batch side by side.
- **Protocol**: a network connection of the p2p path has no LL buffer (shared buffers,
  ``transport/net.cc:773-790``, NCCL_ALLOC_P2P_NET_LL_BUFFERS = 0, ``init.cc:658``), so addP2pToPlan
  (``enqueue.cc:815, 834``) sends every network peer's bytes in Simple, whatever their size.
- **Slots** (``transport/net.cc:527, 1127``): a channel's proxy keeps min(NCCL_STEPS 8,
  NCCL_SHARED_STEPS 16 / ops in its batch) chunks in flight a peer.
- **PXN** (``graph/search.cc:1252-1320`` ncclTopoGetNetDev, NCCL_P2P_PXN_LEVEL 2): a GPU sends a
  remote peer's bytes through the NIC nearest to the peer's local index, over NVLink to the GPU
  by that NIC and out by its proxy, where that NIC is not its own and the GPUs are NVLink peers
  whose NIC sits on their PCIe switch (type PIX or PXB).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "MAX_P2P_CHANNELS", "NCCL_STEPS", "NET_CHUNK_BYTES", "P2P_PER_BATCH", "SHARED_STEPS", "P2pPlan",
    "channel_batches", "crosses_rail", "in_flight_bytes", "nic_load", "p2p_plan", "rank_layout", "parts", "schedule",
]  # fmt: skip

NCCL_STEPS = 8  # include/device.h:25
SHARED_STEPS = 16  # transport/net.cc:527 NCCL_SHARED_STEPS
P2P_PER_BATCH = 8  # include/device.h:369 NCCL_MAX_DEV_WORK_P2P_PER_BATCH
MAX_P2P_CHANNELS = 64  # graph/paths.cc:838 NCCL_MAX_P2P_NCHANNELS = MAXCHANNELS (include/device.h:87)
NET_CHUNK_BYTES = 1 << 17  # init.cc:625 NCCL_P2P_NET_CHUNKSIZE: p2pChunkSize where nNodes > 1 (init.cc:637)
NET_PEER_CHANNELS = 2  # graph/paths.cc:820 NCCL_NCHANNELS_PER_NET_PEER unset: 2 a NIC


@dataclass(frozen=True)
class P2pPlan:
    """NCCL's p2p layout for a communicator of ``nodes`` x ``gpus`` ranks (across nodes)."""

    nodes: int
    gpus: int  # local ranks a node
    channels: int  # comm->p2pnChannels
    per_peer: int  # comm->p2pnChannelsPerPeer: the most channels a peer's bytes spread over
    per_peer_min: int  # nChannelsMin of scheduleP2pTasksToPlan
    nics: int  # NICs a node
    pxn: bool  # PXN can route a remote peer's bytes through another GPU's NIC

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus


def _pow2_up(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def p2p_plan(preset, nodes: int, comm_channels: Callable) -> P2pPlan:
    """The plan on ``nodes`` nodes of a GPU preset (NVLink domains are NCCL's nodes);
    ``comm_channels``: :func:`sim.nccl.model.comm_channels` (passed in: that module imports this one's users)."""
    domains, gpus = preset.nccl_nodes(nodes)
    raw = min(comm_channels(preset.nccl, domains), MAX_P2P_CHANNELS)
    nics = max(1, preset.nics_per_node * gpus // preset.gpus_per_node)
    system = preset.nccl
    per_peer = raw if system is not None and system.type_intra == "NVL" else min(raw, 2)  # paths.cc:810-815 (2 x NVLinks >= 24)
    if domains > 1:
        per_peer = min(per_peer, _net_channels_per_peer(domains * gpus, raw, nics / gpus))
    channels, per_peer = _pow2_up(raw), _pow2_up(per_peer)
    per_peer_min = per_peer
    while per_peer_min * domains * gpus > channels and per_peer_min > 1:  # enqueue.cc:1042
        per_peer_min //= 2
    pxn = system is not None and system.type_intra == "NVL" and system.type_inter in ("PIX", "PXB")
    return P2pPlan(domains, gpus, channels, min(per_peer, channels), per_peer_min, nics, pxn and domains > 1)


def _net_channels_per_peer(ranks: int, p2p_channels: int, nics_per_gpu: float) -> int:
    """graph/paths.cc:816-830: 2 a network peer, halved while 2 x nRanks > 4 x p2pnChannels
    (8+ ops a channel lose the sync warp), at least the NICs a GPU drives (getLocalNetCountByBw)."""
    most = NET_PEER_CHANNELS
    while most * ranks > p2p_channels * 4 and most > 1:
        most //= 2
    return max(int(nics_per_gpu), most, 1)


def parts(plan: P2pPlan, nbytes: int) -> int:
    """Channels one peer's ``nbytes`` are split over (enqueue.cc:893-902, Simple across nodes:
    step NCCL_P2P_NET_CHUNKSIZE, parts of half a step to a step)."""
    if nbytes <= 0:
        return 1
    least, most = NET_CHUNK_BYTES // 2, NET_CHUNK_BYTES
    count = min(plan.per_peer_min, -(-nbytes // least))
    size = max(least, -(-nbytes // count))
    while size > most and count <= plan.per_peer // 2:
        count *= 2
        size = -(-nbytes // count)
    return count


def schedule(plan: P2pPlan) -> list[tuple[int, int]]:
    """(nodeDelta, localDelta) of each round in NCCL's order (init.cc:1092-1140): send to node +
    nodeDelta, local + localDelta; receive from node - nodeDelta, local - localDelta."""
    return [(node, local) for node in _quadratic(plan.nodes) for local in _quadratic(plan.gpus)]


def _quadratic(n: int) -> list[int]:
    """0, 1, 3, 6, ... ((x^2 + x) / 2 mod pow2Up(n)), those below n: each of 0..n-1 once."""
    size, delta, out = _pow2_up(n), 0, []
    for step in range(1, size + 1):
        if delta < n:
            out.append(delta)
        delta = (delta + step) & (size - 1)
    return out


def _channel(plan: P2pPlan, node_delta: int, local_delta: int, part: int) -> int:
    """include/channel.h:19-30 (base of the round, across nodes) + include/device.h:269-274."""
    base = node_delta * -(-plan.gpus // P2P_PER_BATCH) + local_delta // P2P_PER_BATCH
    bits = (plan.channels - 1).bit_length()
    reversed_part = int(f"{part:0{bits}b}"[::-1], 2) if bits else 0
    return (base + reversed_part) & (plan.channels - 1)


def channel_batches(plan: P2pPlan, nbytes: int) -> dict[int, list[list[tuple[int, int, int, int]]]]:
    """Each channel's batches in the order its block runs them: (nodeDelta, localDelta, part,
    parts) of every op, one peer's ``nbytes`` each way (addWorkBatchToPlan: a new batch when
    the last holds 8 ops; the self-copy round counts as an op)."""
    count = parts(plan, nbytes)
    batches: dict[int, list[list[tuple[int, int, int, int]]]] = {}
    for node_delta, local_delta in schedule(plan):
        for part in range(count):
            queue = batches.setdefault(_channel(plan, node_delta, local_delta, part), [[]])
            if len(queue[-1]) == P2P_PER_BATCH:
                queue.append([])
            queue[-1].append((node_delta, local_delta, part, count))
    return batches


def crosses_rail(plan: P2pPlan, rank: int, peer: int) -> bool:
    """Whether PXN hands the bytes ``rank`` sends remote ``peer`` to the GPU by another NIC over
    NVLink first: the NIC nearest the peer's local index is not the sender's own."""
    if not plan.pxn or rank // plan.gpus == peer // plan.gpus:
        return False
    return (rank % plan.gpus) * plan.nics // plan.gpus != (peer % plan.gpus) * plan.nics // plan.gpus


def in_flight_bytes(plan: P2pPlan, nbytes: int) -> int:
    """The most bytes one rank has on the network at once towards its remote peers, each peer
    ``nbytes``: per connection min(NCCL_STEPS, NCCL_SHARED_STEPS / ops in the batch) chunks
    (net.cc:1127) of p2pChunkSize, halved below 8 steps a peer, quartered below one
    (enqueue.cc:838-842), in every batch that runs first on its channel."""
    chunk, total = _chunk_bytes(nbytes), 0
    for queue in channel_batches(plan, nbytes).values():
        remote = [op for op in queue[0] if op[0]]
        total += len(remote) * min(NCCL_STEPS, SHARED_STEPS // len(queue[0])) * min(chunk, -(-nbytes // remote[0][3])) if remote else 0
    return total


def _chunk_bytes(nbytes: int) -> int:
    """The network chunk of a peer's ``nbytes`` (enqueue.cc:838-842: p2pChunkSize, halved below
    8 steps a peer, quartered below one)."""
    step = NET_CHUNK_BYTES
    return step // 4 if nbytes < step else step // 2 if nbytes < 8 * step else step


def nic_load(plan: P2pPlan, nbytes: int) -> tuple[int, int]:
    """(connections, chunks) one NIC serves in a uniform all_to_all of ``nbytes`` a peer: every
    remote peer's part is a connection of its own each way, one queue pair each
    (net_ib.cc:1126 NCCL_IB_QPS_PER_CONNECTION 1), its chunks posted one by one by a proxy thread.
    With PXN or without, a NIC sends and receives for the GPUs nearest it: g / nics GPUs' bytes
    to and from the p - g remote ranks."""
    count, chunk = parts(plan, nbytes), _chunk_bytes(nbytes)
    part = -(-nbytes // count)
    connections = 2 * (plan.gpus // min(plan.nics, plan.gpus)) * (plan.ranks - plan.gpus) * count
    return connections, connections * max(1, -(-part // chunk))


def rank_layout(plan: P2pPlan | None, op: str, nbytes: int) -> tuple[int, str]:
    """(channels a rank's ops run on, the layout in words) of ``op`` (all_to_all, send_recv) with
    ``nbytes`` a peer across nodes; (1, "") without a plan (inside one node: not laid out)."""
    if plan is None:
        return 1, ""
    if op == "send_recv":
        return parts(plan, nbytes), ""
    return len(channel_batches(plan, nbytes)), _layout_line(plan, nbytes)


def _layout_line(plan: P2pPlan, nbytes: int) -> str:
    queues = channel_batches(plan, nbytes)
    depth = max(len(queue) for queue in queues.values())
    remote = range(plan.gpus, plan.ranks)
    pxn = sum(crosses_rail(plan, 0, peer) for peer in remote)
    connections, chunks = nic_load(plan, nbytes)
    return (
        f"NCCL's p2p plan: {plan.channels} p2p channels, {parts(plan, nbytes)} a peer of {plan.per_peer}; a rank's ops on "
        f"{len(queues)} channels, {depth} batch{'es' if depth > 1 else ''} of up to {P2P_PER_BATCH} ops a channel{', one after another' if depth > 1 else ''}; "
        f"{pxn} of {len(remote)} remote peers by PXN (an NVLink hop to another rail's NIC); a NIC serves {connections} "
        f"connections (a queue pair each) and {chunks} chunks a call (their proxy and NIC cost a message not charged: no cited figure)"
    )
