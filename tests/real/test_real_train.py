"""collsim real train: a 2-rank TP run and a 2-rank PP run on gloo (their timelines), and bad
input refused before any rank starts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter

import pytest
from click.testing import CliRunner

from ..cli_in_process import collsim_in_process

pytest.importorskip("torch")

TINY = {"layers": 2, "hidden": 32, "heads": 2, "seq_len": 8, "micro_batch": 2, "global_batch": 4, "steps": 2, "warmup": 1}


@pytest.mark.slow
@pytest.mark.torch
def test_tp_run_records_every_tp_all_reduce_with_b_s_h_float32_bytes():
    from real.train import TrainConfig, run_train

    config = TrainConfig(tp=2, pp=1, **TINY)
    result = run_train(config, timeout_s=240, op_timeout_s=60)
    tp_rows = [row for row in result["rows"] if row["stream"] == "tp"]
    # per rank, step and micro-batch: each layer's attention and MLP all-reduce, forward and backward
    expected = {(rank, step, f"{phase} mb{mb} L{layer}.{half}") for rank in (0, 1) for step in range(2) for mb in range(2)
                for phase in ("fwd", "bwd") for layer in range(2) for half in ("attn", "mlp")}  # fmt: skip
    assert Counter((row["rank"], row["step"], row["name"]) for row in tp_rows) == Counter(expected)
    assert {row["bytes"] for row in tp_rows} == {2 * 8 * 32 * 4}
    assert all(row["kind"] == "all_reduce" and row["group"] == [0, 1] and row["end_s"] >= row["start_s"] for row in tp_rows)
    compute = [row for row in result["rows"] if row["stream"] == "compute"]
    # a micro-batch's forward (backward) is cut at its 4 TP all-reduces: 5 stretches each
    assert Counter((row["rank"], row["step"], row["name"]) for row in compute) == Counter(
        {(rank, step, f"{phase} mb{mb} stage0"): 5 for rank in (0, 1) for step in range(2) for mb in range(2) for phase in ("fwd", "bwd")}
    )
    for rank, step in ((0, 0), (0, 1), (1, 0), (1, 1)):  # a rank's compute and TP rows never overlap (a replay counts each once)
        mine = [row for row in result["rows"] if (row["rank"], row["step"]) == (rank, step) and row["stream"] in ("compute", "tp")]
        spans = sorted((row["start_s"], row["end_s"]) for row in mine)
        assert all(end <= next_start + 1e-9 for (_, end), (next_start, _) in zip(spans, spans[1:]))
    layer = result["compute"]["layer"]
    assert len(layer["forward_s"]) == 2 and all(seconds > 0 for seconds in layer["forward_s"] + layer["backward_s"])
    assert (
        len(result["step_time_s"]) == 2 and result["step_time"]["min_s"] <= result["step_time"]["median_s"] <= result["step_time"]["max_s"]
    )


@pytest.mark.slow
@pytest.mark.torch
def test_tensor_parallel_layers_compute_what_the_whole_layers_compute():
    from real.train import TrainConfig, check_tensor_parallel

    reports = check_tensor_parallel(TrainConfig(tp=2, pp=1, **TINY), timeout_s=240)
    assert [r["rank"] for r in reports] == [0, 1]
    for report in reports:
        assert report["output_scale"] > 0.1  # the comparison has teeth: outputs are far from 0
        assert report["output_diff"] < 1e-5 and report["input_grad_diff"] < 1e-6 and report["weight_grad_diff"] < 1e-6, report


@pytest.mark.slow
@pytest.mark.torch
def test_pp_run_every_send_has_its_matching_recv(tmp_path):
    out = tmp_path / "pp.json"
    args = ["--tp", "1", "--pp", "2", "--layers", "2", "--hidden", "32", "--heads", "2", "--seq-len", "8", "--micro-batch", "2",
            "--global-batch", "8", "--steps", "2", "--warmup", "1", "--schedule", "1f1b", "--timeout", "240", "-o", str(out)]  # fmt: skip
    done = collsim_in_process("real", "train", *args, cwd=tmp_path)  # ranks from this process's fork server: no torch import
    assert done.returncode == 0, done.stderr
    assert "step time: median" in done.stdout
    result = json.loads(out.read_text())
    assert result["kind"] == "collsim-train-profile" and result["micro_batches"] == 4
    pp = [row for row in result["rows"] if row["stream"] == "pp"]
    sends = Counter((row["step"], row["name"], row["rank"], row["peer"], row["bytes"]) for row in pp if row["kind"] == "send")
    recvs = Counter((row["step"], row["name"], row["peer"], row["rank"], row["bytes"]) for row in pp if row["kind"] == "recv")
    assert sends == recvs
    # per step: micro-batches forward from stage 0 to 1, and as many gradients back
    names = Counter(name for _, name, *_ in sends)
    assert names == Counter({f"fwd mb{mb} stage0->1": 2 for mb in range(4)} | {f"bwd mb{mb} stage1->0": 2 for mb in range(4)})
    assert {row["bytes"] for row in pp} == {2 * 8 * 32 * 4}
    assert len(result["compute"]["stage"]["forward_s"]) == 2


@pytest.mark.slow
@pytest.mark.torch
def test_a_run_longer_than_its_timeout_stops_with_one_message_in_bounded_time():
    start = time.monotonic()
    # 4 s: 1000 steps take far longer; a rank still starting is named too ("rank 0 in starting (process group init)")
    args = ["--tp", "2", "--steps", "1000", "--warmup", "0", "--timeout", "4"]
    done = subprocess.run([sys.executable, "-m", "sim.cli", "real", "train", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("error: run timed out after 4 s (rank 0 in ")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert time.monotonic() - start < 60


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tp", "3"], "--heads 4 is not a multiple of --tp 3"),
        (["--tp", "4", "--pp", "4"], "16 ranks; allowed 2 to 8"),
        (["--tp", "1"], "1 x 1 x 1 = 1 ranks; allowed 2 to 8"),
        (["--heads", "3"], "--hidden 64 is not a multiple of --heads 3"),
        (["--tp", "1", "--pp", "2", "--layers", "3"], "--layers 3 does not split into 2 equal pipeline stages"),
        (["--global-batch", "5"], "--global-batch 5 is not a multiple of --dp x --micro-batch = 2"),
        (["--schedule", "zero-bubble"], "--schedule: unknown 'zero-bubble'; allowed: gpipe, 1f1b, interleaved"),
        (["--tp", "1", "--pp", "2", "--global-batch", "2"], "1 micro-batches for 2 stages"),
        (["--schedule", "interleaved"], "--schedule interleaved needs --pp >= 2"),
        (["--steps", "0"], "--steps: must be between 1 and 1000, got 0"),
        (["--hidden", "-8"], "--hidden: must be between 8 and 4096, got -8"),
        (["--timeout", "0"], "--timeout: must be between 1 and 604800 s, got 0"),
        (["--out", "."], "--out: '.' is a directory; give a file name"),
    ],
)
def test_bad_input_is_refused_before_any_rank_starts(monkeypatch, args, message):
    import real.train
    from real.train_cli import train

    def no_launch(*_args, **_kwargs):
        raise AssertionError("ranks were started")

    monkeypatch.setattr(real.train, "run_train", no_launch)
    done = CliRunner().invoke(train, args)
    assert done.exit_code != 0
    assert message in str(done.exception) or message in done.output
