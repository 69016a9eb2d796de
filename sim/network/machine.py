"""Rank programs resumed by their events directly: no ``Process._resume`` per message.

A SimPy process sits between each event and the rank's generator: the event's callback is
``Process._resume``, a Python function that marks the process active, sends the event's value
into the generator, checks what it yields and appends itself to that event's callbacks. At a
message per step, that function is a fifth of what a rank costs beyond the network's own work
(docs/scale.md, fifth pass). A :class:`Machine` is a process whose generator is the callback:
the event calls ``generator.send`` (C), and the generator, where it would ``yield`` an event,
appends :attr:`Machine.resume` to that event's callbacks itself (or goes on at once when the
event has been processed already, as ``Process._resume`` does) and then yields nothing.

It starts where a process starts (an ``Initialize`` event, URGENT, at its creation) and ends as a
process ends (the process event scheduled now, by :meth:`Machine.done`), so a program run as a
Machine makes the same ``send``, ``recv`` and ``reduce`` calls in the same order as its plain
generator run as a process: the same events and every simulated time bit for bit. It stands in
for a process where the runner reads one: ``is_alive`` until it ends, ``callbacks`` at its end.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import simpy
from simpy.events import Event

from sim.network.simpy_core import PENDING, start_like_process

__all__ = ["Machine"]


class Machine(Event):
    """A rank's program as a generator resumed by events' callbacks. ``program(machine)`` returns
    the generator; it first yields once (primed here, before the start), then runs from the
    ``Initialize`` event on: to wait on an event it appends ``machine.resume`` to the event's
    callbacks and yields; at its end it calls ``machine.done()`` and yields a last time."""

    def __init__(self, env: simpy.Environment, program: Callable[[Machine], Generator]) -> None:
        self.env = env
        self.callbacks = []
        self._value = PENDING
        steps = program(self)
        next(steps)  # to the generator's first bare yield: it runs nothing else before the start
        self.resume = steps.send  # the events it waits on resume it
        start_like_process(env, self, steps.send)  # scheduled URGENT now, as a Process's start

    @property
    def is_alive(self) -> bool:
        """True until the program has ended (as :attr:`simpy.Process.is_alive`)."""
        return self._value is PENDING

    def done(self) -> None:
        """The program has ended: as a process whose generator returned, schedule this event now."""
        self._ok = True
        self._value = None
        self.env.schedule(self)
