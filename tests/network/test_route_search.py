"""Routes on graphs that are not trees, tori or rings (NCCL's topologies, user graphs): fewest
hops, then the least summed latency, then the smallest node sequence (sim/network/topology.py).

The search behind them is settled lazily per destination (only as far as the routes asked so
far); these tests check its routes against the rule itself, found by brute force over every
fewest-hop path, asking for the pairs in a shuffled order so that searches are resumed."""

import random

import networkx as nx
import pytest

from sim.collective.pick import scenario_for_pick
from sim.errors import CollsimError
from sim.nccl.topo import topology as nccl_topology
from sim.network import topology as topo

LATENCIES = (0.0, 1e-6, 2e-6, 3e-6)  # 1e-6 + 2e-6 != 3e-6 in floats: the 1e-9 tie rule matters


def _rule(graph: nx.Graph, src, dst) -> list:
    """The documented route, by brute force: every fewest-hop path, the least latency (sums
    within 1e-9 relative are a tie), then the smallest node sequence (ranks by number first)."""
    paths = list(nx.all_shortest_paths(graph, src, dst))
    latency = {tuple(path): sum(graph.edges[hop]["latency"] for hop in zip(path, path[1:])) for path in paths}
    least = min(latency.values())
    best = [path for path in paths if abs(latency[tuple(path)] - least) <= 1e-9 * max(abs(least), latency[tuple(path)])]
    return min(best, key=lambda path: [topo._node_key(node) for node in path])


def _random_graph(seed: int) -> tuple[nx.Graph, int]:
    rng = random.Random(seed)
    ranks = rng.randint(3, 14)
    graph = nx.gnm_random_graph(ranks, rng.randint(ranks, 3 * ranks), seed=seed)
    for hub in range(rng.randint(0, 3)):  # named nodes beside the ranks
        for rank in rng.sample(range(ranks), rng.randint(1, ranks)):
            graph.add_edge(f"sw{hub}", rank)
    for edge in graph.edges:
        graph.edges[edge].update(latency=rng.choice(LATENCIES), bandwidth=1e9)
    return graph, ranks


@pytest.mark.parametrize("seed", range(40))
def test_routes_on_random_graphs_follow_the_rule(seed):
    graph, ranks = _random_graph(seed)
    built = topo.Topology("custom", graph, ranks)
    assert built._tree is None  # searched, not routed by climbing a tree
    pairs = [(src, dst) for src in graph.nodes for dst in graph.nodes if src != dst]
    random.Random(seed).shuffle(pairs)
    for src, dst in pairs:
        if nx.has_path(graph, src, dst):
            assert built.path(src, dst) == _rule(graph, src, dst), (src, dst)
        else:
            with pytest.raises(CollsimError, match="no route"):
                built.path(src, dst)


@pytest.mark.parametrize("preset, nodes", [("dgx-h100", 3), ("gcp-a3-mega", 2), ("oci-a100-roce", 2)])
def test_routes_on_nccl_topologies_follow_the_rule(preset, nodes):
    scenario, why = scenario_for_pick(preset, nodes, "all_reduce", 64 << 20)
    assert scenario is not None, why
    built = nccl_topology(scenario)
    graph = built.graph
    pairs = [(src, dst) for src in range(built.ranks) for dst in range(built.ranks) if src != dst]
    random.Random(0).shuffle(pairs)
    fresh = topo.Topology(built.name, graph, built.ranks)  # no search left over from the build
    for src, dst in pairs[:300]:
        assert fresh.path(src, dst) == _rule(graph, src, dst), (src, dst)


def test_route_speed_bench_runs_as_documented():
    """bench/route_speed.py (docs/scale.md, seventh pass): one round here, this checkout against
    itself (the docs compare with the commit before); a bad --cases is one usage error."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "bench/route_speed.py", "--rounds", "1", "--cases", "dgx-h100:2", "--against", str(root)]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith("dgx-h100:2") and " this " in line and " against " in line and line.endswith("same routes: True"), line
    wrong = subprocess.run([*command[:4], "--cases", "dgx-h100"], cwd=root, capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "each case is PRESET:NODES" in wrong.stderr and "Traceback" not in wrong.stderr


def test_routes_follow_the_rule_when_searches_are_dropped():
    """The searches' cache is bounded (topology.SEARCH_ENTRIES): with a bound of a few entries every
    search is dropped and built again, and the routes stay the same, one at a time or in bulk."""
    graph, ranks = _random_graph(7)
    pairs = [(src, dst) for src in graph.nodes for dst in graph.nodes if src != dst and nx.has_path(graph, src, dst)]
    random.Random(7).shuffle(pairs)
    roomy = topo.Topology("custom", graph, ranks)
    tight = topo.Topology("custom", graph, ranks)
    tight._searches.limit = 5
    bulk = topo.Topology("custom", graph, ranks)
    bulk._searches.limit = 5
    found = bulk.paths(pairs)
    for src, dst in pairs:
        assert tight.path(src, dst) == roomy.path(src, dst) == found[src, dst] == bulk.path(src, dst) == _rule(graph, src, dst)
    held = tight._searches
    assert held.entries <= 5 or len(held.searches) == 1  # the bound held (one search is always kept)
    assert len(held.searches) < len(roomy._searches.searches) == len({dst for _, dst in pairs})


def test_nccl_channel_routes_are_found_alone_and_all_pairs_by_bounded_searches():
    """16 x dgx-h100 (128 GPUs whose routes are searched: a GPU reaches its node's switch and its
    NIC). Its channels' routes, a few sources per destination, are found pair by pair
    (topology._pair_route: no search from a destination); all pairs, as all_to_all asks, go
    through searches from the destinations, kept under a bound of 10,000 entries (a quarter of
    what they hold unbounded). Both agree with the searches of a fresh topology."""
    scenario, why = scenario_for_pick("dgx-h100", 16, "all_reduce", 1 << 20)
    assert scenario is not None, why
    built = nccl_topology(scenario)
    assert built._searched_paths and built._searches.entries == 0  # every channel route found alone
    fresh = topo.Topology(built.name, built.graph, built.ranks)
    for src, dst in list(built._searched_paths)[:300]:
        assert built.path(src, dst) == fresh._shortest_path(src, dst)
    limit = topo.SEARCH_ENTRIES
    topo.SEARCH_ENTRIES = 10_000
    try:
        every = topo.Topology(built.name, built.graph, built.ranks)
        pairs = [(src, dst) for src in range(built.ranks) for dst in range(built.ranks) if src != dst]
        assert every.route_plan(pairs) == (built.ranks, 0)  # 127 sources a destination: searched whole
        found = every.paths(pairs)
    finally:
        topo.SEARCH_ENTRIES = limit
    searches = every._searches
    assert searches.limit == 10_000 and searches.entries <= 10_000 + 2 * built.graph.number_of_nodes()
    assert len(searches.searches) < built.ranks  # dropped some
    for src, dst in pairs[::41]:
        assert found[src, dst] == fresh._shortest_path(src, dst)


@pytest.mark.parametrize("seed", range(40, 60))
def test_routes_found_alone_follow_the_rule(seed):
    """topology._pair_route, the route of one pair from its own neighbourhood, on random graphs
    that are not trees: the rule by brute force, every ordered pair (None: no route)."""
    graph, ranks = _random_graph(seed)
    built = topo.Topology("custom", graph, ranks)
    for src in graph.nodes:
        for dst in graph.nodes:
            if src != dst:
                expected = _rule(graph, src, dst) if nx.has_path(graph, src, dst) else None
                assert topo._pair_route(built._neighbours, src, dst) == expected, (src, dst)
