"""The fair engine's flows and their max-min rates (:mod:`sim.network.fair` moves them).

A :class:`Flow` is one message's transfer; :class:`End` the scheduled end of flows at their
current rates, :class:`Join` the late join of a lone flow turned ordinary. :func:`max_min` is
progressive filling over the flows' resources: the same arithmetic, in the same order, as the
solver it was moved out of (the pinned references in tests/scale stay bit-identical).
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from itertools import islice

from simpy.events import Event

__all__ = [
    "Flow",
    "End",
    "Join",
    "END_CALLBACKS",
    "LATE_JOIN_CALLBACKS",
    "component",
    "flow_class",
    "new_flow",
    "max_min",
    "reaches",
    "Reach",
]

_new = object.__new__


class Flow(Event):
    """One message's transfer. A lone flow (``fast``) is its own end event; an ordinary flow is,
    as an event, its join: it fires when the route's latency has passed and the flow then takes
    part in the bandwidth sharing. ``version`` counts its rate changes; ``scheduled`` is its
    current end event (an end event it no longer names passes it over). Every field is a slot,
    set by :func:`new_flow` (no instance dict to allocate per message); ``net``, the network
    that moves it, is a class attribute of the network's own subclass (:func:`flow_class`)."""

    __slots__ = (
        "callbacks", "fast", "done", "delivery", "message", "nbytes", "stream", "resources", "start", "peak", "join", "end",
        "version", "scheduled", "deferred", "row_index", "rate", "remaining", "updated",
    )  # fmt: skip
    _ok = True
    _value = None
    # deferred: its end came while its component was about to be re-shared, bytes left
    # row_index: a former lean flow's record, written when it started: amended at its end


def flow_class(net: object) -> type[Flow]:
    """Flows of ``net``: a subclass whose class attribute ``net`` the end and join callbacks read."""
    return type("Flow", (Flow,), {"__slots__": (), "net": net})


class End(Event):
    """The scheduled end of flows at their current rates: the flows of one re-sharing that end
    at one time share one event, in the order the solver gave them. A flow whose rate changed
    since has another end event (``Flow.scheduled``) and is skipped here."""

    __slots__ = ("flows",)
    _ok = True
    _value = None


class Join(Event):
    """The join of a lone flow that a later message turned into an ordinary one before its latency passed."""

    __slots__ = ("flow",)
    _ok = True
    _value = None


def _joined_late(join: Join) -> None:
    flow = join.flow
    flow.net._join(flow, True)


def _ended(end: End) -> None:
    flows = end.flows
    flows[0].net._end(flows, end)


# one callbacks list per kind, shared by every event of that kind: _fire only reads it
END_CALLBACKS = [_ended]
LATE_JOIN_CALLBACKS = [_joined_late]


def new_flow(
    cls: type[Flow], delivery: Event, message: tuple, stream: int, resources: tuple[int, ...], start: float, inverse_bandwidth: float
) -> Flow:
    flow = _new(cls)
    flow.done = False
    flow.delivery = delivery
    flow.message = message
    flow.stream = stream
    flow.resources = resources
    flow.start = start
    flow.peak = 1.0 / inverse_bandwidth
    flow.version = 0
    flow.scheduled = None
    flow.deferred = False
    flow.row_index = None
    flow.rate = 0.0
    flow.remaining = 0.0
    flow.updated = 0.0
    return flow


def max_min(flows: dict[Flow, None], capacity: list[float], active: list) -> dict[Flow, float]:
    """Progressive filling over the flows' resources (each flow also capped at its route's
    bandwidth, the bandwidth of its slowest link, which is one of those resources).

    The most constrained resource (smallest capacity left per unfrozen flow; the first such in
    the order the flows list their resources) freezes its flows at that share, and so on.
    When the first bottleneck holds every flow (one shared link, the usual contention), that
    one step is the answer."""
    users: dict[int, int] = {}
    count = 0
    for flow in flows:
        count += 1
        for index in flow.resources:
            if index in users:
                users[index] += 1
            else:
                users[index] = 1
    keys = list(users)
    ratios = [capacity[index] / users[index] for index in keys]
    bottleneck = keys[ratios.index(min(ratios))]  # the first smallest, as min(key=...) picks
    share = capacity[bottleneck] / users[bottleneck]
    if share <= 0.0:  # as max(0.0, share)
        share = 0.0
    if users[bottleneck] != count:
        return _fill(flows, users, bottleneck, share, capacity, active)
    rates: dict[Flow, float] = {}  # every flow crosses it: all frozen at once
    for flow in active[bottleneck]:
        peak = flow.peak
        rates[flow] = peak if peak < share else share
    return rates


