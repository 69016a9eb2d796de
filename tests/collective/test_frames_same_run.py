"""sim.collective.explore.run(frames=True) records buffer frames in the same run as the result (issue 11
item 1): cells of m elements each send exactly the scenario's messages, so the result is the
plain run's, and the frames are the miniature run's wherever the two runs finish their messages
in the same order."""

from __future__ import annotations

import pytest

from sim.algorithms.registry import algorithm_spec, algorithms_for, ops
from sim.collective import explore, runner
from sim.collective import frames as buffer_frames
from sim.scenario import CollectiveScenario

FIELDS = (
    "time_s",
    "total_time_s",
    "rank_end_s",
    "message_count",
    "bytes_sent",
    "steps",
    "analytic_time_s",
    "verified",
    "mode",
    "group_times_s",
)


def scenario(**fields) -> CollectiveScenario:
    base = {"op": "all_reduce", "algorithm": "ring", "ranks": 8, "size_bytes": "64MiB", "bandwidth": "25GB/s", "latency": "5us"}
    return CollectiveScenario.from_dict({**base, "reduce_bandwidth": "100GB/s", "record": "full", **fields})


def miniature(s: CollectiveScenario) -> CollectiveScenario:
    """Today's frames-only copy (before issue 11 item 1), spelled out here so the test does not
    follow a change of sim.collective.explore.miniature."""
    return s.replace(size_bytes=s.ranks * s.chunks * s.element_bytes, repetitions=1, overhead_s=0.0, verify=False, record="full")


def _grid(op: str, algorithm: str):
    chunks = (1, 2) if algorithm_spec(op, algorithm).chunked else (1,)
    for ranks in (2, 3, 4, 5, 8, 12):
        for k in chunks:
            cells = ranks * k * 4
            for size in (3 * cells, 3 * cells + 4, 4 * 2**20):  # 4 MiB: a multiple on 2, 4, 8 ranks
                for sharing in ("fifo", "fair"):
                    for topology in ("switch", "ring", "two_level") if size % cells == 0 else ("switch",):  # others: two runs, as before
                        fields = {"op": op, "algorithm": algorithm, "ranks": ranks, "chunks": k, "size_bytes": size}
                        fields.update(sharing=sharing, topology=topology)
                        if topology == "two_level":
                            if ranks % 2:
                                continue
                            fields.update(gpus_per_node=2, intra_bandwidth="200GB/s", intra_latency="1us")
                        try:
                            yield scenario(**fields)
                        except Exception:  # noqa: BLE001 - combinations the algorithm refuses
                            continue


def _records(result) -> tuple[list, list]:
    return list(result.messages), list(result.computes)


def _same_records(a: list, b: list, times: slice, exact: bool) -> bool:
    """Equal message (or reduction) records; ``times`` picks the start and end columns. Under
    fair sharing two runs of one scenario in one process may order simultaneous ends differently
    and differ in the last bit of a time (the engine iterates sets of flows), so fair runs
    compare sorted, times to 1e-12."""
    if exact:
        return a == b
    a, b = sorted(a), sorted(b)
    untimed = [[row[: times.start] + row[times.stop :] for row in rows] for rows in (a, b)]
    timed = [[value for row in rows for value in row[times]] for rows in (a, b)]
    return untimed[0] == untimed[1] and timed[0] == pytest.approx(timed[1], rel=1e-12, abs=1e-18)


def _done_by_step_end(result) -> dict[int, list]:
    """Per step: the messages and reductions ended by the step's last end (the frame's time)."""
    messages, computes = _records(result)
    ends: dict[int, float] = {}
    for message in messages:
        ends[message[5]] = max(ends.get(message[5], 0.0), message[3])
    for compute in computes:
        ends[compute[4]] = max(ends.get(compute[4], 0.0), compute[2])
    done = {}
    for step, end in ends.items():
        sent = [("send", m[0], m[1], m[5], m[6]) for m in messages if m[3] <= end]
        done[step] = sorted(sent + [("reduce", c[0], c[4], c[5]) for c in computes if c[2] <= end])
    return done


PAIRS = [(op, algorithm) for op in ops() if op != "barrier" for algorithm in algorithms_for(op)]


@pytest.mark.parametrize("op, algorithm", PAIRS)
def test_frames_come_with_the_plain_runs_result(op, algorithm):
    one_run = same_order = 0
    for s in _grid(op, algorithm):
        result, frames = explore.run(s, frames=True)
        plain = explore.run(s, frames=False)[0]
        exact = s.sharing == "fifo"
        where = (s.ranks, s.chunks, s.size_bytes, s.sharing, s.topology)
        assert _same_records(_records(result)[0], _records(plain)[0], slice(2, 4), exact), where
        assert _same_records(_records(result)[1], _records(plain)[1], slice(1, 3), exact), where
        for name in FIELDS:
            mine, theirs = getattr(result, name), getattr(plain, name)
            assert mine == theirs or (not exact and theirs is not None and mine == pytest.approx(theirs, rel=1e-12)), (name, where)
        assert result.scenario == s
        small, before = buffer_frames.recorded(miniature(s))
        assert [frame["step"] for frame in frames] == [frame["step"] for frame in before], where
        assert frames[-1] == before[-1], where
        if _done_by_step_end(small) == _done_by_step_end(result):
            assert frames == before, where  # the same messages done at each step's end: the same buffers
            same_order += 1
        one_run += explore.same_run_scale(s) is not None
    assert one_run > 0 and same_order > 0


