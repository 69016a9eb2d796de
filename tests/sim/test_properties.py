"""Hypothesis properties over random valid scenarios, under both sharing semantics."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.algorithms.registry import algorithm_spec, algorithms_for, ops
from sim.collective.runner import collect, drive, run_collective, start_collective
from sim.scenario import CollectiveScenario

ROOTED = ("broadcast", "reduce", "gather", "scatter")
PAIRS = [(op, algorithm) for op in ops() for algorithm in algorithms_for(op)]
TOPOLOGIES = ("switch", "ring", "torus2d", "two_level")
EAGER = 1 << 40  # every message eager


@st.composite
def scenarios(draw, pairs=PAIRS, verify=False, topologies=TOPOLOGIES, sharing=("fair", "fifo"), latency=True, stragglers=True):
    op, algorithm = draw(st.sampled_from(pairs))
    spec = algorithm_spec(op, algorithm)
    if spec.power_of_two:
        p = 2 ** draw(st.integers(0, 5))
    elif spec.topology == "two_level":
        p = draw(st.sampled_from([2, 4, 6, 8, 12, 16]))
    else:
        p = draw(st.integers(2 if op == "send_recv" else 1, 24))  # send_recv needs a peer
    topology = spec.topology or draw(st.sampled_from(topologies))
    if topology == "two_level" and p % 2:
        topology = "switch"
    return CollectiveScenario(
        op=op,
        algorithm=algorithm,
        ranks=p,
        size_bytes=4 * draw(st.integers(0, 5000)) * (p if op == "all_to_all" else 1),  # all_to_all: p equal blocks
        bandwidth_Bps=draw(st.floats(1e6, 1e12)),
        latency_s=draw(st.floats(0, 1e-3)) if latency else 0.0,
        reduce_bandwidth_Bps=draw(st.one_of(st.none(), st.floats(1e6, 1e12))),
        chunks=draw(st.integers(1, 5)) if spec.chunked else 1,
        topology=topology,
        gpus_per_node=2 if topology == "two_level" else None,
        intra_bandwidth_Bps=draw(st.floats(1e6, 1e12)) if topology == "two_level" else None,
        root=draw(st.integers(0, p - 1)) if op in ROOTED else 0,
        stragglers=tuple((rank, 1e-5) for rank in draw(st.sets(st.integers(0, p - 1), max_size=2))) if stragglers else (),
        sharing=draw(st.sampled_from(sharing)),
        eager_limit_bytes=draw(st.sampled_from([0, EAGER])),
        verify=verify,
    )


# derandomize: the same examples every run, so CI on a fresh clone (no example database) is
# reproducible. COLLSIM_EXAMPLES raises the count for a deeper search by hand.
EXAMPLES = int(os.environ.get("COLLSIM_EXAMPLES", "60"))
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@FAST
@given(scenarios(verify=True))
def test_no_deadlock_and_right_answer_for_any_valid_scenario(scenario):
    started = start_collective(scenario)
    drive(started)
    result = collect(started)
    assert result.verified is True
    assert started.net.pending() == []
    assert all(end <= result.total_time_s + 1e-15 for end in result.rank_end_s)


# Two algorithms send concurrently from one rank to different peers: the double binary tree
# (its two trees) and the hierarchical all-reduce (one inter-node ring per local rank, sharing
# the NIC). Fair sharing then splits a port between a flow on the critical path and one off it,
# a scheduling anomaly of processor sharing, not a bug: dbtree on 3 ranks at 1 MB/s takes 36 us
# for 12 B and 32 us for 16 B (the uneven halves make one tree's critical flow share a port);
# hierarchical on 3 nodes x 2 takes 108 us with 1 chunk and 112 us with 2 (44 B, zero latency).
# docs/network-model.md discusses both. Every other algorithm sends one message at a time per
# rank, and for them the properties below hold on every topology.
CONCURRENT = ("double_binary_tree", "hierarchical")
SEQUENTIAL = [pair for pair in PAIRS if pair[1] not in CONCURRENT]


@FAST
@given(scenarios(pairs=SEQUENTIAL, sharing=("fair",)), st.integers(1, 4000))
def test_fair_sharing_time_never_decreases_with_size(scenario, extra_elements):
    """Under max-min fair sharing a larger message never finishes sooner, on every topology
    (fifo queues are not monotone: docs/network-model.md)."""
    bigger = scenario.replace(size_bytes=scenario.size_bytes + 4 * extra_elements)
    assert run_collective(bigger).time_s >= run_collective(scenario).time_s * (1 - 1e-12)


CHUNKED = [pair for pair in SEQUENTIAL if algorithm_spec(*pair).chunked]


@FAST
@given(scenarios(pairs=CHUNKED, latency=False), st.integers(2, 16))
def test_pipelining_never_slower_at_zero_latency(scenario, chunks):
    """k chunks are never slower than one when messages cost nothing but bandwidth."""
    one = run_collective(scenario.replace(chunks=1)).time_s
    assert run_collective(scenario.replace(chunks=chunks)).time_s <= one * (1 + 1e-12)


@pytest.mark.parametrize("sharing", ["fair", "fifo"])
@pytest.mark.parametrize("p", [6, 16])
def test_double_binary_tree_pipelines_and_beats_the_backfilling_schedule(sharing, p):
    """The review's case (64 MiB, 10 GB/s, zero latency): more chunks are never slower, and
    64 chunks come at least as close to the 2n/B port bound as an independent single-port
    scheduler with backfilling on NCCL's trees (18.45 ms at p = 6, 22.1 ms at p = 16)."""
    base = CollectiveScenario(
        op="all_reduce", algorithm="double_binary_tree", ranks=p, size_bytes=64 * 2**20, bandwidth_Bps=10e9, sharing=sharing
    )
    times = [run_collective(base.replace(chunks=k)).time_s for k in (1, 8, 64)]
    assert times == sorted(times, reverse=True)
    assert times[-1] <= {6: 18.45e-3, 16: 22.1e-3}[p]
    assert times[-1] >= 2 * base.size_bytes / base.bandwidth_Bps


