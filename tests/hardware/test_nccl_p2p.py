"""all_to_all and send_recv on a GPU preset run NCCL's point-to-point path (sim.nccl.p2p):
the preset's effective constants, NCCL's latencies, LL up to 16 KiB a peer inside a node, Simple
across nodes."""

from __future__ import annotations

import pytest

from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.errors import CollsimError
from sim.hardware.presets import effective, load_preset
from sim.nccl.p2p import P2P_LL_THRESHOLD, protocol_for
from sim.nccl.topo import hop_latencies_s


def _time(op: str, size: int, hardware: str = "dgx-h100", nodes: int = 2, **fields) -> float:
    scenario, why = scenario_for_pick(hardware, nodes, op, size, **fields)
    assert scenario is not None and scenario.algorithm == "nccl_p2p", why
    return run_collective(scenario).time_s


@pytest.mark.parametrize("hardware", ["dgx-h100", "oci-a100-roce", "gcp-a3-mega"])
def test_one_message_costs_ncclss_latencies_and_the_effective_nic_rate(hardware):
    """send_recv (rank 0 to the last rank, on another node): baseLat x scale + the fitted per-call
    cost, the NET hop's hwLat x scale, PXN's NVLink hop (rank 0's rail is not the last rank's),
    and the bytes at the NIC's rate x its fitted efficiency; Simple at every size (a p2p network
    connection has no LL buffer)."""
    preset, eff = load_preset(hardware), effective(load_preset(hardware))
    for size in (8, 1 << 30):
        assert protocol_for("send_recv", 16, size, nodes=2) == "Simple"
        intra, inter, start = hop_latencies_s(preset, "Ring", "Simple")
        nic = preset.nic_bandwidth_Bps * eff.inter_efficiency * max(1.0, preset.nics_per_node / preset.gpus_per_node)
        assert _time("send_recv", size, hardware) == pytest.approx(start + inter + intra + size / nic, rel=1e-9)


def test_all_to_all_is_bound_by_the_nics_at_large_sizes():
    """2 x dgx-h100, 1 GiB: each rank sends 8 blocks of 64 MiB across nodes through its own NIC."""
    preset, eff = load_preset("dgx-h100"), effective(load_preset("dgx-h100"))
    block = (1 << 30) // 16
    nic_bound = 8 * block / (preset.nic_bandwidth_Bps * eff.inter_efficiency)
    assert _time("all_to_all", 1 << 30) == pytest.approx(nic_bound, rel=0.01)


def test_ll_below_the_threshold_per_peer_inside_a_node_and_simple_across_nodes():
    assert protocol_for("all_to_all", 8, 8 * P2P_LL_THRESHOLD) == "LL"
    assert protocol_for("all_to_all", 8, 8 * P2P_LL_THRESHOLD + 8 * 4) == "Simple"
    assert protocol_for("all_to_all", 16, 16 * 4, nodes=2) == "Simple"
    scenario, _ = scenario_for_pick("dgx-h100", 1, "all_to_all", 8 * 4096)
    assert run_collective(scenario).bytes_sent == 2 * 8 * 7 * 4096  # LL: 8-byte lines carrying 4 bytes
    scenario, _ = scenario_for_pick("dgx-h100", 2, "all_to_all", 16 * 4096)
    assert run_collective(scenario).bytes_sent == 16 * 15 * 4096


@pytest.mark.parametrize("op", ["all_to_all", "send_recv"])
def test_every_block_arrives(op):
    scenario, _ = scenario_for_pick("hgx-h100-nvls", 2, op, 1 << 20)
    assert run_collective(scenario.replace(verify=True)).verified


def test_nccl_algo_and_proto_select_nothing_for_p2p():
    with pytest.raises(CollsimError, match="NCCL_ALGO and NCCL_PROTO do not select"):
        scenario_for_pick("dgx-h100", 2, "send_recv", 1 << 20, "Ring")
