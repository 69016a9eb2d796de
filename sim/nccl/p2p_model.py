"""A closed-form cost of NCCL's point-to-point ops (all_to_all, send_recv) beside its tuning model.

NCCL's tuning model (``src/graph/tuning.cc``) has no entry for ncclSend/ncclRecv: a grouped
all_to_all takes what its p2p channels move. This model charges what the DES's ``nccl_p2p`` path
(:mod:`sim.nccl.p2p`, laid out as :mod:`sim.nccl.p2p_plan`) charges, without running it:

- **Protocol**: across nodes Simple (a p2p network connection has no LL buffer); inside one node
  LL where a peer's bytes are at most NCCL_P2P_LL_THRESHOLD (16 KiB) x p2pnChannelsPerPeer, else Simple
  (:func:`sim.nccl.p2p.protocol_for`); LL puts 4 data bytes in each 8-byte line.
- **Latency**: NCCL's Ring baseLat of the protocol once a call (tuning.cc ``baseLat``: LL 6.6 us,
  Simple 8.4 us) x the preset's fitted latency scale, plus the fitted per-call base latency across
  nodes; then per batch a channel runs, one after another, its slowest op's hop (tuning.cc
  ``hwLat``, Ring row: NVLink LL 0.6 / Simple 3.4 us, NET Simple 14.0 us; a cross-rail network
  send one NVLink hop more, PXN): :func:`batch_chain_s`, the longest chain over the channels.
- **Bandwidth**: a rank's NVLink and NIC sends proceed side by side, each link shared fairly by
  the messages on it. With p ranks, g GPUs a node and w wire bytes a block, a rank's NVLink
  carries (g - 1) w at the effective NVLink rate and its share of the node's NICs (p - g) w, the
  NIC serving g / min(nics, g) GPUs' (p - g) w at the effective NIC rate
  (:func:`sim.nccl.model.link_rates`). PXN delays the cross-rail sends, not the same-rail ones,
  so the NIC term is the later of (chain without PXN + all NIC bytes) and (chain + the cross-rail
  share of them).
- **Pipelining**: the slots in flight exceed a NIC's bandwidth-delay product
  (:func:`sim.nccl.p2p_plan.in_flight_bytes`), so a peer's bytes flow at its links' rate.

all_to_all = baseLat + max(NVLink hwLat + (g - 1) w / NVLink rate, NIC term);
send_recv = one message from rank 0 to the last rank (across nodes where there are several,
one NVLink hop more where PXN moves it to another rail's NIC).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sim.nccl.p2p import P2P_OPS, peer_bytes, protocol_for
from sim.nccl.p2p_plan import P2pPlan, channel_batches, crosses_rail, p2p_plan
from sim.nccl.path import wire_bytes

__all__ = ["P2P_OPS", "P2pTerms", "batch_chain_s", "p2p_terms"]


@dataclass(frozen=True)
class P2pTerms:
    """The closed form's parts for one call, in seconds (and the protocol it runs)."""

    protocol: str
    start_s: float  # baseLat x scale (+ the fitted per-call cost across nodes)
    intra_s: float  # the slowest NVLink peer's hwLat + a rank's NVLink bytes at its rate (0: none)
    inter_s: float  # the slowest NIC peer's hwLat + a rank's NIC bytes at its share of the NICs (0: none)

    @property
    def time_s(self) -> float:
        if not self.intra_s and not self.inter_s:
            return 0.0
        return self.start_s + max(self.intra_s, self.inter_s)


