"""collsim sim run-cost: inputs from flags, files, a step model and a preset; one message per
bad input; the text and --json outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.training import ddp, ddp_cli
from sim.training.runcost_fields import parse_duration, scenario_from_dict

ROOT = Path(__file__).resolve().parents[2]
GPT2 = str(ROOT / "docs" / "examples" / "ddp_scenarios" / "gpt2_ring8.yaml")
BASE = ["--step-time", "1.2s", "--gpus", "64", "--params", "7B", "--samples", "2000"]


def run(*args: str):
    return CliRunner().invoke(cli, ["sim", "run-cost", *args], catch_exceptions=False)


def as_json(*args: str) -> dict:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_text_output_names_the_optimum_the_goodput_and_the_elastic_choice():
    result = run(*BASE)
    assert result.exit_code == 0, result.output
    for words in ("MTBF", "Young", "Daly", "simulated", "goodput", "elastic", "restart"):
        assert words in result.output


def test_long_times_and_counts_read_in_the_units_people_use():
    data = as_json(*BASE, "--interval", "30min", "--replace-wait", "2h", "--tokens-per-step", "4096")
    assert data["interval_s"] == pytest.approx(1800.0) and data["elastic"]["replace_wait_s"] == 7200.0
    assert data["scenario"]["params"] == 7e9 and data["tokens"] == 4096 * 100_000
    assert parse_duration("1.5d", "x") == 129600.0 and parse_duration("250ms", "x") == 0.25


def test_from_ddp_takes_the_step_time_ranks_and_parameters_of_sim_ddps_own_model():
    data = ddp_cli.scenario_data(GPT2, {})
    ddp_cli.apply_hardware_flags(data)
    step = ddp.run_ddp(ddp.DDPScenario.from_dict(data))
    result = as_json("--from-ddp", GPT2, "--samples", "2000")
    assert result["scenario"]["step_time_s"] == pytest.approx(step.step_time_s)
    assert result["scenario"]["gpus"] == 8 and result["scenario"]["params"] == step.summary()["param_count"]
    assert as_json("--from-ddp", GPT2, "--gpus", "16", "--samples", "2000")["scenario"]["gpus"] == 16  # a flag wins


def test_from_fsdp_runs_the_fsdp_model(tmp_path):
    path = tmp_path / "fsdp.yaml"
    path.write_text("preset: gpt2\nbackward_time: 120ms\nforward_time: 60ms\nranks: 8\ncomm: ow\nw: 10GB/s\nsharding: full_shard\n")
    result = as_json("--from-fsdp", str(path), "--samples", "2000")
    assert result["scenario"]["gpus"] == 8 and result["scenario"]["step_time_s"] > 0.18


def test_hardware_and_nodes_give_the_gpus():
    data = as_json("--step-time", "1s", "--params", "7B", "--hardware", "dgx-h100", "--nodes", "4", "--samples", "2000")
    assert data["scenario"]["gpus"] == 32 and data["scenario"]["gpus_per_node"] == 8


def test_a_scenario_file_is_read_and_flags_override_it(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("step_time: 2s\ngpus: 16\nparams: 1B\nwrite: async\nsamples: 2000\n")
    data = as_json("--scenario", str(path), "--gpus", "32")
    assert data["scenario"]["step_time_s"] == 2.0 and data["scenario"]["gpus"] == 32 and data["scenario"]["write"] == "async"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "8", "--params", "1B"], "missing step_time"),
        (["--step-time", "1.2", "--gpus", "8", "--params", "1B"], "step_time: '1.2' has no unit"),
        (["--step-time", "2 weeks", "--gpus", "8", "--params", "1B"], "min, h, d"),
        (["--step-time", "1s", "--gpus", "8", "--params", "lots"], "params: 'lots' is not a count"),
        (["--step-time", "1s", "--gpus", "8", "--params", "1B", "--storage-bw", "100"], "storage_bw: '100' has no unit"),
        (["--step-time", "1s", "--gpus", "8", "--params", "1B", "--samples", "0"], "samples: must be between"),
        (["--step-time", "1s", "--params", "1B", "--hardware", "dgx-h100"], "--hardware and --nodes go together"),
        (["--step-time", "1s", "--gpus", "8", "--params", "1B", "--hardware", "dgx-h100", "--nodes", "2"], "disagrees"),
        (["--step-time", "1s", "--params", "1B", "--hardware", "nope", "--nodes", "2"], "nope"),
        (["--from-ddp", GPT2, "--from-fsdp", GPT2], "give one step model"),
        (["--step-time", "1s", "--gpus", "8", "--params", "1B", "--failure-rate", "0"], "failure_rate: must be between 1e-12 and 1"),
        (["--step-time", "1e-300s", "--gpus", "8", "--params", "1"], "step_time: must be between 1e-06 and 86400"),
    ],
)
def test_bad_input_gets_one_line_naming_it(args, message):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and message in result.output and len(result.output.strip().splitlines()) == 1


def test_an_unknown_or_doubled_key_in_a_file_is_refused():
    with pytest.raises(Exception, match="did you mean 'step_time'"):
        scenario_from_dict({"step_tim": "1s", "gpus": 8, "params": "1B"})
    with pytest.raises(Exception, match="given twice"):
        scenario_from_dict({"step_time": "1s", "step_time_s": "2s", "gpus": 8, "params": "1B"})


def test_tokens_set_the_steps_and_named_failure_rates_are_the_published_runs():
    from sim.training.runcost import FAILURE_RATES

    data = as_json(*BASE, "--tokens", "1B", "--tokens-per-step", "4M", "--failure-rate", "opt175b")
    assert data["scenario"]["steps"] == 250 and data["tokens"] == 250 * 4_000_000
    assert data["scenario"]["failure_rate"] == FAILURE_RATES["opt175b"] == pytest.approx(105 / (992 * 60 * 24))
    refused = run(*BASE, "--tokens", "1B")
    assert refused.exit_code == 2 and "--tokens-per-step" in refused.output
    assert "opt175b" in run(*BASE, "--failure-rate", "often").output


def test_every_run_cost_field_has_its_metadata_and_field_info_finds_it_with_the_default():
    import dataclasses

    from sim.fields import field_info
    from sim.training.runcost import RunCostScenario
    from sim.training.runcost_fields import RUNCOST

    assert {f.name for f in dataclasses.fields(RunCostScenario)} == set(RUNCOST) - {"tokens"}  # tokens: sets steps
    info = field_info("interval", "runcost")
    assert info.name == "interval_s" and info.unit == "s" and info.default is None
    assert field_info("write", "runcost").choices == ("sync", "async")


def test_a_saved_result_scenario_reads_back_as_the_same_scenario():
    """An explorer panel keeps the scenario as JSON (dcc.Store): full names carry their unit
    (step_time_s: 1.2 is seconds), while the short key still wants one (step_time: 1.2 is refused)."""
    from sim.training.runcost import run_cost

    first = scenario_from_dict({"step_time": "1.2s", "gpus": 64, "params": "7B", "interval": "30min", "samples": 500})
    saved = json.loads(json.dumps(run_cost(first).to_dict()))["scenario"]
    assert scenario_from_dict(saved) == first
    with pytest.raises(Exception, match="has no unit"):
        scenario_from_dict({"step_time": 1.2, "gpus": 64, "params": "7B"})
