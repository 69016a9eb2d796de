"""Routes, rank placement and concurrent collectives on disjoint groups (issue 9, items 3 and 5)."""

import json
import subprocess
from collections import defaultdict
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.collective.runner import build_topology, run_collective
from sim.errors import CollsimError
from sim.network import topology as topo
from sim.network.graph_files import from_user_graph
from sim.scenario import CollectiveScenario

from ..cli_in_process import collsim_in_process

SHARING = ("fifo", "fair")


def _flows_per_link(topology: topo.Topology, pairs) -> dict[tuple, set]:
    """Directed link -> the distinct (src, dst) flows whose route crosses it."""
    flows = defaultdict(set)
    for src, dst in pairs:
        path = topology.path(src, dst)
        for hop in zip(path, path[1:]):
            flows[hop].add((src, dst))
    return flows


# -- routes --------------------------------------------------------------------------------------
def test_torus_routes_go_x_first_then_y_the_shorter_way():
    torus = topo.torus2d(4, 4, 5e-6, 10e9)  # rank = row * 4 + col; X is the column
    assert torus.path(3, 4) == [3, 0, 4]  # X wraps 3 -> 0 (one hop, not three), then Y down a row
    assert torus.path(15, 0) == [15, 12, 0]  # X first here too: the review found Y first
    assert torus.path(0, 10) == [0, 1, 2, 6, 10]
    assert torus.path(0, 2) == [0, 1, 2] and torus.path(2, 0) == [2, 3, 0]  # tie: increasing index
    assert torus.path(0, 8) == [0, 4, 8] and torus.path(8, 0) == [8, 12, 0]
    for src in range(16):
        for dst in range(16):
            path = torus.path(src, dst)
            assert all(torus.graph.has_edge(u, v) for u, v in zip(path, path[1:]))
            assert len(path) - 1 == nx.shortest_path_length(torus.graph, src, dst)  # minimal on a torus


def test_ring_topology_routes_the_shorter_way_increasing_on_ties():
    ring = topo.ring(6, 1e-6, 1e9)
    assert ring.path(0, 2) == [0, 1, 2] and ring.path(2, 0) == [2, 1, 0]
    assert ring.path(0, 3) == [0, 1, 2, 3] and ring.path(4, 1) == [4, 5, 0, 1]


def test_tree_routes_are_up_down():
    two = topo.two_level(4, 8, 1e-6, 100e9, 5e-6, 10e9)
    assert two.path(0, 9) == [0, "node0", "core", "node1", 9]
    assert two.path(9, 15) == [9, "node1", 15]
    assert topo.switch(4, 1e-6, 1e9).path(2, 3) == [2, "switch", 3]


def test_user_graph_fewest_hops_then_latency_then_smallest_sequence():
    graph = nx.Graph()
    for u, v, latency in [(0, "a", 1e-6), ("a", 1, 1e-6), (0, "b", 1e-6), ("b", 1, 2e-6), (0, "c", 1e-6), ("c", "d", 0.0), ("d", 1, 0.0)]:
        graph.add_edge(u, v, latency=latency, bandwidth=1e9)
    user = from_user_graph(graph, "test")
    assert user.path(0, 1) == [0, "a", 1]  # two hops beat three even at less latency; then least latency
    graph.edges["b", 1]["latency"] = 1e-6  # now a and b tie on hops and latency: the smaller name wins
    tied = from_user_graph(graph, "test")
    assert tied.path(0, 1) == [0, "a", 1] and tied.path(1, 0) == [1, "a", 0]


