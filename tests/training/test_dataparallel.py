"""torch.nn.DataParallel on one node (sim.training.dataparallel): slower than one GPU for a small
model, faster for a large one, from physical constants; its phases from the shared models; bad input."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.errors import CollsimError
from sim.training import comm
from sim.training.dataparallel import DataParallelScenario, run_dataparallel
from sim.training.params import preset


@pytest.mark.slow  # NCCL's broadcast and reduce on a DGX H100 node, simulated once each (0.5 s)
def test_dataparallel_is_slower_than_one_gpu_for_a_small_model_and_faster_for_a_large_one():
    small = run_dataparallel(DataParallelScenario("cs336-tiny", tokens=8 * 256))  # 8 sequences of 256
    large = run_dataparallel(DataParallelScenario("xl", tokens=64 * 256))
    assert small.speedup < 1 < large.speedup
    assert small.step_time_s > small.single_gpu_s and large.step_time_s < large.single_gpu_s
    # not the CPU constants' doing alone: without threads or launches, re-broadcasting the
    # weights and reducing the gradients every step still costs more than the small model's compute
    bare = run_dataparallel(DataParallelScenario("cs336-tiny", tokens=8 * 256, thread_s=0.0, launch_s=0.0))
    assert bare.step_time_s > bare.single_gpu_s


@pytest.mark.slow  # the broadcast and reduce simulated once (0.3 s)
def test_phases_come_from_the_shared_compute_and_collective_models():
    scenario = DataParallelScenario("gpt2", tokens=16 * 1024, thread_s=0.0, launch_s=0.0)
    result = run_dataparallel(scenario)
    gpus = scenario.gpus
    assert gpus == 8
    # compute splits exactly over the GPUs (FLOPs are linear in tokens)
    assert math.isclose(result.phases_s["backward"], result.single_gpu["backward"] / gpus, rel_tol=1e-12)
    assert math.isclose(result.phases_s["parallel_forward"], result.single_gpu["forward"] / gpus, rel_tol=1e-12)
    # the replicate broadcast and the gradient reduce are NCCL's broadcast / reduce of the weights on the node
    weight_bytes = sum(param.numel for param in preset("gpt2")) * 2  # bf16
    assert result.phases_s["replicate"] == comm.pick_time("dgx-h100", 1, "broadcast", weight_bytes).time_s
    assert result.phases_s["reduce_grads"] == comm.pick_time("dgx-h100", 1, "reduce", weight_bytes).time_s


def test_threads_and_launches_serialise_across_gpus():
    quiet = run_dataparallel(DataParallelScenario("cs336-tiny", tokens=64, thread_s=0.0, launch_s=0.0))
    busy = run_dataparallel(DataParallelScenario("cs336-tiny", tokens=64, thread_s=100e-6, launch_s=0.0))
    # the forward is launch-bound: 8 threads one after another under the GIL
    assert math.isclose(busy.phases_s["parallel_forward"], 8 * 100e-6, rel_tol=1e-12)
    assert quiet.phases_s["parallel_forward"] < busy.phases_s["parallel_forward"] / 10


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"preset": "resnet18", "tokens": 64}, "preset: DataParallel needs a transformer preset"),
        ({"preset": "small", "tokens": 4}, "tokens: must be a whole number >= the node's 8 GPUs"),
        ({"preset": "small", "tokens": 64, "hardware": "cpu-ethernet-25g"}, "hardware: DataParallel runs on one GPU node"),
        ({"preset": "small", "tokens": 64, "mfu": 1.5}, "mfu: must be above 0 and at most 1"),
        ({"preset": "small", "tokens": 64, "thread_s": -1.0}, "thread_overhead: must be a time >= 0"),
    ],
)
def test_bad_dataparallel_input_is_refused_by_name(fields, message):
    with pytest.raises(CollsimError, match=message):
        DataParallelScenario(**fields)


def test_cli_says_what_is_missing_in_one_line():
    missing = CliRunner().invoke(cli, ["sim", "dataparallel", "--tokens", "64"])
    assert missing.exit_code != 0 and "--preset: required" in missing.output and "Traceback" not in missing.output
    bare = CliRunner().invoke(cli, ["sim", "dataparallel", "--preset", "small", "--tokens", "64", "--thread-overhead", "5"])
    assert bare.exit_code != 0 and "has no unit" in bare.output
