"""Per-rank timeline of ``collsim real train``: rows of (rank, stream, kind, name, start_s, end_s,
bytes, peer, group, step, micro_batch), seconds since the step's start (after a barrier).

Streams: ``compute`` (kind ``compute``: a micro-batch's forward or backward, named ``fwd mb3
stage0``, cut into one row per stretch between TP all-reduces, so compute and TP rows never
overlap and a Chakra replay does not count the all-reduces twice), ``tp`` (kind ``all_reduce``), ``pp`` (kinds ``send`` and ``recv``:
issued when the schedule posts them, ended when it waits for them), ``dp`` (kind ``all_reduce``,
gradients after the schedule). Each layer's forward and backward is also timed (the TP
all-reduces inside subtracted) for the measured compute the simulator is fed with.

The pipeline's sends and receives are posted by ``torch.distributed.pipelining``'s schedules
through its module function ``_batch_p2p``; :func:`record_pipeline_p2p` wraps that function in
this rank's process (and nowhere else) to time them, and :class:`TimedStage` names each one
(direction, micro-batch) from the stage's ``get_*_ops`` calls.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Timeline", "TimedStage", "record_pipeline_p2p", "ROW_FIELDS"]

ROW_FIELDS = ("rank", "stream", "kind", "name", "start_s", "end_s", "bytes", "peer", "group", "step", "micro_batch")


@dataclass
class Timeline:
    """What one rank did in the measured steps; ``recording`` False during warm-up."""

    rank: int
    tp_group: list[int]
    dp_group: list[int]
    recording: bool = False
    step: int = -1
    micro_batch: int = -1
    phase: str = "fwd"
    origin: float = 0.0
    rows: list[dict[str, Any]] = field(default_factory=list)
    layer_forward_s: dict[int, list[float]] = field(default_factory=dict)
    layer_backward_s: dict[int, list[float]] = field(default_factory=dict)
    _backward_start: dict[int, float] = field(default_factory=dict)
    _tp_busy: list[tuple[float, float]] = field(default_factory=list)
    _segment: tuple[str, float] | None = None

    def start_step(self, step: int, recording: bool) -> None:
        self.step, self.recording, self.origin = step, recording, time.perf_counter()

    def add(self, stream: str, kind: str, name: str, start: float, end: float, nbytes: int = 0, peer: int = -1,
            group: list[int] | None = None) -> None:  # fmt: skip
        if self.recording:
            values = (
                self.rank,
                stream,
                kind,
                name,
                start - self.origin,
                end - self.origin,
                nbytes,
                peer,
                group or [],
                self.step,
                self.micro_batch,
            )
            self.rows.append(dict(zip(ROW_FIELDS, values)))

    def open_segment(self, name: str, start: float) -> None:
        """A micro-batch's forward or backward starts: its compute runs until the next TP all-reduce."""
        self._segment = (name, start)

    def close_segment(self, end: float) -> None:
        if self._segment is not None:
            self.add("compute", "compute", self._segment[0], self._segment[1], end)
        self._segment = None

    def tp_all_reduce(self, label: str, start: float, end: float, nbytes: int) -> None:
        self._tp_busy.append((start, end))
        if self._segment is not None:  # compute rows stop at each TP all-reduce and resume after it
            name = self._segment[0]
            self.close_segment(start)
            self.open_segment(name, end)
        self.add("tp", "all_reduce", f"{self.phase} mb{self.micro_batch} {label}", start, end, nbytes, group=self.tp_group)

    def _tp_inside(self, start: float, end: float) -> float:
        return sum(max(0.0, min(end, b) - max(start, a)) for a, b in self._tp_busy)

    def layer_forward(self, layer: int, start: float, end: float) -> None:
        if self.recording:
            self.layer_forward_s.setdefault(layer, []).append(end - start - self._tp_inside(start, end))

    def backward_edge(self, layer: int, edge: str, at: float) -> None:
        if edge == "start":
            self._backward_start[layer] = at
        elif self.recording and layer in self._backward_start:
            start = self._backward_start.pop(layer)
            self.layer_backward_s.setdefault(layer, []).append(at - start - self._tp_inside(start, at))

    def last_end_s(self, default: float) -> float:
        """The end of this step's last compute, TP or PP row (seconds since the step's start; the
        DP all-reduce left out): when the rank's last op or wait was done; ``default`` without one."""
        return max((row["end_s"] for row in self.rows if row["step"] == self.step and row["stream"] != "dp"), default=default)

    def end_step(self) -> None:
        self._tp_busy = []