@given(rows=st.integers(1, 6), cols=st.integers(1, 6))
def test_torus_routes_are_minimal_and_change_column_before_row(rows, cols):
    torus = topo.torus2d(rows, cols, 1e-6, 1e9)
    lengths = dict(nx.all_pairs_shortest_path_length(torus.graph))
    for src in range(rows * cols):
        for dst in range(rows * cols):
            path = torus.path(src, dst)
            assert path[0] == src and path[-1] == dst and len(path) - 1 == lengths[src][dst]
            assert all(torus.graph.has_edge(u, v) for u, v in zip(path, path[1:]))
            turned = [u // cols != v // cols for u, v in zip(path, path[1:])]  # a row change: a Y hop
            assert turned == sorted(turned)  # every X hop comes before every Y hop


LATENCIES = st.sampled_from([0.0, 1e-6, 2e-6])


@st.composite
def user_graphs(draw) -> nx.Graph:
    """Connected graphs of 3-8 ranks, a few extra links and two named switches, latencies that tie."""
    n = draw(st.integers(3, 8))
    graph = nx.Graph()
    for rank in range(1, n):  # a random spanning tree keeps it connected
        graph.add_edge(rank, draw(st.integers(0, rank - 1)), latency=draw(LATENCIES), bandwidth=1e9)
    for u, v in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2 * n)):
        if u != v:
            graph.add_edge(u, v, latency=draw(LATENCIES), bandwidth=1e9)
    for name in ("sw-a", "sw-b"):
        for rank in draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3, unique=True)):
            graph.add_edge(name, rank, latency=draw(LATENCIES), bandwidth=1e9)
    return graph


@settings(max_examples=40, deadline=None)
@given(graph=user_graphs())
def test_user_graph_route_is_the_smallest_best_path(graph):
    """Against brute force: among all simple paths, fewest hops, then least latency, then the
    smallest node sequence (ranks by number before named nodes)."""
    user = from_user_graph(graph, "random")

    def cost(path):
        return (len(path), round(sum(user.graph.edges[hop]["latency"] for hop in zip(path, path[1:])), 15))

    for src in range(user.ranks):
        for dst in range(user.ranks):
            if src != dst:
                paths = list(nx.all_simple_paths(user.graph, src, dst))
                best = min(map(cost, paths))
                expected = min((path for path in paths if cost(path) == best), key=lambda path: [topo._node_key(n) for n in path])
                assert user.path(src, dst) == expected


def test_torus_ring_all_reduce_no_link_carries_two_ring_flows():
    """The review's case: 16-rank ring all-reduce of 16 MiB at 10 GB/s, 5 us on torus2d."""
    base = dict(op="all_reduce", algorithm="ring", ranks=16, size="16MiB", bandwidth="10GB/s", latency="5us", topology="torus2d")
    expected = 30 * (2 * 5e-6 + 2**20 / 10e9)  # 30 steps, each paced by the two-hop routes
    for sharing in SHARING:
        result = run_collective(CollectiveScenario.from_dict({**base, "sharing": sharing}))
        pairs = list(result.routes)
        assert sorted(pairs) == [(rank, (rank + 1) % 16) for rank in range(16)]
        flows = _flows_per_link(build_topology(result.scenario), pairs)
        assert max(len(pair_set) for pair_set in flows.values()) == 1
        assert result.time_s == pytest.approx(expected, rel=1e-9)
        busiest = result.summary()["busiest_link"]
        assert busiest["messages"] == 30 and busiest["bytes"] == 30 * 2**20


# -- placement -----------------------------------------------------------------------------------
def test_round_robin_puts_consecutive_ranks_on_different_nodes():
    placed = topo.place(topo.two_level(4, 8, 1e-6, 100e9, 5e-6, 10e9), "round_robin")
    assert [placed.node_of(rank) for rank in range(6)] == [0, 1, 2, 3, 0, 1]
    assert placed.node_ranks()[1] == [1, 5, 9, 13, 17, 21, 25, 29]
    assert placed.path(0, 1) == [0, "node0", "core", "node1", 1] and placed.path(0, 4) == [0, "node0", 4]
    assert set(placed.graph.adj["node2"]) == {*placed.node_ranks()[2], "core"}


def test_placement_file_and_its_errors(tmp_path):
    two = topo.two_level(2, 2, 1e-6, 100e9, 5e-6, 10e9)
    good = tmp_path / "place.yaml"
    good.write_text("endpoints: [0, 2, 1, 3]\n")
    placed = topo.place(two, str(good))
    assert placed.node_ranks() == [[0, 2], [1, 3]] and placed.endpoint(1) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("[0, 0, 1, 3]")
    with pytest.raises(CollsimError, match="distinct endpoint index in 0..3"):
        topo.place(two, str(bad))
    with pytest.raises(CollsimError, match="round_robin"):
        topo.place(topo.switch(4, 0.0, 1e9), "round_robin")


