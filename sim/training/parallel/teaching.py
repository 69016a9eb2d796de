"""What the Parallelism page teaches, as numbers from the scenario, the preset and the simulated
step: the link each group's traffic crosses, the bubble's closed form beside the simulated
bubble, TP's bytes per layer, and why TP stays inside a node (the node's fabric against one NIC).
The page draws these; it computes none of them."""

from __future__ import annotations

from typing import Any

from sim.training.parallel.layout import Layout

__all__ = ["FABRIC_NAMES", "group_links", "teaching_numbers"]

FABRIC_NAMES = {"nvswitch": "NVLink (NVSwitch)", "pcie": "PCIe"}


def group_links(preset: Any, layout: dict[str, int]) -> list[dict[str, Any]]:
    """For each kind of group (tp, pp, dp, ep) of size > 1: its size, how many nodes one group
    spans, and the link its traffic crosses (the node's fabric inside one NVLink domain, NIC rails
    across domains), from the preset."""
    grid = Layout(**layout)
    domain = max(1, preset.nvlink_domain_nodes or 1)
    rows = []
    for kind in ("tp", "pp", "dp", "ep"):
        if grid.size(kind) < 2:
            continue
        group = grid.group(kind, 0)
        nodes = {grid.node_of(rank) for rank in group}
        inside = len({node // domain for node in nodes}) == 1
        rows.append({
            "kind": kind, "size": grid.size(kind), "nodes": len(nodes), "group": list(group),
            "link": FABRIC_NAMES.get(preset.intra_fabric, preset.intra_fabric) if inside else "NIC rail",
            "bandwidth_Bps": preset.intra_bandwidth_Bps if inside else preset.nic_bandwidth_Bps,
        })  # fmt: skip
    return rows


def teaching_numbers(scenario: Any, preset: Any, result: Any) -> dict[str, Any]:
    """The bubble's closed form (p-1)/(m+p-1), interleaved (p-1)/(v m+p-1), beside the simulated
    bubble; TP's bytes per layer (b s h elements a collective, two forward and two backward); the
    node's fabric and NIC bandwidths of the preset and a TP all-reduce's time as simulated inside
    the node, and its ring bound 2(t-1)/t x bytes over one NIC."""
    p, m, v = scenario.pp, scenario.micro_batches, scenario.chunks
    element = {"fp32": 4}.get(scenario.precision, 2)
    elements = scenario.micro_batch * scenario.seq_len * scenario.hidden
    tp_rows = [row for row in result.events if row["stream"] == "tp"]
    tp_s = sum(row["end_s"] - row["start_s"] for row in tp_rows) / len(tp_rows) if tp_rows else 0.0
    t = scenario.tp
    return {
        "p": p, "m": m, "v": v, "formula": (p - 1) / (v * m + p - 1), "simulated": result.bubble_fraction,
        "b": scenario.micro_batch, "s": scenario.seq_len, "h": scenario.hidden, "t": t,
        "element_bytes": element, "collective_bytes": elements * element, "sp": scenario.sequence_parallel,
        "layer_bytes": 4 * elements * element, "tp_collective_s": tp_s,
        "nvlink_Bps": preset.intra_bandwidth_Bps, "fabric": FABRIC_NAMES.get(preset.intra_fabric, preset.intra_fabric),
        "nic_Bps": preset.nic_bandwidth_Bps, "gpus_per_node": preset.gpus_per_node,
        "nic_ring_s": 2 * (t - 1) / t * elements * element / preset.nic_bandwidth_Bps if t > 1 else 0.0,
    }  # fmt: skip
