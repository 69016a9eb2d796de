"""Trace import: the bundled torch.profiler trace (gloo, 2 ranks, one DDP step of real's small LM)
imports and replays; the replayed step is within 10% of the trace's own step time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from real.trace import import_trace
from sim.errors import CollsimError
from sim.training.ddp import DDPScenario, run_ddp
from sim.training.fsdp import FSDPScenario, run_fsdp

TRACE = Path(__file__).resolve().parents[2] / "real" / "data" / "trace_ddp_small_gloo_2ranks.json.gz"


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "profile.json"
    path.write_text(json.dumps(import_trace(TRACE)))
    return path


def test_bundled_trace_is_small():
    assert TRACE.stat().st_size < 1_000_000


def test_import_finds_phases_gradients_and_collectives(profile):
    data = json.loads(profile.read_text())
    info = data["trace"]
    assert data["kind"] == "collsim-ddp-profile" and len(data["params"]) == 37
    assert len([row for row in data["events"] if row["kind"] == "grad_ready"]) == 37
    assert 0 < data["forward_s"] < info["step_s"] and 0 < data["backward_s"] < info["step_s"]
    assert data["forward_s"] + data["backward_s"] + data["optimizer_s"] < info["step_s"]
    # DDP's two buckets (first bucket 1 MiB cap: the 2 MiB head alone, then the rest), as gloo all-reduces
    assert [(row["op"], row["bytes"]) for row in info["collectives"]] == [
        ("all_reduce", 2 * 2**20),
        ("all_reduce", 4_215_296 * 4 - 2 * 2**20),
    ]
    assert info["ow"]["w_Bps"] > 0 and info["ow"]["o_s"] >= 0
    layer_total = sum(row["backward_s"] for row in info["layer_backward"])
    assert layer_total <= data["backward_s"] + 1e-9


def test_replayed_ddp_step_matches_the_trace(profile):
    """Modelled: measured forward, gradient-ready times, optimizer; the two bucket all-reduces
    with (o, w) fitted to the trace's own all-reduces. Not modelled: DDP's per-gradient hook
    work beyond the ready times, CPU contention between the gloo thread and compute."""
    info = json.loads(profile.read_text())["trace"]
    scenario = DDPScenario(profile_file=str(profile), comm="ow", o_s=info["ow"]["o_s"], w_Bps=info["ow"]["w_Bps"])
    result = run_ddp(scenario)
    assert len(result.calls) == 2
    assert result.step_time_s == pytest.approx(info["step_s"], rel=0.10)


def test_fsdp_replays_the_same_profile(profile):
    info = json.loads(profile.read_text())["trace"]
    base = {"profile_file": str(profile), "comm": "ow", "o_s": info["ow"]["o_s"], "w_Bps": info["ow"]["w_Bps"]}
    ddp_step = run_ddp(DDPScenario(**base)).step_time_s
    assert run_fsdp(FSDPScenario(**base, sharding="ddp")).step_time_s == pytest.approx(ddp_step, rel=1e-12)
    full = run_fsdp(FSDPScenario(**base, sharding="full_shard"))
    assert full.step_time_s > full.compute_time_s


def test_cli_import_and_replay(tmp_path):
    out = tmp_path / "p.json"
    done = subprocess.run(
        [sys.executable, "-m", "sim.cli", "real", "import-trace", str(TRACE), "-o", str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    replay = done.stdout.strip().splitlines()[-1].removeprefix("# replay: collsim ").split()
    again = subprocess.run([sys.executable, "-m", "sim.cli", *replay, "--json"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["num_buckets"] == 2


def test_bad_trace_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(CollsimError, match="no 'traceEvents'"):
        import_trace(bad)
    with pytest.raises(CollsimError, match="not found"):
        import_trace(tmp_path / "missing.json")
    empty_step = tmp_path / "nobackward.json"
    empty_step.write_text(
        json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5, "pid": 1, "tid": 1}]})
    )
    with pytest.raises(CollsimError, match="autograd"):
        import_trace(empty_step)


def test_gpu_kernels_are_preferred_to_their_cpu_launches(tmp_path):
    """A hand-made GPU-style trace: NCCL kernels (with record_param_comms-style args) win over the
    CPU annotations of the same calls; op names and bytes come from the kernel name and args."""

    def op(name, ts, dur, cat="cpu_op", tid=1, **args):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid, "args": args}

    events = [
        op("ProfilerStep#0", 0, 1000, cat="user_annotation"),
        op("autograd::engine::evaluate_function: MmBackward0", 100, 300),
        op("torch::autograd::AccumulateGrad", 150, 10, **{"Input Dims": [[4, 4]]}),
        op("torch::autograd::AccumulateGrad", 350, 10, **{"Input Dims": [[8]]}),
        op("nccl:all_reduce", 360, 5, cat="user_annotation", **{"Input Dims": [[24]], "Input type": ["float"]}),
        op("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 370, 200, cat="kernel", tid=7, **{"In msg nelems": 24, "dtype": "Float"}),
        op("ncclDevKernel_AllGather_RING_LL", 600, 50, cat="kernel", tid=7, **{"In msg nelems": 8, "dtype": "BFloat16"}),
        op("Optimizer.step#SGD.step", 700, 100),
    ]
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({"traceEvents": events}))
    profile = import_trace(path, params=[{"name": "w", "shape": [4, 4], "numel": 16}, {"name": "b", "shape": [8], "numel": 8}])
    rows = profile["trace"]["collectives"]
    assert [(row["op"], row["bytes"], row["device"]) for row in rows] == [("all_reduce", 96, "gpu"), ("all_gather", 16, "gpu")]
    assert [row["name"] for row in profile["events"] if row["kind"] == "grad_ready"] == ["w", "b"]
    assert profile["forward_s"] == pytest.approx(100e-6) and profile["optimizer_s"] == pytest.approx(100e-6)