def _two_level(**changes) -> CollectiveScenario:
    base = dict(op="all_reduce", algorithm="ring", ranks=32, size="4MiB", bandwidth="10GB/s", latency="5us", topology="two_level")
    return CollectiveScenario.from_dict({**base, "intra_bandwidth": "100GB/s", "intra_latency": "1us", **changes})


def _nic_uplinks(result) -> dict[str, int]:
    return {stats.link: stats.messages for stats in result.link_stats if stats.link.endswith("->core")}


@pytest.mark.parametrize("sharing", SHARING)
def test_round_robin_multiplies_nic_load_and_time(sharing):
    """Block: a 32-rank ring crosses each NIC once per step; round robin: with all 8 of a node's
    ranks' hops, 8 times the messages on every NIC, and the run takes longer."""
    block = run_collective(_two_level(sharing=sharing))
    spread = run_collective(_two_level(sharing=sharing, placement="round_robin"))
    assert _nic_uplinks(block) == {f"node{n}->core": 62 for n in range(4)}
    assert _nic_uplinks(spread) == {f"node{n}->core": 8 * 62 for n in range(4)}
    assert spread.time_s > 2 * block.time_s


@pytest.mark.parametrize("sharing", SHARING)
def test_hierarchical_follows_the_placement(sharing):
    """The algorithm takes its nodes from node_ranks(), so relabelling ranks changes nothing."""
    scenario = _two_level(algorithm="hierarchical", verify=True, sharing=sharing)
    block, spread = run_collective(scenario), run_collective(scenario.replace(placement="round_robin"))
    assert block.verified and spread.verified
    assert spread.time_s == pytest.approx(block.time_s, rel=1e-12)
    assert _nic_uplinks(spread) == _nic_uplinks(block)


# -- groups --------------------------------------------------------------------------------------
def test_group_specs_and_errors():
    scenario = _two_level(groups="strided:4")
    assert scenario.groups[1] == (1, 5, 9, 13, 17, 21, 25, 29)
    assert _two_level(groups="0,1;2,3", ranks=4, gpus_per_node=2).groups == ((0, 1), (2, 3))
    assert CollectiveScenario.from_yaml(scenario.to_yaml()) == scenario
    for groups, message in [
        ("4x4", "16 ranks, but ranks is 32"),
        ([[0, 1], [1, 2]], "rank 1 is in group 0 and group 1"),
        ("0,1;2", "are in no group"),
        ("strided:x", "cannot read"),
        ([[0, 40]], "outside 0..31"),
    ]:
        with pytest.raises(CollsimError, match=message):
            _two_level(groups=groups)
    with pytest.raises(CollsimError, match="power-of-two"):
        _two_level(algorithm="recursive_doubling", groups="4x6", ranks=24)


def test_groups_on_a_switch_each_take_the_closed_form():
    """Disjoint groups on switch(p) share no port: each group takes its own closed form."""
    base = dict(op="all_reduce", algorithm="recursive_doubling", ranks=24, size="1MiB", bandwidth="10GB/s", latency="5us")
    for sharing in SHARING:
        result = run_collective(CollectiveScenario.from_dict({**base, "groups": "3x8", "verify": True, "sharing": sharing}))
        alone = run_collective(CollectiveScenario.from_dict({**base, "ranks": 8, "sharing": sharing}))
        assert result.verified
        assert result.group_times_s == pytest.approx([alone.time_s] * 3, rel=1e-12)
        assert result.analytic_time_s == pytest.approx(alone.analytic_time_s, rel=1e-12)
        assert result.time_s == pytest.approx(result.analytic_time_s, rel=1e-9)


@pytest.mark.parametrize("sharing", SHARING)
def test_groups_contend_on_nics(sharing):
    """4x8 groups with round-robin placement: every group crosses every NIC, so the four
    all-reduces at once take longer than one of them alone on the same layout."""
    together = run_collective(_two_level(sharing=sharing, placement="round_robin", groups="4x8", verify=True))
    alone = run_collective(_two_level(sharing=sharing, placement="round_robin", ranks=8, gpus_per_node=2))
    assert together.verified
    assert len(together.group_times_s) == 4 and together.time_s == pytest.approx(max(together.group_times_s))
    assert min(together.group_times_s) > 1.5 * alone.time_s
    assert _nic_uplinks(together) == {f"node{n}->core": 4 * 2 * 14 for n in range(4)}  # 4 groups x 2 ranks x 14 sends


