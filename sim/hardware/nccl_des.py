"""The DES runs NCCL's pick: rings and trees on NCCL's channels, built from the existing steps.

``nccl_ring`` (all_reduce, all_gather, reduce_scatter) cuts the buffer into ``chunks`` channel
slices (the ``chunks`` field carries NCCL's channel count here) and runs one ring per slice at
once, as NCCL's channels do. Channel c orders each node's GPUs starting at local GPU c, so the
ring leaves node n from GPU c - 1 and enters node n + 1 at GPU c: on rail topologies every
channel crosses between nodes on its own NICs, as NCCL's rings on DGX machines do. Each ring
runs the steps of :mod:`sim.algorithms.ring` (reduce-scatter and/or all-gather) on slice c of
every rank's block, one chunk a piece (NCCL's per-protocol chunk pipelining inside a channel is not
modelled; with the single-port model it changes only latency terms).

:func:`scenario_for_pick` maps NCCL's choice to a scenario: Ring -> ``nccl_ring`` with the ring
graph's channels; Tree -> ``nccl_tree`` with the tree graph's channels (per channel a chain through
each node's GPUs and NCCL's double binary tree over the nodes' heads, in NCCL's 512 KiB Simple
tree chunks); NVLS, NVLSTree, CollNet and PAT have no DES counterpart yet (in-switch
reductions), and the reason says so.
"""

from __future__ import annotations

from collections.abc import Generator

from sim.algorithms.phases import RING_ALL_GATHER, RING_REDUCE_SCATTER, RS_THEN, THEN_AG
from sim.algorithms.registry import Phase, register
from sim.collective.call import Call
from sim.network import Network

_TAG = 1000  # channel c uses tag _TAG + c: its messages never match another channel's


