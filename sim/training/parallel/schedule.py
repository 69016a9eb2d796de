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

__all__ = ["Action", "Message", "Op", "rank_ops", "rank_programs"]


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
    return [op for op in _interleaved(rank, stages, micro_batches, chunks, zero_bubble) if op is not None]


def _one_f_one_b(rank: int, stages: int, micro_batches: int) -> list[Op]:
    warmup = min(micro_batches, stages - rank)
    ops = [Op("F", mb, rank) for mb in range(warmup)]
    for backward in range(micro_batches):
        ops.append(Op("B", backward, rank))
        if warmup + backward < micro_batches:
            ops.append(Op("F", warmup + backward, rank))
    return ops


def _interleaved(rank: int, stages: int, micro_batches: int, chunks: int, zero_bubble: bool) -> list[Op | None]:
    """torch's ``_get_1f1b_rank_ops``, its idle slots (None) kept."""
    per_round = micro_batches // max(1, micro_batches // stages)
    factor = 1 if zero_bubble else 2
    warmup = min((chunks - 1) * per_round + factor * (stages - 1 - rank), micro_batches * chunks)
    total_ops = chunks * micro_batches

    def forward_stage(step: int) -> int:
        return (step // per_round) % chunks * stages + rank

    def backward_stage(step: int) -> int:
        return (chunks - 1 - ((step - warmup) // per_round) % chunks) * stages + rank

    counters: dict[tuple[str, int], int] = defaultdict(int)
    ops: list[Op | None] = [None] * rank
    idle_after_warmup = stages - rank - 1 if zero_bubble else chunks * stages + 2 * (stages - 1 - rank) - (warmup + rank)
    backwards: list[int] = []

    def take(kind: str, stage: int) -> None:
        ops.append(Op(kind, counters[kind, stage], stage))
        counters[kind, stage] += 1

    def weight_if_due(step: int) -> None:
        if zero_bubble and step - warmup >= rank:
            take("W", backward_stage(backwards[_count(ops, "W")]))

    for step in range(warmup + total_ops):
        if step < total_ops:
            take("F", forward_stage(step))
        if step == warmup - 1:
            ops.extend([None] * idle_after_warmup)
        if step >= total_ops and not zero_bubble:
            ops.append(None)
        if step >= warmup:
            take("I" if zero_bubble else "B", backward_stage(step))
            backwards.append(step)
            weight_if_due(step)
    while zero_bubble and _count(ops, "W") < len(backwards):
        take("W", backward_stage(backwards[_count(ops, "W")]))
    return ops


def _count(ops: list[Op | None], kind: str) -> int:
    return sum(op is not None and op.kind == kind for op in ops)


# -- when each rank posts and waits for its sends and receives ---------------------------------
#
# torch's schedules block on their point-to-point works (torch 2.x schedules.py): a receive's
# work is waited before the op that needs it; a send's work where each schedule waits for it:
# ScheduleGPipe after all forwards and after all backwards; Schedule1F1B before posting the next
# send in warm-up and cool-down, and in steady state posted together with the next receive and
# waited with it (its ``fwd_send_bwd_recv`` / ``bwd_send_fwd_recv`` batches); the runtime
# schedules (interleaved, zero-bubble: ``_PipelineScheduleRuntime``) at the step's end, their
# receives placed by ``_add_send_recv`` on the padded orders. A send completes when its receive
# is posted and the transfer is done.


class Message(NamedTuple):
    direction: str  # "act" (forward, into ``stage``) or "grad" (backward, into ``stage``)
    micro_batch: int
    stage: int  # the receiving virtual stage


class Action(NamedTuple):
    """One step of a rank's program: ``compute`` an op, ``post`` sends and receives, ``wait`` for them."""

    kind: str  # compute, post, wait
    op: Op | None = None
    sends: tuple[Message, ...] = ()
    receives: tuple[Message, ...] = ()


def receive_of(op: Op, stages: int, virtual: int) -> Message | None:
    """The message ``op`` needs from another rank (None: none, or its neighbour stage is on this rank)."""
    if op.kind == "F" and op.stage > 0 and (op.stage - 1) % stages != op.stage % stages:
        return Message("act", op.micro_batch, op.stage)
    if op.kind in ("B", "I") and op.stage < virtual - 1 and (op.stage + 1) % stages != op.stage % stages:
        return Message("grad", op.micro_batch, op.stage)
    return None


def send_of(op: Op, stages: int, virtual: int) -> Message | None:
    """The message ``op`` sends to another rank (None: none, or its neighbour stage is on this rank)."""
    if op.kind == "F" and op.stage < virtual - 1 and (op.stage + 1) % stages != op.stage % stages:
        return Message("act", op.micro_batch, op.stage + 1)
    if op.kind in ("B", "I") and op.stage > 0 and (op.stage - 1) % stages != op.stage % stages:
        return Message("grad", op.micro_batch, op.stage - 1)
    return None


def rank_programs(schedule: str, stages: int, micro_batches: int, chunks: int = 1) -> list[list[Action]]:
    """Every rank's program: its ops with the posts and waits of its sends and receives, as torch's schedule runs them."""
    if schedule == "gpipe":
        programs = [_gpipe_program(rank, stages, micro_batches) for rank in range(stages)]
    elif schedule == "1f1b" and chunks == 1:
        programs = [_one_f_one_b_program(rank, stages, micro_batches) for rank in range(stages)]
    else:
        programs = _runtime_programs(schedule, stages, micro_batches, chunks)
    return [[a for a in program if a.kind == "compute" or a.sends or a.receives] for program in programs]


def _compute(op: Op, stages: int, virtual: int) -> list[Action]:
    """Post and wait for the op's receive, run it (the blocking receive of ScheduleGPipe and Schedule1F1B)."""
    receive = receive_of(op, stages, virtual)
    if receive is None:
        return [Action("compute", op)]
    return [Action("post", receives=(receive,)), Action("wait", receives=(receive,)), Action("compute", op)]


def _gpipe_program(rank: int, stages: int, micro_batches: int) -> list[Action]:
    program: list[Action] = []
    for kind in ("F", "B"):
        pending: list[Message] = []
        for micro_batch in range(micro_batches):
            op = Op(kind, micro_batch, rank)
            program += _compute(op, stages, stages)
            send = send_of(op, stages, stages)
            if send:
                program.append(Action("post", sends=(send,)))
                pending.append(send)
        program.append(Action("wait", sends=tuple(pending)))
    return program


def _batch(sends: tuple[Message, ...], receives: tuple[Message, ...]) -> list[Action]:
    """``_wait_batch_p2p(_batch_p2p(ops))``: post the sends and receives together, wait for all."""
    if not sends and not receives:
        return []
    return [Action("post", sends=sends, receives=receives), Action("wait", sends=sends, receives=receives)]


def _one_f_one_b_program(rank: int, stages: int, micro_batches: int) -> list[Action]:
    """Schedule1F1B._step_microbatches: warm-up, 1B1F with fused send/receive batches, cool-down."""

    def receives(op: Op) -> tuple[Message, ...]:
        return tuple(m for m in (receive_of(op, stages, stages),) if m)

    def sends(op: Op) -> tuple[Message, ...]:
        return tuple(m for m in (send_of(op, stages, stages),) if m)

    warmup = min(micro_batches, stages - rank)
    program: list[Action] = []
    send_work: tuple[Message, ...] = ()
    forward_sends: tuple[Message, ...] = ()
    forward = backward = 0
    for _ in range(warmup):
        op = Op("F", forward, rank)
        program += _batch((), receives(op)) + [Action("compute", op), Action("wait", sends=send_work)]
        forward_sends = sends(op)
        if forward != warmup - 1:  # the last warm-up send is fused with the first backward's receive
            send_work = forward_sends
            program.append(Action("post", sends=send_work))
        forward += 1
    while True:
        op = Op("B", backward, rank)
        program += _batch(forward_sends, receives(op)) + [Action("compute", op)]
        backward_sends, backward = sends(op), backward + 1
        if forward == micro_batches:
            break
        op = Op("F", forward, rank)
        program += _batch(backward_sends, receives(op)) + [Action("compute", op)]
        forward_sends, forward = sends(op), forward + 1
    send_work = backward_sends
    program.append(Action("post", sends=send_work))
    while backward < micro_batches:
        op = Op("B", backward, rank)
        program += _batch((), receives(op)) + [Action("compute", op), Action("wait", sends=send_work)]
        send_work, backward = sends(op), backward + 1
        program.append(Action("post", sends=send_work))
    return program + [Action("wait", sends=send_work)]


def _padded_orders(schedule: str, stages: int, micro_batches: int, chunks: int) -> dict[int, list[Op | None]]:
    """Every rank's ``pipeline_order`` with its idle slots; zero-bubble's bubbles added as
    ScheduleInterleavedZeroBubble._add_bubbles_to_actions adds them."""
    zero_bubble = schedule == "zero-bubble"
    orders = {rank: _interleaved(rank, stages, micro_batches, chunks, zero_bubble) for rank in range(stages)}
    return _with_bubbles(orders, stages * chunks) if zero_bubble else orders


def _with_bubbles(orders: dict[int, list[Op | None]], virtual: int) -> dict[int, list[Op | None]]:
    seen: set[Op] = set()
    result: dict[int, list[Op | None]] = {rank: [] for rank in orders}
    pointer = dict.fromkeys(orders, 0)
    while any(pointer[rank] < len(orders[rank]) for rank in orders):
        now_seen: set[Op] = set()
        for rank in sorted(orders):
            if pointer[rank] >= len(orders[rank]):
                continue
            op = orders[rank][pointer[rank]]
            if op is None or not _needs_bubble(op, virtual, seen):
                result[rank].append(op)
                pointer[rank] += 1
                if op is not None:
                    now_seen.add(op)
            else:
                result[rank].append(None)
        seen |= now_seen
    return result


def _needs_bubble(op: Op, virtual: int, seen: set[Op]) -> bool:
    if op.kind == "F":
        return op.stage != 0 and Op("F", op.micro_batch, op.stage - 1) not in seen
    if op.kind == "B":
        if op.stage == virtual - 1:
            return Op("F", op.micro_batch, op.stage) not in seen
        return Op("B", op.micro_batch, op.stage + 1) not in seen
    return False


def _runtime_programs(schedule: str, stages: int, micro_batches: int, chunks: int) -> list[list[Action]]:
    """``_PipelineScheduleRuntime``: ``_add_send_recv`` places each send after its op and the peer's
    receive where the peer's program stands then; a compute op waits for its receive; sends are
    waited at the step's end."""
    virtual = stages * chunks
    orders = _padded_orders(schedule, stages, micro_batches, chunks)
    lowered: dict[int, list[Action]] = {rank: [] for rank in orders}
    done: dict[int, set] = {rank: set() for rank in orders}
    while orders:
        progress = False
        for rank in sorted(orders):
            op = orders[rank][0]
            if op is not None and not _ready(op, virtual, done[rank]):
                continue
            if op is not None:
                _lower(op, rank, stages, virtual, lowered, done)
            orders[rank].pop(0)
            if not orders[rank]:
                del orders[rank]
            progress = True
        if not progress:
            raise AssertionError(f"{schedule}: torch's lowering cannot place the sends and receives")
    return [_runtime_program(lowered[rank], stages, virtual) for rank in range(stages)]


def _ready(op: Op, virtual: int, done: set) -> bool:
    """``_ready_to_schedule``: the op's receive is placed, or its input stage ran on this rank."""
    if op.kind == "F" and op.stage != 0:
        return ("recv", Message("act", op.micro_batch, op.stage)) in done or Op("F", op.micro_batch, op.stage - 1) in done
    if op.kind in ("B", "I") and op.stage != virtual - 1:
        upstream = {Op(kind, op.micro_batch, op.stage + 1) for kind in ("B", "I")}
        return ("recv", Message("grad", op.micro_batch, op.stage)) in done or bool(upstream & done)
    return True


def _lower(op: Op, rank: int, stages: int, virtual: int, lowered: dict[int, list[Action]], done: dict[int, set]) -> None:
    lowered[rank].append(Action("compute", op))
    done[rank].add(op)
    send = send_of(op, stages, virtual)
    if send is not None:
        peer = send.stage % stages
        lowered[rank].append(Action("post", sends=(send,)))
        lowered[peer].append(Action("post", receives=(send,)))
        done[peer].add(("recv", send))


def _runtime_program(lowered: list[Action], stages: int, virtual: int) -> list[Action]:
    program: list[Action] = []
    for action in lowered:
        receive = receive_of(action.op, stages, virtual) if action.kind == "compute" else None
        if receive is not None:
            program.append(Action("wait", receives=(receive,)))
        program.append(action)
    sends = tuple(message for action in lowered for message in action.sends)
    return program + [Action("wait", sends=sends)]
