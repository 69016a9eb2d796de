"""Progressive filling of a large component from a heap (sim.network.flows._fill, HEAP_FROM) gives the
rates of the scan over every resource, bit for bit, ties included (the first such resource in the
order the flows list them)."""

from __future__ import annotations

import random

import pytest

from sim.network import flows


class _Flow:
    __slots__ = ("resources", "peak")

    def __init__(self, resources: list[int], peak: float) -> None:
        self.resources, self.peak = resources, peak


def _component(rng: random.Random, ties: bool) -> tuple[dict, list[float], list[list]]:
    resources = rng.randint(flows.HEAP_FROM, 4 * flows.HEAP_FROM)
    pick = (lambda: float(rng.choice((10, 20, 30, 40)))) if ties else (lambda: rng.uniform(1.0, 100.0))
    capacity = [pick() for _ in range(resources)]
    active: list[list] = [[] for _ in range(resources)]
    component: dict = {}
    for _ in range(rng.randint(resources, 4 * resources)):
        route = rng.sample(range(resources), rng.randint(1, 4))
        flow = _Flow(route, pick() * rng.choice((0.5, 1.0, 10.0)))
        component[flow] = None
        for index in route:
            active[index].append(flow)
    return component, capacity, active


@pytest.mark.parametrize("ties", [True, False], ids=["ties", "no-ties"])
def test_the_heap_gives_the_scans_rates_bit_for_bit(monkeypatch, ties):
    rng = random.Random(20261124 + ties)
    heap_used, calls, original = 0, [], flows.heapify
    monkeypatch.setattr(flows, "heapify", lambda heap: calls.append(1) or original(heap))
    for _ in range(60):
        component, capacity, active = _component(rng, ties)
        monkeypatch.setattr(flows, "HEAP_FROM", 10**9)
        scanned = flows.max_min(dict(component), capacity, active)
        monkeypatch.setattr(flows, "HEAP_FROM", 48)
        before = len(calls)
        heaped = flows.max_min(dict(component), capacity, active)
        heap_used += len(calls) > before
        assert list(heaped.items()) == list(scanned.items())  # same rates, frozen in the same order
        assert set(heaped) == set(component)
    assert heap_used >= 50  # the heap did the filling (a first bottleneck holding every flow needs no fill)
