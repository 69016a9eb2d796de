"""NCCL's point-to-point path on a preset: all_to_all and send_recv (NCCL v2.30; no tuner pick).

NCCL has no all_to_all kernel: nccl-tests' alltoall runs ncclGroupStart, an ncclSend and an
ncclRecv for every peer, ncclGroupEnd; sendrecv one pair. The DES runs each message whole on
NCCL's own topology for the preset (:func:`sim.nccl.topo.topology`): the same effective
constants as the collectives (``presets.effective``: the NICs and NVLink at their fitted rates,
NCCL's per-hop latencies times the fitted scales, baseLat plus the fitted per-call cost), so a
machine has one description whichever op runs on it.

- **Protocol** (``src/enqueue.cc:859, 931-933`` ``addP2pToPlan``): LL where a peer's bytes are at
  most NCCL_P2P_LL_THRESHOLD (16 KiB) a channel, Simple above. Small calls use one channel a
  peer (``minPartSize``: half a 128 KiB network step across nodes, an eighth of a 512 KiB NVLink
  step inside one), so LL up to 16 KiB a peer. LL moves 8-byte lines carrying 4 bytes of data.
- **Latency**: NCCL's tuning model has none for p2p; the DES charges the ring's hwLat of the
  protocol for each hop a message crosses (NVLink inside a node, NET between nodes) and the
  ring's baseLat once a call, both times the fitted scales, plus the fitted per-call cost.
- **Whole messages**: NCCL pipelines a peer's bytes through NCCL_STEPS slots of 128 KiB (network)
  or 512 KiB (NVLink) chunks (``src/init.cc:818-820``). 8 x 128 KiB in flight exceeds the NIC's
  bandwidth-delay product (14 us x 46 GB/s = 0.64 MB), so the slots never bind and a message
  whole on its route (no store-and-forward on it) takes the same time.
- **Sharing**: every peer's message is in flight at once and the network shares the ports and
  links (:data:`P2P_SHARING`, fair, as the ``direct`` algorithm). PXN (a GPU handing a message for
  another rail to that rail's GPU over NVLink) is not modelled: on the non-blocking core every
  NIC carries the same bytes either way.
"""

from __future__ import annotations

from collections.abc import Generator

from sim.algorithms.alltoall import all_blocks_at_once
from sim.algorithms.call import Call
from sim.algorithms.registry import Phase, needs_a_peer, register
from sim.errors import CollsimError
from sim.nccl.path import params, wire_bytes
from sim.network import Network

__all__ = ["P2P_LL_THRESHOLD", "P2P_NOTE", "P2P_OPS", "P2P_SHARING", "peer_bytes", "p2p_fields", "protocol_for", "refuse_selection"]

P2P_LL_THRESHOLD = 16384  # src/enqueue.cc:859 NCCL_P2P_LL_THRESHOLD
P2P_OPS = ("all_to_all", "send_recv")
# Every peer's message is in flight at once on channels of its own: they share a GPU's links (fair),
# where fifo's one send port a rank would queue its NVLink messages behind its NIC messages
# (2 x dgx-h100 all_to_all 16 MiB: 206.5 us fair, the NICs' bound; 226.9 us fifo).
P2P_SHARING = "fair"
P2P_NOTE = (
    "NCCL runs grouped ncclSend/ncclRecv (nccl-tests alltoall.cu / sendrecv.cu; no tuner pick; --model nccl gives its closed form, sim.nccl.p2p_model): each message on "
    "NCCL's p2p path, LL up to 16 KiB a peer, else Simple, at the preset's effective rates and NCCL's latencies"
)


def peer_bytes(op: str, ranks: int, size_bytes: int) -> int:
    """Bytes one rank sends one peer: a block of all_to_all's buffer, send_recv's whole buffer."""
    return size_bytes // ranks if op == "all_to_all" else size_bytes


def protocol_for(op: str, ranks: int, size_bytes: int) -> str:
    """NCCL's p2p protocol for the call (addP2pToPlan, one channel a peer at these sizes)."""
    return "LL" if peer_bytes(op, ranks, size_bytes) <= P2P_LL_THRESHOLD else "Simple"


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
    counts=lambda s: (s.p * (s.p - 1), s.p * (s.p - 1)),
    phases=(Phase("all blocks at once", "every rank sends each other rank its block at once (grouped ncclSend/ncclRecv)"),),
)  # fmt: skip
def nccl_p2p_all_to_all(net: Network, rank: int, call: Call) -> Generator:
    p = params(net, call, "Ring", "Simple")
    if p.start_s:
        yield net.env.timeout(p.start_s)
    yield from all_blocks_at_once(net, rank, call, lambda nbytes: wire_bytes(nbytes, p.protocol))


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
        net.send(0, last, wire_bytes(call.size_bytes, p.protocol), call.take(0), 0)
    else:
        call.put(rank, (yield net.recv(0, rank)))