HEAP_FROM = 48  # components with this many resources or more find each next bottleneck in a heap


def _fill(
    flows: dict[Flow, None], users: dict[int, int], bottleneck: int, share: float, capacity: list[float], active: list
) -> dict[Flow, float]:
    """The rest of progressive filling, from its first bottleneck and share.

    Each next bottleneck is the resource with the least capacity left per unfrozen flow, the
    first such in ``users``' order: found by a scan of every resource, or, in a component of
    :data:`HEAP_FROM` resources or more (a deep tree's: 120 and more), from a heap of (share,
    place in ``users``) entries pushed again for the resources the frozen flows touched, so a
    round costs what it touches. The same choice from the same divisions: bit-identical rates
    (tests/network/test_max_min_heap.py)."""
    left = {index: capacity[index] for index in users}
    rates: dict[Flow, float] = {}
    heap: list | None = None
    if len(users) >= HEAP_FROM:
        place = {index: n for n, index in enumerate(users)}
        heap = [(left[index] / count, place[index], index) for index, count in users.items()]
        heapify(heap)
    while True:
        touched = []
        for flow in active[bottleneck]:
            if flow in rates:
                continue
            peak = flow.peak
            rate = peak if peak < share else share
            rates[flow] = rate
            for index in flow.resources:
                left[index] -= rate
                count = users[index] - 1
                if count:
                    users[index] = count
                    touched.append(index)
                else:
                    del users[index]
        users.pop(bottleneck, None)
        if not users:
            return rates
        if heap is None:
            keys = list(users)
            ratios = [left[index] / users[index] for index in keys]
            bottleneck = keys[ratios.index(min(ratios))]
        else:
            for index in set(touched):
                if index in users:
                    heappush(heap, (left[index] / users[index], place[index], index))
            while True:  # the least current entry: a resource still shared, at its current share
                ratio, _, index = heap[0]
                if index in users and ratio == left[index] / users[index]:
                    break
                heappop(heap)
            bottleneck = index
        share = left[bottleneck] / users[bottleneck]
        if share <= 0.0:
            share = 0.0


def component(seeds, active: list[dict[Flow, None]], read: dict[int, None]) -> dict[Flow, None]:
    """Every flow that shares a resource, directly or through other flows, with ``seeds``
    (an ordered set: the order depends on the run only, not on memory addresses). ``active``:
    each resource's flows. Each resource's flows are read once (``read``: the resources read
    so far, filled here)."""
    seen = dict.fromkeys(seeds)
    stack = list(seen)
    while stack:
        for index in stack.pop().resources:
            if index in read:
                continue
            read[index] = None
            for other in active[index]:
                if other not in seen:
                    seen[other] = None
                    stack.append(other)
    return seen


def reaches(flow: Flow, active: list[dict[Flow, None]], marked: dict[int, None]) -> tuple[bool, set[int], set[Flow]]:
    """Whether a resource in ``marked`` is in the flow's component (every flow sharing a resource
    with it, directly or through other flows; :func:`component`), stopping at the first found;
    with the resources and flows searched (the whole component when none is found)."""
    seen = {flow}
    stack = [flow]
    read: set[int] = set()
    while stack:
        for index in stack.pop().resources:
            if index in read:
                continue
            if index in marked:
                return True, read, seen
            read.add(index)
            for other in active[index]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
    return False, read, seen


class Reach:
    """What the searches of one instant's ends found. ``touched``: flows seen connected to a
    marked resource; marks are only added within the instant and a component only grows (a
    joining flow marks its resources), so this holds until a flow leaves (then it is emptied).
    ``clear``: for the flows of a component found free of marks, its resources and how many
    marks there were then; a component only shrinks as flows leave or grows through a joining
    flow, whose resources are then all marked, so while no mark added since lies among those
    resources, it is still free."""

    __slots__ = ("clear", "touched")

    def __init__(self) -> None:
        self.touched: set[Flow] = set()
        self.clear: dict[Flow, tuple[set[int], int]] = {}

    def asks(self, flow: Flow, active: list[dict[Flow, None]], marked: dict[int, None]) -> bool:
        """Whether a resource in ``marked`` is in the flow's component, from what this instant's
        searches found where it still holds, else by a search (:func:`reaches`)."""
        if flow in self.touched:
            return True
        known = self.clear.get(flow)
        if known is not None:
            resources, marks = known
            if not any(index in resources for index in islice(marked, marks, None)):
                self.clear[flow] = (resources, len(marked))
                return False
        found, resources, members = reaches(flow, active, marked)
        if found:
            self.touched.update(members)
        else:
            entry = (resources, len(marked))
            for member in members:
                self.clear[member] = entry
        return found
