"""The network model: alpha-beta messages over a topology, single-port ranks, FIFO links.

A message of n bytes from ``src`` to ``dst`` follows the topology's shortest route. It occupies
every directed link on that route (and, where a rank has several links, the rank's one send
port and the receiver's one receive port) for ``latency + n / bandwidth`` seconds, where latency
is the route's summed link latency and bandwidth its smallest link bandwidth.

Shared resources serialize **FIFO in issue order**: a message starts when every resource on its
route is free, and reserves them all until it ends (no bandwidth sharing, no backfilling). Two
flows over one NIC therefore take twice as long as one, and the second starts when the first ends.

Each message is one SimPy event that both the sender and the receiver wait on; sends are eager
(delivery does not wait for the receive to be posted) and messages between a pair of ranks with
the same tag are matched in order, as MPI's non-overtaking rule says.
"""

from __future__ import annotations

from heapq import heappush
from typing import Any

import networkx as nx
import numpy as np
import simpy
from simpy.core import NORMAL
from simpy.events import PENDING, Event

from sim.topology import Topology

# A recorded message: (src, dst, start_s, end_s, nbytes, step, chunk)
Message = tuple[int, int, float, float, int, int, int]
# A recorded reduction: (rank, start_s, end_s, nbytes, step, chunk)
Compute = tuple[int, float, float, int, int, int]


class Network:
    """Runtime state of one simulation on a topology: link reservations, mailboxes, records."""

    def __init__(
        self,
        env: simpy.Environment,
        topology: Topology,
        reduce_bandwidth_Bps: float | None = None,
        jitter_s: float = 0.0,
        seed: int = 0,
        max_events: int | None = None,
    ) -> None:
        self.env = env
        self.topology = topology
        self.gamma = 1.0 / reduce_bandwidth_Bps if reduce_bandwidth_Bps else 0.0
        self.jitter_s = jitter_s
        self._rng = np.random.default_rng(seed)
        self.links = topology.links()
        self._link_index = {link: i for i, link in enumerate(self.links)}
        self._ports = self._port_resources(len(self.links))
        self._free_at = [0.0] * (len(self.links) + 2 * len(self._ports))
        self._routes: dict[int, tuple[tuple[int, ...], float, float]] = {}
        # Per (src, dst, tag): messages sent but not yet received, or receives posted but not
        # yet matched; never both at once. Short lists: most pairs hold at most one entry.
        # Keys are ints, (src * ranks + dst) + tag * ranks**2: no tuple to build per message.
        self._nodes = topology.ranks
        self._pairs = topology.ranks * topology.ranks
        self._mail: dict[int, list[simpy.Event]] = {}
        self._last_send: dict[int, simpy.Event] = {}
        self.max_events = max_events  # None: record every message
        self._record_limit = float("inf") if max_events is None else max_events
        self.messages: list[Message] = []
        self.computes: list[Compute] = []
        self.overflow: dict[tuple[int, int], list[float]] = {}  # pair -> [count, bytes, busy_s]
        self.message_count = 0
        self.bytes_sent = 0

    def _port_resources(self, first: int) -> dict[int, int]:
        """Ranks with several links get a send and a receive port (single-port model)."""
        graph = self.topology.graph
        multi = [rank for rank in range(self.topology.ranks) if graph.degree(rank) > 1]
        return {rank: first + 2 * i for i, rank in enumerate(multi)}

    def route(self, src: int, dst: int) -> tuple[tuple[int, ...], float, float]:
        """(resource indices, latency_s, 1/bandwidth) of the route src -> dst, cached."""
        cached = self._routes.get(src * self._nodes + dst)
        if cached is not None:
            return cached
        graph = self.topology.graph
        path = nx.shortest_path(graph, src, dst)
        hops = list(zip(path, path[1:]))
        resources = [self._link_index[hop] for hop in hops]
        if src in self._ports:
            resources.append(self._ports[src])
        if dst in self._ports:
            resources.append(self._ports[dst] + 1)
        latency = sum(graph.edges[hop]["latency"] for hop in hops)
        bandwidth = min(graph.edges[hop]["bandwidth"] for hop in hops)
        cached = (tuple(resources), latency, 1.0 / bandwidth)
        self._routes[src * self._nodes + dst] = cached
        return cached

    def send(self, src: int, dst: int, nbytes: int, payload: Any = None, step: int = -1, chunk: int = -1, tag: int = 0) -> simpy.Event:
        """Issue a message now; returns the event of its delivery (wait on it for a blocking send).

        This is the simulator's hot path: one event per message, no Resource objects.
        """
        env = self.env
        pair = src * self._nodes + dst
        resources, latency, inverse_bandwidth = self._routes.get(pair) or self.route(src, dst)
        free_at = self._free_at
        start = env._now
        for index in resources:
            if free_at[index] > start:
                start = free_at[index]
        end = start + latency + nbytes * inverse_bandwidth
        if self.jitter_s:
            end += self._rng.exponential(self.jitter_s)
        for index in resources:
            free_at[index] = end
        key = pair + tag * self._pairs
        queue = self._mail.get(key)
        if queue and queue[0]._value is PENDING:  # a receive is waiting: this message is its
            event = queue.pop(0)
        else:
            event = Event(env)
            if queue is None:
                self._mail[key] = [event]
            else:
                queue.append(event)
        # Deliver at `end` (as Environment.schedule does, but at the exact end time): the same
        # event wakes the receiver and a blocking sender.
        event._ok = True
        event._value = payload
        heappush(env._queue, (end, NORMAL, next(env._eid), event))
        self._last_send[src] = event
        self.message_count += 1
        self.bytes_sent += nbytes
        if len(self.messages) < self._record_limit:
            self.messages.append((src, dst, start, end, nbytes, step, chunk))
        else:
            self._aggregate(src, dst, nbytes, end - start)
        return event

    def _aggregate(self, src: int, dst: int, nbytes: int, busy_s: float) -> None:
        totals = self.overflow.get((src, dst))
        if totals is None:
            totals = self.overflow[(src, dst)] = [0, 0, 0.0]
        totals[0] += 1
        totals[1] += nbytes
        totals[2] += busy_s

    def recv(self, src: int, dst: int, tag: int = 0) -> simpy.Event:
        """The next message src -> dst (with ``tag``); its value is the payload."""
        key = src * self._nodes + dst + tag * self._pairs
        queue = self._mail.get(key)
        if queue and queue[0]._value is not PENDING:  # already sent (maybe not yet delivered)
            return queue.pop(0)
        event = Event(self.env)
        if queue is None:
            self._mail[key] = [event]
        else:
            queue.append(event)
        return event

    def reduce(self, rank: int, nbytes: int, step: int = -1, chunk: int = -1) -> simpy.Event | None:
        """Combine ``nbytes`` received bytes on ``rank`` (n / reduce_bandwidth); None when free."""
        if not self.gamma or not nbytes:
            return None
        duration = nbytes * self.gamma
        now = self.env._now
        if len(self.computes) < self._record_limit:
            self.computes.append((rank, now, now + duration, nbytes, step, chunk))
        return self.env.timeout(duration)

    def last_send(self, rank: int) -> simpy.Event | None:
        """The delivery of ``rank``'s latest message (all earlier ones from it end no later on its port)."""
        return self._last_send.get(rank)

    def pending(self) -> list[tuple[int, int, int]]:
        """Receives posted that no message matched: a deadlock when the run ends with any."""
        waiting = []
        for key, queue in self._mail.items():
            if queue and queue[0]._value is PENDING:
                tag, pair = divmod(key, self._pairs)
                waiting.append((*divmod(pair, self._nodes), tag))
        return waiting
