"""Topologies as networkx graphs.

Ranks are the integer nodes ``0..p-1``; switches and NICs are string nodes. Every edge is a
full-duplex link with ``bandwidth`` (bytes/s) and ``latency`` (s) attributes; each direction is
its own resource. A message's latency is the sum of the link latencies on its route, its
bandwidth the smallest on the route.

Builders keep the classic single-port model exact: on ``switch(p)`` each rank has one link into a
non-blocking switch carrying half the latency, so a message costs exactly ``latency + n/bandwidth``.

Routes (:meth:`Topology.path`) are deterministic, one per ordered pair (docs/network-model.md):

- trees (switch, two_level, any tree-shaped user graph): the unique path, up to the common
  ancestor and down (up/down routing);
- torus2d: dimension order, X first (X is the column index: along a row, rank r to r +- 1),
  then Y (the row index); each dimension the shorter way round its ring, and the increasing
  direction (with wrap-around) when both ways are equally long;
- ring: the shorter way round, the increasing direction (i -> i+1) on a tie;
- other user graphs: fewest hops, then the smallest summed latency (equal to 1e-9 relative
  counts as a tie), then the lexicographically smallest node sequence (rank nodes, by number,
  before named nodes, by name).

Placement (:func:`place`) puts logical rank r on an endpoint: the builders number endpoints as
ranks (``block``: rank r on endpoint r); a placed topology relabels its rank nodes so that node
r is where rank r sits, and routes, nodes and node_of follow.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from heapq import heappop, heappush

import networkx as nx

from sim.errors import CollsimError

TOPOLOGIES = ("switch", "ring", "two_level", "torus2d")
PLACEMENTS = ("block", "round_robin")  # or a YAML/JSON file listing each rank's endpoint
_LATENCY_TIE = 1e-9  # relative: summed route latencies this close are equal (float sums differ by order)


@dataclass(frozen=True)
class Topology:
    """A validated graph plus the number of ranks it connects."""

    name: str
    graph: nx.Graph
    ranks: int
    gpus_per_node: int = 0  # two_level only: endpoints e and f share a node when e // g == f // g
    shape: tuple[int, int] = (0, 0)  # torus2d only: (rows, cols); endpoint = row * cols + col
    endpoints: tuple[int, ...] = ()  # rank r sits on endpoint endpoints[r]; () is block: r on r
    placement: str = "block"  # how endpoints were chosen: block, round_robin or a file name

    def endpoint(self, rank: int) -> int:
        """The endpoint (builder numbering) that logical ``rank`` sits on."""
        return self.endpoints[rank] if self.endpoints else rank

    def node_of(self, rank: int) -> int:
        """The node (host) ``rank`` sits on; without nodes every rank is its own."""
        endpoint = self.endpoint(rank)
        return endpoint // self.gpus_per_node if self.gpus_per_node else endpoint

    def node_ranks(self) -> list[list[int]]:
        """The ranks on each node, nodes in order, each node's ranks in endpoint order."""
        return [list(ranks) for ranks in self._node_ranks]

    @cached_property
    def _node_ranks(self) -> tuple[tuple[int, ...], ...]:
        by_node: dict[int, list[int]] = {}
        for rank in sorted(range(self.ranks), key=self.endpoint):
            by_node.setdefault(self.node_of(rank), []).append(rank)
        return tuple(tuple(by_node[node]) for node in sorted(by_node))

    def links(self) -> list[tuple[object, object]]:
        """Directed links (u, v), each a resource."""
        return [(u, v) for u, v in self.graph.edges] + [(v, u) for u, v in self.graph.edges]

    def path(self, src: object, dst: object) -> list[object]:
        """The route from ``src`` to ``dst`` as a node sequence (both ends included); the rules
        per topology are in the module docstring. Callers cache it per pair."""
        if src == dst:
            return [src]
        if self.name == "torus2d" and self.shape[0] and _is_rank(src) and _is_rank(dst):
            return self._torus_path(src, dst)
        if self.name == "ring" and _is_rank(src) and _is_rank(dst):
            return self._ring_path(src, dst)
        if self._tree is not None:
            return self._tree_path(src, dst)
        known = self._searched_paths.get((src, dst))
        return list(known) if known is not None else self._shortest_path(src, dst)

    def paths(self, pairs: Sequence[tuple[object, object]]) -> dict[tuple[object, object], list[object]]:
        """The routes of many (src, dst) pairs, each as :meth:`path` gives it, kept for
        :meth:`path` (an NCCL topology's channels ask for the same pairs again when they run). On a
        searched graph a destination asked for by few sources (:meth:`route_plan`) has each of its
        routes found alone (:func:`_pair_route`: what the pair's neighbourhood holds), one asked
        for by many gets its search from the destination, built once."""
        distinct = set(pairs)
        singles = self._single_destinations(distinct)
        ordered = sorted(distinct, key=lambda pair: (_node_key(pair[1]), _node_key(pair[0])))
        found = {}
        for src, dst in ordered:
            if dst in singles and src != dst:
                path = _pair_route(self._neighbours, src, dst)
                if path is None:
                    raise CollsimError(f"topology {self.name}: no route from {src} to {dst}")
                found[src, dst] = path
            else:
                found[src, dst] = self.path(src, dst)
        if self._searched:
            self._searched_paths.update((pair, tuple(path)) for pair, path in found.items())
        return found

    def route_plan(self, pairs: Sequence[tuple[object, object]] | None = None) -> tuple[int, int]:
        """How these routes would be found, for the budget: (destinations searched whole, pairs
        found alone). ``pairs`` found in bulk by :meth:`paths`; None: asked for one at a time as a
        run goes (:meth:`path`), every rank's a search of its own. (0, 0) where routes are
        climbed or walked (trees, tori, rings)."""
        if not self._searched:
            return 0, 0
        if pairs is None:
            return self.ranks, 0
        distinct = set(pairs)
        singles = self._single_destinations(distinct)
        alone = sum(1 for _, dst in distinct if dst in singles)
        return len({dst for _, dst in distinct} - singles), alone

    @property
    def _searched(self) -> bool:
        """Routes on this graph are searched (the rule of fewest hops, latency, smallest sequence)."""
        return self._tree is None and self.name not in ("torus2d", "ring")

    def _single_destinations(self, pairs: set[tuple[object, object]]) -> set[object]:
        """Destinations whose routes are cheaper found alone than by a search from them: asked
        for by at most one source per :data:`PAIR_SHARE` nodes of the graph (a search visits
        about every node; a pair's own search about 30 of them on an NCCL topology). ``pairs``:
        distinct (src, dst) pairs."""
        if not self._searched:
            return set()
        sources: dict[object, int] = {}
        for _, dst in pairs:
            sources[dst] = sources.get(dst, 0) + 1
        most = max(1, self.graph.number_of_nodes() // PAIR_SHARE)
        return {dst for dst, count in sources.items() if count <= most}

    # -- routing -----------------------------------------------------------------------------
    @cached_property
    def _rank_at(self) -> dict[int, int]:
        """Endpoint -> the rank sitting on it."""
        return {self.endpoint(rank): rank for rank in range(self.ranks)}

    def _torus_path(self, src: int, dst: int) -> list[object]:
        rows, cols = self.shape
        (row, col), (to_row, to_col) = divmod(self.endpoint(src), cols), divmod(self.endpoint(dst), cols)
        endpoints = [row * cols + c for c in _ring_walk(col, to_col, cols)]  # X: along the row
        endpoints += [r * cols + to_col for r in _ring_walk(row, to_row, rows)[1:]]  # then Y
        return [self._rank_at[endpoint] for endpoint in endpoints]

    def _ring_path(self, src: int, dst: int) -> list[object]:
        walk = _ring_walk(self.endpoint(src), self.endpoint(dst), self.ranks)
        return [self._rank_at[endpoint] for endpoint in walk]

    @cached_property
    def _tree(self) -> tuple[dict, dict] | None:
        """(parent, depth) of every node when the graph is a tree, rooted at its busiest node;
        None otherwise. A tree has one path between two nodes, so it is the route."""
        graph = self.graph
        if graph.number_of_nodes() < 2 or not nx.is_tree(graph):
            return None
        root = max(graph.nodes, key=graph.degree)
        parent, depth = {root: root}, {root: 0}
        frontier = [root]
        while frontier:
            following = []
            for node in frontier:
                for neighbour in graph.adj[node]:
                    if neighbour not in depth:
                        parent[neighbour], depth[neighbour] = node, depth[node] + 1
                        following.append(neighbour)
            frontier = following
        return parent, depth

    def _tree_path(self, src: object, dst: object) -> list[object]:
        """Climb from both ends to the common ancestor (up/down). Searching the graph instead
        would expand the switch's p neighbours for every route."""
        parent, depth = self._tree
        up, down = [src], [dst]
        while depth[up[-1]] > depth[down[-1]]:
            up.append(parent[up[-1]])
        while depth[down[-1]] > depth[up[-1]]:
            down.append(parent[down[-1]])
        while up[-1] != down[-1]:
            up.append(parent[up[-1]])
            down.append(parent[down[-1]])
        return up + down[-2::-1]

    @cached_property
    def _searches(self) -> _Searches:
        return _Searches()  # destination -> its search by (hops, latency), settled as far as routes needed

    @cached_property
    def _searched_paths(self) -> dict[tuple[object, object], tuple[object, ...]]:
        return {}  # routes found by paths(), kept: searches are dropped beyond SEARCH_ENTRIES

    @cached_property
    def _neighbours(self) -> _Adjacency:
        """The graph as plain tuples for the route searches (networkx's adjacency views cost a
        Python call per item): nodes numbered, each node's (neighbour, link latency, neighbour's
        number) in :func:`_node_key` order."""
        adj = self.graph.adj
        nodes = list(adj)
        number = {node: i for i, node in enumerate(nodes)}
        links = [
            tuple((other, float(adj[node][other]["latency"]), number[other]) for other in sorted(adj[node], key=_node_key))
            for node in nodes
        ]
        return _Adjacency(nodes, number, links, [{other: latency for _, latency, other in row} for row in links])

    def _shortest_path(self, src: object, dst: object) -> list[object]:
        """Fewest hops, then least latency, then the smallest node sequence: walk from ``src``,
        each time to the smallest neighbour that lies on a best route to ``dst``."""
        graph = self._neighbours
        cost = self._searches.reach(graph, dst, src)
        if src not in cost:
            raise CollsimError(f"topology {self.name}: no route from {src} to {dst}")
        number, links = graph.number, graph.links
        path = [src]
        here = src
        while here != dst:
            hops, latency = cost[here]
            for node, link_latency, _ in links[number[here]]:  # the first that qualifies is the smallest
                known = cost.get(node)
                if known is not None and known[0] == hops - 1 and _same(known[1] + link_latency, latency):
                    break
            path.append(node)
            here = node
        return path


def _is_rank(node: object) -> bool:
    return isinstance(node, int) and not isinstance(node, bool)


def _node_key(node: object) -> tuple[int, int | str]:
    """Rank nodes by number before named nodes by name: a total order for mixed labels."""
    return (0, node) if _is_rank(node) else (1, str(node))


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= _LATENCY_TIE * max(abs(a), abs(b))


def _ring_walk(start: int, end: int, size: int) -> list[int]:
    """Positions from ``start`` to ``end`` on a ring of ``size``: the shorter way round, the
    increasing direction when both ways are equally long."""
    forward = (end - start) % size
    step = 1 if forward <= size - forward else -1
    return [(start + step * i) % size for i in range((forward if step == 1 else size - forward) + 1)]


SEARCH_ENTRIES = 4_000_000  # settled nodes and heap entries kept over all destinations' searches (~100 B each)


class _Searches:
    """Each destination's :class:`_Search`, the least recently used dropped once they hold more
    than :data:`SEARCH_ENTRIES` entries together (a search over every node per destination is
    quadratic in the graph: 1,024 x dgx-h100 ran out of a 6 GB limit before this bound). A dropped search is
    built again if asked for again; :meth:`Topology.paths` asks destination by destination."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = SEARCH_ENTRIES if limit is None else limit
        self.searches: dict[object, _Search] = {}  # least recently used first
        self.entries = 0

    def reach(self, graph: _Adjacency, dst: object, src: object) -> dict[object, tuple[int, float]]:
        """The costs of ``dst``'s search, settled as far as ``src``."""
        searches = self.searches
        search = searches.pop(dst, None)
        if search is None:
            search = _Search(graph, dst)
        searches[dst] = search  # now the most recently used
        before = search.size()
        cost = search.reach(src)
        self.entries += search.size() - before
        while self.entries > self.limit and len(searches) > 1:
            oldest = next(iter(searches))
            self.entries -= searches.pop(oldest).size()
        return cost


@dataclass(frozen=True)
class _Adjacency:
    """A graph's nodes (``nodes[i]`` is node number i), their numbers, and ``links[i]``: node i's
    (neighbour, link latency, neighbour's number), neighbours in :func:`_node_key` order."""

    nodes: list[object]
    number: dict[object, int]
    links: list[tuple[tuple[object, float, int], ...]]
    latency: list[dict[int, float]]  # node i's neighbour number -> link latency


PAIR_SHARE = 32  # paths(): a destination asked for by at most (graph nodes / this) sources has its routes found alone


def _pair_route(graph: _Adjacency, src: object, dst: object) -> list[object] | None:
    """The route src -> dst by the rule (fewest hops, then least latency, then the smallest node
    sequence) from the pair's own neighbourhood: breadth-first from both ends, the frontier of
    fewer links first, until they meet at the fewest hops D; the nodes on fewest-hop routes (the
    layers of a DAG: i hops from src, D - i to dst) traced back from where they met; each one's
    least latency to dst over them, from dst back, with the same sums as the search from dst
    (every neighbour one hop nearer dst of such a node is on a fewest-hop route itself); then
    the walk of :meth:`Topology._shortest_path`. None when there is no route."""
    number, links, nodes, latency = graph.number, graph.links, graph.nodes, graph.latency
    s, d = number[src], number[dst]
    near = {s: 0}, {d: 0}  # hops from src, hops to dst
    layers: tuple[list[list[int]], list[list[int]]] = ([[s]], [[d]])
    while True:
        fronts = layers[0][-1], layers[1][-1]
        if not fronts[0] or not fronts[1]:
            return None
        side = 0 if sum(len(links[n]) for n in fronts[0]) <= sum(len(links[n]) for n in fronts[1]) else 1
        seen, other, depth = near[side], near[1 - side], len(layers[side])
        grown = []
        for n in fronts[side]:
            for _, _, m in links[n]:
                if m not in seen:
                    seen[m] = depth
                    grown.append(m)
        layers[side].append(grown)
        met = [m for m in grown if m in other]
        if met:
            break
    hops = min(near[0][m] + near[1][m] for m in met)
    middle = {m for m in met if near[0][m] + near[1][m] == hops}
    level = near[0][next(iter(middle))]
    dag: list[set[int]] = [set() for _ in range(hops + 1)]
    dag[level] = middle
    for i in range(level - 1, -1, -1):
        dag[i] = {n for n in layers[0][i] if _touches(latency[n], dag[i + 1])}
    for i in range(level + 1, hops + 1):
        dag[i] = {n for n in layers[1][hops - i] if _touches(latency[n], dag[i - 1])}
    least = {d: 0.0}
    for i in range(hops - 1, -1, -1):
        for n in dag[i]:
            row = latency[n]
            least[n] = min(least[m] + row[m] for m in dag[i + 1] if m in row)
    path, here = [src], s
    for i in range(1, hops + 1):
        row, target = latency[here], least[here]
        here = min((m for m in dag[i] if m in row and _same(least[m] + row[m], target)), key=lambda m: _node_key(nodes[m]))
        path.append(nodes[here])
    return path


def _touches(row: dict[int, float], group: set[int]) -> bool:
    """Whether a node with neighbours ``row`` is next to one of ``group``."""
    if len(row) <= len(group):
        return any(m in group for m in row)
    return any(m in row for m in group)


class _Search:
    """Dijkstra from one destination over (hops, summed latency), settled lazily: only as far as
    the sources routed to it so far (an NCCL topology has a GPU's few peers for each of its
    hundreds of GPUs; searching the whole graph per destination cost a third of a 64-node run).
    Each node settles at the (hops, latency) of a whole search (ties among equal keys are taken
    in node-number order, which moves no value), and every node on a best route from a settled
    source has fewer hops, so it is settled first: the walk in :meth:`Topology._shortest_path`
    reads the same costs. Heap entries are (hops, latency, node number): what a search keeps
    between sources stays small."""

    __slots__ = ("graph", "best", "heap")

    def __init__(self, graph: _Adjacency, dst: object) -> None:
        self.graph = graph
        self.best: dict[object, tuple[int, float]] = {}
        self.heap: list[tuple[int, float, int]] = [(0, 0.0, graph.number[dst])]

    def size(self) -> int:
        """Entries held: settled nodes and heap entries."""
        return len(self.best) + len(self.heap)

    def reach(self, src: object) -> dict[object, tuple[int, float]]:
        """Settled nodes -> (hops, latency) of their best route to the destination, ``src``
        among them unless it has no route there."""
        best, heap = self.best, self.heap
        nodes, links = self.graph.nodes, self.graph.links
        while src not in best and heap:
            hops, latency, number = heappop(heap)
            node = nodes[number]
            if node in best:
                continue
            best[node] = (hops, latency)
            hops += 1
            for neighbour, link_latency, other in links[number]:
                if neighbour not in best:
                    heappush(heap, (hops, latency + link_latency, other))
        return best


def add_link(graph: nx.Graph, u: object, v: object, latency_s: float, bandwidth_Bps: float) -> None:
    """One full-duplex link u-v with its latency (s) and bandwidth (bytes/s)."""
    graph.add_edge(u, v, latency=latency_s, bandwidth=bandwidth_Bps)


def switch(p: int, latency_s: float, bandwidth_Bps: float) -> Topology:
    """Every rank one full-duplex port into a non-blocking switch (the single-port model)."""
    graph = nx.Graph()
    graph.add_nodes_from(range(p))
    for rank in range(p):
        add_link(graph, rank, "switch", latency_s / 2, bandwidth_Bps)
    return Topology("switch", graph, p)


def ring(p: int, latency_s: float, bandwidth_Bps: float) -> Topology:
    """Ranks on a physical ring: rank i linked to i+1 mod p; other pairs route over hops."""
    graph = nx.Graph()
    graph.add_nodes_from(range(p))
    for rank in range(p):
        if p > 1 and not graph.has_edge(rank, (rank + 1) % p):
            add_link(graph, rank, (rank + 1) % p, latency_s, bandwidth_Bps)
    return Topology("ring", graph, p)


def two_level(
    nodes: int,
    gpus_per_node: int,
    intra_latency_s: float,
    intra_bandwidth_Bps: float,
    inter_latency_s: float,
    inter_bandwidth_Bps: float,
) -> Topology:
    """Fast links inside a node (through a node switch), one shared NIC per node across nodes.

    Intra-node messages cost ``intra_latency + n/intra_bandwidth``; inter-node messages cross
    the sender's NIC and the receiver's NIC and cost ``intra_latency + inter_latency +
    n/min(intra, inter bandwidth)``. All of a node's inter-node traffic shares its NIC.
    """
    graph = nx.Graph()
    graph.add_nodes_from(range(nodes * gpus_per_node))
    for node in range(nodes):
        for local in range(gpus_per_node):
            add_link(graph, node * gpus_per_node + local, f"node{node}", intra_latency_s / 2, intra_bandwidth_Bps)
        if nodes > 1:
            add_link(graph, f"node{node}", "core", inter_latency_s / 2, inter_bandwidth_Bps)
    return Topology("two_level", graph, nodes * gpus_per_node, gpus_per_node)


def torus2d(rows: int, cols: int, latency_s: float, bandwidth_Bps: float) -> Topology:
    """A rows x cols grid with wrap-around links; rank = row * cols + col."""
    graph = nx.Graph()
    graph.add_nodes_from(range(rows * cols))
    for row in range(rows):
        for col in range(cols):
            rank = row * cols + col
            for other in (row * cols + (col + 1) % cols, ((row + 1) % rows) * cols + col):
                if other != rank and not graph.has_edge(rank, other):
                    add_link(graph, rank, other, latency_s, bandwidth_Bps)
    return Topology("torus2d", graph, rows * cols, shape=(rows, cols))


def torus_shape(p: int) -> tuple[int, int]:
    """The most square rows x cols with rows * cols == p."""
    rows = int(math.isqrt(p))
    while p % rows:
        rows -= 1
    return rows, p // rows


def place(topology: Topology, placement: str | Sequence[int]) -> Topology:
    """``topology`` with logical rank r on endpoint ``endpoints[r]`` of the chosen placement.

    ``block``: rank r on endpoint r. ``round_robin`` (two_level): consecutive ranks on different
    nodes, rank r on node r % nodes (local slot r // nodes). A file (YAML or JSON) or a sequence
    lists each rank's endpoint index. The rank nodes of the graph are relabelled so that node r
    is where rank r sits; routes, :meth:`Topology.node_of` and :meth:`Topology.node_ranks` follow.
    """
    label = placement if isinstance(placement, str) else "explicit"
    endpoints = placement_endpoints(topology, placement)
    where = {topology.endpoint(rank): rank for rank in range(topology.ranks)}  # endpoint -> node now
    mapping = {where[endpoint]: rank for rank, endpoint in enumerate(endpoints) if where[endpoint] != rank}
    graph = nx.relabel_nodes(topology.graph, mapping, copy=True) if mapping else topology.graph
    identity = all(rank == endpoint for rank, endpoint in enumerate(endpoints))
    return dataclasses.replace(topology, graph=graph, endpoints=() if identity else tuple(endpoints), placement=label)


def placement_endpoints(topology: Topology, placement: str | Sequence[int]) -> list[int]:
    """Each rank's endpoint index under ``placement`` (see :func:`place`); CollsimError if invalid."""
    p = topology.ranks
    if placement == "block":
        return list(range(p))
    if placement == "round_robin":
        if topology.name != "two_level" or not topology.gpus_per_node:
            raise CollsimError(
                f"placement: round_robin spreads consecutive ranks over the nodes of a two_level topology, not {topology.name}; "
                "use block or a YAML/JSON file listing each rank's endpoint"
            )
        nodes = p // topology.gpus_per_node
        return [(rank % nodes) * topology.gpus_per_node + rank // nodes for rank in range(p)]
    endpoints = read_placement(placement) if isinstance(placement, str) else list(placement)
    name = placement if isinstance(placement, str) else "placement"
    if len(endpoints) != p or sorted(endpoints) != list(range(p)):
        raise CollsimError(
            f"placement {name}: must list, for each of the {p} ranks, a distinct endpoint index in 0..{p - 1}; got {endpoints[:16]}"
        )
    return endpoints


def read_placement(path: str) -> list[int]:
    """A placement file: a YAML/JSON list of endpoint indices (one per rank, in rank order), or
    a mapping whose ``endpoints`` key holds that list."""
    import yaml

    from sim.files import parse_data, read_text, shown, user_file

    file = user_file(path, "placement", f"{' or '.join(PLACEMENTS)} or a YAML/JSON file listing each rank's endpoint")
    name = f"placement file {shown(str(path))}"
    try:
        data = parse_data(read_text(file, "placement file"), file.suffix)
    except yaml.YAMLError as error:
        raise CollsimError(f"{name} is not valid YAML/JSON: {' '.join(str(error).split())[:300]}") from None
    except CollsimError as error:
        raise CollsimError(f"{name}: {error}", field="placement") from None
    if isinstance(data, dict):
        data = data.get("endpoints")
    if not isinstance(data, list) or not all(_is_rank(item) for item in data):
        raise CollsimError(f"{name}: expected a list of endpoint indices (or a mapping with key 'endpoints')")
    return data
