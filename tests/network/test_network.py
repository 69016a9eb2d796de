"""The network model: contention on shared resources, topologies, stragglers and jitter."""

import json

import networkx as nx
import pytest
import simpy

from sim.collective.runner import run_collective
from sim.errors import CollsimError
from sim.network import graph_files, make_network
from sim.network import topology as topo
from sim.scenario import CollectiveScenario


def _deliveries(topology, messages, nbytes=1000, sharing="fifo", latency_s=None):
    """Issue every (src, dst) at t = 0, eagerly; return each message's (start, end) in issue order."""
    env = simpy.Environment()
    net = make_network(env, topology, sharing)
    events = [net.send(src, dst, nbytes) for src, dst in messages]
    env.run()
    rows = {}
    for src, dst, start, end, *_ in net.messages:
        rows.setdefault((src, dst), []).append((start, end))
    return [rows[pair].pop(0) for pair in messages] if all(e.processed for e in events) else None


def test_shared_nic_serializes_fifo_in_issue_order():
    # 2 nodes x 2 GPUs, inter-node 1 GB/s through one NIC per node; intra links much faster.
    two = topo.two_level(2, 2, 0.0, 100e9, 0.0, 1e9)
    one_flow = _deliveries(two, [(0, 2)])
    two_flows = _deliveries(two, [(0, 2), (1, 3)])
    assert one_flow == [(0.0, pytest.approx(1e-6))]
    assert two_flows[0] == (0.0, pytest.approx(1e-6))
    assert two_flows[1] == (pytest.approx(1e-6), pytest.approx(2e-6))  # waits for the first: FIFO, not shared


def test_shared_nic_is_shared_fairly():
    two = topo.two_level(2, 2, 0.0, 100e9, 0.0, 1e9)
    flows = _deliveries(two, [(0, 2), (1, 3)], sharing="fair")
    assert flows == [(0.0, pytest.approx(2e-6)), (0.0, pytest.approx(2e-6))]  # each at half the NIC


def test_fair_rates_follow_the_bottleneck_max_min():
    """Progressive filling: three flows into rank 3 get a third of its downlink each; 2->1
    shares rank 2's uplink with 2->3, which its bottleneck holds to 1/3, so 2->1 gets the other
    2/3 (an equal split of the uplink would give it 1/2)."""
    star = topo.switch(4, 0.0, 1e9)
    flows = _deliveries(star, [(0, 3), (1, 3), (2, 3), (2, 1)], nbytes=1000, sharing="fair")
    assert [end for _, end in flows] == pytest.approx([3e-6, 3e-6, 3e-6, 1.5e-6])


def test_fair_rates_change_when_a_flow_ends():
    """A short and a long flow share a link: after the short one ends, the long one speeds up."""
    star = topo.switch(3, 0.0, 1e9)
    env = simpy.Environment()
    net = make_network(env, star, "fair")
    net.send(0, 2, 1000)
    net.send(1, 2, 3000)
    env.run()
    ends = {src: end for src, _, _, end, *_ in net.messages}
    assert ends[0] == pytest.approx(2e-6)  # 1000 B at 0.5 GB/s
    assert ends[1] == pytest.approx(4e-6)  # 1000 B shared, then 2000 B alone at 1 GB/s


def test_fifo_backfills_past_a_message_waiting_for_another_resource():
    """0->2 waits for rank 2's downlink (busy with 1->2); 0->3 issued later needs only rank 0's
    uplink, which is free: it starts at once instead of queueing behind 0->2 (work-conserving)."""
    star = topo.switch(4, 0.0, 1e9)
    env = simpy.Environment()
    net = make_network(env, star, "fifo")
    net.send(1, 2, 4000)  # 0..4 us on 2's downlink
    net.send(0, 2, 1000)  # waits until 4 us
    net.send(0, 3, 1000)  # free route now: 0..1 us
    env.run()
    spans = {(src, dst): (start, end) for src, dst, start, end, *_ in net.messages}
    assert spans[(0, 3)] == (0.0, pytest.approx(1e-6))
    assert spans[(0, 2)] == (pytest.approx(4e-6), pytest.approx(5e-6))


def test_latency_occupies_no_link_but_one_connection():
    """A link is busy while the bytes pass; latency delays the arrival only. Two messages to
    one rank from different senders overlap their latencies; two on one pair go one at a time."""
    star = topo.switch(3, 10e-6, 1e9)
    different = _deliveries(star, [(0, 2), (1, 2)])
    assert different[1] == (pytest.approx(1e-6), pytest.approx(12e-6))  # behind the first's bytes only
    same = _deliveries(star, [(0, 2), (0, 2)])
    assert same[1] == (pytest.approx(11e-6), pytest.approx(22e-6))  # after the first has arrived