def _count_runs(monkeypatch) -> list[int]:
    calls = [0]
    start = runner.start_collective

    def counted(*args, **kwargs):
        calls[0] += 1
        return start(*args, **kwargs)

    monkeypatch.setattr(runner, "start_collective", counted)  # every run starts here
    return calls


@pytest.mark.parametrize(
    "fields, runs",
    [
        ({}, 1),  # 64 MiB on 8 ranks: 2 Mi elements a cell
        ({"ranks": 16, "chunks": 4}, 1),
        ({"ranks": 32}, 1),
        ({"algorithm": "double_binary_tree", "chunks": 2}, 1),
        ({"ranks": 12}, 2),  # 16 Mi elements do not split into 12 cells
        ({"repetitions": 2}, 2),
        ({"verify": True, "size_bytes": "64KiB"}, 2),
        ({"record": "aggregate"}, 2),
        ({"algorithm": "double_binary_tree", "ranks": 3, "size_bytes": 3 * 2 * 4 * 5, "chunks": 2}, 2),  # halves of 6 cells
        ({"algorithm": "nccl_tree", "ranks": 8, "size_bytes": "2MiB"}, 1),  # 4 tree chunks of 512 KiB: 8 cells split in 4
        ({"algorithm": "nccl_tree", "ranks": 8, "size_bytes": "64MiB"}, 2),  # 128 tree chunks of 8 cells
    ],
)
def test_one_run_in_the_common_case(monkeypatch, fields, runs):
    s = scenario(**fields)
    calls = _count_runs(monkeypatch)
    result, frames = explore.run(s, frames=True)
    assert calls[0] == runs
    assert (explore.same_run_scale(s) is not None) == (runs == 1)
    assert frames is not None and result.scenario == s
    calls[0] = 0
    plain = explore.run(s, frames=False)[0]
    assert calls[0] == 1 and result.time_s == pytest.approx(plain.time_s, rel=1e-12)
    assert result.verified == plain.verified and result.truncated == plain.truncated


def test_one_run_result_describes_the_users_scenario():
    s = scenario(sharing="fifo", overhead="3us", record="auto")
    result, _ = explore.run(s, frames=True)
    plain = explore.run(s)[0]
    assert explore.same_run_scale(s) == 64 * 2**20 // 4 // 8
    assert result.scenario is s and result.scenario.element_bytes == 4
    assert result.analytic_time_s is not None and result.analytic_time_s == plain.analytic_time_s
    assert result.summary() == plain.summary()
    assert list(result.messages) == list(plain.messages)


def test_record_auto_beyond_max_events_keeps_the_plain_runs_aggregates(monkeypatch):
    s = scenario(record="auto", max_events=20)  # 112 messages: the plain run keeps 20
    calls = _count_runs(monkeypatch)
    result, frames = explore.run(s, frames=True)
    plain = explore.run(s)[0]
    assert calls[0] == 3  # the scaled run, then the plain one for its records
    assert result.truncated and len(result.messages) == len(plain.messages) == 20
    assert len(frames) == 2 * 7 + 1


def test_frames_follow_the_scenarios_own_timing():
    # Binomial scatter of 48 MiB on 12 ranks: rank 8 sends rank 9 its 4 MiB (step 3) before the
    # root's 16 MiB to rank 4 (step 1) ends, so at the end of step 1 rank 9 already holds its
    # block. The 48-byte miniature is latency bound and shows it only at step 3.
    s = scenario(op="scatter", algorithm="binomial", ranks=12, size_bytes=12 * 4 * 2**20, sharing="fifo")
    result, frames = explore.run(s, frames=True)
    step1 = next(frame["cells"] for frame in frames if frame["step"] == 1)
    assert step1[9][9] == 1
    ends = {(m[0], m[1]): m[3] for m in result.messages}
    assert ends[(8, 9)] < ends[(0, 4)]
    before = buffer_frames.recorded(miniature(s))[1]
    assert next(frame["cells"] for frame in before if frame["step"] == 1)[9][9] == 0


def test_the_last_frame_shows_the_result_when_work_follows_the_last_message():
    """NVLSTree across nodes: the down messages are the last step, the switch's multicast into the
    node's GPUs comes after them; the last frame is the finished all-reduce, not the inputs."""
    from sim.collective.frames import miniature, recorded
    from sim.collective.pick import scenario_for_pick

    scenario, _ = scenario_for_pick("hgx-h100-nvls", 2, "all_reduce", 64 << 20)
    assert scenario.algorithm == "nccl_nvls_tree"
    _, frames = recorded(miniature(scenario))
    everyone = (1 << scenario.ranks) - 1
    assert all(cell == everyone for row in frames[-1]["cells"] for cell in row)
    assert not any(cell == everyone for row in frames[0]["cells"] for cell in row)
