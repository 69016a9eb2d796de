"""collsim sim hang on a DDP or FSDP step: unused parameters, ranks that die at a time, and the
command line's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.errors import CollsimError
from sim.hang import explain
from sim.hang.training import ddp_step, fsdp_step, with_time_event, with_unused

ROOT = Path(__file__).resolve().parents[2]
DDP = {"preset": "resnet18", "ranks": 2, "backward_time_s": 0.1}
DDP_FILE = str(ROOT / "docs" / "examples" / "hang" / "ddp_resnet18.yaml")


@pytest.mark.slow
def test_an_unused_parameter_leaves_its_bucket_unlaunched_and_the_reducer_names_its_index() -> None:
    step = ddp_step(DDP)
    index = step.params.index("fc.weight")
    programs, (rank, message) = with_unused(step, step.programs(), "1:fc.weight")
    report = explain(programs)
    bucket = next(k for k, members in enumerate(step.bucket_params) if index in members)
    assert report.ranks[0].state == "blocked" and report.ranks[0].seq == bucket + 1
    assert rank == 1 and report.ranks[1].state == "dead"
    assert message.startswith("Expected to have finished reduction in the prior iteration before starting a new one.")
    assert f"Parameter indices which did not receive grad for rank 1: {index}\n" in message


@pytest.mark.slow
def test_a_rank_dying_mid_backward_stops_before_the_buckets_ready_after_that_time() -> None:
    step = ddp_step(DDP)
    middle = (step.times_s[0] + step.times_s[1]) / 2
    report = explain(with_time_event(step, step.programs(), "dies", 1, middle))
    assert report.ranks[0].seq == 2 and report.ranks[1].state == "dead"


@pytest.mark.slow
def test_fsdp_full_shard_gathers_in_forward_and_regathers_in_backward() -> None:
    step = fsdp_step({"preset": "gpt2", "ranks": 4, "backward_time_s": 0.1})
    ops = [call["op"] for call in step.calls]
    units = ops.count("reduce_scatter")
    assert ops.count("all_gather") == 2 * units - 1  # the root is not re-gathered
    with pytest.raises(CollsimError, match="a time into the step needs"):
        with_time_event(step, step.programs(), "dies", 1, 0.01)


@pytest.mark.slow
def test_the_command_explains_a_ddp_step_with_an_unused_parameter() -> None:
    result = CliRunner().invoke(cli, ["sim", "hang", "--ddp", DDP_FILE, "--unused-param", "1:fc.weight"])
    assert result.exit_code == 0, result.output
    assert "DDP's reducer (any backend):" in result.output and "missing party [1]" in result.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "give one of --programs"),
        (["--case", "skipped", "--unused-param", "1:x"], "a DDP step only"),
        (["--case", "skipped", "--dies", "1:5ms"], "a time into the step needs --ddp"),
        (["--case", "skipped", "--skip", "1:9"], "--skip: call of rank 1 '9' must be a whole number from 0 to 1"),
        (["--case", "skipped", "--resize", "1:0"], "is not RANK:CALL:COUNT"),
    ],
)
def test_bad_command_lines_get_one_message(args: list[str], words: str) -> None:
    result = CliRunner().invoke(cli, ["sim", "hang", *args])
    assert result.exit_code == 2
    assert words in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_a_skipped_gather_is_traced_to_where_the_tags_shift_not_where_the_shapes_first_differ() -> None:
    from sim.hang.cli import mutate

    step = fsdp_step({"preset": "gpt2", "ranks": 4, "backward_time_s": 0.1})
    report = explain(mutate(step.programs(), "skip", "3:5"))
    assert report.mismatches[0]["seq"] > 6  # equal shapes match silently for a while
    assert report.ranks[3].first_divergence.startswith("world #6: all_gather")