@pytest.mark.parametrize("sharing", ["fifo", "fair"])
def test_rendezvous_waits_for_the_receive(sharing):
    env = simpy.Environment()
    net = make_network(env, topo.switch(2, 0.0, 1e9), sharing, eager_limit_bytes=100)

    def receiver():
        yield env.timeout(5e-6)
        yield net.recv(0, 1)
        yield net.recv(0, 1)

    net.send(0, 1, 1000)  # large: waits for the receive posted at 5 us
    net.send(0, 1, 100)  # eager: travels at once (matched to the second receive, in order)
    env.process(receiver())
    env.run()
    spans = {nbytes: (start, end) for _, _, start, end, nbytes, *_ in net.messages}
    assert spans[1000] == (pytest.approx(5e-6), pytest.approx(6e-6))
    assert spans[100] == (0.0, pytest.approx(1e-7))


def test_rendezvous_message_never_received_is_a_deadlock():
    scenario_net = make_network(simpy.Environment(), topo.switch(2, 0.0, 1e9), "fair", eager_limit_bytes=0)
    scenario_net.send(0, 1, 10)
    scenario_net.env.run()
    assert scenario_net.pending() == [(0, 1, 0)]


def test_intra_node_traffic_does_not_touch_the_nic():
    two = topo.two_level(2, 2, 0.0, 100e9, 0.0, 1e9)
    flows = _deliveries(two, [(0, 2), (1, 0)])
    assert flows[1] == (0.0, pytest.approx(1000 / 100e9))


def test_single_port_on_switch_serializes_a_ranks_sends():
    flows = _deliveries(topo.switch(4, 0.0, 1e9), [(0, 1), (0, 2), (0, 3)])
    assert [end for _, end in flows] == pytest.approx([1e-6, 2e-6, 3e-6])


def test_full_duplex_send_and_receive_overlap():
    for sharing in ("fifo", "fair"):
        flows = _deliveries(topo.switch(2, 0.0, 1e9), [(0, 1), (1, 0)], sharing=sharing)
        assert [end for _, end in flows] == pytest.approx([1e-6, 1e-6])


def test_physical_ring_routes_over_hops_and_shares_links():
    ring = topo.ring(6, 1e-6, 1e9)
    ((start, end),) = _deliveries(ring, [(0, 3)])
    assert end == pytest.approx(3 * 1e-6 + 1e-6)  # three hops of latency, bandwidth of one link
    flows = _deliveries(ring, [(0, 2), (1, 2)])  # both use link 1->2
    assert flows[1][0] == pytest.approx(flows[0][0] + 1e-6)  # once the first's bytes have passed


def test_torus_ring_all_reduce_shares_no_link():
    """The review's case: dimension-order routes give a 16-rank ring all-reduce on a 4x4 torus
    disjoint links, 30 (2a + n/16 b) = 3.446 ms (mixed orders put 60 messages on 3->0: 6.891 ms)."""
    for sharing in ("fifo", "fair"):
        scenario = CollectiveScenario(
            op="all_reduce", algorithm="ring", ranks=16, size_bytes=16 * 2**20, bandwidth_Bps=10e9, latency_s=5e-6,
            topology="torus2d", sharing=sharing,
        )  # fmt: skip
        result = run_collective(scenario)
        assert result.time_s == pytest.approx(30 * (2 * 5e-6 + 2**20 / 10e9), rel=1e-12)
        assert max(stats.messages for stats in result.link_stats) == 30


def test_ring_all_reduce_on_a_physical_ring_matches_the_switch():
    """Neighbour-only traffic: a physical ring with full latency per link equals the switch."""
    base = dict(op="all_reduce", algorithm="ring", ranks=8, size_bytes=8 * 4096, bandwidth_Bps=10e9, latency_s=2e-6)
    on_switch = run_collective(CollectiveScenario(**base)).time_s
    on_ring = run_collective(CollectiveScenario(**base, topology="ring")).time_s
    assert on_ring == pytest.approx(on_switch, rel=1e-12)


def test_recursive_doubling_pays_for_hops_on_a_physical_ring():
    base = dict(op="all_reduce", algorithm="recursive_doubling", ranks=8, size_bytes=8 * 4096, bandwidth_Bps=10e9, latency_s=2e-6)
    assert run_collective(CollectiveScenario(**base, topology="ring")).time_s > run_collective(CollectiveScenario(**base)).time_s


def test_hierarchical_beats_flat_ring_when_nics_are_slow():
    base = dict(
        op="all_reduce",
        ranks=16,
        size_bytes=64 * 2**20,
        latency_s=5e-6,
        bandwidth_Bps=12.5e9,
        topology="two_level",
        gpus_per_node=8,
        intra_bandwidth_Bps=300e9,
        intra_latency_s=1e-6,
    )
    flat = run_collective(CollectiveScenario(algorithm="ring", **base)).time_s
    hierarchical = run_collective(CollectiveScenario(algorithm="hierarchical", **base)).time_s
    assert hierarchical < flat


def test_straggler_delays_ring_all_reduce_by_its_skew():
    base = dict(op="all_reduce", algorithm="ring", ranks=4, size_bytes=4000, bandwidth_Bps=1e9, latency_s=1e-6)
    plain = run_collective(CollectiveScenario(**base)).time_s
    late = run_collective(CollectiveScenario(**base, stragglers=((2, 1e-3),))).time_s
    assert late == pytest.approx(plain + 1e-3, rel=1e-9)


