"""The message engine: routes, mailboxes, rendezvous, records; sharing is a subclass's.

A message of n bytes from ``src`` to ``dst`` follows its topology route (``Topology.path``:
dimension order on tori, up/down on trees). Its route is every directed link on that path plus,
where a rank has several links, the sender's one send port and the receiver's one receive port
(the single-port model). Alone on its route it takes ``latency + n / bandwidth``: latency summed
over the links, bandwidth the smallest on the route.

**Matching and rendezvous.** Messages between a pair with the same tag match receives in order
(MPI's non-overtaking rule). A message of at most ``eager_limit`` bytes starts when it is sent; a
larger one starts only when the receiver has posted the matching receive (rendezvous, as MPI's
large-message protocol and NCCL's credit-based buffers): a sender cannot push data the receiver
has no room for.

**Sharing.** What happens when messages meet on a link or port is a subclass's: see
:mod:`sim.network.fifo` (work-conserving FIFO queues) and :mod:`sim.network.fair` (max-min fair
flows, the default), and docs/network-model.md.

Speed (docs/scale.md): links are float "free at" times, not Resource objects; the messages (and
reductions) that end at one instant share one heap entry, an :class:`Instant`, and fire in issue
order. An instant stops taking deliveries as soon as anything else is scheduled for its time (the
environment's ``schedule`` is wrapped to see that: :mod:`sim.network.simpy_core`, the one module
that touches SimPy's private state), so later deliveries go behind it. Records go
to bounded typed columns (:mod:`sim.network.records`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import simpy
from simpy.events import Event

from sim.network.records import BUFFER_ROWS, COMPUTE_COLUMNS, MESSAGE_COLUMNS, RecordTable
from sim.network.simpy_core import NORMAL, PENDING, on_schedule, schedule_at
from sim.network.topology import Topology

# A recorded message: (src, dst, start_s, end_s, nbytes, step, chunk)
Message = tuple[int, int, float, float, int, int, int]
# A recorded reduction: (rank, start_s, end_s, nbytes, step, chunk)
Compute = tuple[int, float, float, int, int, int]

_JITTER_BLOCK = 4096  # exponential draws taken at once; the same stream as one by one


class Delivery(Event):
    """A message's arrival (or a reduction's end): an event that never fails."""

    _ok = True
    rendezvous: tuple | None = None  # a sent message that waits for its receive: its transfer


_new = object.__new__  # Delivery without a Python-level __init__ call: see _delivery


def _delivery(env: simpy.Environment, value: Any = PENDING) -> Delivery:
    event = _new(Delivery)
    event.env = env
    event.callbacks = []
    event._value = value
    return event


class Instant(Event):
    """Deliveries due at one simulated time, fired in issue order from one heap entry."""

    def __init__(self, env: simpy.Environment, time: float, instants: dict[float, Instant]) -> None:
        self.env = env
        self.callbacks = [_fire]  # a plain function: a bound method would make a reference cycle
        self._ok = True
        self._value = None
        self.time = time
        self.events: list[Event] = []
        self._instants = instants


def _fire(instant: Instant) -> None:
    instants = instant._instants
    if instants.get(instant.time) is instant:  # deliveries issued from now on go behind it
        del instants[instant.time]
    for event in instant.events:
        callbacks = event.callbacks
        event.callbacks = None
        if len(callbacks) == 1:  # the usual case: one waiting process
            callbacks[0](event)
        else:
            for callback in callbacks:
                callback(event)


def open_instants(env: simpy.Environment) -> dict[float, Instant]:
    """The environment's open instants (time -> Instant), shared by every Network on it.

    The first call wraps ``env.schedule`` so that scheduling anything else at time t closes the
    open instant of t: deliveries issued after it then fire after it, as plain SimPy events would.
    """
    instants = getattr(env, "_collsim_instants", None)  # not env.__dict__: that would de-optimize env
    if instants is None:
        instants = env._collsim_instants = {}
        on_schedule(env, instants)
    return instants


class Network:
    """Runtime state of one simulation on a topology: routes, mailboxes, records.

    Messages larger than ``eager_limit_bytes`` wait for the matching receive before they start
    (rendezvous); ``None`` sends everything eagerly. Subclasses say how messages share links.
    """

    sharing = ""

    def __init__(
        self,
        env: simpy.Environment,
        topology: Topology,
        reduce_bandwidth_Bps: float | None = None,
        jitter_s: float = 0.0,
        seed: int = 0,
        max_events: int | None = None,
        eager_limit_bytes: int | None = None,
    ) -> None:
        self.env = env
        self.topology = topology
        self.gamma = 1.0 / reduce_bandwidth_Bps if reduce_bandwidth_Bps else 0.0
        self.jitter_s = jitter_s
        self.eager_limit = float("inf") if eager_limit_bytes is None else eager_limit_bytes
        self._rng = np.random.default_rng(seed)
        self._jitter: list[float] = []
        self.links = topology.links()
        self._link_index = {link: i for i, link in enumerate(self.links)}
        self._ports = self._port_resources(len(self.links))
        self.resource_count = len(self.links) + 2 * len(self._ports)
        self._free_at = [0.0] * self.resource_count
        self._routes: dict[int, tuple[tuple[int, ...], float, float]] = {}
        # Per (src, dst, tag): messages sent but not yet received, or receives posted but not
        # yet matched; never both at once. One event, or a list when several are outstanding.
        # Keys are ints, (src * ranks + dst) + tag * ranks**2: no tuple to build per message.
        self._nodes = topology.ranks
        self._pairs = topology.ranks * topology.ranks
        self._mail: dict[int, Event | list[Event]] = {}
        self._last_send: list[Event | None] = [None] * topology.ranks
        self._instants = open_instants(env)
        self.max_events = max_events  # None: record every message
        self.message_table = RecordTable(MESSAGE_COLUMNS, (0, 1), max_events)
        self.compute_table = RecordTable(COMPUTE_COLUMNS, (0,), max_events)

    def _port_resources(self, first: int) -> dict[int, int]:
        """Ranks with several links get a send and a receive port (single-port model), unless
        the topology says each of a rank's links is a port of its own (``ports_per_link``: NCCL's
        tree on sim.nccl.topo, whose GPUs send over NVLink and their NIC at once)."""
        if getattr(self.topology, "ports_per_link", False):
            return {}
        graph = self.topology.graph
        multi = [rank for rank in range(self.topology.ranks) if graph.degree(rank) > 1]
        return {rank: first + 2 * i for i, rank in enumerate(multi)}

    def capacities(self) -> list[float]:
        """Bytes/s of every resource: a link's bandwidth; a port's, its rank's fastest link."""
        graph = self.topology.graph
        capacity = [float(graph.edges[link]["bandwidth"]) for link in self.links]
        capacity += [0.0] * (2 * len(self._ports))
        for rank, index in self._ports.items():
            fastest = max(float(data["bandwidth"]) for _, _, data in graph.edges(rank, data=True))
            capacity[index] = capacity[index + 1] = fastest
        return capacity

    def without_latency(self) -> list[bool]:
        """Per resource: whether a route without latency may cross it (a link of latency 0, or a
        port of a rank with such a link), so that a flow sent at an instant joins it then."""
        graph = self.topology.graph
        zero = [float(graph.edges[link]["latency"]) == 0.0 for link in self.links]
        zero += [False] * (2 * len(self._ports))
        for rank, index in self._ports.items():
            zero[index] = zero[index + 1] = any(float(data["latency"]) == 0.0 for _, _, data in graph.edges(rank, data=True))
        return zero

    # -- records, read side ------------------------------------------------------------------
    @property
    def messages(self) -> RecordTable:
        """Recorded messages as (src, dst, start_s, end_s, nbytes, step, chunk) tuples."""
        return self.message_table

    @property
    def computes(self) -> RecordTable:
        """Recorded reductions as (rank, start_s, end_s, nbytes, step, chunk) tuples."""
        return self.compute_table

    @property
    def overflow(self) -> dict[tuple[int, int], list[float]]:
        """(src, dst) -> [count, bytes, busy_s] over the messages past ``max_events``."""
        self.message_table.flush()
        return self.message_table.totals

    @property
    def message_count(self) -> int:
        return self.message_table.count

    @property
    def bytes_sent(self) -> int:
        return self.message_table.total_bytes

    # -- routes ------------------------------------------------------------------------------
    def route(self, src: int, dst: int) -> tuple[tuple[int, ...], float, float]:
        """(resource indices, latency_s, 1/bandwidth) of the route src -> dst, cached."""
        cached = self._routes.get(src * self._nodes + dst)
        if cached is not None:
            return cached
        graph = self.topology.graph
        path = self.topology.path(src, dst)  # documented, deterministic: sim/network/topology.py
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

    # -- matching: the hot path --------------------------------------------------------------
    def send(self, src: int, dst: int, nbytes: int, payload: Any = None, step: int = -1, chunk: int = -1, tag: int = 0) -> simpy.Event:
        """Issue a message now; returns the event of its delivery (wait on it for a blocking send).

        An eager message (at most ``eager_limit`` bytes) starts now; a larger one starts when the
        receiver has posted the matching :meth:`recv` (now, if it already has).
        """
        key = src * self._nodes + dst + tag * self._pairs
        mail = self._mail
        waiting = mail.get(key)
        if waiting is None:  # the usual case: sent before the receive is posted
            event = _new(Delivery)
            event.env = self.env
            event.callbacks = []
            event._value = payload
            mail[key] = event
            posted = False
        elif waiting.__class__ is not list and waiting._value is PENDING:  # a receive waits: this is its message
            del mail[key]
            event = waiting
            event._value = payload
            posted = True
        else:
            event, posted = self._queue_send(key, waiting, payload)
        self._last_send[src] = event
        if posted or nbytes <= self.eager_limit:
            self._transfer(event, src, dst, nbytes, step, chunk, tag)
        else:
            event.rendezvous = (src, dst, nbytes, step, chunk, tag)
        return event

    def recv(self, src: int, dst: int, tag: int = 0) -> simpy.Event:
        """The next message src -> dst (with ``tag``); its value is the payload."""
        key = src * self._nodes + dst + tag * self._pairs
        mail = self._mail
        waiting = mail.get(key)
        if waiting is None:  # not sent yet: post the receive (_delivery, inlined: the hot path)
            event = mail[key] = _new(Delivery)
            event.env = self.env
            event.callbacks = []
            event._value = PENDING
            return event
        if waiting.__class__ is not list and waiting._value is not PENDING:  # already sent
            del mail[key]
            event = waiting
        else:
            event = self._queue_recv(key, waiting)
        if event.rendezvous is not None:  # a large message waited for this receive: start it
            message, event.rendezvous = event.rendezvous, None
            self._transfer(event, *message)
        return event

    # A mailbox holds one event (the usual case: no list to allocate and touch per message) or,
    # when several sends or several receives are outstanding for one (src, dst, tag), a FIFO list
    # of them; never sends and receives at once.
    def _queue_send(self, key: int, waiting: Event | list[Event], payload: Any) -> tuple[Event, bool]:
        queue = waiting if waiting.__class__ is list else [waiting]
        posted = queue[0]._value is PENDING
        if posted:  # receives are posted: the first one gets this message
            event = queue.pop(0)
            event._value = payload
        else:
            event = _delivery(self.env, payload)
            queue.append(event)
        self._store(key, queue)
        return event, posted

    def _queue_recv(self, key: int, waiting: Event | list[Event]) -> Event:
        queue = waiting if waiting.__class__ is list else [waiting]
        if queue[0]._value is not PENDING:  # messages are waiting: take the first
            event = queue.pop(0)
        else:
            event = _delivery(self.env)
            queue.append(event)
        self._store(key, queue)
        return event

    def _store(self, key: int, queue: list[Event]) -> None:
        if not queue:
            del self._mail[key]
        else:
            self._mail[key] = queue[0] if len(queue) == 1 else queue

    def share_wire(self, src: int, dst: int, tags: range) -> None:
        """Messages ``src`` -> ``dst`` on ``tags`` are the slots of one connection, sent in order
        by one sender (NCCL's NCCL_STEPS slots of a channel, one SM block): their bytes take turns
        on the wire, their latencies overlap. Fifo sharing serves a link's messages one at a time
        already; :class:`sim.network.fair.FairNetwork` makes its flows wait their turn."""

    def _transfer(self, event: Event, src: int, dst: int, nbytes: int, step: int, chunk: int, tag: int) -> None:
        """Move a message whose send and (for rendezvous) receive are both posted: the sharing
        semantics (:mod:`sim.network.fifo`, :mod:`sim.network.fair`) decide when it ends."""
        raise NotImplementedError("use make_network(..., sharing='fair' | 'fifo')")

    # -- shared helpers ----------------------------------------------------------------------
    def _deliver_at(self, time: float, event: Event) -> None:
        instant = self._instants.get(time)
        if instant is None:
            instant = self._open_instant(time)
        instant.events.append(event)

    def _open_instant(self, time: float) -> Instant:
        env = self.env
        instant = self._instants[time] = Instant(env, time, self._instants)
        schedule_at(env, time, NORMAL, instant)
        return instant

    def _draw_jitter(self) -> float:
        if not self._jitter:
            self._jitter = self._rng.exponential(self.jitter_s, _JITTER_BLOCK).tolist()[::-1]
        return self._jitter.pop()

    def reduce(self, rank: int, nbytes: int, step: int = -1, chunk: int = -1) -> simpy.Event | None:
        """Combine ``nbytes`` received bytes on ``rank`` (n / reduce_bandwidth); None when free."""
        if not self.gamma or not nbytes:
            return None
        now = self.env._now
        end = now + nbytes * self.gamma
        event = _delivery(self.env, None)
        self._deliver_at(end, event)
        rows = self.compute_table.buffer
        rows.append((rank, now, end, nbytes, step, chunk))
        if len(rows) >= BUFFER_ROWS:
            self.compute_table.flush()
        return event

    def last_send(self, rank: int) -> simpy.Event | None:
        """The delivery of ``rank``'s latest message."""
        return self._last_send[rank]

    def pending(self) -> list[tuple[int, int, int]]:
        """Receives posted that no message matched, and rendezvous messages whose receive was
        never posted: a deadlock when the run ends with any. (src, dst, tag) each."""
        waiting = []
        for key, box in self._mail.items():
            queue = box if box.__class__ is list else [box]
            if queue and (queue[0]._value is PENDING or queue[0].rendezvous is not None):
                tag, pair = divmod(key, self._pairs)
                waiting.append((*divmod(pair, self._nodes), tag))
        return waiting

    def pair_totals(self) -> dict[tuple[int, int], list[float]]:
        """(src, dst) -> [messages, bytes, busy_s] over every message, recorded or aggregated."""
        columns = self.message_table.views()
        totals: dict[tuple[int, int], list[float]] = {}
        block = 262_144  # numpy temporaries of a block, not of millions of rows
        for lo in range(0, len(columns["src"]), block):
            part = {name: column[lo : lo + block] for name, column in columns.items()}
            keys = part["src"].astype(np.int64) * self._nodes + part["dst"]
            unique, inverse = np.unique(keys, return_inverse=True)
            counts = np.bincount(inverse, minlength=len(unique)).tolist()
            nbytes = np.bincount(inverse, weights=part["nbytes"], minlength=len(unique)).tolist()
            busy = np.bincount(inverse, weights=part["end_s"] - part["start_s"], minlength=len(unique)).tolist()
            for key, count_, size, seconds in zip(unique.tolist(), counts, nbytes, busy):
                entry = totals.setdefault(divmod(key, self._nodes), [0, 0, 0.0])
                entry[0] += count_
                entry[1] += int(size)
                entry[2] += seconds
        for pair, (count_, size, seconds) in self.overflow.items():
            entry = totals.setdefault(pair, [0, 0, 0.0])
            entry[0] += count_
            entry[1] += size
            entry[2] += seconds
        return totals
