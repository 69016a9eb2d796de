"""User topology files: GraphML or JSON node-link graphs in (:func:`load_graph`) and out
(:func:`save_graph`); the graph rules are in :mod:`sim.network.topology`."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx

from sim.errors import CollsimError
from sim.network.topology import Topology, add_link
from sim.units import parse_bandwidth, parse_time

__all__ = ["from_user_graph", "load_graph", "save_graph"]


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
    from sim.files import read_text, shown, user_file

    path = user_file(path, "topology", "switch, ring, two_level, torus2d or a GraphML/JSON file", label="topology file")
    try:
        text = read_text(path, "topology file")
        if path.suffix.lower() in (".graphml", ".xml"):
            raw = nx.parse_graphml(text)
        else:
            raw = nx.node_link_graph(json.loads(text), edges="links")
    except CollsimError:
        raise
    except Exception as error:  # malformed files come in many shapes; name the file and why (bounded)
        reason = " ".join(str(error).split())[:300]
        raise CollsimError(f"topology file {shown(str(path))} could not be read as GraphML or JSON node-link: {reason}") from None
    return from_user_graph(nx.Graph(raw), path.name)


def _rank_id(node: object, data: dict) -> int | None:
    if isinstance(node, int) and not isinstance(node, bool):
        return node
    if isinstance(node, str) and node.strip().lstrip("-").isdigit():
        return int(node)
    if data.get("kind") == "rank" and "rank" in data:
        return int(data["rank"])
    return None


def from_user_graph(raw: nx.Graph, name: str) -> Topology:
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
        add_link(graph, a, b, latency, bandwidth)
    if not nx.is_connected(graph):
        raise CollsimError(f"topology {name}: the graph is not connected")
    return Topology(name, graph, len(ranks))


def save_graph(topology: Topology, path: str | Path) -> None:
    """Write a topology as JSON node-link data that :func:`load_graph` reads back."""
    data = nx.node_link_data(topology.graph, edges="links")
    Path(path).write_text(json.dumps(data, indent=1, default=str))
