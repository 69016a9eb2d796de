"""The topology of ``nodes`` nodes of a hardware preset: rails of NICs across nodes.

Inside a node every GPU has one link into the node's fabric (NVSwitch or PCIe switch, half the
intra latency each side, so a GPU-to-GPU message costs ``intra_latency + n / intra_bandwidth``).
Across nodes GPU g uses NIC ``g * nics // gpus`` of its node (one NIC per GPU rail where the
preset has as many NICs as GPUs; GPUs share a NIC where it has fewer); every NIC links to one
non-blocking core switch carrying half the inter latency, so a message between nodes costs
``inter_latency + n / min(nic bandwidth, ...)`` and shares its NICs with every other flow
through them. The GPU-to-NIC link (PCIe, beside the NIC) costs no latency and has the NIC's
bandwidth. A rail-optimized fat tree is non-blocking, so one core switch stands for it.
"""

from __future__ import annotations

import networkx as nx

from sim.hardware.presets import Preset
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
    graph = nx.Graph()
    graph.add_nodes_from(range(nodes * gpus))
    for node in range(nodes):
        for local in range(gpus):
            rank = node * gpus + local
            if gpus > 1:
                graph.add_edge(rank, f"node{node}", latency=intra_latency_s / 2, bandwidth=intra_bandwidth_Bps)
            if nodes > 1:
                graph.add_edge(rank, f"nic{node}.{local * nics // gpus}", latency=0.0, bandwidth=nic_bandwidth_Bps)
        if nodes > 1:
            for nic in range(nics):
                graph.add_edge(f"nic{node}.{nic}", "core", latency=inter_latency_s / 2, bandwidth=nic_bandwidth_Bps)
    return Topology("two_level", graph, nodes * gpus, gpus)


def for_scenario(scenario) -> Topology:
    """The topology of a scenario with ``hardware`` set (its link fields already hold the
    preset's figures or the user's overrides)."""
    from sim.hardware.presets import load_preset

    s = scenario
    if s.algorithm.startswith("nccl_"):  # NCCL's data path: effective rates, NCCL's hop latencies
        from sim.hardware import nccl_topo

        return nccl_topo.topology(s)
    preset = load_preset(s.hardware)
    nodes = s.ranks // preset.gpus_per_node
    intra_latency = s.latency_s if s.intra_latency_s is None else s.intra_latency_s
    intra_bandwidth = s.bandwidth_Bps if s.intra_bandwidth_Bps is None else s.intra_bandwidth_Bps
    return build(preset, nodes, intra_latency, intra_bandwidth, s.latency_s, s.bandwidth_Bps)
