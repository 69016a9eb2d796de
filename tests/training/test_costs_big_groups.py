"""sim train's costs of a group over more than DES_NODES nodes: simulated on DES_NODES nodes of
the same shape and scaled by NCCL's model's ratio (sim/training/parallel/costs.py)."""

from __future__ import annotations

import pytest

from sim.hardware.presets import load_preset
from sim.nccl.model import predict
from sim.training.comm import pick_time
from sim.training.parallel.costs import DES_NODES, CommCosts
from sim.training.parallel.layout import Layout

SIZE = 4 << 20


def test_whole_node_group_over_many_nodes_scales_a_run_on_whole_nodes_not_on_one_node() -> None:
    """A dp group of 16 whole nodes is costed from NCCL's pick on DES_NODES whole nodes (it was a
    single node's 8-GPU group, 37 % under the 16-node DES at 80 MB)."""
    nodes, gpus = 2 * DES_NODES, 8
    costs = CommCosts("dgx-a100", Layout(1, 1, nodes * gpus, 1, gpus), 1)
    preset = load_preset("dgx-a100")
    ratio = predict(preset, nodes, "all_reduce", SIZE).time_s / predict(preset, DES_NODES, "all_reduce", SIZE).time_s
    expected = pick_time("dgx-a100", DES_NODES, "all_reduce", SIZE).time_s * ratio
    assert costs.collective_s("dp", "all_reduce", SIZE) == pytest.approx(expected, rel=1e-12)
    assert pick_time("dgx-a100", 1, "all_reduce", SIZE).time_s * ratio != pytest.approx(expected, rel=1e-3)
    assert "simulated on 8" in costs.notes["dp scaled"]
