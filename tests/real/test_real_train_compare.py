"""compare(): a measured real-train profile beside a simulate callable (a fake one here: the
wiring of collsim sim train is the lead's), and the measured collective times it hands over."""

from __future__ import annotations

import pytest

from real.train import TrainConfig, profile
from real.train_compare import SimInputs, compare, measured_collectives, sim_inputs
from real.train_timeline import ROW_FIELDS
from sim.errors import CollsimError

CONFIG = TrainConfig(tp=2, pp=2, dp=1, layers=2, hidden=32, heads=2, seq_len=8, micro_batch=2, global_batch=4, steps=2, warmup=0)
NBYTES = 2 * 8 * 32 * 4


def row(rank, stream, kind, name, start, end, nbytes=0, peer=-1, group=(), step=0, micro_batch=0):
    return dict(zip(ROW_FIELDS, (rank, stream, kind, name, start, end, nbytes, peer, list(group), step, micro_batch)))


def reports():
    """Two steps of a tp 2 x pp 2 layout, as the four ranks would report them."""
    out = []
    for rank in range(4):
        stage, rows = rank // 2, []
        group = [0, 1] if stage == 0 else [2, 3]
        for step in range(2):
            # the TP all-reduce: rank 0/2 arrive late, so the group's shortest row is the collective's own time
            late = 0.004 if rank % 2 == 0 else 0.0
            rows.append(row(rank, "tp", "all_reduce", "fwd mb0 L0.attn", 0.010 + late, 0.016, NBYTES, group=group, step=step))
            rows.append(row(rank, "compute", "compute", f"fwd mb0 stage{stage}", 0.0, 0.02, step=step))
            if stage == 0:
                rows.append(row(rank, "pp", "send", "fwd mb0 stage0->1", 0.020, 0.021, NBYTES, peer=rank + 2, step=step))
            else:  # posted at 0.005, the send comes at 0.020, ends 0.023: a 3 ms transfer
                rows.append(row(rank, "pp", "recv", "fwd mb0 stage0->1", 0.005, 0.023, NBYTES, peer=rank - 2, step=step))
        out.append({"rank": rank, "step_s": [0.10 + 0.01 * step + 0.001 * rank for step in range(2)], "rows": rows,
                    "layer_forward_s": {stage: 0.002 + 0.001 * (rank % 2)}, "layer_backward_s": {stage: 0.004}})  # fmt: skip
    return out


MEASURED = profile(CONFIG, reports())


def test_measured_collectives_take_the_last_arriving_rank_and_the_transfer_after_the_send():
    collectives = measured_collectives(MEASURED["rows"])
    assert collectives["tp"] == (pytest.approx(0.002), NBYTES)
    assert collectives["pp"] == (pytest.approx(0.003), NBYTES)
    assert collectives["dp"] == (0.0, 0)


def test_sim_inputs_carry_the_layout_and_the_slowest_tp_rank_compute_per_stage():
    inputs = sim_inputs(MEASURED)
    assert (inputs.tp, inputs.pp, inputs.dp, inputs.stages_per_rank, inputs.schedule, inputs.micro_batches) == (2, 2, 1, 1, "1f1b", 2)
    # forward: the whole micro-batch's compute row; backward (no rows here): the layers' sum
    assert inputs.forward_s == pytest.approx((0.02, 0.02)) and inputs.backward_s == pytest.approx((0.004, 0.004))


def test_compare_sets_the_simulated_step_beside_the_measured_median_and_spread():
    seen = []

    def simulate(inputs: SimInputs):
        seen.append(inputs)
        step = inputs.micro_batches * 0.006 + 0.1
        rows = [row(rank, "tp", "all_reduce", "x", 0.0, inputs.tp_all_reduce_s, inputs.tp_all_reduce_bytes) for rank in range(4)]
        return {"step_time_s": step, "rows": rows}

    result = compare(MEASURED, simulate)
    assert seen == [sim_inputs(MEASURED)]
    # step times are the slowest rank's: 0.103 and 0.113
    assert result["measured_step_s"] == pytest.approx(0.108)
    assert result["measured_spread"] == pytest.approx(0.010 / 0.108)
    assert result["simulated_step_s"] == pytest.approx(0.112)  # 2 micro-batches x 6 ms + 0.1
    assert result["error"] == pytest.approx((0.112 - 0.108) / 0.108)
    assert result["within_spread"]
    tp0 = next(s for s in result["streams"] if (s["rank"], s["stream"]) == (0, "tp"))
    assert tp0["measured_ops"] == 1 and tp0["simulated_ops"] == 1
    assert tp0["measured_busy_s"] == pytest.approx(0.002) and tp0["simulated_busy_s"] == pytest.approx(0.002)
    pp3 = next(s for s in result["streams"] if (s["rank"], s["stream"]) == (3, "pp"))
    assert pp3["measured_ops"] == 1 and pp3["simulated_ops"] == 0


def test_compare_refuses_what_is_not_a_train_profile_or_a_result_without_step_time():
    with pytest.raises(CollsimError, match="expected a collsim-train-profile"):
        compare({"kind": "collsim-ddp-profile"}, lambda inputs: {})
    with pytest.raises(CollsimError, match="'step_time_s' and 'rows'"):
        compare(MEASURED, lambda inputs: {"rows": []})