def p2p_terms(preset, nodes: int, op: str, size_bytes: int, hop_latencies_s: Callable, link_rates: Callable,
              comm_channels: Callable) -> P2pTerms:  # fmt: skip
    """The closed form of NCCL's ``op`` (all_to_all or send_recv) of ``size_bytes`` on ``nodes``
    nodes of a GPU preset, at the preset's effective rates and latencies: ``hop_latencies_s`` and
    ``link_rates`` are :mod:`sim.nccl.model`'s, the DES's own, as ``comm_channels`` (passed in: that module calls this one)."""
    from sim.hardware.presets import scenario_fields

    domains, gpus = preset.nccl_nodes(nodes)  # NVLink domains are NCCL's nodes
    ranks = domains * gpus
    layout = p2p_plan(preset, nodes, comm_channels)
    protocol = protocol_for(op, ranks, size_bytes, domains, layout.per_peer)
    intra_lat, inter_lat, start = hop_latencies_s(preset, "Ring", protocol, domains)
    shape = _Shape(**{k: v for k, v in scenario_fields(preset.name, nodes).items() if k in _Shape.__dataclass_fields__})
    intra_Bps, nic_Bps, nics = link_rates(shape, preset, "Ring")
    block = wire_bytes(peer_bytes(op, ranks, size_bytes), protocol)
    plan = layout if domains > 1 else None
    pxn_s = intra_lat if plan and plan.pxn else 0.0
    if op == "send_recv":  # rank 0 to the last rank: across the network where there are two nodes
        if ranks == 1:
            return P2pTerms(protocol, start, 0.0, 0.0)
        if plan:
            return P2pTerms(protocol, start, 0.0, inter_lat + pxn_s * crosses_rail(plan, 0, ranks - 1) + block / nic_Bps)
        return P2pTerms(protocol, start, intra_lat + block / intra_Bps, 0.0)
    intra = intra_lat + (gpus - 1) * block / intra_Bps if gpus > 1 else 0.0
    shared = gpus / min(nics, gpus)  # GPUs a NIC serves
    if plan is None:
        return P2pTerms(protocol, start, intra, 0.0)
    nic_s = (ranks - gpus) * block * shared / nic_Bps
    return P2pTerms(protocol, start, intra, _network_s(plan, peer_bytes(op, ranks, size_bytes), nic_s, intra_lat, inter_lat, pxn_s))


def _network_s(plan: P2pPlan, nbytes: int, nic_s: float, intra_lat: float, inter_lat: float, pxn_s: float) -> float:
    """The network term: the batches' chain, then the NIC's ``nic_s`` of bytes. PXN's NVLink hop
    delays only the cross-rail sends: the NIC moves the same-rail ones meanwhile."""
    chain, plain = (batch_chain_s(plan, nbytes, intra_lat, inter_lat, pxn) for pxn in (pxn_s, 0.0))
    crossing = sum(crosses_rail(plan, 0, peer) for peer in range(plan.gpus, plan.ranks)) / (plan.ranks - plan.gpus)
    return max(plain + nic_s, chain + crossing * nic_s)


def batch_chain_s(plan: P2pPlan, nbytes: int, intra_lat: float, inter_lat: float, pxn_s: float) -> float:
    """The longest chain of batch latencies a channel runs one after another (sim.nccl.p2p_plan),
    over a node's ranks: a batch waits for its slowest op's hop (NVLink, or the network plus
    PXN's NVLink hop where the send crosses rails); the self copy costs none."""
    longest, queues = 0.0, channel_batches(plan, nbytes).values()
    for rank in range(plan.gpus):
        for queue in queues:
            longest = max(longest, sum(max(_op_latency(plan, rank, op, intra_lat, inter_lat, pxn_s) for op in batch) for batch in queue))
    return longest


def _op_latency(plan: P2pPlan, rank: int, op: tuple, intra_lat: float, inter_lat: float, pxn_s: float) -> float:
    node_delta, local_delta = op[0], op[1]
    if not node_delta:
        return intra_lat if local_delta else 0.0
    peer = (rank // plan.gpus + node_delta) % plan.nodes * plan.gpus + (rank + local_delta) % plan.gpus
    return inter_lat + (pxn_s if crosses_rail(plan, rank, peer) else 0.0)


@dataclass(frozen=True)
class _Shape:
    """The scenario fields :func:`sim.nccl.model.link_rates` reads."""

    ranks: int
    bandwidth_Bps: float
    intra_bandwidth_Bps: float | None
