"""``collsim sim train`` as the simulator of :func:`real.train_compare.compare`.

:func:`simulate_train` builds the :class:`~sim.training.parallel.TrainScenario` of the measured
layout (tp, pp, dp, the schedule; ``interleaved``: two virtual stages a rank; float32, no logit
layer) and runs it with :class:`~sim.training.parallel.measured.MeasuredCosts`: each stage's measured
forward and backward seconds a micro-batch (its whole compute rows), the measured seconds and
bytes of one TP all-reduce, one PP transfer and the DP all-reduce, the DP gradients reduced as
``real train`` reduces them (``dp_after_schedule``: one flat all-reduce of every chunk's
gradients once a rank's schedule has returned, not DDP's buckets overlapping the backward), and
the measured step end (gradient copies and the optimizer) after the DP all-reduce. Its rows are every rank's
(:func:`~sim.training.parallel.trace.trace_rows`): compute, each TP all-reduce, each pipeline
send and its receive on the peer, the DP all-reduce, as ``real train`` records them.
"""

from __future__ import annotations

from typing import Any

from real.train_compare import SimInputs
from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.measured import MeasuredCosts
from sim.training.parallel.trace import trace_rows

__all__ = ["measured_costs", "scenario_of", "simulate_train"]

ONE_BUCKET_MB = 1e6  # the bound of --bucket-mb: every stage's gradients in one bucket


def scenario_of(inputs: SimInputs) -> TrainScenario:
    """The sim train scenario of the measured layout (its hardware preset only holds the ranks)."""
    return TrainScenario.from_dict(
        {"layers": inputs.layers, "hidden": inputs.hidden, "heads": inputs.heads, "seq_len": inputs.seq_len,
         "micro_batch": inputs.micro_batch, "global_batch": inputs.micro_batch * inputs.dp * inputs.micro_batches,
         "tp": inputs.tp, "pp": inputs.pp, "dp": inputs.dp, "schedule": inputs.schedule, "vpp": inputs.stages_per_rank,
         "precision": "fp32", "bucket_mb": ONE_BUCKET_MB, "scatter_gather": False}  # real train sends whole activations
    )  # fmt: skip


def measured_costs(inputs: SimInputs) -> MeasuredCosts:
    return MeasuredCosts(
        tuple(inputs.forward_s),
        tuple(inputs.backward_s),
        {"tp": (inputs.tp_all_reduce_s, inputs.tp_all_reduce_bytes), "pp": (inputs.pp_transfer_s, inputs.pp_transfer_bytes),
         "dp": (inputs.dp_all_reduce_s, inputs.dp_all_reduce_bytes)},
        inputs.step_end_s,
        dp_after_schedule=True,
    )  # fmt: skip


def simulate_train(inputs: SimInputs) -> dict[str, Any]:
    """``{"step_time_s", "rows"}`` of sim train replaying ``inputs`` (:data:`real.train_compare.Simulate`)."""
    result = simulate(scenario_of(inputs), events=True, measured=measured_costs(inputs))
    rows = [dict(row, step=0, micro_batch=-1) for row in trace_rows(result)]
    return {"step_time_s": result.step_time_s, "rows": rows}
