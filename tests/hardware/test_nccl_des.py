"""The DES runs NCCL's pick: rings on NCCL's channels (nccl_ring) on the presets' rails."""

import pytest

from sim.hardware.nccl_des import channel_ring, scenario_for_pick
from sim.hardware.nccl_model import predict
from sim.runner import run_collective
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
    assert why is None and (scenario.algorithm, scenario.chunks) == ("nccl_ring", 8)
    des = run_collective(scenario).time_s
    single = run_collective(scenario.replace(algorithm="ring", chunks=1)).time_s
    model = predict("dgx-h100", 2, "all_reduce", 2**30).time_s
    assert single > 5 * des  # one ring crosses nodes on one NIC; eight channels on eight
    assert abs(des - model) / model < 0.2


def test_no_counterpart_is_said():
    scenario, why = scenario_for_pick("hgx-h100-nvls", 1, "all_reduce", 2**30)
    assert scenario is None and "NVLS" in why