def test_jitter_is_seeded_and_only_slows_down():
    base = dict(op="all_reduce", algorithm="ring", ranks=8, size_bytes=8000, bandwidth_Bps=1e9, latency_s=1e-6)
    plain = run_collective(CollectiveScenario(**base)).time_s
    first = run_collective(CollectiveScenario(**base, jitter_s=1e-6, seed=1)).time_s
    again = run_collective(CollectiveScenario(**base, jitter_s=1e-6, seed=1)).time_s
    other = run_collective(CollectiveScenario(**base, jitter_s=1e-6, seed=2)).time_s
    assert first == again and first != other and min(first, other) > plain


def test_overhead_and_repetitions():
    base = dict(op="all_reduce", algorithm="ring", ranks=4, size_bytes=4000, bandwidth_Bps=1e9, latency_s=1e-6)
    plain = run_collective(CollectiveScenario(**base)).time_s
    assert run_collective(CollectiveScenario(**base, overhead_s=5e-6)).time_s == pytest.approx(plain + 5e-6)
    repeated = run_collective(CollectiveScenario(**base, repetitions=3))
    assert repeated.total_time_s == pytest.approx(3 * plain) and repeated.time_s == pytest.approx(plain)
    assert repeated.message_count == 3 * run_collective(CollectiveScenario(**base)).message_count


def test_torus_shape_and_links():
    assert topo.torus_shape(12) == (3, 4) and topo.torus_shape(7) == (1, 7)
    torus = topo.torus2d(3, 4, 1e-6, 1e9)
    assert torus.graph.number_of_edges() == 24 and all(torus.graph.degree(r) == 4 for r in range(12))


@pytest.mark.parametrize("suffix", [".json", ".graphml"])
def test_user_graph_round_trip(tmp_path, suffix):
    graph = nx.Graph()
    for rank in range(4):
        graph.add_edge(str(rank), "sw", bandwidth="10GB/s" if suffix == ".json" else 1e10, latency="1us" if suffix == ".json" else 1e-6)
    path = tmp_path / f"net{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(nx.node_link_data(graph, edges="links")))
    else:
        nx.write_graphml(graph, path)
    scenario = CollectiveScenario(
        op="all_reduce", algorithm="ring", ranks=4, size_bytes=4000, bandwidth_Bps=1.0, topology=str(path), verify=True
    )
    result = run_collective(scenario)
    assert result.verified and result.time_s == pytest.approx(6 * (2e-6 + 1000 / 1e10))


@pytest.mark.parametrize(
    "content,message",
    [
        ("not json", "could not be read"),
        ('{"nodes": [{"id": 0}, {"id": 1}], "links": [{"source": 0, "target": 1}]}', "bandwidth"),
        ('{"nodes": [{"id": 0}, {"id": 2}], "links": [{"source": 0, "target": 2, "bandwidth": 1}]}', "numbered 0..p-1"),
        ('{"nodes": [{"id": 0}, {"id": 1}, {"id": 2}], "links": [{"source": 0, "target": 1, "bandwidth": 1}]}', "not connected"),
    ],
)
def test_bad_user_graphs_are_named(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CollsimError, match=message):
        graph_files.load_graph(path)


def test_user_graph_rank_count_must_match(tmp_path):
    path = tmp_path / "g.json"
    graph_files.save_graph(topo.switch(4, 1e-6, 1e9), path)
    with pytest.raises(CollsimError, match="connects 4 ranks"):
        run_collective(
            CollectiveScenario(op="barrier", algorithm="dissemination", ranks=8, bandwidth_Bps=1e9, size_bytes=0, topology=str(path))
        )


@pytest.mark.parametrize(
    "fields",
    [
        {"op": "all_to_all", "algorithm": "direct", "ranks": 16, "topology": "two_level", "gpus_per_node": 4, "placement": "round_robin"},
        {"op": "all_reduce", "algorithm": "double_binary_tree", "ranks": 6, "chunks": 8},
        {"op": "all_reduce", "algorithm": "hierarchical", "ranks": 12, "topology": "two_level", "gpus_per_node": 4, "chunks": 2},
    ],
)
def test_fair_sharing_gives_the_same_run_every_time(fields):
    """Flows that end at the same moment, and shares summed in some order, come out in one
    order on every run: the same scenario gives bit-identical messages, whatever else the
    process has allocated in between (a set of flows iterates in memory-address order)."""
    scenario = CollectiveScenario.from_dict(
        {"size": "3MiB", "latency": "2us", "bandwidth": "10GB/s", "sharing": "fair", "record": "full", **fields}
    )
    runs, ballast = [], []
    for round_ in range(4):
        ballast.append([object() for _ in range(1000 * (round_ + 1))])  # other addresses for the new flows
        result = run_collective(scenario)
        runs.append((result.time_s, [tuple(row) for row in result.messages], list(result.rank_end_s)))
    assert all(run == runs[0] for run in runs[1:])
