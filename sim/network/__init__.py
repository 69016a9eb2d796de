"""The network model: topology routes, the message engine, and two ways to share links.

``make_network(env, topology, sharing=...)`` builds the engine for a run: ``fair`` (max-min fair
flows, :mod:`sim.network.fair`, the default) or ``fifo`` (work-conserving FIFO queues,
:mod:`sim.network.engine`). docs/network-model.md explains both, rendezvous, routes and placement.
"""

from __future__ import annotations

from typing import Any

import simpy

from sim.network.engine import Compute, Delivery, Instant, Message, Network, open_instants
from sim.network.fair import FairNetwork
from sim.network.fifo import FifoNetwork
from sim.network.topology import Topology

SHARING = {"fifo": FifoNetwork, "fair": FairNetwork}


def make_network(env: simpy.Environment, topology: Topology, sharing: str = "fair", **options: Any) -> Network:
    """The engine for ``sharing`` ("fair" or "fifo"); options as :class:`Network` takes them."""
    return SHARING[sharing](env, topology, **options)


__all__ = ["Compute", "Delivery", "FairNetwork", "FifoNetwork", "Instant", "Message", "Network", "SHARING", "make_network", "open_instants"]
