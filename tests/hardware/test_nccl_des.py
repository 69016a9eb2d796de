"""The DES runs NCCL's pick: rings on NCCL's channels (nccl_ring) on the presets' rails."""

import pytest

from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.nccl.des import channel_ring, channel_tree
from sim.nccl.model import predict
from sim.scenario import CollectiveScenario


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter"])
@pytest.mark.parametrize("p, channels", [(1, 1), (3, 2), (8, 5), (16, 8)])
def test_nccl_ring_verifies(op, p, channels):
    data = {
        "op": op,
        "algorithm": "nccl_ring",
        "ranks": p,
        "chunks": channels,
        "size_bytes": p * 4 * 7,
        "bandwidth": "10GB/s",
        "verify": True,
    }
    assert run_collective(CollectiveScenario.from_dict(data)).verified


def test_channel_rings_enter_each_node_at_a_different_gpu():
    rings = [channel_ring(16, 8, channel) for channel in range(8)]
    assert all(sorted(ring) == list(range(16)) for ring in rings)
    assert {ring[8] for ring in rings} == set(range(8, 16))  # node 1 entered at every GPU once


def test_channels_use_every_nic_and_come_near_nccls_own_model():
    scenario, why = scenario_for_pick("dgx-h100", 2, "all_reduce", 2**30)
    assert why is None and (scenario.algorithm, scenario.chunks) == ("nccl_ring", 16)  # comm channels: twice the graph's
    des = run_collective(scenario).time_s
    single = run_collective(scenario.replace(algorithm="ring", chunks=1)).time_s
    model = predict("dgx-h100", 2, "all_reduce", 2**30).time_s
    assert single > 5 * des  # one ring crosses nodes on one NIC; eight channels on eight
    assert abs(des - model) / model < 0.2


def test_nvls_picks_run_in_the_des():
    for nodes, name in ((1, "nccl_nvls"), (2, "nccl_nvls_tree")):
        scenario, why = scenario_for_pick("hgx-h100-nvls", nodes, "all_reduce", 2**30)
        assert why is None and scenario.algorithm == name
        assert run_collective(scenario).time_s > 0


@pytest.mark.parametrize("p, gpus, channels", [(1, 1, 1), (2, 1, 2), (5, 1, 3), (16, 8, 4), (32, 8, 8), (24, 4, 3)])
def test_nccl_tree_verifies(p, gpus, channels):
    data = {"op": "all_reduce", "algorithm": "nccl_tree", "ranks": p, "chunks": channels, "size_bytes": p * 4 * 7 + 4 * 3,
            "bandwidth": "10GB/s", "verify": True, "topology": "two_level", "gpus_per_node": gpus}  # fmt: skip
    assert run_collective(CollectiveScenario.from_dict(data)).verified


def test_channel_tree_is_a_chain_in_each_node_and_a_binary_tree_over_heads():
    trees = {rank: channel_tree(32, 8, rank, 0) for rank in range(32)}
    assert trees[0] == (-1, [1, 16])  # root: node 0's head; its chain and node 2's head below
    assert trees[16] == (0, [17, 8, 24])  # node 2's head: parent node 0, children node 1 and 3's heads
    assert trees[7] == (6, [])  # the chain's tail
    assert sum(len(children) for _, children in trees.values()) == 31  # a spanning tree
    # channel 7: NCCL's graph channel 3's duplicate, heads local GPU 3, on tree 1 (mirrored): node 0
    # hangs below node 1's head, GPU 11
    assert channel_tree(32, 8, 3, 7) == (11, [4])
    # channels 2k and 2k + 1: one chain (same parents below the head) and one NIC rail, the two trees
    chain = [4, 5, 6, 7, 0, 1, 2]
    assert [channel_tree(32, 8, r, 6) for r in chain] == [channel_tree(32, 8, r, 7) for r in chain]
    assert channel_tree(32, 8, 3, 6)[0] != channel_tree(32, 8, 3, 7)[0]


def test_tree_pick_runs_on_nccl_tree():
    scenario, why = scenario_for_pick("dgx-h100", 2, "all_reduce", 2**20)
    assert why is None and (scenario.algorithm, scenario.chunks) == ("nccl_tree_ll128", 16)
    assert run_collective(scenario.replace(verify=True)).verified


