"""Max-min fair sharing: every message is a flow that shares links and ports with the others.

A message (once its send and, for rendezvous, its receive are posted) first waits out its route's latency,
then becomes a flow over every resource of its route. The flows on a resource share its capacity max-min
fairly (progressive filling: the most constrained resource's share goes to every unfrozen flow crossing it,
and so on), each flow at most its route's bandwidth. Rates change only when a flow starts or ends, and only
for the flows connected to it through shared resources (the connected component of the flow-resource graph:
max-min allocation decomposes over components, so the rest keep their rates and their scheduled ends). This is
SimGrid's flow model (LV08/CM02) with its correction factors set to 1, except that SimGrid weights shares by
route latency and this model shares equally (docs/simgrid-check.md). As in SimGrid, the rates are solved once
per simulated instant: the starts and ends of one time mark the resources they change, and one solve per
changed component runs after that time's events (docs/scale.md: what that changes against a solve at every
single start and end).

Messages from one rank to another move one after the other, in the order they became ready, as on one
connection (gloo's pair, an MPI queue pair, a TCP socket): k chunks sent back to back pipeline instead of
merging into one burst. On NCCL's data path (a connection per slot tag) a channel's slots take turns on the
wire, latencies overlapping (:meth:`FairNetwork.share_wire`). Flows to different ranks share fairly. A port's
capacity is its rank's fastest link (a rank with one link has no separate port: the link is the port).

Alone on its route a message takes exactly ``latency + n / bandwidth`` (the rate is the route's
bandwidth, not a sum of partial progress), so the closed forms hold on ``switch(p)`` as under
fifo sharing.

**Fast path** (docs/scale.md). A message whose resources hold no other flow when it starts (no flow sharing
them, none waiting out its latency to join them, and no earlier lone flow still on them) is a *lone* flow: its
end, ``start + latency + n / bandwidth``, is scheduled at once, one event per message, and it never enters the
max-min solver. A later message that would meet it (its flow joins one of those resources before the lone
flow's end) turns it back into an ordinary flow, in the state it would have had anyway: joined at ``start +
latency`` at its route's bandwidth (or about to join). Rates change only when flows meet, so the answer is the
solver's: the ends of lone flows are computed with the same arithmetic as before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import simpy
from simpy.events import Event

from sim.network.engine import BUFFER_ROWS, Network
from sim.network.flows import END_CALLBACKS, LATE_JOIN_CALLBACKS, End, Flow, Join, Reach, component, flow_class, max_min, new_flow
from sim.network.simpy_core import NORMAL, schedule_at
from sim.network.topology import Topology

__all__ = ["FairNetwork", "Flow", "ReshareObserver"]

ReshareObserver = Callable[[dict[Flow, None], float], None]  # (a component's flows, now): FairNetwork.reshare

_new = object.__new__
_FREE = object()  # no message on a stream
LAST_ROW = BUFFER_ROWS - 1  # rows buffered before one more fills the buffer


def _moving(other: Any) -> bool:
    """Whether a resource's last lone flow (a lean tuple, a Flow or None) is still moving."""
    return other is not None and (other[1].callbacks is not None if other.__class__ is tuple else not other.done)


