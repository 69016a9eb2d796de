"""NVLS and NVLSTree in the DES: the NVSwitch reduces and multicasts (NCCL v2.27.7-1,
src/device/all_reduce.h ``runRing``-free NVLS paths: multimem.ld_reduce into the head's
portion, multimem.st back out; src/graph/connect.cc ``connectNvls`` for the heads).

Per node the switch has two FIFO servers: *reduce* (every GPU's copy of a chunk goes up its
NVLink and comes back reduced; time per chunk = bytes / rate) and *multicast* (one copy goes in,
every GPU receives it), each at the preset's NVLS rate per GPU and direction, with half of NCCL's
NVLS latency after each. The buffer is cut into ``heads`` portions (one per GPU on one node; one
per NIC rail across nodes). NVLSTree: after the node's reduce a chunk climbs NCCL's double binary
tree over the nodes' head GPUs of its rail (channel c on tree c mod 2, src/graph/connect.cc
``treeUp[c % 2]``), over the NICs as engine messages with slots, and comes down it before the
node's multicast.
all_gather runs the multicast only, reduce_scatter the reduce only.

**Channels as lanes.** NCCL runs its NVLS channels (16 on SM90, ``nvls.cc``) side by side, each
on its own contiguous part of every head's portion (``ncclCollCbdPart``), chunk after chunk in
NCCL's NVLS chunks with NCCL_STEPS slots per connection (``RunWorkColl<AllReduce, NVLS_TREE>``:
scatter, reduce, broadcast and gather warp groups). The channels run alike and start together,
so each holds 1/channels of every resource it crosses, and a chunk takes channels x its own
time at each stage: the pipeline's fill. The DES runs one channel per head and tree (one tree
on a single node, two across nodes) with the servers at 1/channels of the head's share and each
network message carrying its tree's channels' bytes (their share of the NIC, which the other
tree's channel shares with it): exact for identical channels in lock step on the switch, and
1/8 to 1/16 of the events of running them all; a head's chunks stay capped at MAX_MESSAGES.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator

import numpy as np

from sim.algorithms.call import Call
from sim.nccl.path import MAX_MESSAGES, params
from sim.nccl.proto import NCCL_STEPS, chunking
from sim.network import Network

_TAG = 3000  # tree t's up: _TAG + 2 t NCCL_STEPS + slot; its down: NCCL_STEPS further


class Server:
    """A FIFO resource of the switch: ``use(n)`` is an event at the end of n bytes at ``rate``,
    plus ``latency`` (pipelined: the next request starts when the bytes are through)."""

    def __init__(self, env, rate: float, latency: float) -> None:
        self.env, self.rate, self.latency, self.free = env, rate, latency, 0.0

    def use(self, nbytes: int):
        env = self.env
        start = max(env.now, self.free)
        self.free = start + nbytes / self.rate
        return env.timeout(self.free + self.latency - env.now)


def nvls(net: Network, rank: int, call: Call, op: str, algorithm: str = "NVLS") -> Generator:
    """Every rank waits for its node's switch; the first rank to run starts all the work."""
    p = params(net, call, algorithm, "Simple")
    env = net.env
    if p.start_s:
        yield env.timeout(p.start_s)
    state = call.__dict__.get("_nvls")
    if state is None:
        state = call.__dict__["_nvls"] = _start(net, call, op, algorithm, p)
    gpus = net.topology.gpus_per_node or call.ranks
    yield state["done"][rank // gpus]
    if call.buffers is not None:
        call.buffers[rank][:] = state["total"]


def _start(net: Network, call: Call, op: str, algorithm: str, p) -> dict:
    env = net.env
    gpus = net.topology.gpus_per_node or call.ranks
    nodes = max(call.ranks // gpus, 1)
    rate = p.nvls_Bps or 1e12
    heads = gpus if nodes == 1 else max(1, min(p.heads, gpus))
    lanes = max(1, p.channels)  # NCCL's channels run alike side by side: one stands for several
    trees = 2 if nodes > 1 and lanes > 1 else 1  # channel c climbs tree c mod 2 (connect.cc treeUp[c % 2])
    cut = chunking(algorithm, "Simple", call.size_bytes, p.channels, nodes, call.ranks, heads, p.simple_buff_bytes)
    total = None
    if call.buffers is not None:
        total = np.sum(np.stack(call.buffers), axis=0).astype(call.buffers[0].dtype)
    done = []
    for node in range(nodes):
        processes = []
        for head in range(heads):  # heads share the switch equally and run alike
            portion = call.pieces(heads)[head]
            for tree in range(trees):
                share = rate / heads / lanes  # one channel's share of the head's part of the switch
                switch = (Server(env, share, p.nvls_latency_s / 2), Server(env, share, p.nvls_latency_s / 2))
                lane = call.pieces(lanes, portion)[tree]  # channel `tree`, standing for every channel of its tree
                parts = min(max(1, math.ceil(lane[2] / cut.chunk_bytes)), MAX_MESSAGES // trees)
                pieces = [piece for piece in call.pieces(parts, lane) if piece[2]]
                if pieces:
                    processes.append(env.process(_head(net, node, head, gpus, nodes, pieces, switch, op, p, (lanes // trees, tree))))
        done.append(env.all_of(processes))
    return {"done": done, "total": total}


def _head(
    net: Network, node: int, head: int, gpus: int, nodes: int, pieces: list, switch: tuple, op: str, p, lane: tuple = (1, 0)
) -> Generator:
    """One channel of a head, chunk after chunk: reduce, (tree up and down between nodes),
    multicast; at most ``window`` chunks (the channel's NCCL_STEPS slots)
    between their reduce and the stage that frees their slots: on one node the multicast; across
    nodes the tree's reduce warps, which take a chunk from the switch and send it up (the root:
    down). NCCL's NVLSTree kernel runs scatter, tree-reduce, tree-broadcast and gather as
    separate warp groups, each with its own connections' slots (src/device/all_reduce.h,
    RunWorkColl<AllReduce, NVLS_TREE>), so a chunk's way down and its multicast hold no slot of
    the switch's reduce."""
    env = net.env
    reduce_server, multicast_server = switch
    rank = node * gpus + head
    window = NCCL_STEPS
    ready = [env.event() for _ in pieces]
    done = [env.event() for _ in pieces]
    taken = done if nodes == 1 else [env.event() for _ in pieces]
    env.process(_feed(env, None if op == "all_gather" else reduce_server, pieces, ready, taken, window))
    multicast = None if op == "reduce_scatter" else multicast_server
    if nodes == 1:
        for k, piece in enumerate(pieces):
            yield ready[k]
            _finish(multicast, piece, done[k])
    else:
        links = _node_tree(nodes, node, head, gpus, lane[1])
        work = [env.process(_up(net, rank, links, pieces, ready, multicast, done, taken, lane))]
        if links[0] >= 0:
            work.append(env.process(_down(net, rank, links, pieces, multicast, done, lane)))
        yield env.all_of(work)
    yield env.all_of(done)


def _feed(env, server: Server | None, pieces: list, ready: list, freed: list, window: int) -> Generator:
    """Issue the switch's reduces in order, ``window`` ahead of the chunks whose slots are free."""
    for k, piece in enumerate(pieces):
        if k >= window:
            yield freed[k - window]
        if server is None:
            ready[k].succeed()
        else:
            server.use(piece[2]).callbacks.append(lambda _, event=ready[k]: event.succeed())


def _finish(multicast: Server | None, piece, done) -> None:
    if multicast is None:
        done.succeed()
    else:
        multicast.use(piece[2]).callbacks.append(lambda _: done.succeed())


def _node_tree(nodes: int, node: int, head: int, gpus: int, tree: int) -> tuple[int, list[int]]:
    """(parent rank, child ranks) of node ``node``'s head ``head`` in tree ``tree`` of NCCL's
    double binary tree."""
    from sim.algorithms.dbtree import double_tree

    parent, children = double_tree(nodes, node, tree)
    return (parent * gpus + head if parent >= 0 else -1), [child * gpus + head for child in children]


def _up(net: Network, rank: int, links, pieces, ready, multicast, done, taken, lane: tuple = (1, 0)) -> Generator:
    """Tree up between nodes: after the node's reduce, each child's chunk, then to the parent;
    the root multicasts and sends the chunk down. ``taken[k]``: chunk k has left the switch's
    slots."""
    parent, children = links
    window, (channels, tree) = NCCL_STEPS, lane
    up = _TAG + 2 * NCCL_STEPS * tree
    queues = {child: deque(net.recv(child, rank, up + k) for k in range(min(window, len(pieces)))) for child in children}
    for k, piece in enumerate(pieces):
        yield ready[k]
        for child in children:
            yield queues[child].popleft()
            if k + window < len(pieces):
                queues[child].append(net.recv(child, rank, up + (k + window) % window))
        taken[k].succeed()
        if parent >= 0:
            net.send(rank, parent, piece[2] * channels, None, 0, k, up + k % window)
            continue
        for child in children:
            net.send(rank, child, piece[2] * channels, None, 1, k, up + window + k % window)
        _finish(multicast, piece, done[k])


def _down(net: Network, rank: int, links, pieces, multicast, done, lane: tuple = (1, 0)) -> Generator:
    """Tree down: each chunk from the parent, on to the children and into the node's multicast."""
    parent, children = links
    window, (channels, tree) = NCCL_STEPS, lane
    down = _TAG + 2 * NCCL_STEPS * tree + NCCL_STEPS
    queue = deque(net.recv(parent, rank, down + k) for k in range(min(window, len(pieces))))
    for k, piece in enumerate(pieces):
        yield queue.popleft()
        if k + window < len(pieces):
            queue.append(net.recv(parent, rank, down + (k + window) % window))
        for child in children:
            net.send(rank, child, piece[2] * channels, None, 1, k, down + k % window)
        _finish(multicast, piece, done[k])
