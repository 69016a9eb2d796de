"""Fixtures of the training tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def torch_schedule():
    """``make(schedule, stages, chunks, micro_batches)``: torch's ScheduleInterleaved1F1B or
    ScheduleInterleavedZeroBubble with just the fields its op order needs (no real stages)."""
    schedules = pytest.importorskip("torch.distributed.pipelining.schedules")

    def make(schedule: str, stages: int, chunks: int, micro_batches: int) -> Any:
        cls = schedules.ScheduleInterleaved1F1B if schedule == "interleaved" else schedules.ScheduleInterleavedZeroBubble
        built = object.__new__(cls)
        rounds = max(1, micro_batches // stages)
        built.n_local_stages, built.pp_group_size, built._n_microbatches = chunks, stages, micro_batches
        built.microbatches_per_round = micro_batches // rounds
        return built

    return make
