"""The fast engine keeps SimPy's semantics: exact times, SimPy's event order, bounded records."""

from __future__ import annotations

import tracemalloc

import pytest
import simpy

from sim.collective.runner import run_collective
from sim.network import FifoNetwork as Network
from sim.network import topology as topo
from sim.scenario import CollectiveScenario


def ring_scenario(p: int, **changes) -> CollectiveScenario:
    fields = dict(op="all_reduce", algorithm="ring", ranks=p, size_bytes=p * 3 * 4096, bandwidth_Bps=25e9, latency_s=5e-6)
    fields.update(changes)
    return CollectiveScenario(**fields)


@pytest.mark.parametrize("p", [2, 3, 8, 63, 64, 257])
@pytest.mark.parametrize("record", ["auto", "aggregate"])
def test_ring_all_reduce_matches_closed_form(p: int, record: str) -> None:
    s = ring_scenario(p, reduce_bandwidth_Bps=100e9, record=record)
    a, b, g, n = s.latency_s, 1 / s.bandwidth_Bps, 1 / s.reduce_bandwidth_Bps, s.size_bytes
    expected = 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g
    result = run_collective(s)
    assert result.time_s == pytest.approx(expected, rel=1e-12)
    assert result.message_count == 2 * p * (p - 1)
    assert result.bytes_sent == 2 * (p - 1) * n
    assert result.steps == 2 * (p - 1)


def test_same_instant_keeps_simpy_order() -> None:
    """A timeout scheduled between two deliveries due at one instant fires between them."""
    env = simpy.Environment()
    net = Network(env, topo.switch(4, 0.0, 1.0))
    order: list[str] = []

    def sender(src: int, dst: int, delay: float) -> object:
        yield env.timeout(delay)
        net.send(src, dst, 1)

    def receiver(src: int, dst: int, name: str) -> object:
        yield net.recv(src, dst)
        order.append(name)

    def sleeper() -> object:
        yield env.timeout(0.5)
        yield env.timeout(0.5)  # due at 1.0, scheduled at 0.5: after m1 (0.0), before m2 (0.75)
        order.append("timeout")

    env.process(receiver(0, 1, "m1"))
    env.process(receiver(2, 3, "m2"))
    env.process(sender(0, 1, 0.0))  # 1 byte at 1 B/s: arrives at 1.0
    env.process(sleeper())
    env.process(sender(2, 3, 0.0))  # arrives at 1.0 too, issued after m1
    env.run()
    assert order == ["m1", "m2", "timeout"]

    env = simpy.Environment()
    net = Network(env, topo.switch(4, 0.0, 1.0))
    order.clear()
    env.process(receiver(0, 1, "m1"))
    env.process(receiver(2, 3, "m2"))
    env.process(sender(0, 1, 0.0))
    env.process(sleeper())
    env.process(sender(2, 3, 0.75))  # 0.75 + 1 s: arrives at 1.75, after the timeout
    env.run()
    assert order == ["m1", "timeout", "m2"]


def test_interleaved_schedule_closes_the_instant() -> None:
    """Deliveries issued after a same-time timeout go behind it, as plain SimPy events would."""
    env = simpy.Environment()
    net = Network(env, topo.switch(6, 0.0, 1.0))
    order: list[str] = []

    def receiver(src: int, dst: int, name: str) -> object:
        yield net.recv(src, dst)
        order.append(name)

    def waiter() -> object:
        yield env.timeout(2.0)
        order.append("timeout")

    def main() -> object:
        net.send(0, 1, 2)  # due at 2.0
        env.process(waiter())  # its timeout is scheduled (at 0, by the process start) later
        yield env.timeout(0)
        net.send(2, 3, 2)  # due at 2.0, issued after the timeout was scheduled

    env.process(receiver(0, 1, "first"))
    env.process(receiver(2, 3, "second"))
    env.process(main())
    env.run()
    assert order == ["first", "timeout", "second"]


def test_records_are_bounded_and_totals_exact() -> None:
    s = ring_scenario(32, max_events=1000)
    result = run_collective(s)
    assert len(result.messages) == 1000 and result.truncated
    assert int(result.overflow["messages"].sum()) == result.message_count - 1000
    full = run_collective(s.replace(record="full"))
    assert list(full.messages)[:1000] == list(result.messages)
    assert full.messages[5] == result.messages[5] and full.messages[:3] == result.messages[:3]
    totals = {(src, dst): [count, nbytes, busy] for src, dst, count, nbytes, busy in result.pairs}
    assert sum(v[0] for v in totals.values()) == result.message_count
    assert sum(v[1] for v in totals.values()) == result.bytes_sent
    reference = {(src, dst): [count, nbytes, busy] for src, dst, count, nbytes, busy in full.pairs}
    assert {k: v[:2] for k, v in totals.items()} == {k: v[:2] for k, v in reference.items()}
    assert [v[2] for v in totals.values()] == pytest.approx([reference[k][2] for k in totals], rel=1e-9)


def _peak_bytes(s: CollectiveScenario) -> int:
    tracemalloc.start()
    try:
        run_collective(s)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _small_buffers(monkeypatch: pytest.MonkeyPatch, rows: int) -> None:
    """The record buffers (BUFFER_ROWS, 8,192 rows; merges every MERGE_ROWS, 16,384) scaled down to
    ``rows``, so that a 128-rank ring (32,512 messages) is far past them: the bound is the same
    mechanism at a smaller size, and the runs under tracemalloc cost ~3 s of CPU instead of ~12 s."""
    from sim.network import engine, fair, fifo, records

    for module in (engine, fair, fifo):
        monkeypatch.setattr(module, "BUFFER_ROWS", rows)
    monkeypatch.setattr(fair, "LAST_ROW", rows - 1)
    monkeypatch.setattr(records, "MERGE_ROWS", 2 * rows)


def test_memory_bounded_by_recording_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Aggregate mode keeps no per-message rows (a bounded buffer only); full mode 40 bytes a message."""
    _small_buffers(monkeypatch, 1024)
    small, large = ring_scenario(64), ring_scenario(128)  # 8,064 and 32,512 messages
    table = run_collective(small.replace(record="full")).messages  # untraced; also warms what a first run allocates once
    assert sum(column.nbytes for column in table.columns.values()) == 40 * len(table)
    full = _peak_bytes(large.replace(record="full"))
    aggregate = _peak_bytes(large.replace(record="aggregate"))
    aggregate_small = _peak_bytes(small.replace(record="aggregate"))
    assert full - aggregate >= 0.4 * 40 * 32_512  # full keeps the columns (1.3 MB here)
    assert aggregate < 1.5 * aggregate_small  # 4x the messages, not 4x the memory (40 B a message more: ~2.2x)
