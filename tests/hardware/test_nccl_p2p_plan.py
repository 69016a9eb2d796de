"""all_to_all and send_recv across nodes as NCCL v2.27.7-1 lays them out (sim.nccl.p2p_plan):
its p2p channels and peer schedule, batches a channel runs one after another, Simple on the
network, PXN's NVLink hop, NICs shared by GPUs; the DES and ``--model nccl`` agree on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.hardware.presets import effective, load_preset
from sim.nccl.model import comm_channels, hop_latencies_s, nccl_presets, predict
from sim.nccl.p2p_model import batch_chain_s
from sim.nccl.p2p_plan import channel_batches, crosses_rail, in_flight_bytes, p2p_plan, parts, schedule

KiB, MiB = 1 << 10, 1 << 20
HERE = Path(__file__).parents[2] / "sim" / "hardware" / "presets"


def plan(hardware: str, nodes: int):
    return p2p_plan(load_preset(hardware), nodes, comm_channels)


def des(hardware: str, nodes: int, op: str, size: int, verify: bool = False):
    scenario, why = scenario_for_pick(hardware, nodes, op, size)
    assert scenario is not None and scenario.algorithm == "nccl_p2p", why
    return run_collective(scenario.replace(verify=verify))


def test_the_peer_schedule_is_nccls_quadratic_sequence():
    """init.cc:1118's own example for 16 ranks: 0, 1, 3, 6, 10, 15, 5, 12, 4, 13, 7, 2, 14, 11, 9, 8
    (one node of 16); on 2 x 8 the node delta comes first, each with every local delta."""
    assert [local for _, local in schedule(p2p_plan(load_preset("gb200-nvl72"), 4, comm_channels))] == [
        0, 1, 3, 6, 10, 15, 5, 12, 4, 13, 7, 2, 14, 11, 9, 8,
    ]  # fmt: skip
    assert schedule(plan("hgx-b200", 2)) == [(node, local) for node in (0, 1) for local in (0, 1, 3, 6, 2, 7, 5, 4)]


def test_channels_per_peer_follow_ncclTopoComputeP2pChannels():
    """2 x dgx-h100: 16 comm channels (8 ring graphs doubled); a network peer 2 channels while
    2 x 16 ranks <= 4 x 16; 8 nodes (64 ranks) halve it to 1; nChannelsMin 1 (2 x 16 > 16).
    2 x hgx-b200: 32 comm channels (connect.cc copies the rings up to NVLS's 32 channels), so
    nChannelsMin stays 2 (2 x 16 <= 32)."""
    two, eight = plan("dgx-h100", 2), plan("dgx-h100", 8)
    assert (two.channels, two.per_peer, two.per_peer_min) == (16, 2, 1)
    assert (eight.channels, eight.per_peer) == (16, 1)
    blackwell = plan("hgx-b200", 2)
    assert (blackwell.channels, blackwell.per_peer, blackwell.per_peer_min) == (32, 2, 2)
    # a peer's bytes: one channel up to a step (128 KiB), split in two above (enqueue.cc:893-902)
    assert [parts(two, nbytes) for nbytes in (4 * KiB, 128 * KiB, 128 * KiB + 1, 64 * MiB)] == [1, 1, 2, 2]
    assert [parts(blackwell, nbytes) for nbytes in (4 * KiB, 64 * KiB + 1)] == [1, 2]  # nChannelsMin 2 from half a step
    # two NICs a GPU (oci-a100-roce: 16 x 100G NICs for 8 GPUs) drive at least 2 channels a peer
    assert plan("oci-a100-roce", 32).per_peer == 2


def test_rounds_queue_on_a_channel_beyond_sixteen_nodes():
    """Each node delta's 8 ops fill one batch on channel base nodeDelta (channel.h:19-30): 2 x
    dgx-h100 use 4 channels one batch each (2 parts a peer); 32 nodes' 32 deltas on 16 channels
    run two batches a channel, one after another."""
    two = channel_batches(plan("dgx-h100", 2), MiB)
    assert sorted(two) == [0, 1, 8, 9] and all(len(queue) == 1 and len(queue[0]) == 8 for queue in two.values())
    many = channel_batches(plan("dgx-h100", 32), KiB)
    assert len(many) == 16 and all(len(queue) == 2 for queue in many.values())


def one_ring_preset(tmp_path) -> str:
    """dgx-h100 as a user's file whose NCCL search found one ring and one tree channel across
    nodes: 2 comm channels, so 2 p2p channels, and 4 nodes' 4 node deltas share them."""
    text = (HERE / "dgx-h100.yaml").read_text()
    for graph in ("ring", "tree"):
        text = text.replace(f"    {graph}: [8, 45.0, 45.0]", f"    {graph}: [1, 45.0, 45.0]")
    path = tmp_path / "one-ring-h100.yaml"
    path.write_text(text)
    return str(path)


def test_a_channels_second_batch_waits_for_its_first(tmp_path):
    """4 nodes on 2 p2p channels: node deltas 0, 2 on channel 0 and 1, 3 on channel 1 (base
    nodeDelta mod 2), so each channel runs two batches one after another. A small all_to_all's
    DES time is baseLat + the chain (channel 1: two network hops, each + PXN's NVLink hop where
    the send crosses rails), where every peer at once would cost one network hop."""
    path = one_ring_preset(tmp_path)
    layout = p2p_plan(load_preset(path), 4, comm_channels)
    assert layout.channels == 2 and {c: len(q) for c, q in channel_batches(layout, KiB).items()} == {0: 2, 1: 2}
    intra, inter, start = hop_latencies_s(load_preset(path), "Ring", "Simple", 4)
    chain = batch_chain_s(layout, KiB, intra, inter, intra)
    assert chain == pytest.approx(2 * (inter + intra))
    result = des(path, 4, "all_to_all", 32 * KiB)
    assert result.time_s == pytest.approx(start + chain, rel=0.01)
    assert predict(load_preset(path), 4, "all_to_all", 32 * KiB).time_s == pytest.approx(result.time_s, rel=0.01)
    # 32 x dgx-h100 (256 ranks, too many for a quick DES run): 32 node deltas on 16 channels, two batches each
    assert [len(queue) for queue in channel_batches(plan("dgx-h100", 32), KiB).values()] == [2] * 16


def test_network_peers_run_simple_at_every_size():
    """No LL buffer on p2p network connections (net.cc:773-790): 16 B a peer across 2 nodes costs
    baseLat Simple + NET Simple hwLat + PXN's NVLink hop, and the wire carries the data bytes."""
    preset = load_preset("dgx-h100")
    intra, inter, start = hop_latencies_s(preset, "Ring", "Simple", 2)
    result = des("dgx-h100", 2, "all_to_all", 16 * 16)
    assert result.bytes_sent == 16 * 15 * 16
    assert result.time_s == pytest.approx(start + inter + intra, rel=0.01)
    assert predict(preset, 2, "all_to_all", 16 * 16).nccl_protocol == "Simple"


def test_pxn_crosses_rails_only_where_the_peers_nic_is_another():
    """One NIC a GPU: every remote peer but the one on the sender's rail goes by PXN; 4 NICs for
    8 GPUs: GPUs 0 and 1 share NIC 0, so GPU 0 to a remote GPU 1 leaves by its own NIC."""
    rails = plan("dgx-h100", 2)
    assert [crosses_rail(rails, 0, peer) for peer in range(8, 16)] == [False] + [True] * 7
    assert not crosses_rail(rails, 0, 3)  # inside the node: NVLink, no NIC
    shared = p2p_plan(load_preset("dgx-h100:4x400Gbps"), 2, comm_channels)
    assert [crosses_rail(shared, 0, peer) for peer in range(8, 16)] == [False, False] + [True] * 6


def test_send_recv_to_another_rail_pays_pxns_nvlink_hop():
    """2 x dgx-h100 send_recv goes rank 0 -> rank 15 (another rail): one NVLink hop more than
    the NET hop alone; the closed form says the same."""
    preset = load_preset("dgx-h100")
    intra, inter, start = hop_latencies_s(preset, "Ring", "Simple", 2)
    expected = start + inter + intra + 8 / (preset.nic_bandwidth_Bps * effective(preset).inter_efficiency)
    assert des("dgx-h100", 2, "send_recv", 8).time_s == pytest.approx(expected, rel=1e-9)
    assert predict(preset, 2, "send_recv", 8).time_s == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("hardware", [name for name in nccl_presets() if load_preset(name).nics_per_node])
def test_the_slots_in_flight_exceed_the_nics_bandwidth_delay_product(hardware):
    """Why the DES sends a part whole: a rank keeps more bytes on the network than its NIC share
    moves in a round trip (twice NET's Simple hwLat), at every per-peer size from 1 MiB on, so
    NCCL_STEPS / NCCL_SHARED_STEPS never throttle a peer (a smaller peer is in flight whole)."""
    preset = load_preset(hardware)
    for nodes in (2, 4, 32):
        if preset.nccl_nodes(nodes)[0] < 2 or (preset.max_nodes and nodes > preset.max_nodes):
            continue
        layout = p2p_plan(preset, nodes, comm_channels)
        _, inter, _ = hop_latencies_s(preset, "Ring", "Simple", nodes)
        nic_Bps = preset.nic_bandwidth_Bps * effective(preset).inter_efficiency * max(1.0, layout.nics / layout.gpus)
        for nbytes in (MiB, 8 * MiB, 64 * MiB):
            assert in_flight_bytes(layout, nbytes) > nic_Bps * 2 * inter, (nodes, nbytes)


@pytest.mark.slow
@pytest.mark.parametrize("hardware", ["hgx-b200", "dgx-h100:4x400Gbps", "oci-a100-roce"])
@pytest.mark.parametrize("nodes", [2, 4])
def test_closed_form_agrees_with_the_des_at_every_size(hardware, nodes):
    """Small (latency), mid (PXN's hop against the NIC's bytes) and large (NIC-bound) sizes,
    NICs one a GPU, shared by two GPUs, two a GPU: --model nccl within 1 % of the DES."""
    for size in (KiB, 64 * KiB * 16 * nodes // 2, 4 * MiB, 64 * MiB):
        assert predict(load_preset(hardware), nodes, "all_to_all", size).time_s == pytest.approx(
            des(hardware, nodes, "all_to_all", size).time_s, rel=0.01
        ), size


@pytest.mark.slow
@pytest.mark.parametrize("nodes, size", [(2, 16 * 130 * KiB + 12), (4, 32 * 160 * KiB + 28), (3, 24 * 200 * KiB)])
def test_every_block_arrives_when_a_peer_is_split_in_parts(nodes, size):
    """Parts of a peer's block on two channels (ncclP2pPartBounds: 4 KiB-aligned), sizes that p
    does not divide: every element lands where all_to_all puts it."""
    assert des("dgx-h100", nodes, "all_to_all", size, verify=True).verified


def test_inside_a_node_ll_reaches_16_kib_times_the_channels_a_peer():
    """enqueue.cc:822: thresholdLL = p2pnChannelsPerPeer x NCCL_P2P_LL_THRESHOLD. One dgx-h100:
    24 comm channels -> 32 p2p channels; an NVLink peer allows 2 x 18 NVLinks, so 32 a peer and
    LL up to 512 KiB a peer (LL's wire bytes twice the data), Simple above."""
    assert plan("dgx-h100", 1).per_peer == 32
    for size, wire in ((8 * 512 * KiB, 2), (8 * (512 * KiB + 4), 1)):
        result = des("dgx-h100", 1, "all_to_all", size)
        assert result.bytes_sent == wire * 8 * 7 * (size // 8), size
        assert predict(load_preset("dgx-h100"), 1, "all_to_all", size).nccl_protocol == ("LL" if wire == 2 else "Simple")


def test_the_pick_says_how_many_channels_and_batches_ran():
    """2 x hgx-b200, all_to_all 16 MiB (1 MiB a peer, 2 parts of 32 p2p channels): 4 channels a rank
    (2 for the node's peers, 2 for the other node's), one batch each, 7 of the 8 remote peers through PXN."""
    from sim.collective.pick import describe

    scenario, _ = scenario_for_pick("hgx-b200", 2, "all_to_all", 16 * MiB)
    info = describe(scenario)
    assert info.channels == 4
    assert "32 p2p channels, 2 a peer of 2" in info.rates and "7 of 8 remote peers by PXN" in info.rates


def test_a_nic_serves_a_connection_a_remote_peers_part_each_way():
    """2 x hgx-b200, 1 MiB a peer: 8 remote peers x 2 parts x 2 ways = 32 connections (one queue
    pair each) on a GPU's own NIC, 4 chunks of 128 KiB a part; two GPUs a NIC (4 NICs) double both."""
    from sim.nccl.p2p_plan import nic_load

    assert nic_load(plan("hgx-b200", 2), MiB) == (32, 128)
    assert nic_load(p2p_plan(load_preset("hgx-b200:4x400Gbps"), 2, comm_channels), MiB) == (64, 256)
    assert nic_load(plan("hgx-b200", 2), 64 * KiB) == (16, 32)  # one part; 32 KiB chunks below a step