@FAST
@given(scenarios(pairs=[("all_reduce", "ring"), ("all_reduce", "rabenseifner")]))
def test_all_reduce_never_beats_the_bandwidth_bound(scenario):
    p, n = scenario.ranks, scenario.size_bytes
    fastest = max(scenario.bandwidth_Bps, scenario.intra_bandwidth_Bps or 0.0)
    bound = 2 * (p - 1) / p * n / fastest
    assert run_collective(scenario).time_s >= bound * (1 - 1e-9)


@FAST
@given(scenarios())
def test_bytes_sent_equal_bytes_received_and_links_carry_them(scenario):
    result = run_collective(scenario.replace(record="full"))
    sent = [0] * scenario.ranks
    received = [0] * scenario.ranks
    for src, dst, _, _, nbytes, _, _ in result.messages:
        sent[src] += nbytes
        received[dst] += nbytes
    assert sum(sent) == sum(received) == result.bytes_sent
    per_link = {stats.link: stats.bytes for stats in result.link_stats}
    if scenario.topology == "switch":  # every byte crosses the sender's uplink and the receiver's downlink
        for rank in range(scenario.ranks):
            assert per_link.get(f"{rank}->switch", 0) == sent[rank]
            assert per_link.get(f"switch->{rank}", 0) == received[rank]
    # conservation on every node: bytes into a switch equal bytes out of it
    for node in {name.split("->")[0] for name in per_link} - {str(rank) for rank in range(scenario.ranks)}:
        into = sum(b for name, b in per_link.items() if name.endswith(f"->{node}"))
        out = sum(b for name, b in per_link.items() if name.startswith(f"{node}->"))
        assert into == out, node


@FAST
@given(scenarios(pairs=SEQUENTIAL, stragglers=False, topologies=("switch",)))
def test_stragglers_never_speed_things_up(scenario):
    """Receives are posted in a fixed order and large messages wait for them (rendezvous), so on
    a switch a late rank can only delay the others, in both sharing semantics. (Where routes
    share links, as on a physical ring, a late rank can lift contention and end sooner: that is
    the network, not the algorithm; recursive halving on an 8-rank ring shows it.)"""
    scenario = scenario.replace(eager_limit_bytes=0, jitter_s=0.0)
    late = scenario.replace(stragglers=((scenario.ranks // 2, 1e-5),))
    assert run_collective(late).time_s >= run_collective(scenario).time_s * (1 - 1e-12)
