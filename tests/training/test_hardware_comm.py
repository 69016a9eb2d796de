"""Training steps on hardware presets: NCCL's pick per all-reduce, o and w fitted to the same
times, NIC overrides and NVLink domains larger than a node."""

import pytest

from sim.collective.pick import scenario_for_pick
from sim.errors import CollsimError
from sim.hardware.cluster import build
from sim.hardware.presets import list_presets, load_preset, scenario_fields, variant_name
from sim.nccl.model import predict
from sim.training.comm import hardware_ow, pick_time
from sim.training.ddp import DDPScenario, run_ddp


def _step(hardware: str, nodes: int, comm: str, preset: str = "gpt2") -> dict:
    data = {**scenario_fields(hardware, nodes), "preset": preset, "backward_time": "120ms", "comm": comm}
    return run_ddp(DDPScenario.from_dict(data)).summary()


@pytest.mark.slow
@pytest.mark.parametrize("hardware", list_presets())
def test_ow_and_network_agree_on_every_preset(hardware):
    nodes = 1 if load_preset(hardware).max_nodes == 1 else 2
    network, ow = _step(hardware, nodes, "network"), _step(hardware, nodes, "ow")
    assert ow["overhead_s"] == pytest.approx(network["overhead_s"], rel=0.10)
    assert ow["step_time_s"] == pytest.approx(network["step_time_s"], rel=0.10)
    assert ow["hardware_comm"]["ow_fit"]["how"].startswith("o + n / w fitted to the network comm model")


def test_ow_keeps_the_total_and_the_last_all_reduce():
    network, ow = _step("dgx-h100", 2, "network"), _step("dgx-h100", 2, "ow")
    assert ow["comm_busy_s"] == pytest.approx(network["comm_busy_s"], rel=1e-9)
    last_network, last_ow = network["buckets"][-1], ow["buckets"][-1]
    assert last_ow["end_s"] - last_ow["start_s"] == pytest.approx(last_network["end_s"] - last_network["start_s"], rel=1e-9)


def test_network_runs_nccls_pick_on_its_channels():
    """2 DGX H100: each bucket is NCCL's pick on 8 channels (one per NIC rail), not one ring
    through one NIC a node, which keeps the comm stream busy more than twice as long."""
    summary = _step("dgx-h100", 2, "network")
    assert summary["scenario"]["algorithm"] == "nccl"
    picks = summary["hardware_comm"]["picks"]
    assert all(pick["algorithm"].startswith(("nccl_ring", "nccl_tree")) for pick in picks)  # Ring or Tree, any protocol
    assert all(pick["channels"] == scenario_for_pick("dgx-h100", 2, "all_reduce", pick["bytes"])[0].chunks for pick in picks)
    one_ring = run_ddp(DDPScenario.from_dict({**scenario_fields("dgx-h100", 2), "preset": "gpt2", "backward_time": "120ms",
                                              "comm": "network", "algorithm": "ring"})).summary()  # fmt: skip
    assert one_ring["comm_busy_s"] > 2 * summary["comm_busy_s"]


def test_nvls_tree_runs_in_the_des():
    """hgx-h100-nvls x 2 at 64 MiB: NCCL picks NVLSTree, and the DES runs it (no fallback to the model)."""
    pick = pick_time("hgx-h100-nvls", 2, "all_reduce", 64 * 2**20)
    assert pick.nccl_pick == "NVLSTree/Simple" and pick.algorithm == "nccl_nvls_tree" and not pick.why
    model = predict("hgx-h100-nvls", 2, "all_reduce", 64 * 2**20).time_s  # no pipeline fill: the 2-node log took 466 us
    assert model < pick.time_s < 2 * model


def test_ow_without_buckets_fits_the_bucket_range():
    fit = hardware_ow("dgx-a100", 2)
    assert fit.sizes[0] == 2**20 and fit.sizes[-1] == 2**30 and fit.o_s >= 0 and fit.w_Bps > 0


def test_nic_overrides_are_a_preset_variant():
    name = variant_name("dgx-h100", 16, "200Gbps")
    assert name == "dgx-h100:16x200Gbps"
    preset = load_preset(name)
    assert preset.nics_per_node == 16 and preset.nic_bandwidth_Bps == 25e9
    ring = preset.nccl.graph("ring", 2)  # 24 GB/s a channel (<= 25), 15 channels within 360 GB/s of NVLink
    assert (ring.n_channels, ring.bw_inter) == (15, 24.0)
    assert load_preset(variant_name("dgx-h100", 8, "400Gbps")).nccl.graph("ring", 2) == load_preset("dgx-h100").nccl.graph("ring", 2)
    topology = build(preset, 2, 3.4e-6, 450e9, 14e-6, 25e9)
    assert topology.graph.edges[0, "nic0.0"]["bandwidth"] == 50e9  # a GPU's two NICs as one link


@pytest.mark.parametrize(
    "args, message",
    [
        (("dgx-h100", 12, None), "^--nics-per-node: must divide or be a multiple of the 8 GPUs"),
        (("dgx-h100", None, "fast"), "^--nic-bandwidth: cannot read 'fast'"),
        (("pcie-gen4-8gpu", 2, None), "^--nics-per-node/--nic-bandwidth: hardware pcie-gen4-8gpu has no NICs"),
        (("dgx-z9", 2, None), "^hardware: unknown preset 'dgx-z9'"),
    ],
)
def test_bad_nic_overrides_are_named(args, message):
    with pytest.raises(CollsimError, match=message):
        variant_name(*args)


def test_gb200_trays_share_an_nvlink_domain():
    preset = load_preset("gb200-nvl72")
    assert preset.nccl_nodes(2) == (1, 8) and preset.nccl_nodes(18) == (1, 72) and preset.nccl_nodes(32) == (2, 64)
    two_trays = build(preset, 2, 3.4e-6, 900e9, 14e-6, 50e9)
    assert two_trays.gpus_per_node == 8 and not any(str(node).startswith("nic") for node in two_trays.graph)
    assert predict(preset, 2, "all_reduce", 2**30).nodes == 2  # NCCL sees one node of 8 GPUs: NVLS inside it
    assert predict(preset, 2, "all_reduce", 2**30).nccl_algorithm == "NVLS"
    with pytest.raises(CollsimError, match="^nodes: gb200-nvl72 puts up to 18 nodes in one NVLink domain; 19 nodes"):
        preset.check_nodes(19)
