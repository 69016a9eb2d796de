"""real.train_sim.simulate_train on a built profile (no ranks started): sim train replays the
measured compute and collective times, closed form, and format_compare prints both steps."""

from __future__ import annotations

import pytest

from real.train import TrainConfig, profile
from real.train_compare import compare, format_compare, schedule_gaps, sim_inputs
from real.train_sim import scenario_of, simulate_train

CONFIG = TrainConfig(tp=2, pp=1, dp=1, layers=2, hidden=32, heads=2, seq_len=8, micro_batch=2, global_batch=4, steps=2, warmup=0)
NBYTES = 2 * 8 * 32 * 4


def _report(rank: int) -> dict:
    rows = [{"rank": rank, "stream": "tp", "kind": "all_reduce", "name": f"fwd mb0 L0.{half}", "start_s": 0.0, "end_s": 0.001,
             "bytes": NBYTES, "peer": -1, "group": [0, 1], "step": step, "micro_batch": 0}
            for step in range(2) for half in ("attn", "mlp")]  # fmt: skip
    return {"rank": rank, "step_s": [0.05, 0.06], "rows": rows, "layer_forward_s": {0: 0.002, 1: 0.002},
            "layer_backward_s": {0: 0.003, 1: 0.003}}  # fmt: skip


MEASURED = profile(CONFIG, [_report(0), _report(1)])


def test_sim_train_replays_measured_compute_and_tp_all_reduces():
    inputs = sim_inputs(MEASURED)
    scenario = scenario_of(inputs)
    assert (scenario.tp, scenario.pp, scenario.dp, scenario.micro_batches, scenario.precision) == (2, 1, 1, 2, "fp32")
    simulated = simulate_train(inputs)
    # 2 micro-batches x (forward 4 ms + backward 6 ms + 2 layers x 4 all-reduces x 1 ms)
    assert simulated["step_time_s"] == pytest.approx(2 * (0.004 + 0.006 + 0.008))
    tp = [row for row in simulated["rows"] if row["stream"] == "tp"]
    assert len(tp) == 2 * 2 * 2 * 4 and {row["bytes"] for row in tp} == {NBYTES} and {row["rank"] for row in tp} == {0, 1}


def test_format_compare_prints_measured_and_simulated_steps():
    text = format_compare(compare(MEASURED, simulate_train))
    assert "measured step: median 55 ms (min 50 ms, max 60 ms, spread 18%)" in text
    assert "simulated step: 36 ms" in text and "-35%, outside the measured min..max" in text
    assert "tp: measured 4 ops" in text and "simulated 32 ops" in text


INTERLEAVED = TrainConfig(tp=1, pp=2, dp=2, layers=4, hidden=32, heads=2, seq_len=8, micro_batch=2, global_batch=8,
                          schedule="interleaved", steps=2, warmup=0)  # fmt: skip


def _dp_report(rank: int) -> dict:
    """One rank of real train's interleaved pp2 x dp2: one flat DP all-reduce of both chunks' gradients a step."""
    group = INTERLEAVED.groups("dp")[rank // 2]
    rows = [{"rank": rank, "stream": "dp", "kind": "all_reduce", "name": "gradients", "start_s": 0.02, "end_s": 0.023,
             "bytes": 4096, "peer": -1, "group": group, "step": step, "micro_batch": -1} for step in range(2)]  # fmt: skip
    return {"rank": rank, "step_s": [0.05, 0.06], "rows": rows, "layer_forward_s": {0: 0.001}, "layer_backward_s": {0: 0.002}}


def test_compare_interleaved_dp_all_reduces_one_a_rank_a_step_as_real_train_runs_them():
    comparison = compare(profile(INTERLEAVED, [_dp_report(rank) for rank in range(4)]), simulate_train)
    dp = {row["rank"]: (row["measured_ops"], row["simulated_ops"]) for row in comparison["streams"] if row["stream"] == "dp"}
    assert dp == {rank: (1, 1) for rank in range(4)}  # not one per chunk (2) as DDP per stage module would


PIPELINE = TrainConfig(tp=1, pp=2, dp=1, layers=2, hidden=32, heads=2, seq_len=8, micro_batch=2, global_batch=2,
                       schedule="gpipe", steps=1, warmup=0)  # fmt: skip


def _row(rank: int, stream: str, kind: str, name: str, start_ms: float, end_ms: float) -> dict:
    return {"rank": rank, "stream": stream, "kind": kind, "name": name, "start_s": start_ms / 1e3, "end_s": end_ms / 1e3,
            "bytes": NBYTES if stream == "pp" else 0, "peer": 1 - rank, "group": [], "step": 0, "micro_batch": 0}  # fmt: skip


def _pipeline_reports() -> list[dict]:
    """One micro-batch on pp2: stage 1 waits for the activation until 3 ms, computes the loss (1 ms,
    outside the forward and backward rows) before its backward; stage 0 starts 0.5 ms in."""
    rows = [_row(0, "compute", "compute", "fwd mb0 stage0", 0.5, 1.5), _row(0, "pp", "send", "fwd mb0 stage0->1", 1.5, 3.0),
            _row(1, "pp", "recv", "fwd mb0 stage0->1", 0.0, 3.0), _row(1, "compute", "compute", "fwd mb0 stage1", 3.0, 4.0),
            _row(1, "compute", "compute", "bwd mb0 stage1", 5.0, 7.0), _row(1, "pp", "send", "bwd mb0 stage1->0", 7.0, 8.0),
            _row(0, "pp", "recv", "bwd mb0 stage1->0", 1.6, 8.0), _row(0, "compute", "compute", "bwd mb0 stage0", 8.0, 10.0)]  # fmt: skip
    return [{"rank": rank, "step_s": [0.01], "rows": [r for r in rows if r["rank"] == rank], "layer_forward_s": {rank: 0.001},
             "layer_backward_s": {rank: 0.002}} for rank in range(2)]  # fmt: skip


def test_schedule_time_between_ops_not_a_wait_is_fed_to_sim_train_as_the_ops_compute():
    measured = profile(PIPELINE, _pipeline_reports())
    gaps = schedule_gaps(measured["rows"])
    # the step's start to the first forward; the loss before the last stage's backward; waits left out
    assert gaps == {"forward_s": {0: pytest.approx(0.0005), 1: 0.0}, "backward_s": {0: 0.0, 1: pytest.approx(0.001)}}
    inputs = sim_inputs(measured)
    assert inputs.forward_s == pytest.approx((0.0015, 0.001)) and inputs.backward_s == pytest.approx((0.002, 0.003))
