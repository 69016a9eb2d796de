"""Topologies as networkx graphs.

Ranks are the integer nodes ``0..p-1``; switches and NICs are string nodes. Every edge is a
full-duplex link with ``bandwidth`` (bytes/s) and ``latency`` (s) attributes; each direction is
its own resource. A message's latency is the sum of the link latencies on its route, its
bandwidth the smallest on the route.

Builders keep the classic single-port model exact: on ``switch(p)`` each rank has one link into a
non-blocking switch carrying half the latency, so a message costs exactly ``latency + n/bandwidth``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

from sim.errors import CollsimError
from sim.units import parse_bandwidth, parse_time

TOPOLOGIES = ("switch", "ring", "two_level", "torus2d")


@dataclass(frozen=True)
class Topology:
    """A validated graph plus the number of ranks it connects."""

    name: str
    graph: nx.Graph
    ranks: int
    gpus_per_node: int = 0  # two_level only: ranks r and s share a node when r // g == s // g

    def node_of(self, rank: int) -> int:
        return rank // self.gpus_per_node if self.gpus_per_node else rank

    def links(self) -> list[tuple[object, object]]:
        """Directed links (u, v), each a resource."""
        return [(u, v) for u, v in self.graph.edges] + [(v, u) for u, v in self.graph.edges]


def _link(graph: nx.Graph, u: object, v: object, latency_s: float, bandwidth_Bps: float) -> None:
    graph.add_edge(u, v, latency=latency_s, bandwidth=bandwidth_Bps)


def switch(p: int, latency_s: float, bandwidth_Bps: float) -> Topology:
    """Every rank one full-duplex port into a non-blocking switch (the single-port model)."""
    graph = nx.Graph()
    graph.add_nodes_from(range(p))
    for rank in range(p):
        _link(graph, rank, "switch", latency_s / 2, bandwidth_Bps)
    return Topology("switch", graph, p)


def ring(p: int, latency_s: float, bandwidth_Bps: float) -> Topology:
    """Ranks on a physical ring: rank i linked to i+1 mod p; other pairs route over hops."""
    graph = nx.Graph()
    graph.add_nodes_from(range(p))
    for rank in range(p):
        if p > 1 and not graph.has_edge(rank, (rank + 1) % p):
            _link(graph, rank, (rank + 1) % p, latency_s, bandwidth_Bps)
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
            _link(graph, node * gpus_per_node + local, f"node{node}", intra_latency_s / 2, intra_bandwidth_Bps)
        if nodes > 1:
            _link(graph, f"node{node}", "core", inter_latency_s / 2, inter_bandwidth_Bps)
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
                    _link(graph, rank, other, latency_s, bandwidth_Bps)
    return Topology("torus2d", graph, rows * cols)


def torus_shape(p: int) -> tuple[int, int]:
    """The most square rows x cols with rows * cols == p."""
    rows = int(math.isqrt(p))
    while p % rows:
        rows -= 1
    return rows, p // rows


def _number(value: object, parse, what: str) -> float:
    try:
        return parse(value, what)
    except CollsimError:
        raise
    except (TypeError, ValueError) as error:
        raise CollsimError(f"{what}: {error}") from None


def load_graph(path: str | Path) -> Topology:
    """A user graph from GraphML or JSON node-link data.

    Rank nodes are those whose id is an integer (or a string of one) or that have
    ``kind: rank``; they must be numbered 0..p-1. Every edge needs ``bandwidth`` (bytes/s or a
    unit string such as "25GB/s") and may have ``latency`` (s or "5us", default 0).
    """
    path = Path(path)
    if not path.is_file():
        raise CollsimError(f"topology file {str(path)!r} not found; give switch, ring, two_level, torus2d or a GraphML/JSON file")
    try:
        if path.suffix.lower() in (".graphml", ".xml"):
            raw = nx.read_graphml(path)
        else:
            raw = nx.node_link_graph(json.loads(path.read_text()), edges="links")
    except Exception as error:  # malformed files come in many shapes; name the file and why
        raise CollsimError(f"topology file {str(path)!r} could not be read as GraphML or JSON node-link: {error}") from None
    return _from_user_graph(nx.Graph(raw), path.name)


def _rank_id(node: object, data: dict) -> int | None:
    if isinstance(node, int) and not isinstance(node, bool):
        return node
    if isinstance(node, str) and node.strip().lstrip("-").isdigit():
        return int(node)
    if data.get("kind") == "rank" and "rank" in data:
        return int(data["rank"])
    return None


def _from_user_graph(raw: nx.Graph, name: str) -> Topology:
    mapping = {node: _rank_id(node, data) for node, data in raw.nodes(data=True)}
    ranks = sorted(r for r in mapping.values() if r is not None)
    if not ranks or ranks != list(range(len(ranks))):
        raise CollsimError(f"topology {name}: rank nodes must be numbered 0..p-1, found {ranks[:10]}")
    graph = nx.Graph()
    for node in raw.nodes:
        graph.add_node(mapping[node] if mapping[node] is not None else str(node))
    for u, v, data in raw.edges(data=True):
        if "bandwidth" not in data:
            raise CollsimError(f"topology {name}: edge {u}-{v} has no 'bandwidth' attribute")
        bandwidth = _number(data["bandwidth"], parse_bandwidth, f"topology {name} edge {u}-{v} bandwidth")
        latency = _number(data.get("latency", 0.0), parse_time, f"topology {name} edge {u}-{v} latency")
        if bandwidth <= 0 or latency < 0:
            raise CollsimError(f"topology {name}: edge {u}-{v} needs bandwidth > 0 and latency >= 0")
        a = mapping[u] if mapping[u] is not None else str(u)
        b = mapping[v] if mapping[v] is not None else str(v)
        _link(graph, a, b, latency, bandwidth)
    if not nx.is_connected(graph):
        raise CollsimError(f"topology {name}: the graph is not connected")
    return Topology(name, graph, len(ranks))


def save_graph(topology: Topology, path: str | Path) -> None:
    """Write a topology as JSON node-link data that :func:`load_graph` reads back."""
    data = nx.node_link_data(topology.graph, edges="links")
    Path(path).write_text(json.dumps(data, indent=1, default=str))
