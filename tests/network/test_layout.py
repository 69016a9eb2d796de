"""sim.network.layout: where a topology's nodes are drawn."""

from __future__ import annotations

import math

import pytest

from sim.collective.runner import build_topology
from sim.network.layout import node_positions
from sim.scenario import CollectiveScenario


def topology(**fields):
    base = {"op": "all_reduce", "algorithm": "ring", "ranks": 8, "size": "1MiB", "bandwidth": "1GB/s"}
    return build_topology(CollectiveScenario.from_dict({**base, **fields}))


def test_switch_ranks_on_a_circle_clockwise_from_the_top():
    positions = node_positions(topology())
    assert positions[0] == pytest.approx((0.0, 1.0)) and positions[2] == pytest.approx((1.0, 0.0))
    assert all(math.hypot(*positions[rank]) == pytest.approx(1.0) for rank in range(8))
    assert positions["switch"] == (0.0, 0.0)


def test_every_node_of_every_builder_has_its_own_place():
    for fields in ({"topology": "ring"}, {"topology": "torus2d", "ranks": 16}, {"topology": "two_level", "ranks": 16, "gpus_per_node": 4}):
        built = topology(**fields)
        positions = node_positions(built)
        assert set(positions) == set(built.graph.nodes)
        assert len(set(positions.values())) == len(positions)  # no two nodes on one spot
