"""sim.collective.explore.decompose splits a run, or the closed form, into alpha, beta, gamma terms."""

from __future__ import annotations

import pytest

from sim.collective import explore
from sim.errors import CollsimError
from sim.scenario import CollectiveScenario


def scenario(**fields):
    base = {
        "op": "all_reduce",
        "algorithm": "ring",
        "ranks": 8,
        "size": "64MiB",
        "latency": "5us",
        "bandwidth": "25GB/s",
        "reduce_bandwidth": "100GB/s",
    }
    return CollectiveScenario.from_dict({**base, **fields})


def test_the_closed_form_split_is_the_textbook_terms():
    s = scenario()
    parts = explore.decompose(s, time=explore.closed_form_time)
    p, n = 8, 64 * 2**20
    assert parts["latency"] == pytest.approx(2 * (p - 1) * 5e-6, rel=1e-12)
    assert parts["bandwidth"] == pytest.approx(2 * (p - 1) / p * n / 25e9, rel=1e-9)
    assert parts["reduction"] == pytest.approx((p - 1) / p * n / 100e9, rel=1e-9)
    assert parts["total"] == pytest.approx(explore.closed_form_time(s), rel=1e-12) and parts["contention"] == 0.0
    assert parts == pytest.approx(explore.decompose(s))  # on switch(p) the run is the closed form


def test_no_closed_form_says_why():
    with pytest.raises(CollsimError, match="no closed form"):
        explore.closed_form_time(scenario(topology="ring"))
