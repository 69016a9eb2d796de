"""nccl_p2p's message count on a preset (what the run-size budget reads) is the number of messages
the DES sends: across NCCL nodes a peer's bytes go in 1-2 parts (or more) by NCCL's p2p plan
(sim.nccl.p2p_plan.parts), which the count reads from the DES's own parameters; it said p(p-1),
up to 2x low. On a plain topology (no plan) the record's count, a block a peer, holds."""

from __future__ import annotations

import pytest

from sim.collective import budget
from sim.collective.explore import work
from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.scenario import CollectiveScenario

MiB = 2**20


@pytest.mark.parametrize(
    "hardware, nodes, size_bytes",
    [pytest.param("dgx-h100", 2, 3 * MiB + 4096, marks=pytest.mark.slow), ("dgx-h100", 2, MiB), ("dgx-h100", 1, MiB), ("gcp-a3-mega", 2, 16 * MiB),
     ("oci-a100-roce", 2, 64 * MiB), ("gb200-nvl72", 2, 16 * MiB), pytest.param("dgx-h100", 4, 64 * MiB, marks=pytest.mark.slow)],
)  # fmt: skip
def test_the_budgets_count_of_an_all_to_all_on_a_preset_is_the_messages_the_des_sends(hardware, nodes, size_bytes):
    scenario, why = scenario_for_pick(hardware, nodes, "all_to_all", size_bytes)
    assert scenario is not None and scenario.algorithm == "nccl_p2p", why
    sent = run_collective(scenario.replace(record="aggregate")).message_count
    assert budget.messages_of(scenario).messages == sent
    assert budget.estimate(scenario, probe=False).messages == sent


def test_two_parts_a_peer_across_nodes_are_counted_twice():
    """2 x dgx-h100, 3 MiB: 192 KiB a peer, above a 128 KiB step, goes on two channels."""
    scenario, _ = scenario_for_pick("dgx-h100", 2, "all_to_all", 3 * MiB + 4096)
    p = scenario.ranks
    assert budget.messages_of(scenario).messages == 2 * p * (p - 1)


def test_on_a_plain_topology_the_record_counts_a_block_a_peer():
    fields = {"op": "all_to_all", "algorithm": "nccl_p2p", "ranks": 8, "size_bytes": 3 << 20, "bandwidth": "10GB/s",
              "topology": "two_level", "gpus_per_node": 4}  # fmt: skip
    scenario = CollectiveScenario.from_dict(fields)
    assert work(scenario).messages == run_collective(scenario).message_count == 8 * 7
