"""The physical constants behind issue 20's accuracy pass: NCCL_BUFFSIZE per preset, one tree
channel on its link share, LL128's own hop latency, NCCL 2.29's Blackwell per-channel caps, and
the GCP log run as the profile it had (docs/nccl-model.md)."""

import pytest
import yaml

from sim.collective.nccl_fit import CALIBRATION
from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.errors import CollsimError
from sim.hardware.presets import HERE, TRIAL, effective, load_preset, parse_preset
from sim.nccl import topo as nccl_topo
from sim.nccl.proto import chunking


def test_simple_chunks_follow_the_presets_buffsize():
    """calcCollChunking: stepSize = buffSizes[Simple] / NCCL_STEPS; TCPXO's profile sets NCCL_BUFFSIZE=8 MiB."""
    assert chunking("Tree", "Simple", 1 << 30, 16, 2, 16).chunk_bytes == 512 * 1024
    assert chunking("Tree", "Simple", 1 << 30, 16, 2, 16, simple_buff_bytes=8 << 20).chunk_bytes == 1 << 20
    ring = chunking("Ring", "Simple", 1 << 30, 16, 2, 16, simple_buff_bytes=8 << 20)
    assert (ring.chunk_bytes, ring.slice_bytes) == (4 << 20, 2 << 20)
    assert chunking("Tree", "LL128", 1 << 30, 16, 2, 16, simple_buff_bytes=8 << 20).chunk_bytes == 614400 // 16 * 15  # Simple only
    assert load_preset("gcp-a3-mega").nccl.buffsize == 8 << 20 and load_preset("dgx-h100").nccl.buffsize == 4 << 20
    scenario, _ = scenario_for_pick("gcp-a3-mega", 2, "all_reduce", 1 << 20, "Tree", "Simple")
    assert nccl_topo.path_params(scenario, load_preset("gcp-a3-mega")).simple_buff_bytes == 8 << 20


def test_a_bad_buffsize_is_refused_with_its_field():
    raw = yaml.safe_load((HERE / "gcp-a3-mega.yaml").read_text())
    raw["nccl"]["buffsize"] = 1000
    with pytest.raises(CollsimError, match="nccl.buffsize must be NCCL_BUFFSIZE in bytes"):
        parse_preset(raw, "test")
    del raw["sources"]["nccl.buffsize"]
    raw["nccl"]["buffsize"] = 1 << 23
    with pytest.raises(CollsimError, match="uncited: nccl.buffsize"):
        parse_preset(raw, "test")


def test_one_tree_channel_on_its_share_pays_the_store_and_forward_fill():
    """2 x gcp-a3-mega Tree/Simple, 8 MiB, no latency: each of the 16 channels moves one 512 KiB
    step (Simple waits for a whole step) up 7 NVLink hops, across the NIC, and down again, each
    at its 1/k share: 14 x 512 KiB / (intra / 16) + 2 x 512 KiB / (NIC / 2). The mirrored pair
    on fifo links pipelined a hop apart and took about half (235 us before any fit)."""
    preset = load_preset("gcp-a3-mega")
    eff = effective(preset)
    intra = 450e9 * eff.intra_efficiency / 16
    nic = 25e9 * eff.inter_efficiency / 2
    expected = 14 * (1 << 19) / intra + 2 * (1 << 19) / nic
    TRIAL["gcp-a3-mega"] = {"latency_scale": 0.0, "base_latency_us": 0.0}
    try:
        scenario, _ = scenario_for_pick("gcp-a3-mega", 2, "all_reduce", 1 << 23, "Tree", "Simple")
        assert run_collective(scenario).time_s == pytest.approx(expected, rel=1e-6)
    finally:
        TRIAL.pop("gcp-a3-mega")


def test_ll128_latency_scale_scales_only_ll128_hops():
    preset = load_preset("dgx-h100")
    TRIAL["dgx-h100"] = {"latency_scale": 1.0, "ll128_latency_scale": 0.5, "base_latency_us": 0.0}
    try:
        intra, inter, _ = nccl_topo.hop_latencies_s(preset, "Ring", "LL128")
        assert (intra, inter) == pytest.approx((1.9 * 0.5e-6, 4.0 * 0.5e-6))
        assert nccl_topo.hop_latencies_s(preset, "Ring", "Simple")[:2] == pytest.approx((3.4e-6, 14e-6))
    finally:
        TRIAL.pop("dgx-h100")
    assert "ll128_latency_scale" in effective(preset).to_dict()


def test_blackwell_ll128_caps_follow_nccl_2_29():
    """NCCL 2.29.2 tuning.cc:175-193 replaced 2.27's 2 x Hopper Blackwell rows with measured ones:
    Ring/LL128 34.6 GB/s a channel on two nodes (2.27: 73.4)."""
    preset = load_preset("gb200-nvl72")
    assert nccl_topo.protocol_cap_GBps(preset, "Ring", "LL128", "all_reduce", 2) == pytest.approx(16 * 34.6)
    assert nccl_topo.protocol_cap_GBps(load_preset("hgx-b200"), "Tree", "LL128", "all_reduce", 2) == pytest.approx(8 * 31.67)


def test_the_gcp_log_runs_as_its_plugins_profile():
    """TCPXO plugin v1.0.3 required NCCL_PROTO=Simple (LL128 came with v1.0.8-1)."""
    assert CALIBRATION["gcp-a3mega_h100_2node_tcpxo_8x200g_allreduce.txt"] == ("gcp-a3-mega", 2, "Simple", "Tree")


def test_two_node_tree_graphs_carry_search_pass_2_intra_bandwidth():
    """search.cc:1155-1158 raises a tree graph's bwIntra while below 2 x bwInter and NVLink holds
    it; NCCL's model reads bwIntra on two nodes. gcp-a3-mega 8 x 45/24: Tree/Simple beats the
    ring at 1 GiB (the log ran Tree there); dgx-a100 8 x 30/24 stays capped by perChMaxTreeBws."""
    from sim.nccl.model import predict

    assert load_preset("gcp-a3-mega").nccl.graphs["tree"].bw_intra == 45.0
    assert predict("gcp-a3-mega", 2, "all_reduce", 1 << 30, nccl_proto="Simple").nccl_algorithm == "Tree"
    assert predict("dgx-a100", 2, "all_reduce", 1 << 30).nccl_algorithm == "Ring"
