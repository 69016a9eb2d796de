"""NCCL's data path in the DES: Ring, Tree, NVLS/NVLSTree and PAT on NCCL's channels, with
NCCL_STEPS slots per connection and the LL/LL128/Simple protocols (NCCL v2.27.7-1, see
docs/nccl-model.md for the files and lines followed).

**Slots.** A connection (sender -> receiver, one per channel and direction) has NCCL_STEPS = 8
buffer slots; a message (a *slice*) holds ``slice_steps`` of them, so up to 8 / slice_steps are
in flight. The receiver hands a slot back once it has consumed the slice. In the engine this is
a receive posted ahead: the receiver keeps ``in_flight`` receives posted per connection and posts
the next one when it consumes a slice, and every message waits for its receive (rendezvous), so
a sender never has more slices in flight than the receiver has free slots. No engine change.

**Protocols.** A slice of n data bytes puts n / data_per_wire bytes on the wire (LL 2x: 8-byte
lines with 4 data bytes; LL128 128/120); per-hop latencies are NCCL's ``hwLat`` for the
(algorithm, protocol) times the preset's fitted latency scale, on the links of the topology that
:func:`topology` builds for the run; every call starts after NCCL's ``baseLat`` (scaled) plus the
fitted base latency.

**NVLS.** The NVSwitch reduces (multimem.ld_reduce) and multicasts (multimem.st): per node two
FIFO servers of the switch, a reduce one and a multicast one, each at the preset's NVLS rate per
GPU and direction. NVLSTree adds NCCL's double binary tree between the nodes' head GPUs (one
head per NIC rail), over the NICs.

**Collapse.** NCCL's channels on a rail machine are rotations of one another, so they progress
in lockstep; without verification the DES runs only the first 1 (ring) or 2 (tree: the two
mirrored trees) channels on a topology whose links carry the share those channels have of them
(``tests/hardware/test_nccl_path.py`` checks collapsed against full). Messages are capped at
``MAX_MESSAGES`` per connection by merging NCCL's slices (exact for the ring's bandwidth term,
which has no pipeline fill; adds at most depth x slice / bandwidth on trees).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass

from sim.algorithms.call import Call
from sim.nccl.proto import BY_NAME, NCCL_STEPS, chunking
from sim.network import Network

MAX_MESSAGES = 256  # slices per connection and channel, at most (merged beyond)
MAX_TREE_PIECES = 256  # tree chunks a call, shared by the simulated channels (a tree's fill grows with a piece: depth x piece)
NAMES = {
    ("Ring", "Simple"): "nccl_ring", ("Ring", "LL"): "nccl_ring_ll", ("Ring", "LL128"): "nccl_ring_ll128",
    ("Tree", "Simple"): "nccl_tree", ("Tree", "LL"): "nccl_tree_ll", ("Tree", "LL128"): "nccl_tree_ll128",
    ("NVLS", "Simple"): "nccl_nvls", ("NVLSTree", "Simple"): "nccl_nvls_tree", ("PAT", "Simple"): "nccl_pat",
}  # fmt: skip
PAIR_OF = {name: pair for pair, name in NAMES.items()}
_TAG = 1000
_TREE_TAG = 2 * _TAG  # tree tags: 2 x window (NCCL_STEPS) per channel


@dataclass(frozen=True)
class PathParams:
    """What the data path reads besides the call: protocol, simulated/real channels, latencies."""

    algorithm: str = "Ring"
    protocol: str = "Simple"
    channels: int = 1  # NCCL's channels for this call
    simulated: int = 1  # channels the DES runs (fewer where collapsed)
    first: int = 0  # the first of them (tests run each channel alone)
    start_s: float = 0.0  # baseLat x scale + fitted base
    nvls_Bps: float = 0.0  # switch rate per GPU and direction
    nvls_latency_s: float = 0.0
    heads: int = 1  # NVLSTree heads per node (NIC rails)
    max_tree_pieces: int | None = None  # on presets: MAX_TREE_PIECES (speed); elsewhere NCCL's own chunks
    simple_buff_bytes: int | None = None  # NCCL_BUFFSIZE of the preset (None: NCCL's 4 MiB)
    ll_pace_Bps: float = 0.0  # Tree/LL on a preset: the simulated channels' share of the GPU's LL rate (data bytes/s)
    proxy_s: float = 0.0  # Ring across nodes: the proxy's time per network send of a channel (Proxy)

    @property
    def copies(self) -> float:
        """Channels each simulated channel stands for: the others are its copies (the collapse
        above) and move as many bytes, so every channel's bytes on the wire are the simulated
        channels' times this (issue 36, E3: 8 x dgx-h100 Ring at 64 MiB read 37.33 MiB, 1/24
        of the 896 MiB its 24 channels move)."""
        return self.channels / self.simulated if self.simulated else 1.0


class Pacer:
    """A GPU's LL line rate shared by its tree passes (Tree/LL: llMaxBw, nccl_topo.ll_max_GBps):
    a pass of n data bytes (a chunk reduced from the children and sent up, or received from the
    parent and sent to every child: one thread handles a line for all its peers, the flag poll of
    its loads being the cost, all_reduce.h:159-163 / prims_ll.h) starts no earlier than the
    previous pass's start + n / rate. The GPU moves at most ``rate`` on average, while a lone
    chunk passes a hop at the link's rate (LL forwards line by line: its fill is per-hop
    latency, not chunk / rate at every hop)."""

    def __init__(self, rate_Bps: float) -> None:
        self.rate_Bps = rate_Bps
        self.free_s = 0.0

    def delay(self, now_s: float, nbytes: int) -> float:
        """Seconds to wait before sending ``nbytes`` now (0 without a rate)."""
        if not self.rate_Bps:
            return 0.0
        start = max(now_s, self.free_s)
        self.free_s = start + nbytes / self.rate_Bps
        return start - now_s


class Proxy:
    """The proxy's progress of one channel's network send connection (src/transport/net.cc
    sendProxyProgress, v2.27.7-1 :1108-1233: a sub posts its slices in order, one isend each at
    :1210, from the GPU's proxy thread, src/proxy.cc progressOps :744). Each post costs
    ``cost_s``: NCCL's model charges a multi-node ring that much per step and channel
    (getNetOverhead, :func:`sim.nccl.model.net_overhead_us`; tuning.cc:347-353, whatever the
    channel count, so one Proxy a channel, not one a GPU shared by its channels). A send leaves
    when the proxy reaches it, no earlier than the previous one's start + cost; the GPU does not
    wait for it (the slot is handed to the proxy, the next slice goes on)."""

    def __init__(self, cost_s: float) -> None:
        self.cost_s = cost_s
        self.free_s = 0.0

    def start(self, now_s: float) -> float:
        """When a send handed over at ``now_s`` leaves."""
        start = max(now_s, self.free_s)
        self.free_s = start + self.cost_s
        return start


def _send_at(net: Network, at_s: float, args: tuple) -> Generator:
    yield net.env.timeout(at_s - net.env.now)
    net.send(*args)


def params(net: Network, call: Call, algorithm: str, protocol: str) -> PathParams:
    """The run's parameters: set by :func:`topology` on hardware, else NCCL's defaults on the
    scenario's own links (``chunks`` channels, nothing collapsed)."""
    found = getattr(net.topology, "nccl", None) or getattr(getattr(net.topology, "topology", None), "nccl", None)  # a group's view
    if found is not None:
        return found
    gpus = net.topology.gpus_per_node or call.ranks
    return PathParams(algorithm, protocol, call.chunks, call.chunks, heads=gpus)


def wire_bytes(nbytes: int, protocol: str) -> int:
    return math.ceil(nbytes / BY_NAME[protocol].data_per_wire)


# -- ring ------------------------------------------------------------------------------------
def channel_ring(ranks: int, gpus_per_node: int, channel: int) -> list[int]:
    """Channel ``channel``'s ring: every node's GPUs from local GPU ``channel``, node after node."""
    gpus = gpus_per_node if gpus_per_node and ranks % gpus_per_node == 0 else ranks
    order = []
    for node in range(ranks // gpus):
        order += [node * gpus + (channel + i) % gpus for i in range(gpus)]
    return order


def channel_part(call: Call, channels: int, channel: int, owner: int, parts: int) -> tuple:
    """Channel ``channel``'s part of block ``owner``, cut in ``parts`` (loops x slices)."""
    piece = call.pieces(channels, call.pieces(call.ranks)[owner])[channel]
    return call.pieces(parts, piece)


def ring_parts(call: Call, p: PathParams, m: int, steps: int) -> tuple[int, int]:
    """(loops, slices a loop) of one channel: NCCL's loop of nRanks chunks, slices of a chunk,
    merged to at most MAX_MESSAGES messages per connection."""
    per_channel = max(call.size_bytes // max(p.channels, 1), 1)
    cut = chunking(p.algorithm if p.algorithm != "PAT" else "Ring", p.protocol, call.size_bytes, p.channels, 1, call.ranks,
                   simple_buff_bytes=p.simple_buff_bytes)  # fmt: skip
    loops = max(1, math.ceil(per_channel / (m * cut.chunk_bytes)))
    block = per_channel / (m * loops)
    slices = max(1, math.ceil(min(block, cut.chunk_bytes) / cut.slice_bytes))
    while loops * slices * steps > MAX_MESSAGES and loops * slices > 1:
        if slices > 1:
            slices = max(1, slices // 2)
        else:
            loops = max(1, loops // 2)
    return loops, slices


def _ring_ops(call: Call, p: PathParams, group: list[int], i: int, channel: int, phases: tuple) -> list:
    """Rank ``group[i]``'s ordered operations on ring ``group``: ("s", piece, step) sends,
    ("r"|"a", piece, step) receives (put or add)."""
    m = len(group)
    steps = (m - 1) * len(phases)
    loops, slices = ring_parts(call, p, m, steps)
    parts = loops * slices
    ops = []
    for loop in range(loops):
        span = range(loop * slices, (loop + 1) * slices)
        step = 0

        def block(owner: int, span: range = span) -> list:
            cut = channel_part(call, p.channels, channel, owner, parts)
            return [cut[j] for j in span if cut[j][2]]

        if "reduce_scatter" in phases:
            ops += [("s", piece, step) for piece in block(group[(i - 1) % m])]
            for hop in range(m - 1):
                for piece in block(group[(i - hop - 2) % m]):
                    ops.append(("a", piece, step + hop))
                    if hop < m - 2:
                        ops.append(("s", piece, step + hop + 1))
            step = m - 1
        if "all_gather" in phases:
            ops += [("s", piece, step) for piece in block(group[i])]
            for hop in range(m - 1):
                for piece in block(group[(i - hop - 1) % m]):
                    ops.append(("r", piece, step + hop))
                    if hop < m - 2:
                        ops.append(("s", piece, step + hop + 1))
    return ops


def _connection(
    net: Network, rank: int, call: Call, left: int, right: int, ops: list, tag: int, window: int, p: PathParams, chunk: int,
    proxy: Proxy | None = None,
) -> Generator:  # fmt: skip
    """Run ``ops`` on one channel: receives from ``left`` posted ``window`` ahead (the slots),
    sends to ``right`` on the protocol's wire; through ``proxy`` where ``right`` is on another node."""
    verify = call.buffers is not None
    gpus = net.topology.gpus_per_node or call.ranks
    proxy = proxy if proxy is not None and rank // gpus != right // gpus else None
    total = sum(1 for op in ops if op[0] != "s")
    recvs: deque = deque(net.recv(left, rank, tag + k % window) for k in range(min(window, total)))
    net.share_wire(rank, right, range(tag, tag + window))  # one SM block sends the slots in order
    sent = 0
    posted = len(recvs)
    for kind, piece, step in ops:
        if kind == "s":  # slice k travels in slot k mod window: one connection per slot
            payload = call.take(rank, piece) if verify else None
            args = (rank, right, wire_bytes(piece[2], p.protocol), payload, step, chunk, tag + sent % window)
            at = proxy.start(net.env.now) if proxy is not None else net.env.now
            if at > net.env.now:
                net.env.process(_send_at(net, at, args))
            else:
                net.send(*args)
            sent += 1
            continue
        payload = yield recvs.popleft()
        if posted < total:
            recvs.append(net.recv(left, rank, tag + posted % window))
            posted += 1
        if kind == "a":
            combine = net.reduce(rank, piece[2], step, chunk)
            if combine is not None:
                yield combine
            if verify:
                call.add(rank, payload, piece)
        elif verify:
            call.put(rank, payload, piece)


def ring(net: Network, rank: int, call: Call, phases: tuple, protocol: str = "Simple", algorithm: str = "Ring") -> Generator:
    """NCCL's ring on every simulated channel at once (all_reduce: reduce-scatter then
    all-gather steps, as prims' recvReduceSend / directRecvCopySend)."""
    p = params(net, call, algorithm, protocol)
    env = net.env
    if p.start_s:
        yield env.timeout(p.start_s)
    if call.ranks == 1:
        return
    cut = chunking("Ring" if algorithm == "PAT" else algorithm, protocol, call.size_bytes, p.channels, 1, call.ranks,
                   simple_buff_bytes=p.simple_buff_bytes)  # fmt: skip
    processes = []
    for channel in range(p.first, p.first + p.simulated):
        group = channel_ring(call.ranks, net.topology.gpus_per_node, channel)
        i = group.index(rank)
        ops = _ring_ops(call, p, group, i, channel, phases)
        left, right = group[(i - 1) % len(group)], group[(i + 1) % len(group)]
        tag = _TAG + channel * NCCL_STEPS
        proxy = Proxy(p.proxy_s) if p.proxy_s else None  # the channel's network connection, stepped in order
        processes.append(env.process(_connection(net, rank, call, left, right, ops, tag, cut.in_flight, p, channel, proxy)))
    yield env.all_of(processes)


# -- tree ------------------------------------------------------------------------------------
def channel_tree(ranks: int, gpus_per_node: int, rank: int, channel: int) -> tuple[int, list[int]]:
    """(parent, children) of ``rank`` in channel ``channel``'s tree, as NCCL builds it: a chain
    through each node's GPUs from local GPU ``channel // 2`` (the node's head, on that NIC rail),
    and NCCL's double binary tree over the nodes' heads, tree ``channel % 2``. Channels 2k and
    2k + 1 are NCCL's graph channel k and its duplicate k + nChannels: connect.cc connectTrees
    (v2.27.7-1 lines 147-162) gives the duplicate the same chain and NIC and the mirrored tree,
    so every rail carries one channel of each tree and a node's NICs are evenly loaded (with
    ``channel % gpus`` heads, channels k and k + gpus shared a rail and a tree: on 8 x dgx-h100
    the tree ran at 215 GB/s busbw, now 315; NCCL's model 278)."""
    from sim.algorithms.dbtree import double_tree

    gpus = gpus_per_node if gpus_per_node and ranks % gpus_per_node == 0 else ranks
    nodes = ranks // gpus
    order = [(channel // 2 + i) % gpus for i in range(gpus)]
    node, local = divmod(rank, gpus)
    position = order.index(local)
    if position:
        below = [node * gpus + order[position + 1]] if position + 1 < gpus else []
        return node * gpus + order[position - 1], below
    node_parent, node_children = double_tree(nodes, node, channel % 2)
    parent = node_parent * gpus + order[0] if node_parent >= 0 else -1
    below = [node * gpus + order[1]] if gpus > 1 else []
    return parent, below + [child * gpus + order[0] for child in node_children]


def _paced(net: Network, pacer: Pacer | None, nbytes: int) -> Generator:
    """Wait for the GPU's store rate (Tree/LL), if any."""
    wait = pacer.delay(net.env.now, nbytes) if pacer else 0.0
    if wait > 0:
        yield net.env.timeout(wait)


def _tree_up(net, rank, call, tree, pieces, tag, window, p, channel, pacer=None) -> Generator:
    """Reduce up: every piece from each child (posted ``window`` ahead), then to the parent (the
    root sends it down instead)."""
    parent, children = tree
    verify = call.buffers is not None
    queues = {child: deque(net.recv(child, rank, tag + k) for k in range(min(window, len(pieces)))) for child in children}
    for k, piece in enumerate(pieces):
        for child in children:
            payload = yield queues[child].popleft()
            if k + window < len(pieces):
                queues[child].append(net.recv(child, rank, tag + (k + window) % window))
            combine = net.reduce(rank, piece[2], 0, channel)
            if combine is not None:
                yield combine
            if verify:
                call.add(rank, payload, piece)
        wire = wire_bytes(piece[2], p.protocol)
        yield from _paced(net, pacer, piece[2])
        if parent >= 0:
            net.send(rank, parent, wire, call.take(rank, piece) if verify else None, 0, channel, tag + k % window)
        else:
            for child in children:
                net.send(rank, child, wire, call.take(rank, piece) if verify else None, 1, channel, tag + window + k % window)


def _tree_down(net, rank, call, tree, pieces, tag, window, p, channel, pacer=None) -> Generator:
    parent, children = tree
    down = tag + window
    queue = deque(net.recv(parent, rank, down + k) for k in range(min(window, len(pieces))))
    for k, piece in enumerate(pieces):
        payload = yield queue.popleft()
        if k + window < len(pieces):
            queue.append(net.recv(parent, rank, down + (k + window) % window))
        call.put(rank, payload, piece)
        if children:
            yield from _paced(net, pacer, piece[2])
        for child in children:
            net.send(rank, child, wire_bytes(piece[2], p.protocol), payload, 1, channel, down + k % window)


def tree(net: Network, rank: int, call: Call, protocol: str = "Simple") -> Generator:
    """NCCL's tree all-reduce (up and down at once, as the split-thread Tree kernel)."""
    p = params(net, call, "Tree", protocol)
    env = net.env
    if p.start_s:
        yield env.timeout(p.start_s)
    if call.ranks == 1:
        return
    gpus = net.topology.gpus_per_node or call.ranks
    nodes = max(call.ranks // gpus, 1)
    cut = chunking("Tree", protocol, call.size_bytes, p.channels, nodes, call.ranks, simple_buff_bytes=p.simple_buff_bytes)
    channels = list(enumerate(call.pieces(p.channels)))[p.first : p.first + p.simulated]
    window = cut.in_flight
    pacer = Pacer(p.ll_pace_Bps) if p.ll_pace_Bps else None  # one per GPU: up and down, every simulated channel
    phases = []
    for channel, piece in channels:
        parts = max(1, math.ceil(piece[2] / cut.chunk_bytes))
        parts = min(parts, p.max_tree_pieces) if p.max_tree_pieces else parts
        pieces = tuple(chunk for chunk in call.pieces(parts, piece) if chunk[2])
        if not pieces:
            continue
        links = channel_tree(call.ranks, net.topology.gpus_per_node, rank, channel)
        tag = _TREE_TAG + 2 * window * channel
        if links[0] >= 0:  # one SM block sends a connection's slots in order: up to the parent,
            net.share_wire(rank, links[0], range(tag, tag + window))
        for child in links[1]:  # and down to each child
            net.share_wire(rank, child, range(tag + window, tag + 2 * window))
        phases.append(env.process(_tree_up(net, rank, call, links, pieces, tag, window, p, channel, pacer)))
        if links[0] >= 0:
            phases.append(env.process(_tree_down(net, rank, call, links, pieces, tag, window, p, channel, pacer)))
    yield env.all_of(phases)


run_connection = _connection  # one channel's ordered sends and slot-windowed receives, for other schedules (sim.nccl.rooted)