def _busbw(scenario) -> float:
    return scenario.size_bytes / run_collective(scenario).time_s / 1e9 * 2 * (scenario.ranks - 1) / scenario.ranks


@pytest.mark.parametrize(
    "hardware, nodes, proto, cap",
    [
        ("dgx-h100", 2, "LL", 39.0),  # llMaxBws[0][1]: two nodes read the Volta/Intel row (tuning.cc:165-170)
        ("dgx-h100", 1, "LL", 141.0),  # llMaxBws[2][0]: one Hopper node
        ("gb200-nvl72", 36, "LL", 39.0),  # two NVLink domains = two NCCL nodes
    ],
)
def test_ring_ll_busbw_stops_at_nccls_ll_max_bw(hardware, nodes, proto, cap):
    """LL's 8-byte lines alone would give half the link rate (hundreds of GB/s on NVLink); the
    SMs polling the flags hold Ring/LL at llMaxBws, as NCCL's model (tuning.cc:279)."""
    scenario, _ = scenario_for_pick(hardware, nodes, "all_reduce", 2**27, "Ring", proto)
    busbw = _busbw(scenario)
    assert 0.8 * cap < busbw <= cap * 1.001


def test_ring_ll128_busbw_stops_at_its_per_channel_cap():
    """dgx-a100 x 1: Ring/LL128 on 12 NVLink channels of 20 GB/s would give 0.8 x 240 x 120/128 =
    180 GB/s; NCCL caps it at nChannels x perChMaxRingLL128Bws[Ampere] = 12 x 20 = 240 (no cap
    binds), while on 2 nodes the ring graph's 8 channels give 8 x 20 = 160 GB/s."""
    from sim.hardware.presets import load_preset
    from sim.nccl.topo import protocol_cap_GBps

    preset = load_preset("dgx-a100")
    assert protocol_cap_GBps(preset, "Ring", "LL128", "all_reduce", 2) == 8 * 20.0
    assert protocol_cap_GBps(preset, "Ring", "Simple", "all_reduce", 2) is None
    assert protocol_cap_GBps(preset, "Tree", "LL", "all_reduce", 2) is None
    scenario, _ = scenario_for_pick("dgx-a100", 2, "all_reduce", 2**28, "Ring", "LL128")
    assert _busbw(scenario) <= 160.0 * 1.001


def test_a_tree_gpu_sends_over_nvlink_and_its_nic_at_once():
    """NCCL's tree kernel sends to the parent and each child with warps of their own: the root of
    channel 0 (rank 0) sends a chunk down to its chain child (rank 1, NVLink) while the previous
    one crosses its NIC to node 1's head (rank 8). With one port per GPU the two took turns and
    the tree ran at ~0.8 of NCCL's model on 2 x dgx-h100 (250 vs 306 GB/s busbw at 1 GiB)."""
    scenario, _ = scenario_for_pick("dgx-h100", 2, "all_reduce", 2**30, "Tree", "Simple")
    result = run_collective(scenario)
    rows = list(result.messages)
    nvlink = [(start, end) for src, dst, start, end, *_ in rows if (src, dst) == (0, 1)]
    nic = [(start, end) for src, dst, start, end, *_ in rows if (src, dst) == (0, 8)]
    assert any(s1 < e2 and s2 < e1 for s1, e1 in nvlink for s2, e2 in nic[:20])
    busbw = 2**30 / result.time_s / 1e9 * 2 * 15 / 16
    model = predict("dgx-h100", 2, "all_reduce", 2**30, "Tree", "Simple").time_s
    assert busbw > 0.95 * 2**30 / model / 1e9 * 2 * 15 / 16


def test_each_nic_rail_carries_one_channel_of_each_tree():
    """NCCL's duplicated tree channel takes the mirrored tree on the same chain and NIC
    (connect.cc connectTrees): a node interior in one tree is a leaf in the other on every rail,
    so its NICs are evenly loaded. With both channels of a rail on one tree, 4 x dgx-h100 ran
    Tree/Simple at 223 GB/s busbw against NCCL's model's 275."""
    scenario, _ = scenario_for_pick("dgx-h100", 4, "all_reduce", 2**30, "Tree", "Simple")
    busbw = _busbw(scenario)
    model = predict("dgx-h100", 4, "all_reduce", 2**30, "Tree", "Simple").time_s
    assert busbw > 0.95 * 2**30 / model / 1e9 * 2 * 31 / 32
