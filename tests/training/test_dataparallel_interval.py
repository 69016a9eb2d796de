"""The DataParallel step carries its 80 % interval (issue 33: every prediction on a hardware preset
carries one): each copy and collective at the low, then the high end of its own interval
(sim.hardware.uncertainty.spread at its op and size), compute and the CPU's threads as given."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.hardware.uncertainty import spread
from sim.training.dataparallel import PHASE_OPS, DataParallelScenario, phase_bytes, run_dataparallel


@pytest.fixture(scope="module")
def tiny():
    return run_dataparallel(DataParallelScenario("cs336-tiny", tokens=2048))


def test_each_end_scales_only_the_communication_phases_by_their_own_factor(tiny):
    s, moved = tiny.scenario, phase_bytes(tiny.scenario)
    summary = tiny.summary()
    low, high = summary["step_time_interval_s"]
    assert low < tiny.step_time_s < high and summary["step_interval_level"] == 0.8
    factors = {name: spread(s.hardware, s.gpus, moved[name], op)[0] for name, op in PHASE_OPS.items()}
    assert all(factor > 1 for factor in factors.values())
    # the broadcast and the reduce move the weights, the copies the logits: different sizes, and
    # each phase takes its own size's factor (not one factor for the whole step)
    assert moved["replicate"] != moved["gather_outputs"]
    compute = sum(seconds for name, seconds in tiny.phases_s.items() if name not in PHASE_OPS)
    assert compute > 0  # the CPU-bound forward: kept as given at both ends
    comm = {name: tiny.phases_s[name] for name in PHASE_OPS}
    assert math.isclose(high, compute + sum(seconds * factors[name] for name, seconds in comm.items()), rel_tol=1e-12)
    assert math.isclose(low, compute + sum(seconds / factors[name] for name, seconds in comm.items()), rel_tol=1e-12)


def test_a_slower_or_faster_network_never_flips_the_small_models_verdict(tiny):
    """What the interval is for: the small model is slower on 8 GPUs than on one at both ends."""
    low, _ = tiny.summary()["step_time_interval_s"]
    assert tiny.single_gpu_s < low


def test_the_cli_prints_the_interval_and_json_carries_it():
    runner = CliRunner()
    text = runner.invoke(cli, ["sim", "dataparallel", "--preset", "cs336-tiny", "--tokens", "2048"])
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[2].startswith("  80 % interval    ") and " – " in lines[2]
    as_json = runner.invoke(cli, ["sim", "dataparallel", "--preset", "cs336-tiny", "--tokens", "2048", "--json"])
    summary = json.loads(as_json.output)
    low, high = summary["step_time_interval_s"]
    assert low < summary["step_time_s"] < high
    assert summary["phase_bytes"]["replicate"] == summary["phase_bytes"]["reduce_grads"] > 0
    assert "80 %" in summary["step_interval_basis"]
