"""DDP's network comm model on a hardware preset: each bucket's all-reduce runs on the preset's
two_level network with its NIC rails, the same network as ``collsim sim collective --hardware``."""

import pytest

from sim.collective.collapsed import collective_time
from sim.errors import CollsimError
from sim.hardware.presets import scenario_fields
from sim.scenario import CollectiveScenario
from sim.training.ddp import DDPScenario, run_ddp

BASE = dict(preset="cs336-tiny", backward_time_s=0.05, comm="network", bucket_cap_bytes=4 * 2**20)


def _network(name: str, nodes: int) -> dict:
    return dict(scenario_fields(name, nodes))


@pytest.mark.parametrize("algorithm", ["ring", "hierarchical"])
def test_bucket_all_reduce_is_the_collective_on_the_preset(algorithm):
    scenario = DDPScenario(**BASE, **_network("dgx-h100", 2), algorithm=algorithm)
    collective = scenario.collective(4 * 2**20, 4)
    assert collective.hardware == "dgx-h100" and collective.ranks == 16 and collective.topology == "two_level"
    same = CollectiveScenario.from_dict({**_network("dgx-h100", 2), "op": "all_reduce", "algorithm": algorithm, "size": 4 * 2**20})
    assert collective_time(collective).time_s == pytest.approx(collective_time(same).time_s, rel=1e-12)


def test_rails_make_hierarchical_faster_than_one_shared_nic():
    """8 NICs a node (one per GPU rail) carry hierarchical's 8 inter-node all-reduces at once;
    without ``hardware`` the plain two_level shares one NIC a node among them."""
    rails = run_ddp(DDPScenario(**BASE, **_network("dgx-h100", 2), algorithm="hierarchical")).summary()
    plain = {key: value for key, value in _network("dgx-h100", 2).items() if key != "hardware"}
    shared = run_ddp(DDPScenario(**BASE, **plain, algorithm="hierarchical")).summary()
    assert rails["comm_busy_s"] < shared["comm_busy_s"] / 2
    assert rails["overhead_s"] < shared["overhead_s"]


def test_collapsed_equals_full_on_the_preset():
    scenario = DDPScenario(**BASE, **_network("dgx-a100", 2), algorithm="ring")
    collapsed, full = run_ddp(scenario).summary(), run_ddp(scenario.replace(mode="full")).summary()
    assert collapsed["step_time_s"] == pytest.approx(full["step_time_s"], rel=1e-12)


def test_bad_hardware_is_named():
    with pytest.raises(CollsimError, match="^hardware: unknown preset 'dgx-z9'"):
        DDPScenario(**BASE, **{**_network("dgx-h100", 1), "hardware": "dgx-z9"})
    with pytest.raises(CollsimError, match=r"^gpus_per_node: must divide ranks \(12\)"):
        DDPScenario(**BASE, **{**_network("dgx-h100", 1), "ranks": 12})
    with pytest.raises(CollsimError, match="^algorithm: nccl .* needs a GPU hardware preset"):
        DDPScenario(**BASE, **_network("cpu-ethernet-25g", 2), algorithm="nccl")


def test_round_trips_through_dict():
    scenario = DDPScenario.from_dict({**BASE, **_network("cpu-ethernet-25g", 4), "algorithm": "ring"})
    assert scenario.hardware == "cpu-ethernet-25g"
    assert DDPScenario.from_dict(scenario.to_dict()) == scenario
