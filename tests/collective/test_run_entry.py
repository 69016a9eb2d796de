"""sim.collective.runner.run: the one way to run a collective, with progress; buffer frames with
sim.collective.frames.run_with_frames; the other entry points (run_collective, explore.run,
collapsed.run, collapsed.time_of) agree."""

from __future__ import annotations

from sim.collective import collapsed, explore, runner
from sim.collective.frames import run_with_frames
from sim.scenario import CollectiveScenario


def scenario(**fields) -> CollectiveScenario:
    base = {"op": "all_reduce", "algorithm": "ring", "ranks": 8, "size_bytes": "1MiB", "bandwidth": "25GB/s", "latency": "5us"}
    return CollectiveScenario.from_dict({**base, **fields})


def test_progress_reports_come_while_the_run_goes_and_change_nothing(monkeypatch):
    monkeypatch.setattr(runner, "PROGRESS_EVERY_S", 0.0)  # report at every look at the clock
    s = scenario(ranks=32, chunks=4)  # enough events for several looks at the clock (lone flows make few)
    seen: list[tuple[int, float]] = []
    result = runner.run(s, on_progress=lambda messages, now_s: seen.append((messages, now_s)))
    plain = runner.run_collective(s)
    assert result.time_s == plain.time_s and result.message_count == plain.message_count  # bit-identical
    assert len(seen) > 3 and seen == sorted(seen)
    assert 0 < seen[-1][0] <= result.message_count and seen[-1][1] <= result.time_s


def test_frames_fill_the_list_given_and_the_time_is_the_plain_one():
    s = scenario(ranks=4)
    frames: list = []
    result = run_with_frames(s, frames)
    assert result.time_s == runner.run(s).time_s
    assert frames[0]["step"] == -1 and len(frames) == result.steps + 1
    assert explore.run(s, frames=True)[1] == frames
    too_big: list = []
    run_with_frames(scenario(ranks=64), too_big)
    assert too_big == []  # more ranks than a frame shows: no frames, still a run


def test_every_entry_point_gives_the_same_time():
    s = scenario(ranks=6, stragglers="2:1us")  # not collapsible: each runs the messages
    expected = runner.run(s).time_s
    assert explore.run(s)[0].time_s == expected
    assert collapsed.run(s, "full").time_s == expected
    assert collapsed.time_of(s) == expected
    assert explore.time_of is collapsed.time_of


def test_decompose_by_the_closed_form_gives_the_formula_terms():
    s = scenario(ranks=8, size_bytes="8MiB", reduce_bandwidth="50GB/s", overhead="10us")
    parts = explore.decompose(s, timing=explore.closed_form_time)
    p, n = 8, 8 * 2**20
    assert parts["latency"] == 2 * (p - 1) * 5e-6
    assert abs(parts["bandwidth"] - 2 * (p - 1) / p * n / 25e9) < 1e-15
    assert abs(parts["reduction"] - (p - 1) / p * n / 50e9) < 1e-15
    assert parts["overhead"] == 10e-6 and parts["contention"] == 0.0
    assert explore.decompose(scenario(algorithm="double_binary_tree"), timing=explore.closed_form_time) == {}
    simulated = explore.decompose(s)  # on switch(p) the run and the formula agree
    assert abs(simulated["total"] - parts["total"]) < 1e-9 * parts["total"]
