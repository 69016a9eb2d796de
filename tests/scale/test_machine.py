"""Rank programs as Machines (sim.network.machine; issue 23, fifth pass): the plain ring
all-reduce run with its generator as the events' callback makes the same calls in the same
order as the same program run as a SimPy process, so times, rank ends and every record are
identical, bit for bit, under both sharings, with and without rendezvous and reductions."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim.algorithms.ring as ring
from sim.collective.runner import run_collective, start_collective
from sim.network.machine import Machine
from sim.scenario import CollectiveScenario


def _run(scenario: dict, machines: bool, monkeypatch: pytest.MonkeyPatch) -> tuple:
    if not machines:
        monkeypatch.setattr(ring.ring_all_reduce, "machine", None)
    result = run_collective(CollectiveScenario.from_dict(scenario))
    monkeypatch.undo()
    records = result.records
    return repr(result.time_s), repr(list(result.rank_end_s)), repr(records.messages.to_dict()), repr(records.computes.to_dict())


def _scenario(ranks: int, topology: str, sharing: str, reduce_bandwidth: float | None, eager: bool, size: int) -> dict:
    scenario = dict(
        op="all_reduce", algorithm="ring", ranks=ranks, size_bytes=size, latency_s=5e-6, bandwidth_Bps=25e9,
        sharing=sharing, topology=topology, record="full",
    )  # fmt: skip
    if topology == "two_level":
        scenario.update(gpus_per_node=4, placement="round_robin")
    if reduce_bandwidth:
        scenario["reduce_bandwidth_Bps"] = reduce_bandwidth
    if eager:
        scenario["eager_limit_bytes"] = 1 << 30
    return scenario


CASES = [
    _scenario(ranks, topology, sharing, gamma, eager, size)
    for ranks, topology, sharing, gamma, eager, size in itertools.product(
        (2, 3, 8, 12), ("switch", "ring", "two_level"), ("fair", "fifo"), (None, 5e9), (False, True), (1000, 1 << 20)
    )
    if topology != "two_level" or ranks % 4 == 0
]


@pytest.mark.parametrize("scenario", CASES, ids=lambda s: "-".join(str(s[k]) for k in ("ranks", "topology", "sharing", "size_bytes")))
def test_machine_equals_process(scenario: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(scenario, True, monkeypatch) == _run(scenario, False, monkeypatch)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ranks=st.integers(2, 24),
    topology=st.sampled_from(["switch", "ring", "torus2d"]),
    sharing=st.sampled_from(["fair", "fifo"]),
    elements=st.integers(0, 1 << 20),
    eager=st.booleans(),
    jitter=st.sampled_from([0.0, 1e-6]),
)
def test_machine_equals_process_random(ranks, topology, sharing, elements, eager, jitter, monkeypatch) -> None:
    scenario = _scenario(ranks, topology, sharing, None, eager, 4 * elements)
    scenario["jitter_s"] = jitter
    assert _run(scenario, True, monkeypatch) == _run(scenario, False, monkeypatch)


def test_machines_are_used_only_for_the_plain_ring() -> None:
    plain = start_collective(CollectiveScenario.from_dict(_scenario(8, "switch", "fair", None, False, 1 << 20)))
    assert all(isinstance(process, Machine) for process in plain.processes)
    assert all(process.is_alive for process in plain.processes)
    plain.env.run()
    assert not any(process.is_alive for process in plain.processes)
    chunked = start_collective(CollectiveScenario.from_dict({**_scenario(8, "switch", "fair", None, False, 1 << 20), "chunks": 4}))
    assert not any(isinstance(process, Machine) for process in chunked.processes)
