"""A training step as a SimPy event simulation of one pipeline's ranks.

Data-parallel replicas and tensor-parallel peers run the same ops at the same times, so one
pipeline (tp, ep, dp rank 0) stands for all; the collectives' times come from
:class:`~sim.training.parallel.costs.CommCosts`, where every group of a kind runs at once on the
shared network. Each pipeline rank is a process walking its program
(:func:`~sim.training.parallel.schedule.rank_programs`): its ops in torch's order, each running
its layers' compute with the tensor parallel (and expert all_to_all) collectives inline on the
compute stream, and the posts and waits of its sends and receives where torch's schedule makes
them. A transfer starts once both its send and its receive are posted and takes its p2p time;
then both complete (a waiting rank blocks until then: a send, as gloo's and NCCL's
rendezvous sends, is not done before its receive is posted). Gradients are reduced over the
data-parallel group in buckets on a separate stream as the last micro-batch's backward produces
them (ZeRO 1/2: reduce-scatter, then an all-gather of the updated weights; ZeRO 3 also gathers
each chunk's weights before each forward and backward, prefetched during the previous op).
Replaying a measured run whose gradients were reduced otherwise (``MeasuredCosts.dp_after_schedule``:
``collsim real train``'s one flat all-reduce), a rank's whole gradients go in one call once its
program is done.
"""

from __future__ import annotations

from typing import Any

import simpy

from sim.training.parallel.costs import CommCosts
from sim.training.parallel.layout import Layout
from sim.training.parallel.measured import MeasuredCommCosts, MeasuredCosts
from sim.training.parallel.model import activation_bytes_per_layer
from sim.training.parallel.result import TrainResult
from sim.training.parallel.scenario import TrainScenario
from sim.training.parallel.schedule import Action, Message, Op, rank_programs
from sim.training.parallel.work import OpWork, op_work, row

__all__ = ["comm_costs", "simulate"]


def simulate(
    scenario: TrainScenario, events: bool = False, costs: CommCosts | None = None, measured: MeasuredCosts | None = None
) -> TrainResult:
    """Simulate one iteration of ``scenario``; ``events``: keep the per-op rows; ``measured``:
    measured compute and collective seconds in place of FLOPs at MFU and the preset's network."""
    from sim.hardware.presets import load_preset

    preset = load_preset(scenario.hardware)
    own = comm_costs(scenario)  # nothing is costed until asked
    layout, element = own.layout, own.element_bytes
    if measured is not None:
        measured.check(scenario.pp * scenario.chunks)
        costs = costs or MeasuredCommCosts(layout, element, measured)
    costs = costs or own
    peak = preset.gpu_peak_tflops[scenario.precision] * 1e12 * scenario.mfu
    hbm = 0.0 if scenario.free_comm or measured else hbm_Bps(preset.gpu_model)
    work = op_work(scenario, costs, peak, element, hbm, measured)
    run = _Pipeline(scenario, layout, costs, work, events)
    return run.result(float(preset.gpu_memory_bytes or "inf"))


def comm_costs(scenario: TrainScenario) -> CommCosts:
    """The preset's costs of ``scenario``'s collectives and sends, each costed once and kept: give
    the same one to several :func:`simulate` calls of the scenario to cost them once in all."""
    from sim.hardware.presets import load_preset

    layout = Layout(scenario.tp, scenario.ep, scenario.dp, scenario.pp, load_preset(scenario.hardware).gpus_per_node)
    return CommCosts(scenario.hardware, layout, 4 if scenario.precision == "fp32" else 2, scenario.free_comm)


