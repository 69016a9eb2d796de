"""NVLS / NVLSTree in the DES: NCCL's channels as lanes (sim/nccl/nvls.py)."""

import pytest

from sim.collective.nccl_fit import des_time
from sim.hardware.presets import effective, load_preset
from sim.nccl.topo import hop_latencies_s, path_params


def _rates():
    preset = load_preset("hgx-h100-nvls")
    eff = effective(preset)
    switch = preset.intra_bandwidth_Bps * eff.nvls_efficiency  # per GPU and direction
    nic = 400e9 / 8 * eff.inter_efficiency  # one 400 Gb/s NIC per rail
    return preset, switch, nic


def test_one_chunk_per_channel_crosses_every_stage_at_its_channels_share():
    """8 MiB on 2 nodes: 16 channels x 8 heads, one 64 KiB chunk each. The critical path is the
    child's switch reduce, the NIC up, the NIC down and the child's multicast, each at the
    channel's share (1/8 of the switch per head, 1/16 of that per channel; on the NIC 1/8, its
    tree's 8 channels: the other tree's 8 cross it the other way at that moment), plus half
    NCCL's NVLS latency per switch stage and the inter-node hop latency per NIC hop."""
    preset, switch, nic = _rates()
    chunk, heads, channels = 64 * 1024, 8, 16
    _, inter, _ = hop_latencies_s(preset, "NVLSTree", "Simple")

    class Scenario:  # what path_params reads
        algorithm, ranks, size_bytes, chunks, verify, groups = "nccl_nvls_tree", 16, 8 << 20, 16, False, False
        intra_bandwidth_Bps = preset.intra_bandwidth_Bps

    p = path_params(Scenario, preset)
    assert p.channels == channels and p.heads == heads
    expected = 2 * (chunk / (switch / heads / channels) + p.nvls_latency_s / 2) + 2 * (chunk * channels / 2 / nic + inter) + p.start_s
    seconds, pick = des_time("hgx-h100-nvls", 2, "all_reduce", 8 << 20)
    assert pick == "NVLSTree/Simple"
    assert seconds == pytest.approx(expected, rel=0.01)


def test_lanes_keep_the_switch_rate_at_large_sizes():
    """The fill is paid once: at 1 GiB the two-node NVLSTree runs within 5 % of the switch's rate."""
    _, switch, _ = _rates()
    seconds, _ = des_time("hgx-h100-nvls", 2, "all_reduce", 1 << 30)
    assert (1 << 30) / switch < seconds < 1.05 * (1 << 30) / switch


def test_the_fill_grows_with_the_chunk_then_amortises():
    """Time beyond the switch's rate (the fill): larger at 64 MiB (four 128 KiB chunks a channel)
    than at 8 MiB (one 64 KiB chunk), and about the same at 1 GiB as at 64 MiB (same chunks)."""
    _, switch, _ = _rates()
    fill = {size: des_time("hgx-h100-nvls", 2, "all_reduce", size)[0] - size / switch for size in (8 << 20, 64 << 20, 1 << 30)}
    assert fill[64 << 20] > 1.3 * fill[8 << 20]
    assert fill[1 << 30] == pytest.approx(fill[64 << 20], rel=0.35)


def test_channels_alternate_trees_so_every_nic_carries_a_double_binary_trees_load():
    """NCCL puts channel c on tree c mod 2 (connect.cc ``treeUp[c % 2]``), so a head's NIC is
    interior in one tree for half its channels and a leaf in the other for the rest: 2 x its
    head's data each way, not the 3 x of an interior node with every channel on one tree. 4
    nodes, 1 GiB, NVLSTree forced (NCCL's pick there is Ring)."""
    from sim.collective.pick import scenario_for_pick
    from sim.collective.runner import run

    _, _, nic = _rates()
    scenario, _ = scenario_for_pick("hgx-h100-nvls", 4, "all_reduce", 1 << 30, "nvlstree", "simple")
    assert scenario.algorithm == "nccl_nvls_tree"
    seconds = run(scenario).time_s
    per_head = (1 << 30) / 8 / nic
    assert 2 * per_head < seconds < 2.3 * per_head


@pytest.mark.parametrize("nodes, size", [(2, 8 << 20), (4, 64 << 20), (4, 8 << 30)])
def test_the_records_message_count_is_the_runs(nodes, size):
    """nccl_counts.nvls_counts counts what the DES sends: one channel a head on each tree, each
    capped at MAX_MESSAGES // 2 pieces (8 GiB on 4 nodes: 1024 chunks a channel, merged)."""
    from sim.collective import budget
    from sim.collective.explore import work
    from sim.collective.pick import scenario_for_pick

    scenario, _ = scenario_for_pick("hgx-h100-nvls", nodes, "all_reduce", size, "nvlstree", "simple")
    scenario = scenario.replace(record="aggregate")
    counted, _ = budget.count_visits(scenario)
    told = work(scenario)
    assert told.exact and told.messages == counted > 0
