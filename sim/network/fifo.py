"""fifo sharing: work-conserving FIFO queues on links and ports.

A message holds every link and port of its route while its
bytes pass, n / bandwidth (cut-through, as a wormhole or virtual-cut-through switch forwards a
packet's head before its tail arrives: a multi-hop message pays every hop's latency but its
bytes once, at the bottleneck bandwidth), and arrives ``latency`` later: latency is a pipeline
delay that occupies no link, as L in LogGP. Messages between one pair of ranks go one at a time,
each after the previous one has arrived (one connection per pair, as gloo's pairs and MPI's
queue pairs). A message starts as soon as its route and its connection are free. Contenders
are served in issue order and the queues are work-conserving: whenever resources free, the
waiting messages are retried oldest first and each one whose route is now free starts, so a
message that can start is never held back by an older one still waiting for some other
resource (backfilling). No bandwidth is shared: two messages on one link take turns. See :mod:`sim.network.fair` for max-min fair
sharing, the default, and docs/network-model.md for why.
"""

from __future__ import annotations

from itertools import count
from operator import itemgetter
from typing import Any

import simpy
from simpy.events import Event

from sim.network.engine import BUFFER_ROWS, Network
from sim.network.simpy_core import URGENT, schedule_at
from sim.network.topology import Topology


class _Wake(Event):
    """A check of the transfers waiting for resources that free at this time (fifo sharing).

    Scheduled URGENT, so it runs before the deliveries due at the same instant: transfers that
    waited get the freed resources before messages issued by the processes those deliveries wake.
    """

    def __init__(self, net: FifoNetwork) -> None:
        self.env = net.env
        self.callbacks = [_wake]
        self._ok = True
        self._value = None
        self.net = net


def _wake(event: _Wake) -> None:
    event.net._retry()


class FifoNetwork(Network):
    """A :class:`Network` whose links and ports serve one message at a time, oldest first."""

    sharing = "fifo"

    def __init__(self, env: simpy.Environment, topology: Topology, *args: Any, **kwargs: Any) -> None:
        super().__init__(env, topology, *args, **kwargs)
        self._held: dict[int, tuple] = {}  # pair -> (route resources, connection, latency, 1/bandwidth)
        self._waiting: dict[int, list[tuple]] = {}  # resource -> transfers waiting for it to free
        self._wakes: dict[float, list[int]] = {}  # time -> resources whose waiters to retry then
        self._order = count()  # issue order of waiting transfers: their priority
        self._tagged = getattr(topology, "streams_per_tag", False)
        self.holds = 0  # times a transfer was parked behind a busy resource (0: no message ever waited)

    def _transfer(self, event: Event, src: int, dst: int, nbytes: int, step: int, chunk: int, tag: int) -> None:
        """Start moving a message whose send and (for rendezvous) receive are both posted: now
        if its route and its connection are free, else when they are (work-conserving,
        issue-order priority among waiting messages)."""
        pair = src * self._nodes + dst
        if self._tagged:  # NCCL's data path: a connection per channel slot (sim.nccl.topo)
            pair += tag * self._pairs
        links, connection, latency, inverse_bandwidth = self._held.get(pair) or self._connection(pair)
        free_at = self._free_at
        now = self.env._now
        busy = free_at[connection] > now
        if not busy:
            for index in links:
                if free_at[index] > now:
                    busy = True
                    break
        if busy:
            held = (*links, connection)
            self._hold(
                (next(self._order), event, src, dst, nbytes, step, chunk, held, nbytes * inverse_bandwidth, latency, inverse_bandwidth)
            )
            return
        # _occupy, inlined: this is the hot path. The arrival is (start + latency) + n / bandwidth,
        # the fair engine's arithmetic, so both give the same bits wherever no two messages meet.
        sent = now + nbytes * inverse_bandwidth
        if self.jitter_s:
            latency += self._draw_jitter()
        end = now + latency + nbytes / (1.0 / inverse_bandwidth)
        for index in links:
            free_at[index] = sent
        free_at[connection] = end
        instant = self._instants.get(end)
        if instant is None:
            instant = self._open_instant(end)
        instant.events.append(event)
        rows = self.message_table.buffer
        rows.append((src, dst, now, end, nbytes, step, chunk))
        if len(rows) >= BUFFER_ROWS:
            self.message_table.flush()

    def _connection(self, pair: int) -> tuple[tuple[int, ...], int, float, float]:
        """(route resources, the pair's connection, latency, 1/bandwidth), cached. The connection
        is a resource of its own, busy from a message's start to its arrival: one message at a
        time per pair."""
        resources, latency, inverse_bandwidth = self.route(*divmod(pair % self._pairs, self._nodes))
        self._free_at.append(0.0)
        entry = self._held[pair] = (resources, len(self._free_at) - 1, latency, inverse_bandwidth)
        return entry

    def _occupy(
        self,
        event: Event,
        src: int,
        dst: int,
        nbytes: int,
        step: int,
        chunk: int,
        held,
        start: float,
        transmit: float,
        latency: float,
        inverse_bandwidth: float,
    ) -> None:
        """Links and ports are busy while the bytes pass (``transmit``); the message arrives
        ``latency`` later, and its connection is free then."""
        sent = start + transmit
        if self.jitter_s:
            latency += self._draw_jitter()
        end = start + latency + nbytes / (1.0 / inverse_bandwidth)
        free_at = self._free_at
        for index in held:
            free_at[index] = sent
        free_at[held[-1]] = end
        self._deliver_at(end, event)
        rows = self.message_table.buffer
        rows.append((src, dst, start, end, nbytes, step, chunk))
        if len(rows) >= BUFFER_ROWS:
            self.message_table.flush()

    def _hold(self, transfer: tuple) -> None:
        """Park a transfer on the busy resource of its route that frees last; it is retried then."""
        self.holds += 1
        free_at = self._free_at
        resource = max(transfer[7], key=free_at.__getitem__)
        self._waiting.setdefault(resource, []).append(transfer)
        time = free_at[resource]
        due = self._wakes.get(time)
        if due is None:
            self._wakes[time] = [resource]
            schedule_at(self.env, time, URGENT, _Wake(self))
        elif resource not in due:
            due.append(resource)

    def _retry(self) -> None:
        """Resources freed now: start the transfers waiting for them that can, oldest first."""
        now = self.env._now
        candidates = []
        for resource in self._wakes.pop(now):
            candidates.extend(self._waiting.pop(resource, ()))
        candidates.sort(key=itemgetter(0))
        free_at = self._free_at
        for transfer in candidates:
            if all(free_at[index] <= now for index in transfer[7]):
                self._occupy(*transfer[1:8], now, transfer[8], transfer[9], transfer[10])
            else:
                self._hold(transfer)
