"""NCCL's tree under fair sharing: each channel's up and down connections send their slots in
order (``Network.share_wire``, as one SM block does), so forcing ``--sharing fair`` no longer
splits a link among a connection's own 8 slots. Before, fair gave 1.6-3.2x fifo's time at 8 MiB
and above (64 MiB Tree on 2 x dgx-h100: 1.213 ms fair, 614.4 us fifo). Channels of the two trees
that cross one link still share it: fair splits it where fifo queues, so the two differ a little."""

from __future__ import annotations

import pytest

from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective


@pytest.mark.parametrize(
    ("hardware", "nodes", "size", "protocol"),
    [
        ("dgx-h100", 1, 8 << 20, "Simple"),
        ("dgx-h100", 2, 64 << 20, "Simple"),
        ("dgx-h100", 4, 128 << 20, "Simple"),
        ("dgx-a100", 2, 8 << 20, "LL128"),
        ("oci-a100-roce", 2, 64 << 20, "Simple"),
    ],
)
def test_nccl_tree_under_fair_sharing_is_near_fifo(hardware: str, nodes: int, size: int, protocol: str) -> None:
    times = {}
    for sharing in ("fair", "fifo"):
        scenario, _ = scenario_for_pick(hardware, nodes, "all_reduce", size, "Tree", protocol, sharing=sharing)
        times[sharing] = run_collective(scenario).time_s
    assert times["fair"] == pytest.approx(times["fifo"], rel=0.08)
