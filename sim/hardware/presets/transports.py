"""The per-call network cost (``base_latency_us``) of each network transport a preset names
(``transport:`` in its YAML, cited there): the centre and width of that constant's prior, from
published physical figures, never from the calibration logs (issue 33).

transport -> (centre in us, sd in us, basis). The centre is the cost beyond what NCCL's own model
already charges a network hop (its NET hwLat of 2.7-14 us and baseLat, src/graph/tuning.cc, set for
an RDMA NIC); the width is wide where the sources are thin. Sources read 2026-11-28.
"""

from __future__ import annotations

_RDMA = (
    "one-way RDMA verbs latency of a 32 B message about 0.8 us (ib_send_lat, RC QP, MTU 256-4096: "
    "D. Potter, master's thesis, table mtu_performance, git.dennispotter.eu/Dennis/masters-thesis) and "
    "100-300 ns NIC to NIC through one switch ASIC (WWT, 'The basics of high-performance networking', "
    "wwt.com/article/the-basics-of-high-performance-networking)"
)
_WIDTH = "width 25 us as the shared prior: no source found bounds the cost of NCCL's proxy thread and host on top"

TRANSPORTS = {
    "infiniband": (
        0.0,
        25.0,
        f"GPUDirect RDMA over InfiniBand (ConnectX-6/7): {_RDMA}; NCCL's NET hwLat already covers that, so 0 beyond baseLat; {_WIDTH}",
    ),
    "roce": (
        1.0,
        25.0,
        f"GPUDirect RDMA over RoCE v2 (ConnectX, NCCL's net_ib plugin, the same verbs as InfiniBand): {_RDMA}, plus a UDP/IP "
        "header and Ethernet switch hops, under 1 us more (OCI's 'First Principles: building a high-performance network in "
        f"the public cloud' states sub-microsecond latencies on its RoCE cluster network); {_WIDTH}",
    ),
    "tcpxo": (
        50.0,
        30.0,
        "GPUDirect-TCPX/TCPXO (Google Cloud 'Networking and GPU machines': A3 Mega's GPU-to-GPU networking is GPUDirect-TCPXO, "
        "A3 Ultra's and A4's GPUDirect RDMA) carries NCCL's messages over TCP, the payload placed in GPU memory by a host "
        "receive-data-path manager (github.com/google/tcpgpudmarxd README): each message crosses a host TCP stack, "
        "kernel to kernel about 50 us against 0.1-0.3 us NIC to NIC (WWT, 'The basics of high-performance networking'). "
        "Width 30 us, wider than the shared 25: one general figure, and what TCPXO's offload saves of it is published nowhere found",
    ),
}