class _Pipeline:
    def __init__(self, scenario: TrainScenario, layout: Layout, costs: CommCosts, work: OpWork, events: bool) -> None:
        self.s, self.layout, self.costs, self.work, self.keep = scenario, layout, costs, work, events
        self.env = simpy.Environment()
        self.ranks = layout.pipeline()
        self.virtual = scenario.pp * scenario.chunks
        self.arrived: dict[Message, simpy.Event] = {}
        self.posted: dict[Message, set[str]] = {}
        self.rows: list[dict[str, Any]] = []
        self.busy = [0.0] * scenario.pp
        self.end = [0.0] * scenario.pp
        self.finished = [0.0] * scenario.pp  # when each rank's program (its last op and wait) is done
        self.last_backward: dict[tuple[int, int], tuple[float, float]] = {}  # (rank, stage) -> (start, end) of its last B/W
        self.pp_wait = [0.0] * scenario.pp
        self.dp_free = [0.0] * scenario.pp
        programs = rank_programs(scenario.schedule, scenario.pp, scenario.micro_batches, scenario.chunks)
        processes = [self.env.process(self._rank(rank, program)) for rank, program in enumerate(programs)]
        self.env.run()
        if not all(process.triggered for process in processes):  # a rank left waiting: the programs do not match
            raise RuntimeError(f"sim train: a pipeline rank never got its send or receive ({scenario.schedule}, pp {scenario.pp})")

    def _done(self, message: Message) -> simpy.Event:
        if message not in self.arrived:
            self.arrived[message] = self.env.event()
        return self.arrived[message]

    def _rank(self, rank: int, program: list[Action]):
        previous_start = 0.0
        for action in program:
            if action.kind == "post":
                for side, messages in (("send", action.sends), ("recv", action.receives)):
                    for message in messages:
                        self._post(message, side)
            elif action.kind == "wait":
                ready = self.env.now
                pending = [self._done(m) for m in (*action.sends, *action.receives) if not self._done(m).triggered]
                if pending:
                    yield self.env.all_of(pending)
                self.pp_wait[rank] += self.env.now - ready
            else:
                start = yield from self._run_op(rank, action.op, previous_start)
                previous_start = start
        self.finished[rank] = self.env.now

    def _run_op(self, rank: int, op: Op, previous_start: float):
        gathered = self._zero3_gather(rank, previous_start)
        if gathered > self.env.now:
            yield self.env.timeout(gathered - self.env.now)
        start = self.env.now
        duration = self.work.duration_s(op, self.virtual)
        yield self.env.timeout(duration)
        self.busy[rank] += duration
        self.end[rank] = self.env.now
        if self.keep:
            self.rows.extend(self.work.rows(self.ranks[rank], op, start, self.virtual, self.layout))
        self._zero3_reduce(rank, op)
        if op.kind in ("B", "W") and op.micro_batch == self.s.micro_batches - 1:
            self.last_backward[rank, op.stage] = (start, self.env.now)
        return start

    def _post(self, message: Message, side: str) -> None:
        """A send or receive is posted; once both are, the transfer runs and then both complete."""
        posted = self.posted.setdefault(message, set())
        posted.add(side)
        if len(posted) < 2:
            return
        source = (message.stage + (-1 if message.direction == "act" else 1)) % self.s.pp
        src, dst = self.ranks[source], self.ranks[message.stage % self.s.pp]
        delay = self.work.boundary_s(src, dst)  # the send (and scatter/gather's all-gather)
        done = self._done(message)
        if self.keep and src != dst:
            self.rows.append(row(src, "pp", "send_recv", f"{message.direction} mb{message.micro_batch}", self.env.now,
                                 self.env.now + delay, self.work.boundary_bytes, dst))  # fmt: skip
        self.env.timeout(delay).callbacks.append(lambda _: done.succeed())

    def _zero3_gather(self, rank: int, previous_start: float) -> float:
        if self.s.zero < 3:
            return 0.0
        cost = self.work.zero3_gather_s
        start = max(previous_start, self.dp_free[rank])
        self.dp_free[rank] = start + cost
        return start + cost

    def _zero3_reduce(self, rank: int, op: Op) -> None:
        if self.s.zero == 3 and op.kind in ("B", "W"):
            self.dp_free[rank] = max(self.dp_free[rank], self.env.now) + self.work.zero3_reduce_s

    def _dp_calls(self, rank: int) -> list[tuple[float, str, tuple[float, ...]]]:
        """``rank``'s DP gradient calls: (when ready, name, the bytes of each collective), in order.
        DDP: bucket i of a chunk once its last backward has covered its share of the layers;
        measured ``dp_after_schedule``: one flat call of every chunk's gradients when the schedule is done."""
        measured = self.work.measured
        if measured is not None and measured.dp_after_schedule:
            return [(self.finished[rank], "gradients", (self.work.chunk_grad_bytes * self.s.chunks,))]
        buckets = self.work.dp_buckets
        ready = []
        for (owner, _), (start, end) in self.last_backward.items():
            if owner == rank:
                ready.extend((start + (index + 1) / len(buckets) * (end - start), index) for index in range(len(buckets)))
        return [(moment, "gradient bucket", buckets[index][1]) for moment, index in sorted(ready)]

    def _dp_end(self, rank: int) -> float:
        """When ``rank``'s gradient buckets are reduced (and ZeRO's weights gathered)."""
        free = self.dp_free[rank]
        group = self.layout.group("dense_dp", self.ranks[rank])
        for moment, name, calls in self._dp_calls(rank):
            for nbytes in calls:  # the bucket's collectives (a comm hook's all-reduces), one after another
                cost = self.work.dp_call_s(nbytes)
                begin = max(free, moment)
                free = begin + cost
                if self.keep and cost:
                    self.rows.append(row(self.ranks[rank], "dp", self.work.dp_op, name, begin, free, nbytes, -1, group))
        return max(free, self.end[rank]) + self.work.after_step_s

    def result(self, memory_limit: float) -> TrainResult:
        s, work = self.s, self.work
        dp_ends = [self._dp_end(rank) for rank in range(s.pp)]
        step = max(dp_ends)
        compute_end = max(self.end)
        slowest = max(range(s.pp), key=lambda rank: self.busy[rank])
        per_op = work.totals(s.micro_batches, self.virtual, slowest, s.pp)
        bubble = sum(1.0 - busy / compute_end for busy in self.busy) / s.pp if compute_end else 0.0
        flops = s.spec().model_flops(s.global_batch)
        peak = work.peak_flops / s.mfu
        return TrainResult(
            step_time_s=step, compute_s=per_op["compute"], tp_s=per_op["tp"], ep_s=per_op["ep"],
            pp_exposed_s=self.pp_wait[slowest],
            dp_exposed_s=step - compute_end, bubble_fraction=bubble, micro_batches=s.micro_batches, model_flops=flops,
            mfu_achieved=flops / (step * peak * s.gpus) if step else 0.0,
            memory_bytes=memory_per_gpu(s), memory_limit_bytes=memory_limit,
            tokens_per_s=s.global_batch * s.seq_len / step if step else 0.0,
            bytes_by_kind=work.bytes_by_kind(s), events=sorted(self.rows, key=lambda row: (row["start_s"], row["rank"])),
            notes=tuple(self.costs.notes.values()),
            layout={"tp": s.tp, "ep": s.ep, "dp": s.dp, "pp": s.pp, "gpus_per_node": self.layout.gpus_per_node},
        )  # fmt: skip


