"""Collapsed mode gives the full simulation's times wherever both apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.collective.collapsed import collective_time, run, summarize
from sim.collective.runner import run_collective
from sim.scenario import CollectiveScenario

from ..cli_in_process import collsim_in_process

BASE = dict(bandwidth_Bps=25e9, latency_s=5e-6, reduce_bandwidth_Bps=80e9)

CASES = [
    dict(op="all_reduce", algorithm="ring", ranks=64, size_bytes=64 * 4 * 1000),  # closed form
    dict(op="all_reduce", algorithm="ring", ranks=7, size_bytes=4 * 1001),  # uneven split: simulated
    dict(op="all_reduce", algorithm="rabenseifner", ranks=32, size_bytes=32 * 4 * 64),
    dict(op="all_reduce", algorithm="recursive_doubling", ranks=16, size_bytes=4096),
    dict(op="broadcast", algorithm="binomial", ranks=13, size_bytes=4 * 100),
    dict(op="all_gather", algorithm="ring", ranks=12, size_bytes=12 * 4 * 10, chunks=3),
    dict(op="all_reduce", algorithm="hierarchical", ranks=32, size_bytes=32 * 4 * 16, topology="two_level", gpus_per_node=8),
    dict(op="all_reduce", algorithm="ring", ranks=12, size_bytes=12 * 4 * 10, topology="ring"),
    dict(op="all_reduce", algorithm="ring", ranks=16, size_bytes=16 * 4 * 10, overhead_s=1e-5),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['op']}-{c['algorithm']}-{c['ranks']}-{c.get('topology', 'switch')}")
def test_collapsed_equals_full(case: dict) -> None:
    scenario = CollectiveScenario(**BASE, **case)
    full = run_collective(scenario)
    collapsed = run(scenario, "collapsed")
    assert collapsed.mode == "collapsed"
    assert collapsed.time_s == pytest.approx(full.time_s, rel=1e-9)
    summary = collapsed.summary()
    assert summary["mode"] == "collapsed" and summary["time_s"] == collapsed.time_s
    if summary["messages"] is not None:
        assert summary["messages"] == full.message_count
        assert summary["bytes_on_wire"] == full.bytes_sent


def test_sources_closed_form_replay_then_cache() -> None:
    even = CollectiveScenario(op="all_reduce", algorithm="ring", ranks=8, size_bytes=8 * 4 * 10, **BASE)
    assert collective_time(even).source == "closed_form"
    assert collective_time(even.replace(size_bytes=4 * 1003)).source == "replayed"
    other = CollectiveScenario(op="all_reduce", algorithm="hierarchical", ranks=16, size_bytes=4 * 1003, topology="two_level", **BASE)
    first = collective_time(other)
    assert first.source == "simulated"
    assert collective_time(other.replace(record="full", seed=3)) is first  # cached: no second simulation


@pytest.mark.parametrize("topology", ["switch", "ring", "two_level"])
@pytest.mark.parametrize("chunks", [1, 4])
def test_ring_replay_is_bitwise_the_des(topology: str, chunks: int) -> None:
    """The max-plus replay performs the DES's float operations: equal, not just close."""
    scenario = CollectiveScenario(
        op="all_reduce", algorithm="ring", ranks=128, size_bytes=4 * 100_003, chunks=chunks, topology=topology,
        intra_bandwidth_Bps=150e9 if topology == "two_level" else None, overhead_s=2e-5, **BASE,
    )  # fmt: skip
    timing = collective_time(scenario)
    full = run_collective(scenario)
    assert timing.source == "replayed"
    assert timing.time_s == full.time_s
    assert (timing.message_count, timing.bytes_sent, timing.steps) == (full.message_count, full.bytes_sent, full.steps)


def test_ring_replay_refuses_shared_hops() -> None:
    """On a torus the ring's hops share links: replay does not apply, the cached DES does."""
    scenario = CollectiveScenario(op="all_reduce", algorithm="ring", ranks=12, size_bytes=4 * 1001, topology="torus2d", **BASE)
    timing = collective_time(scenario)
    assert timing.source in ("simulated", "replayed")
    assert timing.time_s == pytest.approx(run_collective(scenario).time_s, rel=1e-12)


def test_ring_replay_finds_the_ring_routes_once_per_network(monkeypatch) -> None:
    """A DDP sweep replays one network at ~100 sizes: the hops' routes are found once."""
    from sim.collective import collapsed
    from sim.network import engine

    collapsed._ring_hops.cache_clear()  # another test may have met this network
    collapsed._simulated.cache_clear()
    calls = []
    original = engine.Network.route
    monkeypatch.setattr(engine.Network, "route", lambda self, *args: calls.append(args) or original(self, *args))
    base = CollectiveScenario.from_dict(
        {"op": "all_reduce", "algorithm": "ring", "ranks": 16, "topology": "two_level", "gpus_per_node": 4,
         "size": "1MiB", "bandwidth": "12.5GB/s", "latency": "3us", "intra_bandwidth": "150GB/s", "intra_latency": "1us"}
    )  # fmt: skip
    times = [collective_time(base.replace(size_bytes=size)) for size in (1 << 20, 3 << 20, 5 << 21)]
    assert {timing.source for timing in times} == {"replayed"}
    assert len(calls) == 16  # one route per hop, for the first size only
    assert times[2].time_s == run_collective(base.replace(size_bytes=5 << 21)).time_s  # still the DES's answer, bit for bit


def test_asymmetric_scenarios_fall_back_to_full() -> None:
    scenario = CollectiveScenario(op="all_reduce", algorithm="ring", ranks=4, size_bytes=64, stragglers=((1, 1e-3),), **BASE)
    result = run(scenario, "collapsed")
    assert result.mode == "full"
    assert "stragglers" in summarize(result)["mode_note"]


def test_large_collapsed_is_fast_and_exact() -> None:
    """1,024 ranks (2.1 M messages in full mode) as one closed-form event."""
    scenario = CollectiveScenario(op="all_reduce", algorithm="ring", ranks=1024, size_bytes=1024 * 4 * 256, **BASE)
    summary = run(scenario, "collapsed").summary()
    assert summary["messages"] == 2 * 1024 * 1023
    assert summary["time_s"] == summary["analytic_time_s"]


def _cli(*args: str) -> dict:
    command = ["sim", "collective", "--op", "all_reduce", "--algorithm", "ring", "--ranks", "8"]
    out = collsim_in_process(*command, "--size", "64MiB", "--latency", "5us", "--bandwidth", "25GB/s", "--json", *args, cwd=Path.cwd())
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_cli_mode_flag() -> None:
    full, collapsed = _cli(), _cli("--mode", "collapsed")
    assert full["mode"] == "full" and collapsed["mode"] == "collapsed"
    assert collapsed["time_s"] == pytest.approx(full["time_s"], rel=1e-9)
    assert collapsed["messages"] == full["messages"] == 112
