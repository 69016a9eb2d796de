"""Each pipeline rank's op order, as ``torch.distributed.pipelining`` orders it.

An op is (kind, micro-batch, stage): kind F (forward), B (full backward), I (backward for the
inputs) or W (backward for the weights); stage is the global virtual stage (chunk x p + rank),
as torch numbers stages. The orders, idle slots dropped, are those of torch 2.x
``torch/distributed/pipelining/schedules.py``:

- gpipe (ScheduleGPipe): every forward, then every backward, micro-batches in order;
- 1f1b (Schedule1F1B): min(m, p - rank) forwards, then backward/forward pairs, then backwards;
- interleaved (ScheduleInterleaved1F1B): ``_get_warmup_ops`` with factor 2, then 1F1B, forwards
  walking chunks in rounds of ``m // max(1, m // p)`` micro-batches, backwards in reverse;
- zero-bubble (ScheduleInterleavedZeroBubble, ZB1P of Qi et al. 2024): factor 1, backward split
  into I and W, each rank deferring the W of its first ``rank`` backwards.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

__all__ = ["Op", "rank_ops"]


class Op(NamedTuple):
    kind: str  # F, B, I, W
    micro_batch: int
    stage: int  # global virtual stage: chunk * p + rank


def rank_ops(schedule: str, rank: int, stages: int, micro_batches: int, chunks: int = 1) -> list[Op]:
    """The ops ``rank`` (0..stages-1) runs, in order."""
    if schedule == "gpipe":
        return [Op("F", mb, rank) for mb in range(micro_batches)] + [Op("B", mb, rank) for mb in range(micro_batches)]
    if schedule == "1f1b" and chunks == 1:
        return _one_f_one_b(rank, stages, micro_batches)
    zero_bubble = schedule == "zero-bubble"
    return _interleaved(rank, stages, micro_batches, chunks, zero_bubble)


def _one_f_one_b(rank: int, stages: int, micro_batches: int) -> list[Op]:
    warmup = min(micro_batches, stages - rank)
    ops = [Op("F", mb, rank) for mb in range(warmup)]
    for backward in range(micro_batches):
        ops.append(Op("B", backward, rank))
        if warmup + backward < micro_batches:
            ops.append(Op("F", warmup + backward, rank))
    return ops


def _interleaved(rank: int, stages: int, micro_batches: int, chunks: int, zero_bubble: bool) -> list[Op]:
    per_round = micro_batches // max(1, micro_batches // stages)
    factor = 1 if zero_bubble else 2
    warmup = min((chunks - 1) * per_round + factor * (stages - 1 - rank), micro_batches * chunks)
    total_ops = chunks * micro_batches

    def forward_stage(step: int) -> int:
        return (step // per_round) % chunks * stages + rank

    def backward_stage(step: int) -> int:
        return (chunks - 1 - ((step - warmup) // per_round) % chunks) * stages + rank

    counters: dict[tuple[str, int], int] = defaultdict(int)
    ops: list[Op] = []
    backwards: list[int] = []

    def take(kind: str, stage: int) -> None:
        ops.append(Op(kind, counters[kind, stage], stage))
        counters[kind, stage] += 1

    def weight_if_due(step: int) -> None:
        if zero_bubble and step - warmup >= rank:
            take("W", backward_stage(backwards[len([op for op in ops if op.kind == "W"])]))

    for step in range(warmup + total_ops):
        if step < total_ops:
            take("F", forward_stage(step))
        if step >= warmup:
            take("I" if zero_bubble else "B", backward_stage(step))
            backwards.append(step)
            weight_if_due(step)
    while zero_bubble and sum(op.kind == "W" for op in ops) < len(backwards):
        take("W", backward_stage(backwards[sum(op.kind == "W" for op in ops)]))
    return ops
