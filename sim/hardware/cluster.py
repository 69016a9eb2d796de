"""The topology of ``nodes`` nodes of a hardware preset: rails of NICs across nodes.

Inside a node every GPU has one link into the node's fabric (NVSwitch or PCIe switch, half the
intra latency each side, so a GPU-to-GPU message costs ``intra_latency + n / intra_bandwidth``).
Across nodes GPU g uses NIC ``g * nics // gpus`` of its node (one NIC per GPU rail where the
preset has as many NICs as GPUs; GPUs share a NIC where it has fewer); every NIC links to one
non-blocking core switch carrying half the inter latency, so a message between nodes costs
``inter_latency + n / min(nic bandwidth, ...)`` and shares its NICs with every other flow
through them. The GPU-to-NIC link (PCIe, beside the NIC) costs no latency and has the NIC's
bandwidth. Where a node has more NICs than GPUs (clouds with 16 x 200G on 8 GPUs), each GPU's
NICs are one link of their summed bandwidth: NCCL spreads its channels over them. A rail-optimized fat tree is non-blocking, so one core switch stands for it.

A preset whose NVLink domain spans several nodes (GB200 NVL72: 18 trays of 4 GPUs) links every
GPU of a domain into one fabric; NICs carry only traffic between domains, and the topology's
``gpus_per_node`` is the domain's GPUs (NCCL's channels are laid out per domain, as NCCL's MNNVL).
"""

from __future__ import annotations

import dataclasses
import math
from functools import cache

import networkx as nx

from sim.errors import CollsimError
from sim.hardware.presets import Graph, NcclSystem, Preset
from sim.network.topology import Topology


def build(
    preset: Preset,
    nodes: int,
    intra_latency_s: float,
    intra_bandwidth_Bps: float,
    inter_latency_s: float,
    nic_bandwidth_Bps: float,
) -> Topology:
    """``nodes`` nodes of ``preset`` (link figures given, so flags can override the preset's)."""
    preset.check_nodes(nodes)
    gpus, nics = preset.gpus_per_node, max(preset.nics_per_node, 1)
    if nics > gpus:  # several NICs a GPU (16 x 200G on 8 GPUs): NCCL spreads channels over them; one link of their sum
        nic_bandwidth_Bps, nics = nic_bandwidth_Bps * nics / gpus, gpus
    domains, domain_gpus = preset.nccl_nodes(nodes)  # an NVLink domain may span nodes (GB200 NVL72 trays)
    graph = nx.Graph()
    graph.add_nodes_from(range(nodes * gpus))
    for node in range(nodes):
        for local in range(gpus):
            rank = node * gpus + local
            if domain_gpus > 1:
                graph.add_edge(rank, f"node{rank // domain_gpus}", latency=intra_latency_s / 2, bandwidth=intra_bandwidth_Bps)
            if domains > 1:
                graph.add_edge(rank, f"nic{node}.{local * nics // gpus}", latency=0.0, bandwidth=nic_bandwidth_Bps)
        if domains > 1:
            for nic in range(nics):
                graph.add_edge(f"nic{node}.{nic}", "core", latency=inter_latency_s / 2, bandwidth=nic_bandwidth_Bps)
    return Topology("two_level", graph, nodes * gpus, domain_gpus)


def for_scenario(scenario) -> Topology:
    """The topology of a scenario with ``hardware`` set (its link fields already hold the
    preset's figures or the user's overrides). NCCL's algorithms run on sim.nccl.topo's instead
    (effective rates, NCCL's hop latencies): sim.collective.runner picks, as sim.nccl sits above."""
    return _plain(scenario)


def route_work(scenario) -> tuple[int, int, int]:
    """How the routes of a scenario with ``hardware`` set are found, built without finding any:
    (destinations searched whole, nodes of the graph, pairs found alone). A search costs about
    the graph's nodes, a pair alone its neighbourhood (sim.collective.budget; NCCL's algorithms:
    sim.nccl.topo.route_work)."""
    built = _plain(scenario)
    whole, alone = built.route_plan()  # asked for as the run goes
    return whole, built.graph.number_of_nodes(), alone


def _plain(scenario) -> Topology:
    """The preset's cluster for any algorithm but NCCL's own: the scenario's link fields."""
    from sim.hardware.presets import load_preset

    s = scenario
    preset = load_preset(s.hardware)
    nodes = s.ranks // preset.gpus_per_node
    intra_latency = s.latency_s if s.intra_latency_s is None else s.intra_latency_s
    intra_bandwidth = s.bandwidth_Bps if s.intra_bandwidth_Bps is None else s.intra_bandwidth_Bps
    return build(preset, nodes, intra_latency, intra_bandwidth, s.latency_s, s.bandwidth_Bps)


# --- NIC overrides: a preset variant "NAME:NICSxRATE" (e.g. dgx-h100:16x200Gbps) -------------

