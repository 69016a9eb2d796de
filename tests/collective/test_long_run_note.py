"""A per-message run within the budget's limits but estimated to take long says so before it
starts and shows its progress (a 32 x dgx-h100 all_to_all of 1 GiB ran minutes without a word);
a run beyond the limits on a preset is refused naming --model nccl as well."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.collective import budget, runner
from sim.collective.collapsed import run as run_in_mode
from sim.collective.pick import scenario_for_pick
from sim.errors import CollsimError
from sim.scenario import CollectiveScenario

ARGS = ["sim", "collective", "--hardware", "dgx-h100", "--nodes", "2", "--op", "all_to_all", "--size", "1MiB"]


@pytest.mark.slow
def test_a_long_run_says_so_on_stderr_before_it_starts(monkeypatch):
    quiet = CliRunner().invoke(cli, ARGS)
    monkeypatch.setattr(budget, "NOTE_FROM_SECONDS", 0.0)  # this run as if it were estimated long
    noted = CliRunner().invoke(cli, ARGS)
    assert noted.exit_code == 0, noted.output
    assert noted.stdout == quiet.stdout  # the answer is the same, on stdout
    assert noted.stderr.startswith("note: all_to_all/nccl_p2p on 2 x dgx-h100 (16 ranks) needs about 240 messages")
    assert "progress follows (Ctrl-C stops). Fewer --nodes, or --model nccl answers" in noted.stderr


def test_a_short_run_says_nothing_on_stderr():
    done = CliRunner().invoke(cli, ARGS)
    assert done.exit_code == 0 and done.stderr == ""


def test_a_run_whose_bound_alone_is_long_is_probed_and_says_nothing():
    """The unprobed bound (every message re-sharing every flow) of a 64-rank 1 MiB ring all_reduce
    is minutes; the run takes under a second: the note goes by the probed estimate, not the bound."""
    args = ["sim", "collective", "--op", "all_reduce", "--algorithm", "ring", "--ranks", "64", "--size", "1MiB", "--bandwidth", "1GB/s"]
    scenario = CollectiveScenario(op="all_reduce", algorithm="ring", ranks=64, size_bytes=2**20, bandwidth_Bps=1e9)
    assert budget.estimate(scenario, probe=False).seconds > budget.NOTE_FROM_SECONDS  # the bound alone would have noted it
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0 and done.stderr == ""


def test_a_full_run_reports_its_messages_as_it_goes(monkeypatch):
    monkeypatch.setattr(runner, "PROGRESS_EVERY_S", 0.0)
    monkeypatch.setattr(runner, "PROGRESS_EVENTS", 1)
    scenario, _ = scenario_for_pick("dgx-h100", 2, "all_to_all", 2**20)
    seen: list[int] = []
    result = run_in_mode(scenario.replace(record="aggregate"), "full", on_progress=lambda messages, now_s: seen.append(messages))
    assert seen and seen == sorted(seen) and 0 < seen[-1] <= result.message_count == 240


def test_a_run_beyond_the_limits_on_a_preset_names_model_nccl():
    scenario, _ = scenario_for_pick("dgx-h100", 2, "all_to_all", 2**20)
    with pytest.raises(CollsimError, match="needs about 240 messages.*--model nccl answers from NCCL's own model"):
        budget.check_run(scenario, max_seconds=1e-9)


@pytest.mark.slow
def test_the_32_node_all_to_all_of_1_gib_is_let_through_with_a_note_and_the_64_node_one_refused():
    """32 nodes: estimated ~1.8 min here (65,280 messages), under the 10 min limit: it runs, and says
    so first (refused before the engine's instant fix, at ~25 min estimated; the run counts 31 s of
    CPU after it). 64 nodes read ~17 min: refused, naming the nodes that fit
    (bench/results/budget_all_to_all.md)."""
    scenario, _ = scenario_for_pick("dgx-h100", 32, "all_to_all", 2**30)
    note = budget.long_run_note(scenario, budget.check_run(scenario, "sim collective"))
    assert note is not None and "on 32 x dgx-h100 (256 ranks) needs about 65,280 messages" in note and "--model nccl" in note
    scenario, _ = scenario_for_pick("dgx-h100", 64, "all_to_all", 2**30)
    with pytest.raises(CollsimError, match=r"on 64 x dgx-h100 \(512 ranks\) needs about 261,632 messages.*--nodes 32 would fit"):
        budget.check_run(scenario, "sim collective")


@pytest.mark.slow
def test_a_collapsed_call_that_simulates_is_budgeted_and_noted_too(monkeypatch):
    """--mode collapsed of NCCL's all_to_all runs the DES on one call (no closed form): it was
    neither checked against the limits nor said to take long."""
    monkeypatch.setattr(budget, "NOTE_FROM_SECONDS", 0.0)
    done = CliRunner().invoke(cli, [*ARGS, "--mode", "collapsed"])
    assert done.exit_code == 0, done.output
    assert done.stderr.startswith("note: all_to_all/nccl_p2p on 2 x dgx-h100 (16 ranks) needs about 240 messages")
    closed = CliRunner().invoke(cli, ["sim", "collective", "--op", "all_reduce", "--algorithm", "ring", "--ranks", "8", "--size", "1MiB",
                                      "--bandwidth", "10GB/s", "--mode", "collapsed"])  # fmt: skip
    assert closed.exit_code == 0 and closed.stderr == ""  # a closed form: nothing simulated, nothing to say
