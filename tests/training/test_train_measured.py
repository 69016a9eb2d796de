"""sim train fed measured compute and collective seconds (sim.training.parallel.measured): closed forms."""

from __future__ import annotations

import pytest

from sim.errors import CollsimError
from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.measured import MeasuredCosts

SMALL = {"layers": 2, "hidden": 32, "heads": 2, "seq_len": 8, "micro_batch": 2, "precision": "fp32"}
NBYTES = 2 * 8 * 32 * 4  # b s h float32: one TP all-reduce, one stage boundary


def test_measured_compute_and_tp_all_reduces_add_up_per_micro_batch():
    scenario = TrainScenario.from_dict({**SMALL, "global_batch": 4, "tp": 2})
    result = simulate(scenario, events=True, measured=MeasuredCosts((1.0,), (2.0,), {"tp": (0.1, NBYTES)}))
    # 2 micro-batches x (forward 1 s + backward 2 s + 2 layers x 2 all-reduces x 2 directions x 0.1 s)
    assert result.step_time_s == pytest.approx(2 * (1.0 + 2.0 + 0.8))
    tp_rows = [row for row in result.events if row["stream"] == "tp"]
    assert len(tp_rows) == 2 * 2 * 2 * 2 and all(row["nbytes"] == NBYTES for row in tp_rows)


def test_measured_pipeline_transfer_delays_the_next_stage():
    scenario = TrainScenario.from_dict({**SMALL, "global_batch": 2, "pp": 2, "schedule": "gpipe"})
    result = simulate(scenario, measured=MeasuredCosts((1.0, 1.0), (2.0, 2.0), {"pp": (0.5, NBYTES)}))
    # stage 0 forward 1, send 0.5, stage 1 forward 1 and backward 2, send 0.5, stage 0 backward 2
    assert result.step_time_s == pytest.approx(7.0)


def test_measured_dp_all_reduce_scales_with_the_gradient_bytes():
    scenario = TrainScenario.from_dict({**SMALL, "global_batch": 4, "dp": 2, "bucket_mb": 1e6})
    result = simulate(scenario, measured=MeasuredCosts((1.0,), (2.0,), {"dp": (0.3, 1000.0)}))
    assert result.step_time_s == pytest.approx(3.0 + 0.3 * result.bytes_by_kind["dp_per_stage"] / 1000.0)


def test_measured_stage_count_other_than_the_layout_is_refused():
    scenario = TrainScenario.from_dict({**SMALL, "global_batch": 2, "pp": 2})
    with pytest.raises(CollsimError, match="forward_s: 1 stages given, the layout has pp x vpp = 2"):
        simulate(scenario, measured=MeasuredCosts((1.0,), (2.0, 2.0)))


INTERLEAVED = {**SMALL, "layers": 4, "global_batch": 8, "pp": 2, "dp": 2, "schedule": "interleaved", "vpp": 2, "bucket_mb": 1e6}
STAGES = ((1.0,) * 4, (2.0,) * 4)


def _dp_rows(result) -> list[dict]:
    return [row for row in result.events if row["stream"] == "dp"]


def test_measured_dp_after_schedule_is_one_flat_all_reduce_of_every_chunk_once_the_schedule_is_done():
    scenario = TrainScenario.from_dict(INTERLEAVED)
    overlapped = simulate(scenario, events=True, measured=MeasuredCosts(*STAGES, {"dp": (0.3, 1000.0)}))
    flat = simulate(scenario, events=True, measured=MeasuredCosts(*STAGES, {"dp": (0.3, 1000.0)}, 0.1, dp_after_schedule=True))
    assert len(_dp_rows(overlapped)) == 2 * 2  # DDP per chunk module: a bucket per chunk on each pipeline rank
    rows = _dp_rows(flat)
    assert len(rows) == 2 and {row["nbytes"] for row in rows} == {flat.bytes_by_kind["dp_per_stage"]}
    for row in rows:  # after the rank's last compute, lasting the measured call scaled to both chunks' bytes
        last_compute = max(e["end_s"] for e in flat.events if e["stream"] == "compute" and e["rank"] == row["rank"])
        assert row["start_s"] >= last_compute
        assert row["end_s"] - row["start_s"] == pytest.approx(0.3 * flat.bytes_by_kind["dp_per_stage"] / 1000.0)
    assert flat.step_time_s == pytest.approx(max(row["end_s"] for row in rows) + 0.1)
    assert flat.step_time_s > overlapped.step_time_s  # nothing of it hidden behind the other chunk's backward
