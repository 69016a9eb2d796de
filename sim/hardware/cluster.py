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

import networkx as nx

from sim.hardware.presets import Preset, load_preset
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


def for_scenario(scenario, preset: Preset | None = None) -> Topology:
    """The topology of a scenario with ``hardware`` set (its link fields already hold the
    preset's figures or the user's overrides). NCCL's algorithms run on sim.nccl.topo's instead
    (effective rates, NCCL's hop latencies): sim.collective.runner picks, as sim.nccl sits above."""
    return _plain(scenario, preset)


def route_work(scenario, preset: Preset | None = None, topology: Topology | None = None) -> tuple[int, int, int]:
    """How the routes of a scenario with ``hardware`` set are found, built without finding any:
    (destinations searched whole, nodes of the graph, pairs found alone). A search costs about
    the graph's nodes, a pair alone its neighbourhood (sim.collective.budget; NCCL's algorithms:
    sim.nccl.topo.route_work). ``topology``: the scenario's, built already (:func:`for_scenario`)."""
    built = topology or _plain(scenario, preset)
    whole, alone = built.route_plan()  # asked for as the run goes
    return whole, built.graph.number_of_nodes(), alone


def _plain(scenario, preset: Preset | None = None) -> Topology:
    """The preset's cluster for any algorithm but NCCL's own: the scenario's link fields
    (``preset``: the scenario's, loaded already)."""
    s = scenario
    preset = preset or load_preset(s.hardware)
    nodes = s.ranks // preset.gpus_per_node
    intra_latency = s.latency_s if s.intra_latency_s is None else s.intra_latency_s
    intra_bandwidth = s.bandwidth_Bps if s.intra_bandwidth_Bps is None else s.intra_bandwidth_Bps
    return build(preset, nodes, intra_latency, intra_bandwidth, s.latency_s, s.bandwidth_Bps)
