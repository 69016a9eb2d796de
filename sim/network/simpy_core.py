"""Every touch of SimPy's private state, behind small named functions (SimPy 4.1, pinned in pyproject).

The engine is faster than plain SimPy events allow because it reaches under SimPy's public API in
a few places: it pushes events onto the environment's heap at an absolute time (``env._queue``,
``env._eid``: one entry for every delivery due at an instant), wraps ``env.schedule`` to see what
else is scheduled, and starts a rank program as SimPy starts a process (an ``Initialize`` event
that calls ``_resume``). Those touches live here and nowhere else under ``sim/``
(tests/network/test_simpy_core.py checks that, and that the installed SimPy still has every name
listed in :data:`PRIVATE_NAMES`: a SimPy release that changes them fails there, by name).

Two uses stay outside, read-only or SimPy's own subclassing protocol, and are listed too: the
current time read as ``env._now`` on the hot path (the ``now`` property costs a Python call per
message), and events that set their own ``_ok`` / ``_value`` (as SimPy's ``Timeout`` does).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any

import simpy
from simpy.core import NORMAL, URGENT
from simpy.events import PENDING, Event, Initialize

__all__ = [
    "NORMAL",
    "PENDING",
    "PRIVATE_NAMES",
    "SIMPY_RANGE",
    "URGENT",
    "BoundProcess",
    "on_schedule",
    "schedule_at",
    "start_like_process",
]

SIMPY_RANGE = ((4, 1), (4, 2))  # tested on: >= 4.1, < 4.2 (pyproject's pin)

# SimPy names the engine relies on: (object, attribute), checked against the installed SimPy.
PRIVATE_NAMES = (
    ("Environment", "_queue"),
    ("Environment", "_eid"),
    ("Environment", "_now"),
    ("Event", "_value"),
    ("Event", "_ok"),
    ("Process", "_resume"),
)


def schedule_at(env: simpy.Environment, time: float, priority: int, event: Event) -> None:
    """Put ``event`` on the environment's heap at the absolute ``time`` (not ``now + delay``:
    that sum would round), after everything already due then with ``priority``."""
    heappush(env._queue, (time, priority, next(env._eid), event))


def on_schedule(env: simpy.Environment, before: dict[float, Any]) -> None:
    """Wrap ``env.schedule`` so that scheduling anything at time t first drops ``before[t]``
    (the engine's open instant of t: deliveries issued later go behind what was scheduled)."""
    queue, eid = env._queue, env._eid

    def schedule(event: Event, priority: int = NORMAL, delay: float = 0) -> None:
        time = env._now + delay
        if before:
            before.pop(time, None)
        heappush(queue, (time, priority, next(eid), event))

    env.schedule = schedule  # type: ignore[method-assign]


def start_like_process(env: simpy.Environment, event: Event, resume: Callable[[Any], Any]) -> None:
    """Start ``event`` where SimPy starts a process: an ``Initialize`` event, URGENT, now, whose
    callback is ``event._resume`` (here ``resume``)."""
    event._resume = resume  # type: ignore[attr-defined]
    Initialize(env, event)  # type: ignore[arg-type]


class BoundProcess(simpy.Process):
    """A SimPy process that binds its resume callback once, not once per event it waits on."""

    def __init__(self, env: simpy.Environment, generator: Any) -> None:
        super().__init__(env, generator)
        self._resume = self._resume  # type: ignore[method-assign]
