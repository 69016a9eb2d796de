"""The topology an NCCL algorithm runs on, for ``nodes`` nodes of a preset, and its PathParams.

Like :mod:`sim.hardware.cluster` (rails of NICs, one non-blocking core switch) with three
differences for NCCL's data path:

- link rates are the preset's effective ones (``presets.effective``: datasheet x fitted
  efficiency); a GPU's NICs are one link of their summed rate (two 100G NICs a GPU: 200G);
- link latencies are NCCL's per-hop ``hwLat`` (tuning.cc) for the run's algorithm and protocol,
  times the fitted latency scale: NVLink/PCIe inside a node, NET between nodes;
- a GPU reaches the node's switch and its NIC through a hub of its own (NVLink and PCIe are
  separate wires, so no shared port between them); the GPU-to-hub link carries the GPU's
  protocol rate on rings (:func:`protocol_cap_GBps`: what the SMs driving the channels can
  move in LL or LL128, NCCL's llMaxBws / perChMaxRingLL128Bws tables), and where channels are collapsed
  (nccl_path's docstring) every link carries the simulated channels' share.
"""

from __future__ import annotations

import networkx as nx

from sim.hardware.presets import Preset, effective, load_preset
from sim.nccl.model import (  # the rates and latencies NCCL's model and the DES share live there
    _FREE,
    ALGORITHMS,
    HW_LAT,
    LL_MAX_BWS,
    NVLINK,
    PER_CH_MAX_RING_LL128_BWS,
    PER_CH_MAX_TREE_BWS,
    PER_CH_MAX_TREE_LL128_BWS,
    _domains,
    comm_channels,
    compcap_index,
    hop_latencies_s,
    link_rates,
    net_overhead_us,
    nvls_channels,
)  # fmt: skip
from sim.nccl.path import MAX_TREE_PIECES, PAIR_OF, PathParams, channel_ring, channel_tree
from sim.nccl.proto import BY_NAME, channels_used
from sim.nccl.versions import nccl_version as nccl_version_record
from sim.network.topology import Topology

COLLAPSE = True  # run copies of channels once (tests switch it off to compare)
FIRST = 0  # the first channel run when collapsed (tests run each one alone)
TREE_CAPPED = ("LL128",)  # the tree caps the DES applies to links (LL: paced, nccl_path.Pacer; Simple: none)


def protocol_cap_GBps(preset, algorithm: str, protocol: str, op: str, nodes: int) -> float | None:
    """The most a GPU's channels move in ``protocol`` (data GB/s out of the GPU = busbw for a
    ring and for a tree's chain), or None where NCCL sets no cap: NCCL v2.27.7-1
    tuning.cc:165-190 (tables) and 279-283 (use): Ring/LL and Tree/LL llMaxBws; Ring/LL128
    nChannels x perChMaxRingLL128Bws; Tree/LL128 nChannels x perChMaxTreeLL128Bws; Tree/Simple
    (all_reduce) nChannels x perChMaxTreeBws (nChannels: the graph's), whatever number of
    channels the call runs on, as NCCL's model. Of the tree's caps only LL128's is applied to the
    links (:data:`TREE_CAPPED`): the DES's tree moves each chunk hop by hop, so a cap on every hop
    charges small calls at every level (Tree/LL at 64-128 KiB ran 18-37 % slow on the 2-node
    logs), and the Simple one binds before the NICs do (2 x dgx-h100, 1 GiB: 282 against NCCL's
    model's 306 GB/s busbw). Tree/LL's bound, llMaxBw, is a rate over the GPU's passes instead
    (:func:`ll_max_GBps`, PathParams.ll_pace_Bps, nccl_path.Pacer)."""
    system = preset.nccl
    if system is None or algorithm not in ("Ring", "Tree") or (algorithm, protocol) == ("Ring", "Simple"):
        return None
    if algorithm == "Tree" and (protocol not in TREE_CAPPED or op != "all_reduce"):
        return None
    cc = compcap_index(system.compute_capability)
    index2 = nodes - 1 if nodes <= 2 else 2
    if protocol == "LL":
        return ll_max_GBps(system, nodes)
    graph = system.graph("ring" if algorithm == "Ring" else "tree", nodes)
    table = {"Ring": PER_CH_MAX_RING_LL128_BWS, "Tree": PER_CH_MAX_TREE_LL128_BWS if protocol == "LL128" else PER_CH_MAX_TREE_BWS}
    return graph.n_channels * table[algorithm][cc][index2]