# HBM bandwidth per GPU, datasheets: A100 80GB SXM 2,039 GB/s (40GB 1,555), H100 SXM 3.35 TB/s,
# H200 4.8 TB/s, B200 8 TB/s (nvidia.com data-center datasheets).
HBM_Bps = (
    ("A100", "40GB", 1555e9),
    ("A100", "", 2039e9),
    ("H100", "", 3.35e12),
    ("H200", "", 4.8e12),
    ("B200", "", 8e12),
    ("GB200", "", 8e12),
)


def hbm_Bps(gpu_model: str) -> float:
    """The GPU's HBM bandwidth from :data:`HBM_Bps` (0 where unknown: no element-wise time)."""
    for name, variant, rate in HBM_Bps:
        if name in (gpu_model or "") and variant in gpu_model:
            return rate
    return 0.0


def memory_per_gpu(s: TrainScenario) -> float:
    """Bytes on the fullest pipeline rank's GPU (the first, with equal stages): model states
    (ZeRO-sharded; the embedding on the first and last rank) and the activations in flight."""
    return max(_rank_memory(s, rank) for rank in range(s.pp))


def _rank_memory(s: TrainScenario, rank: int) -> float:
    spec = s.spec()
    layers = s.rank_layers(rank)
    embedding = spec.embedding_params() if rank in (0, s.pp - 1) else 0
    params = (layers * (spec.attention_params() + max(spec.experts, 1) * spec.mlp_params() // s.ep) + embedding) / s.tp
    sharded = {0: 0.0, 1: 12.0, 2: 14.0, 3: 16.0}[s.zero]
    states = params * ((16.0 - sharded) + sharded / s.dp)
    in_flight = s.micro_batches if s.schedule == "gpipe" else min(s.pp - rank, s.micro_batches)
    if s.chunks > 1:
        in_flight *= 1.0 + (s.pp - 1) / (s.pp * s.chunks)
    per_layer = activation_bytes_per_layer(spec, s.micro_batch, s.tp, s.sequence_parallel, s.recompute, s.attention)
    return states + layers * per_layer * in_flight