def test_groups_run_every_algorithm_and_verify():
    for algorithm in ("hierarchical", "ring"):
        for placement in ("block", "round_robin"):
            result = run_collective(_two_level(algorithm=algorithm, placement=placement, groups="strided:4", verify=True, size="64KiB"))
            assert result.verified, (algorithm, placement)
    reduce = _two_level(op="reduce", algorithm="binomial", groups="4x8", root=3, verify=True, size="64KiB")
    assert run_collective(reduce).verified


def test_collapsed_mode_sees_placement_and_runs_groups_in_full():
    from sim.collective.collapsed import run, summarize

    spread = _two_level(placement="round_robin", size="64KiB")
    assert run(spread, "collapsed").time_s == pytest.approx(run_collective(spread).time_s, rel=1e-9)
    grouped = run(spread.replace(groups="4x8"), "collapsed")
    assert grouped.mode == "full" and "groups" in summarize(grouped)["mode_note"]


def test_hierarchical_refuses_uneven_nodes():
    with pytest.raises(CollsimError, match="as many ranks on every node"):
        run_collective(_two_level(algorithm="hierarchical", groups=[list(range(0, 12)), list(range(12, 32))]))


def _cli(*args: str) -> subprocess.CompletedProcess:
    command = ["sim", "collective", "--op", "all_reduce", "--algorithm", "ring", "--bandwidth", "10GB/s"]
    return collsim_in_process(*command, *args, cwd=Path.cwd())  # what it prints: no Python start-up needed


def test_cli_placement_groups_and_errors():
    layout = ("--topology", "two_level", "--gpus-per-node", "4", "--placement", "round_robin", "--groups", "4x4")
    out = _cli("--ranks", "16", "--size", "1MiB", *layout, "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert len(summary["group_times_s"]) == 4 and summary["time_s"] == max(summary["group_times_s"])
    assert summary["busiest_link"]["link"].endswith("->core") and summary["busiest_link"]["messages"] > 0
    assert summary["scenario"]["placement"] == "round_robin" and summary["scenario"]["groups"][1] == [4, 5, 6, 7]
    text = _cli("--ranks", "16", "--size", "1MiB", "--groups", "strided:2")
    assert "group times" in text.stdout and "busiest link" in text.stdout
    for args, message in [(("--groups", "3x5"), "groups: 3x5"), (("--placement", "round_robin"), "placement: round_robin")]:
        bad = _cli("--ranks", "16", "--size", "1MiB", *args)
        assert bad.returncode == 2 and bad.stderr.startswith("error: ") and message in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("algorithm", ["nccl_ring", "nccl_tree"])
def test_nccl_algorithms_run_on_groups(algorithm):
    """NCCL's rings and trees lay ranks out by node; a group reports its own ranks per node (it
    used to have none: AttributeError). Groups of one whole node each run as that node alone."""
    from sim.collective.runner import run_collective
    from sim.hardware.presets import scenario_fields
    from sim.scenario import CollectiveScenario

    fields = {"op": "all_reduce", "algorithm": algorithm, "size": "1MiB"}
    node_groups = run_collective(CollectiveScenario.from_dict({**scenario_fields("dgx-h100", 2), **fields, "groups": "2x8"}))
    one_node = run_collective(CollectiveScenario.from_dict({**scenario_fields("dgx-h100", 1), **fields}))
    assert node_groups.group_times_s == [pytest.approx(one_node.time_s, rel=1e-12)] * 2
    across = run_collective(CollectiveScenario.from_dict({**scenario_fields("dgx-h100", 2), **fields, "groups": "strided:8"}))
    assert len(across.group_times_s) == 8 and across.time_s > 0


def test_a_group_reports_ranks_per_node_only_when_nodes_are_even_and_in_order():
    from sim.collective.groups import GroupTopology

    two_level = topo.two_level(2, 8, 1e-6, 1e11, 5e-6, 1e10)
    assert GroupTopology(two_level, range(16)).gpus_per_node == 8
    assert GroupTopology(two_level, [0, 8]).gpus_per_node == 1
    assert GroupTopology(two_level, [0, 1, 8]).gpus_per_node is None  # 2 on one node, 1 on the other
