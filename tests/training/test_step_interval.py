"""A training step on a hardware preset carries an 80 % interval: the step re-run with every
collective at its own interval's ends (issue 33, item 2); none without a preset, saying why."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ..cli_in_process import collsim_in_process

PRESET = ("--hardware", "dgx-h100", "--nodes", "2", "--preset", "gpt2", "--backward-time", "20ms")
BY_HAND = ("--ranks", "16", "--preset", "gpt2", "--backward-time", "20ms", "--o", "50us", "--w", "10GB/s")


def _cli(*args: str) -> subprocess.CompletedProcess:
    done = collsim_in_process("sim", *args, cwd=Path.cwd())  # what it prints: no Python start-up needed
    assert done.returncode == 0, done.stderr
    return done


def _strictly_within(summary: dict) -> None:
    low, high = summary["step_time_interval_s"]
    assert low < summary["step_time_s"] < high and summary["step_interval_level"] == 0.8
    # the comm, not the compute, is what spreads: the interval is narrower than the comm it rests on
    assert high - low < 3 * summary["comm_busy_s"]


def test_ddp_step_on_a_preset_has_an_interval_containing_its_time_and_a_text_line():
    summary = json.loads(_cli("ddp", *PRESET, "--json").stdout)
    _strictly_within(summary)
    assert "80 % interval" in _cli("ddp", *PRESET).stdout


def test_ddp_step_without_a_preset_has_no_interval_and_says_why():
    summary = json.loads(_cli("ddp", *BY_HAND, "--json").stdout)
    assert summary["step_time_interval_s"] is None and "no hardware preset" in summary["step_interval_basis"]
    assert "80 % interval" not in _cli("ddp", *BY_HAND).stdout


def test_every_compared_fsdp_strategy_on_a_preset_has_an_interval_containing_its_step():
    rows = json.loads(_cli("fsdp", *PRESET, "--compare", "ddp,zero1,shard_grad_op,full_shard", "--json").stdout)
    assert [row["sharding"] for row in rows] == ["ddp", "zero1", "shard_grad_op", "full_shard"]
    for row in rows:
        _strictly_within(row)
    table = _cli("fsdp", *PRESET, "--compare", "ddp,full_shard").stdout.splitlines()[1:]
    assert len(table) == 2 and all("step 80 %: " in line for line in table)
    single = json.loads(_cli("fsdp", *PRESET, "--sharding", "full_shard", "--json").stdout)
    assert single["step_time_interval_s"] == pytest.approx(rows[-1]["step_time_interval_s"], rel=1e-12)


def test_fsdp_step_without_a_preset_has_no_interval():
    from sim.training.fsdp import FSDPScenario, compare

    scenario = FSDPScenario.from_dict({"preset": "gpt2", "ranks": 8, "backward_time": "20ms", "o": "50us", "w": "10GB/s"})
    rows = compare(scenario, ["ddp", "full_shard"])
    assert all(row["step_time_interval_s"] is None and "no hardware preset" in row["step_interval_basis"] for row in rows)


def test_slower_collectives_never_make_a_step_faster():
    """The interval's ends are the step at each end (monotone), not a clamp around the exact step."""
    from sim.training.ddp import DDPScenario, run_ddp
    from sim.training.step_interval import ddp_interval

    data = {"preset": "gpt2", "hardware": "dgx-h100", "nodes": 2, "backward_time": "5ms", "comm": "network"}
    from sim.training.ddp_cli import apply_hardware_flags

    apply_hardware_flags(data)
    result = run_ddp(DDPScenario.from_dict(data))
    low, high = ddp_interval(result)["step_time_interval_s"]
    assert low < result.step_time_s < high
    assert high - result.step_time_s > 0.1 * result.exposed_comm_s  # comm exposed at 5 ms of backward: it shows
