"""Where to draw a topology's nodes: positions in the plane for every node of its graph.

Ranks of ``switch`` and ``ring`` sit on a circle (rank 0 at the top, clockwise) around the
switch; ``torus2d`` is its grid; ``two_level`` puts each node's GPUs on a small circle around
the node's switch, the nodes on a circle around the core. Other graphs (user files) get a
seeded spring layout, so the same graph is drawn the same way every time.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["node_positions"]


def _on_circle(count: int, index: int, radius: float = 1.0, center: tuple[float, float] = (0.0, 0.0)) -> tuple[float, float]:
    angle = math.pi / 2 - 2 * math.pi * index / max(count, 1)
    return center[0] + radius * math.cos(angle), center[1] + radius * math.sin(angle)


def _two_level(ranks: int, gpus: int) -> dict[Any, tuple[float, float]]:
    positions: dict[Any, tuple[float, float]] = {"core": (0.0, 0.0)}
    nodes = ranks // gpus
    for node in range(nodes):
        center = _on_circle(nodes, node, 1.6) if nodes > 1 else (0.0, 0.0)
        positions[f"node{node}"] = center
        for local in range(gpus):
            positions[node * gpus + local] = _on_circle(gpus, local, 0.55, center)
    return positions


def node_positions(topology: Any) -> dict[Any, tuple[float, float]]:
    """(x, y) of every node of ``topology.graph`` (a :class:`sim.network.topology.Topology`)."""
    graph, ranks = topology.graph, topology.ranks
    positions: dict[Any, tuple[float, float]] = {}
    if topology.name in ("switch", "ring"):
        positions = {rank: _on_circle(ranks, rank) for rank in range(ranks)}
        positions.update({node: (0.0, 0.0) for node in graph.nodes if not isinstance(node, int)})
    elif topology.name == "torus2d":
        from sim.network.topology import torus_shape

        _, cols = torus_shape(ranks)
        positions = {rank: (float(rank % cols), float(-(rank // cols))) for rank in range(ranks)}
    elif topology.name == "two_level" and topology.gpus_per_node:
        positions = _two_level(ranks, topology.gpus_per_node)
    if any(node not in positions for node in graph.nodes):
        import networkx as nx

        positions.update(nx.spring_layout(graph, seed=0))
    return {node: (float(positions[node][0]), float(positions[node][1])) for node in graph.nodes}