class FairNetwork(Network):
    """A :class:`Network` whose links and ports are shared max-min fairly by concurrent flows."""

    sharing = "fair"

    def __init__(self, env: simpy.Environment, topology: Topology, *args: Any, **kwargs: Any) -> None:
        super().__init__(env, topology, *args, **kwargs)
        self.resource_capacity = self.capacities()
        self._flow = flow_class(self)  # this network's flows
        self._instant_joins = self.without_latency()
        self._least_capacity = min(self.resource_capacity, default=0.0) or 1e-300  # a zero capacity: never the quick bound
        self._any_instant_joins = any(self._instant_joins)
        # flows per resource, in the order they joined: dicts as ordered sets, so shares, ends
        # and ties come out the same on every run (a set's order follows memory addresses)
        self._active: list[dict[Flow, None]] = [{} for _ in range(self.resource_count)]
        self._streams: dict[int, deque | None] = {}  # busy stream -> messages queued behind it
        self._tagged = getattr(topology, "streams_per_tag", False)
        # per resource: ordinary flows on it from their start to their end (joined or waiting
        # out their latency), and the last lone flow that held it (lone flows never overlap)
        self._ordinary = [0] * self.resource_count
        self._started = 0  # their sum: ordinary flows started and not ended
        self._holder: list[Flow | None] = [None] * self.resource_count
        self._lone_callbacks = [self._lone_end]  # every lone flow's callbacks (bound once, never changed)
        self._join_callbacks = [self._join]  # every ordinary flow's, as an event: its join
        self._lean_next_callback = self._lean_next
        self._purge_at = 4 * BUFFER_ROWS  # connections remembered before delivered lean flows are dropped
        self._dirty: dict[int, None] = {}  # resources whose flows joined or left this instant
        self._settling = False  # a re-sharing is scheduled for this instant
        self._settle_event = _new(Event)
        self._settle_event.env = env
        self._settle_event._ok = True
        self._settle_event._value = None
        self._settle_callbacks = [self._settle]
        self._settled_callbacks = [self._settled]  # ends that an instant's re-sharing left at that instant
        # share_wire: slot stream -> wire; wire -> its last flow; flow -> the one ahead; ahead -> the one parked
        self._wire_of: dict[int, int] = {}
        self._wire_last: dict[int, Flow] = {}
        self._turns: dict[Flow, Flow] = {}
        self._parked: dict[Flow, Flow] = {}
        self._turn_callbacks = [self._turn]
        self.reshare_observers: list[ReshareObserver] = []  # see reshare

    # -- the public interface: what budget probes, tests and reference solvers read and override --
    def active_flows(self, resource: int) -> tuple[Flow, ...]:
        """The flows taking a share of ``resource`` now (joined, not ended), in the order they joined.
        Lone flows (alone on their route: the fast path) are not among them: they share nothing."""
        return tuple(self._active[resource])

    def rates(self) -> dict[Flow, float]:
        """Every sharing flow's current rate in bytes/s (the max-min rates of the last re-sharing)."""
        return {flow: flow.rate for bucket in self._active for flow in bucket}

    def take_marked(self) -> dict[int, None]:
        """The resources whose flows joined or left since the last re-sharing; forgotten here."""
        marked, self._dirty = self._dirty, {}
        return marked

    def _transfer(self, event: Event, src: int, dst: int, nbytes: int, step: int, chunk: int, tag: int) -> None:
        """Start a message's flow now, or queue it behind the message its pair is moving."""
        stream = pair = src * self._nodes + dst  # one connection per ordered pair, whatever the tag
        wire = None
        if self._tagged:  # NCCL's data path: a connection per channel slot (sim.nccl.topo)
            stream += tag * self._pairs
            wire = self._wire_of.get(stream)
        streams = self._streams
        current = streams.get(stream, _FREE)
        if current.__class__ is tuple:  # a lean flow: busy until it is delivered
            if current[1].callbacks is not None:
                self._enqueue(stream, current, (event, src, dst, nbytes, step, chunk, tag))
                return
        elif current is not _FREE:
            self._enqueue(stream, current, (event, src, dst, nbytes, step, chunk, tag))
            return
        if wire is not None and nbytes:
            self._wired(event, (src, dst, nbytes, step, chunk), stream, wire)
            return
        route = self._routes.get(pair) or self.route(src, dst)
        if nbytes and not self.jitter_s:
            resources, latency, inverse_bandwidth = route
            ordinary, holder = self._ordinary, self._holder
            for index in resources:  # alone: no flow sharing the route, none about to join, no lone one moving
                if ordinary[index]:
                    break
                other = holder[index]
                if other is not None and other is not current:  # current: this stream's last lean flow, delivered
                    if other[1].callbacks is not None if other.__class__ is tuple else not other.done:
                        break
            else:  # lean: its record and its delivery at start + latency + n / bandwidth, now
                now = self.env._now
                end = now + latency + nbytes / (1.0 / inverse_bandwidth)
                table = self.message_table
                rows = table.buffer
                row = (src, dst, now, end, nbytes, step, chunk)
                instant = self._instants.get(end)
                if instant is None:
                    instant = self._open_instant(end)
                events = instant.events
                buffered = len(rows)
                lean = (row, event, instant, stream, table.flushed + buffered, len(events))
                events.append(event)
                for index in resources:
                    holder[index] = lean
                streams[stream] = lean
                rows.append(row)
                if buffered >= LAST_ROW:
                    table.flush()
                    self._purge()
                return
            self._ordinary_flow(event, (src, dst, nbytes, step, chunk), stream, route)  # the contended hot path
            return
        self._start_flow(event, (src, dst, nbytes, step, chunk), stream, route)

    def _enqueue(self, stream: int, current: Any, message: tuple) -> None:
        """The stream is busy: the message goes behind its current one."""
        if current.__class__ is deque:
            current.append(message)
        else:
            self._streams[stream] = deque([message])
            if current is not None:  # a lean flow: its delivery starts the next message
                self._hook(current[1], stream)

    def _start_flow(self, event: Event, message: tuple, stream: int, route: tuple) -> None:
        """A message that is a Flow from its start: one that may meet others with jitter (its latency
        drawn now), a lone one with jitter, or an empty one (it arrives when the latency has passed)."""
        resources, latency, inverse_bandwidth = route
        ordinary, holder = self._ordinary, self._holder  # alone: as _transfer's test, no flow on the route
        alone = message[2] and not any(ordinary[index] or _moving(holder[index]) for index in resources)
        if self.jitter_s:
            latency += self._draw_jitter()
        nbytes = message[2]
        if nbytes and not alone:
            self._ordinary_flow(event, message, stream, (resources, latency, inverse_bandwidth))
            return
        self._streams[stream] = None
        now = self.env._now
        flow = new_flow(self._flow, event, message, stream, resources, now, inverse_bandwidth)
        flow.join = join = now + latency
        if nbytes:  # lone (with jitter): ends at start + latency + n / bandwidth unless a later flow meets it
            holder = self._holder
            for index in resources:
                holder[index] = flow
            flow.fast = True
            flow.end = end = join + nbytes / flow.peak
            flow.callbacks = self._lone_callbacks  # one list for all: _fire only reads it
            instant = self._instants.get(end)
            if instant is None:
                instant = self._open_instant(end)
            instant.events.append(flow)
        else:  # an empty message shares nothing: it arrives when the latency has passed
            flow.fast = True
            flow.callbacks = self._lone_callbacks
            self._deliver_at(join, flow)

    def _lone_end(self, flow: Flow) -> None:
        """A lone flow's scheduled end (the flow itself is the event): deliver, as :meth:`_finish`
        without the re-sharing; a flow made ordinary meanwhile ends here only at an unchanged rate."""
        if not flow.fast:
            if not flow.version and not flow.done:
                self._end((flow,), None)
            return
        flow.done = True
        stream = flow.stream
        streams = self._streams
        queue = streams.pop(stream)
        if queue:
            following = queue.popleft()
            self._transfer(*following)
            if queue:
                self._requeue(stream, queue)
        src, dst, nbytes, step, chunk = flow.message
        rows = self.message_table.buffer
        rows.append((src, dst, flow.start, self.env._now, nbytes, step, chunk))
        if len(rows) >= BUFFER_ROWS:
            self.message_table.flush()
        delivery = flow.delivery
        callbacks, delivery.callbacks = delivery.callbacks, None
        if len(callbacks) == 1:
            callbacks[0](delivery)
        else:
            for callback in callbacks:
                callback(delivery)

    def _hook(self, delivery: Event, stream: int) -> None:
        """A lean flow's delivery first starts the message queued behind it on its stream."""
        delivery.stream = stream
        delivery.callbacks.insert(0, self._lean_next_callback)

    def _lean_next(self, delivery: Event) -> None:
        stream = delivery.stream
        queue = self._streams.pop(stream)
        following = queue.popleft()
        self._transfer(*following)
        if queue:
            self._requeue(stream, queue)

    def _requeue(self, stream: int, queue: deque) -> None:
        """Messages still queued behind the one just started on ``stream``."""
        current = self._streams.get(stream)
        self._streams[stream] = queue
        if current.__class__ is tuple:
            self._hook(current[1], stream)

    def _purge(self) -> None:
        """Forget lean flows delivered long ago (connections not used since): memory bounded by
        the connections in use, at amortized constant cost (the threshold doubles with them)."""
        streams = self._streams
        if len(streams) > self._purge_at:
            self._streams = {key: value for key, value in streams.items() if value.__class__ is not tuple or value[1].callbacks is not None}
            self._purge_at = max(4 * BUFFER_ROWS, 2 * len(self._streams))

    def _unlean(self, lean: tuple) -> Flow:
        """A lean flow about to meet another becomes a lone Flow first (then an ordinary one):
        the same state, its delivery's place in its instant taken by the flow's end."""
        row, delivery, instant, stream, row_index, position = lean
        src, dst, start, end, nbytes, step, chunk = row
        resources, latency, inverse_bandwidth = self._routes[src * self._nodes + dst]
        flow = new_flow(self._flow, delivery, (src, dst, nbytes, step, chunk), stream, resources, start, inverse_bandwidth)
        flow.join = start + latency
        flow.end = end
        flow.fast = True
        flow.callbacks = self._lone_callbacks
        flow.row_index = row_index
        events = instant.events
        events[position] = flow  # its delivery's place (an instant's events are only appended to)
        callbacks = delivery.callbacks
        if callbacks and callbacks[0] == self._lean_next_callback:  # the Flow's end starts the queue now
            del callbacks[0]
        streams = self._streams
        if streams.get(stream) is lean:
            streams[stream] = None
        holder = self._holder
        for index in resources:
            if holder[index] is lean:
                holder[index] = flow
        return flow

    def _ordinary_flow(self, event: Event, message: tuple, stream: int, route: tuple, ahead: Flow | None = None) -> Flow:
        """A flow that may meet others: counted on its resources; lone flows it would meet
        (still moving when it joins) become ordinary flows first. ``route``: (resources, latency,
        1 / bandwidth); ``ahead``: the flow whose bytes it waits for before it joins (:meth:`share_wire`)."""
        resources, latency, inverse_bandwidth = route
        self._streams[stream] = None
        now = self.env._now
        flow = new_flow(self._flow, event, message, stream, resources, now, inverse_bandwidth)
        flow.join = join = now + latency
        flow.fast = False
        flow.nbytes = nbytes = message[2]
        ordinary, holder = self._ordinary, self._holder
        self._started += 1
        for index in flow.resources:
            ordinary[index] += 1
            other = holder[index]
            if other.__class__ is tuple:
                if other[1].callbacks is None or not (other[0][3] > join or join == now):
                    continue
                other = self._unlean(other)
            # it meets a lone flow still moving when it joins; joining now, also one whose end
            # is due now but has not fired yet (as an ordinary flow, that one is still joined)
            if other is not None and other.fast and not other.done and (other.end > join or join == now):
                self._unlone(other)
        flow.updated = now
        flow.remaining = float(nbytes)
        if ahead is None:
            flow.callbacks = self._join_callbacks
        else:
            flow.callbacks = self._turn_callbacks
            self._turns[flow] = ahead
        if latency > 0:  # _join (or _turn) runs then
            instant = self._instants.get(join)
            if instant is None:
                instant = self._open_instant(join)
            instant.events.append(flow)
        else:
            flow.callbacks[0](flow)
        return flow

    def share_wire(self, src: int, dst: int, tags: range) -> None:
        """The slots ``tags`` of the connection ``src`` -> ``dst`` take turns on the wire: a slot's
        flow joins once its latency has passed and the previous slot has moved its bytes (one SM
        block sends a channel's slots in order); fair then gives fifo's times where nothing else
        shares. Without a connection per tag a pair's messages move one after the other anyway."""
        if self._tagged:
            pair = src * self._nodes + dst
            wire = pair + tags[0] * self._pairs
            for tag in tags:
                self._wire_of[pair + tag * self._pairs] = wire

    def _wired(self, event: Event, message: tuple, stream: int, wire: int) -> None:
        """A slot's message: an ordinary flow (never lean), behind the wire's previous flow while
        that one still moves its bytes."""
        route = self._routes.get(message[0] * self._nodes + message[1]) or self.route(message[0], message[1])
        if self.jitter_s:
            route = (route[0], route[1] + self._draw_jitter(), route[2])
        ahead = self._wire_last.get(wire)
        ahead = None if ahead is None or ahead.done else ahead
        self._wire_last[wire] = self._ordinary_flow(event, message, stream, route, ahead)

    def _turn(self, flow: Flow) -> None:
        """A slot's latency has passed: it joins now if the flow ahead of it has moved its bytes,
        else when that one ends (:meth:`_finish`)."""
        ahead = self._turns.pop(flow)
        if ahead.done:
            self._join(flow)
        else:
            self._parked[ahead] = flow

    def _unlone(self, flow: Flow) -> None:
        """A lone flow is about to meet another: from now on it is an ordinary flow, in the state
        it would have had as one (joined at start + latency at its route's bandwidth, its end
        event still the one scheduled, or joining when its latency has passed)."""
        flow.fast = False
        flow.nbytes = flow.message[2]
        ordinary = self._ordinary
        self._started += 1
        for index in flow.resources:
            ordinary[index] += 1
        flow.remaining = float(flow.nbytes)
        if flow.join <= self.env._now:
            flow.updated = flow.join
            flow.rate = flow.peak
            active = self._active
            for index in flow.resources:
                active[index][flow] = None
        else:
            flow.updated = flow.start
            join = _new(Join)
            join.env = self.env
            join.callbacks = LATE_JOIN_CALLBACKS
            join.flow = flow
            self._deliver_at(flow.join, join)

    def _schedule_end(self, flow: Flow, time: float) -> None:
        end = _new(End)
        end.callbacks = END_CALLBACKS
        end.flows = [flow]
        flow.scheduled = end
        instant = self._instants.get(time)
        if instant is None:
            instant = self._open_instant(time)
        instant.events.append(end)

    def _join(self, flow: Flow, scheduled: bool = False) -> None:
        """The latency has passed: the flow starts taking bandwidth. ``scheduled``: a former lone
        flow, whose end at its route's bandwidth is already scheduled. Joining a busy resource
        marks it for the re-sharing at the end of this instant (:meth:`_settle`)."""
        active = self._active
        shared = False
        for index in flow.resources:
            bucket = active[index]
            if bucket:
                shared = True
            bucket[flow] = None
        now = flow.updated = self.env._now
        if shared:  # marked for the re-sharing at the end of this instant
            dirty = self._dirty
            for index in flow.resources:
                dirty[index] = None
            if not self._settling:
                self.schedule_settle()
        else:  # alone: the route's bandwidth, ending exactly at start + latency + n / bandwidth
            flow.rate = flow.peak
            if not scheduled:
                self._schedule_end(flow, now + flow.nbytes / flow.peak)

    def schedule_settle(self) -> None:
        """One re-sharing at the end of this instant: an event after those already due now."""
        self._settling = True
        settle = self._settle_event
        settle.callbacks = self._settle_callbacks
        schedule_at(self.env, self.env._now, NORMAL, settle)

    def _settle(self, _event: Event) -> None:
        self._settling = False
        self.settle()

    def settle(self) -> None:
        """Re-share, once per simulated instant, every component whose flows joined or left
        (SimGrid likewise solves its max-min system once per time step): each marked resource's
        component, found once, gets its max-min rates. Overridable (with :meth:`schedule_settle`,
        :meth:`component` and :meth:`solve`): tests/scale/test_fair_solver.py's reference solver."""
        dirty = self.take_marked()
        active = self._active
        read: dict[int, None] = {}
        now = self.env._now
        for index in dirty:
            if index in read or not active[index]:
                continue
            self.reshare(self.component(active[index], read), now)

    def _end(self, flows: list[Flow] | tuple[Flow], end: End | None, settled: bool = False) -> None:
        """The scheduled end of ``flows`` (those still ending at ``end``) has come. If this
        instant already changed the flows around one and bytes are left from rounding, the
        solver run at each change would have moved its end by those bytes over its new rate, and
        so does the re-sharing at this instant's end (:meth:`_settle`): the flow waits for it,
        unless no rate the solver can give it at this instant would move its end off now.
        ``settled``: the re-sharing left these ends at now: all end now, none waiting for another
        (a re-solve of the component per flow; bench/results/fair_instant_chain.md)."""
        memo = Reach()
        for flow in flows:
            if flow.scheduled is not end or flow.done:
                continue
            dirty = self._dirty
            if dirty and not settled:
                now = self.env._now
                left = flow.remaining - flow.rate * (now - flow.updated)
                if left > 0.0 and self._may_move(flow, left, now) and self._touched(flow, dirty, memo):
                    flow.deferred = True
                    continue
            memo.touched.clear()  # a flow left: a component may have split
            self._finish(flow)

    def _settled(self, end: End) -> None:
        self._end(end.flows, end, True)

    def _may_move(self, flow: Flow, left: float, now: float) -> bool:
        """Whether ``left`` bytes over some rate the solver can give the flow now lands after now.
        Quick bound first: every rate is at least the least capacity over every started flow."""
        if not (self._any_instant_joins and flow.updated != now) and now + left * self._started / self._least_capacity == now:
            return False
        least = self._least_rate(flow, now)
        return not least or now + left / least > now

    def _least_rate(self, flow: Flow, now: float) -> float:
        """A lower bound on every rate max-min sharing can give the flow at this instant (0: none
        known). A rate is at least an equal split of its bottleneck among the flows there: those
        joined, once this instant's re-sharing has run (the flow was re-shared now); before it,
        every flow started and not ended (those still waiting out their latency may join now),
        unless a route without latency crosses the flow's resources (one sent now joins now)."""
        capacity = self.resource_capacity
        if flow.updated == now:
            active = self._active
            return min([capacity[index] / len(active[index]) for index in flow.resources])
        instant_joins, ordinary = self._instant_joins, self._ordinary
        least = float("inf")
        for index in flow.resources:
            if instant_joins[index]:
                return 0.0
            share = capacity[index] / ordinary[index]
            if share < least:
                least = share
        return least

    def _touched(self, flow: Flow, dirty: dict[int, None], memo: Reach) -> bool:
        """Whether a resource marked for re-sharing is in the flow's component (:meth:`Reach.asks`:
        the flows ending at one instant share what their searches found)."""
        return memo.asks(flow, self._active, dirty)

    def _finish(self, flow: Flow) -> None:
        """The flow's last byte has arrived: free its share, start its stream's next message,
        mark what it leaves for re-sharing, and deliver."""
        flow.done = True
        flow.scheduled = None  # no cycle with its end event: freed without the cyclic GC
        if not flow.fast:  # a lone flow leaves nothing to re-share
            active, ordinary, dirty = self._active, self._ordinary, self._dirty
            self._started -= 1
            for index in flow.resources:
                ordinary[index] -= 1
                bucket = active[index]
                bucket.pop(flow, None)
                if bucket:  # flows left here: re-shared at the end of this instant
                    dirty[index] = None
            if self._parked:  # the next slot of its connection waited for its bytes
                following = self._parked.pop(flow, None)
                if following is not None:
                    self._join(following)
            if dirty and not self._settling:
                self.schedule_settle()
        queue = self._streams.pop(flow.stream)
        if queue:
            following = queue.popleft()
            self._transfer(*following)
            if queue:
                self._requeue(flow.stream, queue)
        now = self.env._now
        src, dst, nbytes, step, chunk = flow.message
        if flow.row_index is not None:  # a former lean flow: its row was written when it started
            self.message_table.amend_end(flow.row_index, (src, dst, flow.start, flow.end, nbytes, step, chunk), now)
        else:
            rows = self.message_table.buffer
            rows.append((src, dst, flow.start, now, nbytes, step, chunk))
            if len(rows) >= BUFFER_ROWS:
                self.message_table.flush()
        delivery = flow.delivery
        callbacks, delivery.callbacks = delivery.callbacks, None
        if len(callbacks) == 1:
            callbacks[0](delivery)
        else:
            for callback in callbacks:
                callback(delivery)

    def component(self, seeds, read: dict[int, None]) -> dict[Flow, None]:
        """Every flow that shares a resource, directly or through other flows, with ``seeds``
        (:func:`sim.network.flows.component`; ``read``: the resources read so far, filled)."""
        return component(seeds, self._active, read)

    def reshare(self, flows: dict[Flow, None], now: float) -> None:
        """Progress every flow to ``now`` at its old rate, then give the component its max-min
        fair rates; flows whose rate changed get a new scheduled end. (The solver reads no
        flow's progress, so each flow is progressed as its new rate is set: one loop.) Each of
        :attr:`reshare_observers` is called first with ``(flows, now)``: it must not change them."""
        for observer in self.reshare_observers:
            observer(flows, now)
        instants = self._instants
        last_time = instant = end = ending = None  # a component's ends often fall at one time: one event
        for flow, rate in self.solve(flows).items():
            old = flow.rate
            if old:
                remaining = flow.remaining - old * (now - flow.updated)
                flow.remaining = remaining if remaining > 0.0 else 0.0
                flow.updated = now
                tolerance = 1e-12 * old
                if -tolerance <= rate - old <= tolerance:
                    if not flow.deferred:
                        continue  # same rate: its scheduled end stands
            else:
                flow.updated = now
            flow.deferred = False
            flow.rate = rate
            flow.version += 1
            if rate > 0:  # _schedule_end, inlined; one end event for a run of ends at one time
                time = now + flow.remaining / rate
                if time != last_time:
                    last_time = time
                    instant = instants.get(time)
                    if instant is None:
                        instant = self._open_instant(time)
                    end = _new(End)
                    end.callbacks = END_CALLBACKS if time != now else self._settled_callbacks
                    end.flows = ending = [flow]
                    instant.events.append(end)
                else:
                    ending.append(flow)
                flow.scheduled = end
            else:
                flow.scheduled = None

    def solve(self, flows: dict[Flow, None]) -> dict[Flow, float]:
        """The flows' max-min rates (:func:`sim.network.flows.max_min`) on this network's resources."""
        return max_min(flows, self.resource_capacity, self._active)
