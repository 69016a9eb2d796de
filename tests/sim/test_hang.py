"""collsim sim hang: bounded matching, verdicts, the tools' messages, mutations, bad input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.errors import CollsimError
from sim.hang import CASES, explain, parse_programs
from sim.hang.cli import mutate

AR = {"op": "all_reduce", "count": 8}


@pytest.mark.slow  # the first explain imports networkx
def test_matching_programs_complete_with_no_tool_line() -> None:
    report = explain({"ranks": [[AR, AR], [AR, AR]]})
    assert report.verdict == "completes" and report.tools == ()


def test_skipped_collective_names_the_missing_rank_and_the_watchdog_sequence_numbers() -> None:
    report = explain(CASES["skipped"], timeout_s=600)
    assert report.verdict == "missing_party" and report.missing == (1,)
    (line,) = report.lines("nccl")
    assert (
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000)"
        in line.message
    )
    assert "last enqueued NCCL work: 2, last completed NCCL work: 1." in line.message
    assert report.ranks[1].first_divergence.startswith("never calls world #2")


def test_two_groups_in_opposite_orders_is_a_wait_for_cycle() -> None:
    report = explain(CASES["swapped"])
    assert report.verdict == "deadlock" and sorted(report.cycle) == [0, 1]
    assert json.loads(json.dumps(report.to_dict()))["cycle"] == list(report.cycle)  # plain data for a page


def test_a_stall_shorter_than_the_timeout_only_delays() -> None:
    stalled = {"ranks": [[AR], [{"op": "stall", "seconds": 5}, AR]]}
    assert explain(stalled, timeout_s=10).verdict == "completes"
    assert explain(stalled, timeout_s=5).verdict == "missing_party"
    with pytest.raises(CollsimError, match="timeout_s"):
        explain(stalled, timeout_s=0)


def test_size_mismatch_aborts_the_smaller_gloo_rank_and_detail_counts_from_zero() -> None:
    report = explain(CASES["size_mismatch"])
    gloo = {line.rank: line for line in report.lines("gloo")}
    assert gloo[0].outcome == "abort" and "2048 vs 1024" in gloo[0].message
    assert gloo[1].outcome == "error"
    detail = report.lines("gloo_detail")[0].message
    assert "SequenceNumber=0, OpType=ALLREDUCE, TensorShape=[1024]" in detail and "Tensor Tensor shapes: 1024vs 2048" in detail


def test_barrier_fingerprint_keeps_torchs_missing_comma() -> None:
    report = explain({"ranks": [[{"op": "barrier"}], [AR]]})
    assert "CollectiveFingerPrint(SequenceNumber=0OpType=BARRIER)" in report.lines("gloo_detail")[0].message


def test_unpaired_send_times_out_on_the_send_side_and_detail_does_not_check_it() -> None:
    report = explain(CASES["unpaired_send"], timeout_s=3)
    assert [line.message for line in report.lines("gloo")] == ["Timed out waiting 3000ms for send operation to complete"]
    assert report.lines("gloo_detail")[0].message == report.lines("gloo")[0].message


def test_flight_recorder_culprit_of_an_op_mismatch() -> None:
    assert explain(CASES["op_mismatch"]).flight_recorder["culprits"] == {1: "COLLECTIVE_TYPE_MISMATCH"}


def test_mutations_break_a_working_program() -> None:
    base = {"ranks": [[AR, {**AR, "count": 4}], [AR, {**AR, "count": 4}]]}
    assert explain(mutate(base, "skip", "1:0")).verdict == "mismatch"
    assert explain(mutate(base, "resize", "0:1:5")).mismatches[0]["differences"] == ["count"]
    assert explain(mutate(base, "dies", "1:1")).ranks[1].state == "dead"
    with pytest.raises(CollsimError, match="--swap"):
        mutate(base, "swap", "0:1")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"ranks": [[{"op": "allreduce"}]]}, "op 'allreduce' is not one of"),
        ({"ranks": [[{"op": "send", "peer": 0}], []]}, "must be another rank"),
        ({"ranks": [[AR]], "groups": {"g": [0, 3]}}, "groups: g must list ranks of 0..0"),
        ({"ranks": [[{**AR, "count": -1}]]}, "count must be a whole number"),
        ({"ranks": [[AR]] * 1025}, "up to 1,024"),
        ({"rank": []}, "unknown key"),
    ],
)
def test_bad_programs_get_one_message(data: dict, words: str) -> None:
    with pytest.raises(CollsimError, match=words):
        parse_programs(data)


_CALL = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["all_reduce", "broadcast", "barrier", "send", "recv", "die", "stall"]),
        "count": st.integers(1, 3),
        "group": st.sampled_from(["world", "a"]),
    }
)


def _program(draw_calls: list[list[dict]]) -> dict:
    ranks = []
    for rank, calls in enumerate(draw_calls):
        fixed = []
        for call in calls:
            call = dict(call)
            members = [0, 1, 2] if call["group"] == "world" else [0, 1]
            if rank not in members or call["op"] in ("die", "stall"):
                call["group"] = "world"
                members = [0, 1, 2]
            if call["op"] in ("send", "recv"):
                call["peer"] = next(m for m in members if m != rank)
            if call["op"] == "broadcast":
                call["root"] = members[0]
            if call["op"] in ("barrier", "die", "stall"):
                call.pop("count")
            fixed.append(call)
        ranks.append(fixed)
    return {"groups": {"a": [0, 1]}, "ranks": ranks}


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_CALL, max_size=8), min_size=3, max_size=3))
def test_any_program_gets_a_verdict_in_bounded_time(calls: list[list[dict]]) -> None:
    report = explain(_program(calls))
    assert report.verdict in ("completes", "mismatch", "deadlock", "missing_party")
    stuck = [r for r in report.ranks if r.state in ("blocked", "mismatched")]
    assert (report.verdict == "completes") == (not stuck)  # a rank that stops with no one waiting hangs nobody
    for rank in report.ranks:  # a blocked rank waits for someone, and a cycle only joins blocked ranks
        assert rank.state != "blocked" or rank.waits_for
    assert all(report.ranks[r].state == "blocked" for r in report.cycle)


def test_without_a_timeout_each_backend_has_torchs_default() -> None:
    report = explain(CASES["skipped"])
    assert "Timeout(ms)=600000)" in report.lines("nccl")[0].message
    assert report.lines("gloo")[0].message == "Timed out waiting 1800000ms for recv operation to complete"


def test_a_cycle_across_groups_says_when_nccl_streams_deadlock_and_gloo_always_does() -> None:
    report = explain(CASES["swapped"])
    notes = [line for line in report.lines("nccl") if line.outcome == "note"]
    assert [line.rank for line in notes] == [0]
    assert "groups a and b" in notes[0].message and "async_op=False (the default)" in notes[0].message
    assert "async_op=True" in notes[0].message and "may both run and complete" in notes[0].message
    assert [line.outcome for line in report.lines("nccl") if line.outcome != "note"] == ["timeout", "timeout"]
    assert all(line.outcome == "timeout" for line in report.lines("gloo"))


def test_a_hang_in_one_group_has_no_stream_note() -> None:
    for name in ("skipped", "unpaired_send", "rank_dies"):
        assert all(line.outcome != "note" for line in explain(CASES[name]).tools)
    one_group_cycle = {"ranks": [[{"op": "recv", "count": 4, "peer": 1}], [{"op": "recv", "count": 4, "peer": 0}]]}
    report = explain(one_group_cycle)
    assert report.verdict == "deadlock" and all(line.outcome != "note" for line in report.tools)
