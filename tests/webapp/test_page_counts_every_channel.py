"""The Collectives page shows NCCL's runs with every channel's bytes and no bandwidth for a
barrier (issue 36, E3: step 1 said "2.667 MiB in all" where its 26.9 us moved 8 MiB a rank, 64 MiB in all; a
barrier of 1 GiB showed 357,913 GB/s)."""

from __future__ import annotations

from sim.collective.player import player_data
from sim.collective.runner import run_collective
from sim.nccl.pick import apply_hardware
from sim.scenario import CollectiveScenario
from webapp import collective as model
from webapp.figures.player import step_caption


def test_a_step_caption_counts_every_channel_of_an_nccl_run():
    data = {"op": "all_reduce", "size": "64MiB", "hardware": "dgx-h100", "nodes": 1}
    apply_hardware(data, nccl_algo="Ring", nccl_proto="Simple")
    scenario = CollectiveScenario.from_dict(data)
    result = run_collective(scenario)
    player = player_data(scenario, result)
    assert player["wire_copies"] > 1
    caption = step_caption(player, 1)
    assert "64 MiB in all" in caption, caption  # 8 ranks each send 1/8 of 64 MiB in the first ring step, over all channels
    assert "on each channel" in caption


def test_a_barrier_shows_no_bandwidth_on_the_cards():
    scenario, errors = model.parse_form({**model.DEFAULTS, "op": "barrier", "algorithm": "dissemination", "size": "1GiB"})
    assert scenario is not None, errors
    numbers = model.summary_numbers(model.run(scenario))
    assert numbers["time_s"] and numbers["algbw_Bps"] is None and numbers["busbw_Bps"] is None