def ll_max_GBps(system, nodes: int) -> float:
    """What a GPU's SMs move in LL, all channels together (data GB/s out of the GPU): NCCL
    v2.27.7-1 tuning.cc:165-170 llMaxBws, measured for ring and tree alike ("avg of ring & tree").
    LL's 16-byte lines carry 8 data bytes and one thread stores and polls one line at a time, so
    LL is bounded by the SMs' store rate, not by the links: the same bound for a ring's and a
    tree's kernel (runTreeSplit only divides the block's threads between up and down)."""
    cc = compcap_index(system.compute_capability)
    return LL_MAX_BWS[cc if nodes == 1 else (1 if system.cpu_vendor == "amd" else 0)][nodes - 1 if nodes <= 2 else 2]


def path_params(scenario, preset) -> PathParams:
    """The DES parameters of an ``nccl_*`` scenario on a preset: NCCL's channels for the call
    (the communicator's, fewer for small calls as topoGetAlgoInfo), and what is collapsed."""
    s = scenario
    algorithm, protocol = PAIR_OF[s.algorithm]
    nodes, gpus = _domains(preset, s.ranks)
    eff = effective(preset)
    if algorithm in ("NVLS", "NVLSTree"):
        cc = preset.nccl.compute_capability if preset.nccl else 90
        channels = nvls_channels(cc, nodes, nccl_version_record(getattr(s, "nccl_version", None)))  # nvls.cc NVLS_NCHANNELS
    else:
        channels = channels_used(algorithm, protocol, s.size_bytes, s.chunks, s.ranks)
    simulated = _collapsed(algorithm, channels, nodes) if COLLAPSE and not (s.verify or s.groups) else channels
    intra, inter, start = hop_latencies_s(preset, algorithm, protocol, nodes)
    nvls_latency = HW_LAT[NVLINK][ALGORITHMS.index("NVLS")][2] * eff.latency_scale * eff.nvls_latency_scale * 1e-6
    first = FIRST if simulated < channels else 0
    return PathParams(
        algorithm, protocol, channels, simulated, first=first, start_s=start,
        nvls_Bps=(s.intra_bandwidth_Bps or 0.0) * eff.nvls_efficiency, nvls_latency_s=nvls_latency,
        heads=max(1, min(gpus, preset.nics_per_node * gpus // preset.gpus_per_node or gpus)), max_tree_pieces=MAX_TREE_PIECES // simulated,
        simple_buff_bytes=preset.nccl.buffsize if preset.nccl else None,
        ll_pace_Bps=ll_max_GBps(preset.nccl, nodes) * 1e9 * simulated / channels if (algorithm, protocol) == ("Tree", "LL") and preset.nccl else 0.0,
        proxy_s=_proxy_s(preset, algorithm, protocol, nodes),
    )  # fmt: skip


def _proxy_s(preset, algorithm: str, protocol: str, nodes: int) -> float:
    """A ring channel's proxy time per network send (sim.nccl.path.Proxy) across NCCL's nodes
    (an NVLink domain is one): NCCL's net overhead, charged by its model on Ring only
    (tuning.cc:347-353, v2.27.7-1); not scaled by the fitted latency scale (no hwLat entry).
    x86 hosts only: getNetOverhead has figures for x86 Intel and AMD (:206-207) and falls back to
    1 us for every other host (:208), and on Arm (Grace) a calibration log rules that out: 2 racks
    of GB200 (oci-gb200-nvl72_32trays, in-sample) run an 8 B all_reduce's 254 ring steps in
    183 us, 0.72 us a step with every hop, where 1 us a post made 512 B-128 KiB 22-26 % slow."""
    if algorithm != "Ring" or nodes < 2 or preset.nccl is None or preset.nccl.cpu_arch != "x86":
        return 0.0
    return net_overhead_us(preset.nccl, protocol) * 1e-6


def _collapsed(algorithm: str, channels: int, nodes: int) -> int:
    """Channels the DES runs: one ring; one tree on up to two nodes (where the mirrored tree of
    the pair is the same tree with the nodes swapped), the mirrored pair beyond; every one for
    NVLS (heads). The simulated channels get their 1/k share of each link (:func:`_partition`).
    Why not the pair everywhere: under fifo sharing the pair's channels take whole turns on a
    shared link and pipeline through each other a hop apart, halving the fill of a tree's
    store-and-forward chain (2 x gcp-a3-mega Tree/Simple at 8 MiB, no latency: 235 us, against
    the 446 us of 16 channels each at 1/16 of its links; the log, 572 us with its ~123 us floor).
    Beyond two nodes one channel on its 1/k share starves the nodes interior in its tree (4 x
    dgx-h100 Tree/Simple 1 GiB: 221 GB/s busbw against the pair's 313), so the pair stays there
    and its fill stays optimistic at mid sizes."""
    if algorithm in ("NVLS", "NVLSTree"):
        return channels
    return min(channels, 2 if algorithm == "Tree" and nodes > 2 else 1)


def _pairs(p: PathParams, ranks: int, gpus: int, channel: int) -> set[tuple[int, int]]:
    """The (sender, receiver) pairs of one channel."""
    if p.algorithm == "Tree":
        pairs = set()
        for rank in range(ranks):
            parent, children = channel_tree(ranks, gpus, rank, channel)
            pairs |= {(rank, parent), (parent, rank)} if parent >= 0 else set()
            pairs |= {(rank, child) for child in children} | {(child, rank) for child in children}
        return pairs
    order = channel_ring(ranks, gpus, channel)
    return {(order[i], order[(i + 1) % len(order)]) for i in range(len(order))}


def _partition(built: Topology, p: PathParams, channel_pairs: list[set[tuple[int, int]]], paths: dict) -> None:
    """Channels partition the links (NCCL's search allots each channel its bandwidth on every
    link it crosses): a directed link crossed by k channels gives each 1/k of its rate, so the
    simulated channels get (simulated among them) / k, and the others need not run.
    ``channel_pairs``: each channel's (sender, receiver) pairs; ``paths``: their routes."""
    graph = built.graph
    crossing: dict[tuple, list[int]] = {}
    for channel, pairs in enumerate(channel_pairs):
        used = set()
        for pair in pairs:
            path = paths[pair]
            used |= set(zip(path, path[1:]))
        for link in used:
            crossing.setdefault(link, []).append(channel)
    for u, v, data in graph.edges(data=True):
        shares = [len([c for c in crossing[link] if p.first <= c < p.first + p.simulated]) / len(crossing[link])
                  for link in ((u, v), (v, u)) if crossing.get(link)]  # fmt: skip
        shares = [share for share in shares if share > 0]  # a direction no simulated channel uses: any rate
        if shares and data["bandwidth"] < _FREE:
            data["bandwidth"] *= min(shares)


def topology(scenario, preset: Preset | None = None, parts: tuple | None = None) -> Topology:
    """The topology of an ``nccl_*`` scenario on its preset (``preset``: the scenario's, loaded
    already), carrying its PathParams (``topology.nccl``, read by sim.nccl.path.params).
    ``parts``: :func:`unfinished`'s, built already (a plan's, whose route work read them); finished in place."""
    built, p, direct = parts or unfinished(scenario, preset)
    if scenario.algorithm != "nccl_p2p":  # the channels' routes, found in bulk and kept
        channel_pairs = _channel_pairs(built, p)
        paths = built.paths([pair for pairs in channel_pairs for pair in pairs])
        if p.simulated < p.channels:
            _partition(built, p, channel_pairs, paths)
    object.__setattr__(built, "nccl", p)  # frozen dataclass; read by nccl_path.params
    object.__setattr__(built, "streams_per_tag", True)  # the engines: one connection per slot tag
    object.__setattr__(built, "ports_per_link", direct)  # the engines: no single send/receive port
    return built


def route_work(scenario, preset: Preset | None = None, parts: tuple | None = None) -> tuple[int, int, int]:
    """How the scenario's routes are found: (destinations searched whole, nodes of the graph,
    pairs found alone); see Topology.route_plan. The channels' routes are found in bulk
    (:func:`topology`); NCCL's send/recv path asks for its pairs as it runs, each destination
    searched whole where the graph is not a tree (sim.collective.budget). ``parts``: as :func:`topology`'s."""
    built, p, _ = parts or unfinished(scenario, preset)
    if scenario.algorithm == "nccl_p2p":
        whole, alone = built.route_plan()
    else:
        whole, alone = built.route_plan([pair for pairs in _channel_pairs(built, p) for pair in pairs])
    return whole, built.graph.number_of_nodes(), alone


def _channel_pairs(built: Topology, p: PathParams) -> list[set[tuple[int, int]]]:
    """Each channel's (sender, receiver) pairs on the topology."""
    return [_pairs(p, built.ranks, built.gpus_per_node, channel) for channel in range(p.channels)]


def p2p_path_params(scenario, preset) -> PathParams:
    """NCCL's point-to-point run's parameters: :func:`sim.nccl.p2p.p2p_params`."""
    from sim.nccl.p2p import p2p_params

    return p2p_params(scenario, preset, hop_latencies_s, comm_channels)


def unfinished(scenario, preset: Preset | None = None) -> tuple[Topology, PathParams, bool]:
    """The scenario's topology before its channels partition the links: (topology, path
    parameters, whether a tree's GPUs reach the switch and their NIC directly)."""
    s = scenario
    preset = preset or load_preset(s.hardware)
    p2p = s.algorithm == "nccl_p2p"  # NCCL's send/recv path (sim.nccl.p2p): no channels, no protocol cap
    if p2p:
        p = p2p_path_params(s, preset)
    else:
        p = path_params(s, preset)
    nodes, gpus = _domains(preset, s.ranks)
    intra_lat, inter_lat, _ = hop_latencies_s(preset, p.algorithm, p.protocol)
    intra_bw, nic_bw, nics = link_rates(s, preset, p.algorithm)
    cap = None if p2p else protocol_cap_GBps(preset, p.algorithm, p.protocol, s.op, nodes)
    gpu_rate = cap * 1e9 / BY_NAME[p.protocol].data_per_wire if cap else _FREE  # wire bytes/s
    # A tree's GPU sends to its parent and its children at once, over NVLink and its NIC (NCCL's
    # tree kernel gives each its own warps); fifo sharing holds every link of a route while a
    # message passes, so a GPU-to-hub link would hold its NVLink sends while a NIC message passes
    # at the NIC's rate (half the tree's rate on two nodes). Trees therefore reach the switch and
    # their own NIC directly, with a port per link (``ports_per_link``, read by the engine); where
    # GPUs share a NIC the hub stays (a route must not cross a shared NIC).
    direct = p.algorithm == "Tree" and (nodes == 1 or nics >= gpus)
    graph = nx.Graph()
    graph.add_nodes_from(range(s.ranks))
    for node in range(nodes):
        for local in range(gpus):
            rank = node * gpus + local
            hub = rank if direct else f"hub{node}.{local}"
            if not direct:
                graph.add_edge(rank, hub, latency=0.0, bandwidth=gpu_rate)
            if gpus > 1:
                graph.add_edge(hub, f"node{node}", latency=intra_lat / 2, bandwidth=min(intra_bw, gpu_rate) if direct else intra_bw)
            if nodes > 1:
                nic = f"nic{node}.{local * min(nics, gpus) // gpus}"
                graph.add_edge(hub, nic, latency=0.0, bandwidth=min(nic_bw, gpu_rate) if direct else nic_bw)
        if nodes > 1:
            for nic in range(min(nics, gpus)):
                graph.add_edge(f"nic{node}.{nic}", "core", latency=inter_lat / 2, bandwidth=nic_bw)
    return Topology("two_level", graph, s.ranks, gpus), p, direct


def rates_line(scenario, preset: Preset | None = None) -> str:
    """One line: the rates and latencies an NCCL run on a preset moves at, each with where it
    comes from (the datasheet figures in the scenario x the effective constants, fitted or
    default), so a reader of the form's datasheet fields knows what the DES ran at."""
    from sim.units import format_bandwidth, format_time

    s = scenario
    preset = preset or load_preset(s.hardware)
    p2p = s.algorithm == "nccl_p2p"  # NCCL's send/recv path: the ring's latencies, no protocol cap
    algorithm, protocol = (lambda p: (p.algorithm, p.protocol))(p2p_path_params(s, preset)) if p2p else PAIR_OF[s.algorithm]
    eff = effective(preset)
    nodes, gpus = _domains(preset, s.ranks)

    def origin(name: str) -> str:
        return eff.provenance[name].split(" ", 1)[0]  # fitted / default / trial

    intra_bw, nic_bw, nics = link_rates(s, preset, algorithm)
    wire = "NVLink" if preset.nccl is None or preset.nccl.type_intra == "NVL" else "PCIe"
    intra_data = s.intra_bandwidth_Bps or s.bandwidth_Bps
    parts = []
    if gpus > 1:
        bound = " (NCCL's path through the CPU)" if intra_bw < intra_data * eff.intra_efficiency else ""
        parts.append(
            f"{wire} {format_bandwidth(intra_bw)} a GPU = {eff.intra_efficiency:.3g} ({origin('intra_efficiency')}) x {format_bandwidth(intra_data)}{bound}"
        )
    if nodes > 1:
        share = f" x {nics / gpus:g} NICs" if nics > gpus else ""
        parts.append(
            f"network {format_bandwidth(nic_bw)} a GPU = {eff.inter_efficiency:.3g} ({origin('inter_efficiency')}) x {format_bandwidth(s.bandwidth_Bps)}{share}"
        )
    if algorithm in ("NVLS", "NVLSTree"):
        parts.append(
            f"switch {format_bandwidth(intra_data * eff.nvls_efficiency)} = {eff.nvls_efficiency:.3g} ({origin('nvls_efficiency')}) x {format_bandwidth(intra_data)}"
        )
    cap = None if p2p else protocol_cap_GBps(preset, algorithm, protocol, s.op, nodes)
    if protocol == "LL" and algorithm == "Tree" and preset.nccl:
        cap = ll_max_GBps(preset.nccl, nodes)
    if cap:
        parts.append(f"{protocol} at most {format_bandwidth(cap * 1e9)} a GPU (NCCL's table)")
    intra_lat, inter_lat, start = hop_latencies_s(preset, algorithm, protocol, nodes)
    hops = [f"{wire} {format_time(intra_lat)}"] * (gpus > 1) + [f"network {format_time(inter_lat)}"] * (nodes > 1)
    base = (
        f" incl. base {format_time(eff.base_latency_us * 1e-6)} ({origin('base_latency_us')})" if nodes > 1 and eff.base_latency_us else ""
    )
    scales = ""  # the further scales hop_latencies_s applies, where they differ from 1
    if protocol == "LL128" and eff.ll128_latency_scale != 1.0:
        scales += f" x {eff.ll128_latency_scale:.3g} (LL128, {origin('ll128_latency_scale')})"
    if algorithm in ("NVLS", "NVLSTree") and eff.nvls_latency_scale != 1.0:
        scales += f" x {eff.nvls_latency_scale:.3g} (NVLS, {origin('nvls_latency_scale')})"
    call = f", call {format_time(start)}" if start else ""
    latency = f"hops {', '.join(hops)}{call}{base}: NCCL's {algorithm}/{protocol} tables x {eff.latency_scale:.3g} ({origin('latency_scale')}){scales}"
    return f"runs at {'; '.join(parts)}; {latency}" if parts else f"runs at {latency}"


def default_channels(preset, nodes: int, nccl_version: str | None = None) -> int:
    """The communicator's channels (:func:`sim.nccl.model.comm_channels`: connect.cc's doublings
    and, up to 2.27, the NVLS copies) with the tuning record of ``nccl_version`` (None: 2.27)."""
    return comm_channels(preset.nccl, preset.nccl_nodes(nodes)[0], nccl_version_record(nccl_version))