# NCCL v2.27.7-1 src/graph/search.cc lines 953, 958, 963: the per-channel speeds its search tries
# across nodes (GB/s), by compute capability (< 90, 90, >= 100)
SPEEDS_INTER = {
    0: (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    90: (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    100: (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
}
RING_MAX_CHANNELS = 16  # init.cc line 851: ringGraph->maxChannels = MAXCHANNELS/2


def variant_name(name: str, nics_per_node: int | None = None, nic_bandwidth: str | float | None = None) -> str:
    """``name`` with its NICs replaced, as one preset name (``dgx-h100:16x200Gbps``), which
    :func:`sim.hardware.presets.load_preset` loads everywhere a preset name goes; ``name``
    itself when neither override is given. CollsimError naming the flag on bad values."""
    from sim.hardware.presets import load_preset
    from sim.units import parse_bandwidth

    if nics_per_node is None and nic_bandwidth is None:
        return name
    preset = load_preset(name.partition(":")[0])
    if not preset.nics_per_node or preset.max_nodes is not None:
        raise CollsimError(f"--nics-per-node/--nic-bandwidth: hardware {preset.name} has no NICs to change (one node only)")
    nics = preset.nics_per_node if nics_per_node is None else int(nics_per_node)
    gpus = preset.gpus_per_node
    if nics < 1 or (gpus % nics and nics % gpus):
        raise CollsimError(f"--nics-per-node: must divide or be a multiple of the {gpus} GPUs a node of {preset.name}, got {nics}")
    rate = preset.nic_bandwidth_Bps if nic_bandwidth is None else parse_bandwidth(nic_bandwidth, "--nic-bandwidth")
    if not (rate > 0 and math.isfinite(rate)):
        raise CollsimError(f"--nic-bandwidth: must be a positive rate such as 200Gbps, got {nic_bandwidth!r}")
    return f"{preset.name}:{nics}x{rate * 8 / 1e9:.6g}Gbps"


@cache
def load_variant(name: str, spec: str) -> Preset:
    """Preset ``name`` with NICs ``spec`` ("16x200Gbps"), built once (NCCL's tables are cached per preset)."""
    from sim.hardware.presets import load_preset

    return with_nics(load_preset(name), spec)


def with_nics(preset: Preset, spec: str) -> Preset:
    """``preset`` with ``spec`` ("16x200Gbps") NICs a node: the topology's NICs and NCCL's
    multi-node ring and tree graphs as its search would find them (:func:`net_graph`)."""
    from sim.units import parse_bandwidth

    count, _, rate_text = spec.partition("x")
    if not count.isdigit() or not rate_text:
        raise CollsimError(f"hardware: {preset.name}:{spec}: NIC override must read NICSxRATE, e.g. {preset.name}:16x200Gbps")
    checked = variant_name(preset.name, int(count), rate_text)
    nics, rate = int(count), parse_bandwidth(rate_text, "--nic-bandwidth")
    sources = dict(preset.sources, nics_per_node=f"override ({nics} a node)", nic_bandwidth=f"override ({rate_text} each)")
    nccl = preset.nccl
    if nccl is not None:
        graph = net_graph(nccl, nics, rate / 1e9)
        graphs = {**nccl.graphs, "ring": graph, "tree": graph}
        nccl = dataclasses.replace(nccl, graphs=graphs)
        sources["nccl.graphs"] = (
            f"multi-node ring/tree {graph.n_channels} x {graph.bw_inter} GB/s derived for the NIC override by "
            "sim.hardware.cluster.net_graph (NCCL v2.27.7-1 search.cc speed arrays and bw decrease rule, ncclTopoDupChannels); "
            + preset.sources.get("nccl.graphs", "")
        )
    description = f"{preset.description}; NICs overridden: {nics} x {rate_text} a node"
    return dataclasses.replace(preset, name=checked, description=description, nics_per_node=nics, nic_bandwidth_Bps=rate,
                               nccl=nccl, sources=sources)  # fmt: skip


def net_graph(nccl: NcclSystem, nics: int, nic_GBps: float) -> Graph:
    """NCCL's multi-node ring graph for ``nics`` NICs of ``nic_GBps`` a node: its search
    (search.cc ncclTopoCompute) starts at the fastest speed no faster than a NIC, gives each
    channel one NIC (a NIC carries floor(nic / speed) channels) within the GPUs' NVLink (the
    one-node ring graph's channels x speed), at most 16 channels; it keeps lowering the speed
    while the next one is above 0.49 of the best found, keeping strictly better totals; then
    ncclTopoDupChannels doubles the channels at speeds >= 25 (not on SM90+ below 50 with more
    than 4 channels)."""
    speeds = SPEEDS_INTER[100 if nccl.compute_capability >= 100 else 90 if nccl.compute_capability >= 90 else 0]
    one_node = nccl.graph("ring", 1)
    capacity = one_node.n_channels * one_node.bw_intra
    fitting = [speed for speed in speeds if speed <= min(nic_GBps, capacity)] or [speeds[-1]]
    best_channels, best_speed = 0, fitting[0]
    for speed in fitting:
        if best_channels and speed / best_speed <= 0.49:
            break
        channels = min(RING_MAX_CHANNELS, nics * max(1, int(nic_GBps // speed)), max(1, int(capacity // speed)))
        if channels * speed > best_channels * best_speed:
            best_channels, best_speed = channels, speed
    if best_speed >= 25 and not (nccl.compute_capability > 80 and best_speed < 50 and best_channels > 4):
        doubled = min(2 * best_channels, RING_MAX_CHANNELS)
        best_speed /= -(-doubled // best_channels)
        best_channels = doubled
    return Graph(best_channels, best_speed, best_speed)
