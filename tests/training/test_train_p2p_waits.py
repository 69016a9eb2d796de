"""sim train's pipeline sends and receives block where torch.distributed.pipelining's schedules
wait for them (sim.training.parallel.schedule.rank_programs): closed forms on 2 stages, and the
runtime schedules' send/receive placement against torch's own lowering."""

from __future__ import annotations

import pytest

from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.measured import MeasuredCosts
from sim.training.parallel.schedule import rank_ops, rank_programs

SMALL = {"layers": 2, "hidden": 32, "heads": 2, "seq_len": 8, "micro_batch": 2, "precision": "fp32"}
NBYTES = 2 * 8 * 32 * 4  # b s h float32: one stage boundary
F, B, T = 1.0, 2.0, 0.25  # forward, backward, one transfer (seconds)


def _step(schedule: str, micro_batches: int) -> float:
    scenario = TrainScenario.from_dict({**SMALL, "global_batch": 2 * micro_batches, "pp": 2, "schedule": schedule})
    return simulate(scenario, measured=MeasuredCosts((F, F), (B, B), {"pp": (T, NBYTES)})).step_time_s


def test_one_f_one_b_forward_send_waits_for_the_next_stages_receive():
    # Schedule1F1B on 2 stages, 2 micro-batches: stage 0's second activation is sent fused with its
    # first gradient's receive, but stage 1 posts that receive only after its first backward, so
    # the transfer starts then (asynchronous sends would give 3F + 2T + 3B)
    assert _step("1f1b", 2) == pytest.approx(3 * F + 3 * T + 3 * B)


def test_gpipe_waits_for_all_forward_sends_before_its_backwards():
    # ScheduleGPipe: stage 0 waits for both activation sends (done when stage 1 posts each receive)
    # before posting its first gradient receive; the last gradient's transfer starts when stage 0
    # has finished its first backward and posts that receive (asynchronous sends: 3F + 2T + 3B)
    assert _step("gpipe", 2) == pytest.approx(3 * F + 4 * T + 3 * B)


@pytest.mark.parametrize("schedule,chunks", [("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("zero-bubble", 2)])
def test_each_message_is_sent_once_received_once_and_waited_before_its_op(schedule, chunks):
    stages, micro_batches = 4, 8
    programs = rank_programs(schedule, stages, micro_batches, chunks)
    sends = [m for program in programs for action in program if action.kind == "post" for m in action.sends]
    receives = [m for program in programs for action in program if action.kind == "post" for m in action.receives]
    assert len(sends) == len(set(sends)) and sorted(sends) == sorted(receives)
    assert len(sends) == 2 * micro_batches * (stages * chunks - 1)
    for rank, program in enumerate(programs):
        assert [a.op for a in program if a.kind == "compute"] == rank_ops(schedule, rank, stages, micro_batches, chunks)
        waited = set()
        for action in program:
            if action.kind == "wait":
                waited |= set(action.receives) | set(action.sends)
            elif action.kind == "compute" and action.op.kind in ("F", "B", "I") and action.op.stage % stages == rank:
                needed = [m for m in receives if m.micro_batch == action.op.micro_batch and m.stage == action.op.stage and
                          m.direction == ("act" if action.op.kind == "F" else "grad")]  # fmt: skip
                assert set(needed) <= waited
        assert {m for m in sends if (m.stage + (1 if m.direction == "grad" else -1)) % stages == rank} <= waited


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize("schedule", ["interleaved", "zero-bubble"])
@pytest.mark.parametrize("stages,chunks,micro_batches", [(4, 2, 8), (2, 3, 4), (4, 2, 12), (3, 2, 3), (2, 2, 4)])
def test_runtime_sends_and_receives_are_placed_as_torchs_lowering_places_them(schedule, stages, chunks, micro_batches, torch_schedule):
    from torch.distributed.pipelining.schedules import _add_send_recv

    theirs_schedule = torch_schedule(schedule, stages, chunks, micro_batches)
    theirs_schedule.pipeline_order = {rank: theirs_schedule._calculate_single_rank_operations(rank) for rank in range(stages)}
    if schedule == "zero-bubble":
        theirs_schedule.pipeline_order = theirs_schedule._add_bubbles_to_actions(stages * chunks)
    lowered = _add_send_recv(dict(theirs_schedule.pipeline_order), lambda stage: stage % stages, stages * chunks)
    names = {"SEND_F": "send act", "SEND_B": "send grad", "RECV_F": "recv act", "RECV_B": "recv grad"}
    for rank, program in enumerate(rank_programs(schedule, stages, micro_batches, chunks)):
        theirs = []
        for action in lowered[rank]:
            kind = action.computation_type.name
            if kind in names:
                theirs.append((names[kind], action.microbatch_index, action.stage_index))
            else:
                theirs.append((action.computation_type.value, action.microbatch_index, action.stage_index))
        ours = []
        for action in program:
            if action.kind == "compute":
                ours.append((action.op.kind, action.op.micro_batch, action.op.stage))
            for side, messages in (("send", action.sends), ("recv", action.receives)):
                for m in messages if action.kind == "post" else ():
                    # torch names a send by the sending stage, a receive by the receiving one
                    sender = m.stage - 1 if m.direction == "act" else m.stage + 1
                    ours.append((f"{side} {m.direction}", m.micro_batch, sender if side == "send" else m.stage))
        assert ours == theirs