def channel_ring(ranks: int, gpus_per_node: int, channel: int) -> list[int]:
    """Channel ``channel``'s ring: every node's GPUs from local GPU ``channel``, node after node."""
    gpus = gpus_per_node if gpus_per_node and ranks % gpus_per_node == 0 else ranks
    order = []
    for node in range(ranks // gpus):
        order += [node * gpus + (channel + i) % gpus for i in range(gpus)]
    return order


def _piece(call: Call, rank: int, channel: int) -> tuple[int, int, int]:
    """Channel ``channel``'s slice of rank ``rank``'s block: rank r owns block r in every channel,
    as the collectives' definitions (sim.collective.verify) say."""
    return call.pieces(call.chunks, call.pieces(call.ranks)[rank])[channel]


def _channel(net: Network, rank: int, call: Call, channel: int, phases: tuple[str, ...]) -> Generator:
    """One channel's ring: reduce-scatter and/or all-gather steps as in sim.algorithms.ring, with
    member i owning the slice of rank group[i]."""
    group = channel_ring(call.ranks, net.topology.gpus_per_node, channel)
    m = len(group)
    if m == 1:
        return
    i = group.index(rank)
    right, left = group[(i + 1) % m], group[(i - 1) % m]
    tag, step = _TAG + channel, 0
    verify = call.buffers is not None
    if "reduce_scatter" in phases:
        piece = _piece(call, group[(i - 1) % m], channel)
        net.send(rank, right, piece[2], call.take(rank, piece), step, channel, tag)
        for hop in range(m - 1):
            piece = _piece(call, group[(i - hop - 2) % m], channel)
            payload = yield net.recv(left, rank, tag)
            combine = net.reduce(rank, piece[2], step + hop, channel)
            if combine is not None:
                yield combine
            if verify:
                call.add(rank, payload, piece)
            if hop < m - 2:
                net.send(rank, right, piece[2], call.take(rank, piece) if verify else None, step + hop + 1, channel, tag)
        step = m - 1
    if "all_gather" in phases:
        piece = _piece(call, rank, channel)
        net.send(rank, right, piece[2], call.take(rank, piece), step, channel, tag)
        for hop in range(m - 1):
            piece = _piece(call, group[(i - hop - 1) % m], channel)
            payload = yield net.recv(left, rank, tag)
            if verify:
                call.put(rank, payload, piece)
            if hop < m - 2:
                net.send(rank, right, piece[2], payload, step + hop + 1, channel, tag)


def _channels(net: Network, rank: int, call: Call, phases: tuple[str, ...]) -> Generator:
    env = net.env
    processes = [env.process(_channel(net, rank, call, channel, phases)) for channel in range(call.chunks)]
    yield env.all_of(processes)


@register(
    "all_reduce", "nccl_ring", chunked=True, splits=True, form="the channels' rings share every rank's port, one slice each: the DES is the model",
    counts=lambda s: (2 * s.p * (s.p - 1) * s.k, s.p * s.k), phases=(RS_THEN, THEN_AG),
)  # fmt: skip
def nccl_ring_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from _channels(net, rank, call, ("reduce_scatter", "all_gather"))


@register(
    "reduce_scatter", "nccl_ring", chunked=True, splits=True, form="the channels' rings share every rank's port, one slice each: the DES is the model",
    counts=lambda s: (s.p * (s.p - 1) * s.k, s.p * s.k), phases=(RING_REDUCE_SCATTER,),
)  # fmt: skip
def nccl_ring_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from _channels(net, rank, call, ("reduce_scatter",))


@register(
    "all_gather", "nccl_ring", chunked=True, splits=True, form="the channels' rings share every rank's port, one slice each: the DES is the model",
    counts=lambda s: (s.p * (s.p - 1) * s.k, s.p * s.k), phases=(RING_ALL_GATHER,),
)  # fmt: skip
def nccl_ring_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from _channels(net, rank, call, ("all_gather",))


TREE_CHUNK_BYTES = (1 << 22) // 8  # Simple: DEFAULT_BUFFSIZE 4 MiB / NCCL_STEPS 8, chunkSteps 1 for trees (enqueue.cc)


def channel_tree(ranks: int, gpus_per_node: int, rank: int, channel: int) -> tuple[int, list[int]]:
    """(parent, children) of ``rank`` in channel ``channel``'s tree, as NCCL builds it: a chain
    through each node's GPUs from local GPU ``channel`` (the node's head, on that NIC rail), and
    NCCL's double binary tree over the nodes' heads (tree ``channel % 2``)."""
    from sim.algorithms.dbtree import double_tree

    gpus = gpus_per_node if gpus_per_node and ranks % gpus_per_node == 0 else ranks
    nodes = ranks // gpus
    order = [(channel + i) % gpus for i in range(gpus)]
    node, local = divmod(rank, gpus)
    position = order.index(local)
    if position:
        below = [node * gpus + order[position + 1]] if position + 1 < gpus else []
        return node * gpus + order[position - 1], below
    node_parent, node_children = double_tree(nodes, node, channel % 2)
    parent = node_parent * gpus + order[0] if node_parent >= 0 else -1
    below = [node * gpus + order[1]] if gpus > 1 else []
    return parent, below + [child * gpus + order[0] for child in node_children]


@register(
    "all_reduce", "nccl_tree", chunked=True, splits=True,
    form="each channel pipelines its slice in 512 KiB chunks through a chain and a tree: the DES is the model",
    # per channel (slice of e elements): every non-root rank sends each non-empty tree chunk up and receives it back down
    counts=lambda s: (
        2 * (s.p - 1) * sum(min(-(-e * s.element_bytes // TREE_CHUNK_BYTES), e) for e in (s.elements // s.k + (c < s.elements % s.k) for c in range(s.k))),
        2 * (s.p - 1) * s.k,
    ),
    phases=(Phase("reduce up and broadcast down the channels' trees", "each channel's ranks send partial sums of their slice up the tree and the reduced chunks back down"),),
    # buffer frames from one scaled run: a channel's slice (p cells) cut into whole tree chunks
    whole_cells=lambda s: s.ranks % -(-(s.size_bytes // s.chunks) // TREE_CHUNK_BYTES) == 0,
)  # fmt: skip
def nccl_tree_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    """NCCL's tree all-reduce on ``chunks`` channels: each channel reduces its slice up its tree
    and broadcasts it down, pipelined in NCCL's Simple tree chunks (512 KiB)."""
    from sim.algorithms.dbtree import _down, _up

    if call.ranks == 1:
        return
    env = net.env
    phases = []
    for channel, piece in enumerate(call.pieces(call.chunks)):
        if not piece[2]:
            continue
        parts = -(-piece[2] // TREE_CHUNK_BYTES)
        pieces = tuple(chunk for chunk in call.pieces(parts, piece) if chunk[2])
        tree = channel_tree(call.ranks, net.topology.gpus_per_node, rank, channel)
        tag = 2 * (_TAG + call.chunks + channel)
        phases.append(env.process(_up(net, rank, call, tree, pieces, tag)))
        if tree[0] >= 0:
            phases.append(env.process(_down(net, rank, call, tree, pieces, tag)))
    yield env.all_of(phases)


def scenario_for_pick(hardware: str, nodes: int, op: str, size_bytes: int, **fields):
    """(scenario, None) running NCCL's pick in the DES, or (None, reason) where there is no
    counterpart. ``fields`` override scenario fields (sharing, eager_limit, ...)."""
    from sim.hardware.nccl_model import predict
    from sim.hardware.presets import load_preset, scenario_fields
    from sim.scenario import CollectiveScenario

    preset = load_preset(hardware)
    pick = predict(preset, nodes, op, size_bytes)
    base = {**scenario_fields(hardware, nodes), "op": op, "size_bytes": size_bytes, **fields}
    if pick.nccl_algorithm == "Ring" and op in ("all_reduce", "all_gather", "reduce_scatter"):
        channels = preset.nccl.graph("ring", preset.nccl_nodes(nodes)[0]).n_channels
        return CollectiveScenario.from_dict({**base, "algorithm": "nccl_ring", "chunks": channels}), None
    if pick.nccl_algorithm == "Tree" and op == "all_reduce":
        channels = preset.nccl.graph("tree", preset.nccl_nodes(nodes)[0]).n_channels
        return CollectiveScenario.from_dict({**base, "algorithm": "nccl_tree", "chunks": channels}), None
    return None, f"NCCL picks {pick.nccl_algorithm}/{pick.nccl_protocol} for {op}; the DES has no {pick.nccl_algorithm} counterpart yet"
