"""real train's profile feeds sim train the whole micro-batch compute (its compute rows, slowest
rank per stretch between TP all-reduces) and the step's end (the optimizer), and sim train adds
that step end after the gradients are reduced (no ranks started)."""

from __future__ import annotations

import pytest

from real.train import TrainConfig, profile
from real.train_compare import sim_inputs
from real.train_sim import simulate_train
from sim.errors import CollsimError
from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.measured import MeasuredCosts

CONFIG = TrainConfig(tp=2, pp=1, dp=1, layers=2, hidden=32, heads=2, seq_len=8, micro_batch=2, global_batch=4, steps=2, warmup=0)
NBYTES = 2 * 8 * 32 * 4
# per rank, the forward's two stretches around its TP all-reduce (ms): the slow one differs per stretch
STRETCHES = {0: (1.0, 3.0), 1: (2.0, 1.0)}


def _compute_row(rank: int, name: str, start_ms: float, end_ms: float, step: int) -> dict:
    return {"rank": rank, "stream": "compute", "kind": "compute", "name": name, "start_s": start_ms / 1e3, "end_s": end_ms / 1e3,
            "bytes": 0, "peer": -1, "group": [], "step": step, "micro_batch": int(name.split()[1][2:])}  # fmt: skip


def _report(rank: int) -> dict:
    first, second = STRETCHES[rank]
    rows = []
    for step in range(2):
        for micro_batch in range(2):  # one op after another, none of the schedule's own time between them
            name, at = f"fwd mb{micro_batch} stage0", micro_batch * (first + second + 7.0 + rank)
            forward_end = at + first + 1.0 + second
            rows += [_compute_row(rank, name, at, at + first, step), _compute_row(rank, name, at + first + 1.0, forward_end, step)]
            rows.append(_compute_row(rank, f"bwd mb{micro_batch} stage0", forward_end, forward_end + 6.0 + rank, step))
    return {"rank": rank, "step_s": [0.05, 0.06], "rows": rows, "layer_forward_s": {0: 0.001, 1: 0.001},
            "layer_backward_s": {0: 0.002, 1: 0.002}, "step_end_s": 0.004 + 0.001 * rank}  # fmt: skip


MEASURED = profile(CONFIG, [_report(0), _report(1)])


def test_stage_compute_is_the_whole_micro_batch_slowest_rank_per_stretch():
    compute = MEASURED["compute"]
    # forward: max(1, 2) + max(3, 1) = 5 ms (not the slower rank's total, 4 ms, nor the layers' 2 ms)
    assert compute["op"]["forward_s"] == pytest.approx([0.005]) and compute["op"]["backward_s"] == pytest.approx([0.007])
    assert compute["stage"]["forward_s"] == pytest.approx([0.002])  # the layer split is kept
    assert compute["step_end_s"] == pytest.approx(0.005)  # the slowest rank's optimizer step
    inputs = sim_inputs(MEASURED)
    assert (inputs.forward_s, inputs.backward_s) == (pytest.approx((0.005,)), pytest.approx((0.007,)))


def test_sim_train_adds_the_measured_step_end_after_the_pipeline():
    inputs = sim_inputs(MEASURED)
    # no TP all-reduce rows in this profile: 2 micro-batches x (5 + 7 ms) then the 5 ms step end
    assert simulate_train(inputs)["step_time_s"] == pytest.approx(2 * 0.012 + 0.005)


def test_measured_step_end_follows_the_dp_all_reduce():
    scenario = TrainScenario.from_dict({"layers": 2, "hidden": 32, "heads": 2, "seq_len": 8, "micro_batch": 2, "precision": "fp32",
                                        "global_batch": 4, "dp": 2, "bucket_mb": 1e6})  # fmt: skip
    bare = simulate(scenario, measured=MeasuredCosts((1.0,), (2.0,), {"dp": (0.3, 1.0)}))
    ended = simulate(scenario, measured=MeasuredCosts((1.0,), (2.0,), {"dp": (0.3, 1.0)}, step_end_s=0.7))
    assert ended.step_time_s == pytest.approx(bare.step_time_s + 0.7) and ended.dp_exposed_s == pytest.approx(bare.dp_exposed_s + 0.7)


def test_negative_step_end_is_refused():
    scenario = TrainScenario.from_dict({"layers": 2, "hidden": 32, "heads": 2, "seq_len": 8, "micro_batch": 2, "global_batch": 2})
    with pytest.raises(CollsimError, match="step_end_s: seconds must be >= 0, got -1"):
        simulate(scenario, measured=MeasuredCosts((1.0,), (2.0,), step_end_s=-1.0))


def test_collective_seconds_are_the_mean_of_the_last_arriving_ranks_calls():
    from real.train_compare import measured_collectives

    def all_reduce(rank: int, step: int, start_ms: float, end_ms: float) -> dict:
        return {"rank": rank, "stream": "tp", "kind": "all_reduce", "name": "fwd mb0 L0.attn", "start_s": start_ms / 1e3,
                "end_s": end_ms / 1e3, "bytes": NBYTES, "peer": -1, "group": [0, 1], "step": step, "micro_batch": 0}  # fmt: skip

    # three calls whose last-arriving rank took 1, 1 and 7 ms (rank 0 arrives 2 ms early each time)
    rows = [
        row
        for step, took in enumerate((1.0, 1.0, 7.0))
        for row in (all_reduce(0, step, 0.0, 2.0 + took), all_reduce(1, step, 2.0, 2.0 + took))
    ]
    # the simulator adds one call's seconds per call: 3 calls cost their sum, 3 x the mean (9 ms), not 3 x the median (3 ms)
    assert measured_collectives(rows)["tp"] == (pytest.approx(0.003), NBYTES)


def test_step_end_counts_from_the_rank_s_last_op_or_wait_not_the_dp_all_reduce():
    from real.train_timeline import Timeline

    timeline = Timeline(0, [0], [0, 1])
    timeline.start_step(0, recording=True)
    timeline.origin = 0.0
    timeline.add("compute", "compute", "bwd mb1 stage0", 0.010, 0.020)
    timeline.add("pp", "send", "bwd mb1 stage0->1", 0.012, 0.023)  # waited for at the schedule's end
    timeline.add("dp", "all_reduce", "gradients", 0.025, 0.030)
    assert timeline.last_end_s(default=0.024) == pytest.approx(0.023)  # the schedule's return (23..25 ms) is the step end's
    timeline.start_step(1, recording=True)
    assert timeline.last_end_s(default=0.024) == 0.024  # nothing recorded in this step yet
