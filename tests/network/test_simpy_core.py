"""SimPy's private state is touched in one module, sim/network/simpy_core.py, on the SimPy it was
tested on: no other module under sim/ names the heap or the event counter, the installed SimPy is
in the range pyproject pins, and every private name the engine uses is there (a SimPy release
that drops one fails here, by name, not somewhere in a run)."""

from __future__ import annotations

import ast
import re
from importlib.metadata import version
from pathlib import Path

import pytest
import simpy

from sim.network import simpy_core

ROOT = Path(__file__).resolve().parents[2]
SIM = ROOT / "sim"
HOME = SIM / "network" / "simpy_core.py"
FORBIDDEN_ATTRIBUTES = {"_queue", "_eid", "_resume"}  # the heap, the event counter, a process's start
FORBIDDEN_IMPORTS = {("simpy.core", None), ("simpy.events", "Initialize")}


def _touches(path: Path, root: Path = ROOT) -> list[str]:
    """Where ``path`` names SimPy's heap or counter, or imports what only simpy_core may."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            found.append(f"{path.relative_to(root)}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in {module for module, _ in FORBIDDEN_IMPORTS}:
            names = {alias.name for alias in node.names}
            if (node.module, None) in FORBIDDEN_IMPORTS or names & {name for module, name in FORBIDDEN_IMPORTS if module == node.module}:
                found.append(f"{path.relative_to(root)}:{node.lineno}: from {node.module} import {', '.join(sorted(names))}")
    return found


@pytest.mark.slow
def test_only_simpy_core_touches_simpys_heap_and_event_counter():
    touches = [touch for path in sorted(SIM.rglob("*.py")) if path != HOME for touch in _touches(path)]
    assert touches == [], "SimPy's private state belongs in sim/network/simpy_core.py:\n" + "\n".join(touches)


def test_the_check_sees_a_touch(tmp_path):
    """The check above is not vacuous: a heap push written elsewhere is found."""
    sample = tmp_path / "sample.py"
    sample.write_text("from simpy.core import NORMAL\n\ndef push(env, e):\n    env._queue.append((0, NORMAL, next(env._eid), e))\n")
    found = [touch.split(": ", 1)[1] for touch in _touches(sample, tmp_path)]
    assert sorted(found) == ["._eid", "._queue", "from simpy.core import NORMAL"]


def _release(text: str) -> tuple[int, int]:
    major, minor = re.match(r"(\d+)\.(\d+)", text).groups()
    return int(major), int(minor)


def test_the_installed_simpy_is_in_the_pinned_range_it_was_tested_on():
    lowest, beyond = simpy_core.SIMPY_RANGE
    installed = version("simpy")
    assert lowest <= _release(installed) < beyond, (
        f"SimPy {installed} is installed; sim/network/simpy_core.py was tested on "
        f">= {'.'.join(map(str, lowest))}, < {'.'.join(map(str, beyond))}: check its private names, then widen the pin"
    )
    pin = re.search(r'"simpy>=([\d.]+),<([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pin is not None, "pyproject.toml pins simpy as >=X.Y,<X.Z"
    assert (_release(pin[1]), _release(pin[2])) == simpy_core.SIMPY_RANGE, "pyproject's simpy pin and SIMPY_RANGE differ"


def test_every_private_simpy_name_the_engine_uses_exists():
    env = simpy.Environment()

    def generator():
        yield env.timeout(0)

    samples = {"Environment": env, "Event": env.timeout(0), "Process": env.process(generator())}  # a triggered event
    missing = [f"{kind}.{name}" for kind, name in simpy_core.PRIVATE_NAMES if not hasattr(samples[kind], name)]
    assert missing == [], f"SimPy {version('simpy')} lacks {missing}: sim/network/simpy_core.py needs them"


def test_schedule_at_puts_an_event_at_an_absolute_time_after_those_due_then():
    env = simpy.Environment()
    order = []
    first, second = env.event(), env.event()
    first._ok = second._ok = True  # as SimPy's own triggered events
    first._value = second._value = None
    first.callbacks.append(lambda _: order.append(("first", env.now)))
    second.callbacks.append(lambda _: order.append(("second", env.now)))
    simpy_core.schedule_at(env, 0.3, simpy_core.NORMAL, second)
    simpy_core.schedule_at(env, 0.1 + 0.2, simpy_core.URGENT, first)  # 0.30000000000000004: later
    env.run()
    assert order == [("second", 0.3), ("first", 0.1 + 0.2)]