def timed_stage_class() -> type:
    """``PipelineStage`` subclass that times each micro-batch and names its sends and receives."""
    from torch.distributed.pipelining import PipelineStage

    class _TimedStage(PipelineStage):
        def __init__(self, *args: Any, timeline: Timeline, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.timeline, self.p2p_names = timeline, {}

        def _named(self, ops: list, direction: str, micro_batch: int, source: int, target: int) -> list:
            # the same name on both ends: "fwd mb3 stage0->1"
            for op in ops:
                self.p2p_names[id(op)] = (f"{direction} mb{micro_batch} stage{source}->{target}", micro_batch)
            return ops

        def get_fwd_recv_ops(self, fwd_chunk_id: int) -> list:
            return self._named(super().get_fwd_recv_ops(fwd_chunk_id), "fwd", fwd_chunk_id, self.stage_index - 1, self.stage_index)

        def get_fwd_send_ops(self, fwd_chunk_id: int) -> list:
            return self._named(super().get_fwd_send_ops(fwd_chunk_id), "fwd", fwd_chunk_id, self.stage_index, self.stage_index + 1)

        def get_bwd_recv_ops(self, bwd_chunk_id: int) -> list:
            return self._named(super().get_bwd_recv_ops(bwd_chunk_id), "bwd", bwd_chunk_id, self.stage_index + 1, self.stage_index)

        def get_bwd_send_ops(self, bwd_chunk_id: int) -> list:
            return self._named(super().get_bwd_send_ops(bwd_chunk_id), "bwd", bwd_chunk_id, self.stage_index, self.stage_index - 1)

        def forward_one_chunk(self, fwd_chunk_id: int, *args: Any, **kwargs: Any) -> Any:
            return self._timed("fwd", fwd_chunk_id, super().forward_one_chunk, fwd_chunk_id, *args, **kwargs)

        def backward_one_chunk(self, bwd_chunk_id: int, *args: Any, **kwargs: Any) -> Any:
            return self._timed("bwd", bwd_chunk_id, super().backward_one_chunk, bwd_chunk_id, *args, **kwargs)

        def _timed(self, phase: str, micro_batch: int, call: Any, *args: Any, **kwargs: Any) -> Any:
            timeline = self.timeline
            timeline.phase, timeline.micro_batch = phase, micro_batch
            timeline.open_segment(f"{phase} mb{micro_batch} stage{self.stage_index}", time.perf_counter())
            result = call(*args, **kwargs)
            timeline.close_segment(time.perf_counter())
            return result

    return _TimedStage


TimedStage = timed_stage_class  # the class is built on first use (torch imported lazily)


class _TimedWork:
    """A posted send or receive: ``wait`` records its row."""

    def __init__(self, work: Any, rows: list[tuple]) -> None:
        self.work, self.pending = work, rows

    def wait(self, *args: Any) -> Any:
        result = self.work.wait(*args)
        end = time.perf_counter()
        for timeline, kind, name, micro_batch, start, nbytes, peer in self.pending:
            saved, timeline.micro_batch = timeline.micro_batch, micro_batch
            timeline.add("pp", kind, name, start, end, nbytes, peer)
            timeline.micro_batch = saved
        self.pending = []
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.work, name)


def record_pipeline_p2p(stages: list[Any]) -> None:
    """Wrap ``torch.distributed.pipelining.schedules._batch_p2p`` (this process only) so every
    send and receive the schedules post is timed on the timeline of the stage that named it."""
    import torch.distributed as dist
    from torch.distributed.pipelining import schedules

    original = getattr(schedules._batch_p2p, "__wrapped__", schedules._batch_p2p)

    def timed_batch_p2p(p2p_ops: list, desc: str | None = None) -> list:
        start = time.perf_counter()
        posted = []
        for op in p2p_ops:
            stage = next((s for s in stages if id(op) in s.p2p_names), None)
            if stage is None:
                continue
            name, micro_batch = stage.p2p_names.pop(id(op))
            kind = "send" if op.op is dist.isend else "recv"
            nbytes = op.tensor.numel() * op.tensor.element_size()
            posted.append((stage.timeline, kind, name, micro_batch, start, nbytes, op.peer))
        works = original(p2p_ops, desc)
        if len(works) == len(posted):
            return [_TimedWork(work, [row]) for work, row in zip(works, posted)]
        return [_TimedWork(work, posted if index == len(works) - 1 else []) for index, work in enumerate(works)]

    timed_batch_p2p.__wrapped__ = original
    schedules._batch_p2p = timed_batch_p2p
