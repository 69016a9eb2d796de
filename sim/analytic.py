"""Closed forms (Hockney alpha-beta plus gamma for reductions), after Thakur, Rabenseifner &
Gropp (2005), "Optimization of Collective Communication Operations in MPICH".

p ranks, n bytes (all_gather/gather: the gathered size; reduce_scatter: the input size),
a = latency, b = 1/bandwidth, g = 1/reduce_bandwidth, k = chunks, o = per-call overhead.

The DES reproduces each form exactly on ``switch(p)`` with no skew or jitter, when the form
"applies": forms marked power-of-two only apply there, and the (p-1)/p n terms assume n splits
into p (or p*k) equal whole elements. Where a form does not apply, ``closed_form`` returns None.
"""

from __future__ import annotations

import math
from collections.abc import Callable

# (p, n, a, b, g, k) -> seconds
Form = Callable[[int, float, float, float, float, int], float]


def _lg(p: int) -> int:
    return (p - 1).bit_length()  # ceil(lg p)


def _linear_reduce(p: int, n: float, a: float, b: float, g: float, k: int) -> float:
    # arrivals every (a + n b) on the root's port; the root combines each on arrival
    return (a + n * b) + (p - 2) * max(a + n * b, n * g) + n * g


FORMS: dict[tuple[str, str], tuple[Form, bool]] = {
    # (op, algorithm): (form, needs power-of-two p)
    ("broadcast", "linear"): (lambda p, n, a, b, g, k: (p - 1) * (a + n * b), False),
    ("broadcast", "binomial"): (lambda p, n, a, b, g, k: _lg(p) * (a + n * b), False),
    ("broadcast", "pipelined_chain"): (lambda p, n, a, b, g, k: (p - 2 + k) * (a + n * b / k), False),
    ("broadcast", "scatter_allgather"): (lambda p, n, a, b, g, k: (_lg(p) + p - 1) * a + 2 * (p - 1) / p * n * b, True),
    ("reduce", "linear"): (_linear_reduce, False),
    # exact for power-of-two p; otherwise the last partners' subtrees are smaller and the DES is faster
    ("reduce", "binomial"): (lambda p, n, a, b, g, k: _lg(p) * (a + n * b + n * g), True),
    ("reduce", "reduce_scatter_gather"): (lambda p, n, a, b, g, k: 2 * _lg(p) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, True),
    ("all_reduce", "reduce_broadcast"): (lambda p, n, a, b, g, k: _lg(p) * (2 * a + 2 * n * b + n * g), True),
    ("all_reduce", "ring"): (lambda p, n, a, b, g, k: 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, False),
    ("all_reduce", "recursive_doubling"): (lambda p, n, a, b, g, k: _lg(p) * (a + n * b + n * g), True),
    ("all_reduce", "rabenseifner"): (lambda p, n, a, b, g, k: 2 * _lg(p) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, True),
    ("all_gather", "ring"): (lambda p, n, a, b, g, k: (p - 1) * a + (p - 1) / p * n * b, False),
    ("all_gather", "recursive_doubling"): (lambda p, n, a, b, g, k: _lg(p) * a + (p - 1) / p * n * b, True),
    ("reduce_scatter", "ring"): (lambda p, n, a, b, g, k: (p - 1) * a + (p - 1) / p * n * b + (p - 1) / p * n * g, False),
    ("reduce_scatter", "recursive_halving"): (lambda p, n, a, b, g, k: _lg(p) * a + (p - 1) / p * n * b + (p - 1) / p * n * g, True),
    ("gather", "binomial"): (lambda p, n, a, b, g, k: _lg(p) * a + (p - 1) / p * n * b, True),
    ("scatter", "binomial"): (lambda p, n, a, b, g, k: _lg(p) * a + (p - 1) / p * n * b, True),
    ("barrier", "dissemination"): (lambda p, n, a, b, g, k: _lg(p) * a, False),
    ("send_recv", "direct"): (lambda p, n, a, b, g, k: a + n * b, False),
    # Thakur et al. 2005, section 4.4; n = bytes a rank holds (p blocks of n/p)
    ("all_to_all", "pairwise"): (lambda p, n, a, b, g, k: (p - 1) * a + (p - 1) / p * n * b, False),
    ("all_to_all", "bruck"): (lambda p, n, a, b, g, k: _lg(p) * (a + n / 2 * b), True),
}

# Forms whose (p-1)/p n or n/k terms need an even split of the elements.
_SPLIT_BY = {
    "pipelined_chain": "k",
    "ring": "p",
    "scatter_allgather": "p",
    "rabenseifner": "p",
    "recursive_halving": "p",
    "reduce_scatter_gather": "p",
    "binomial": "p",
    "pairwise": "p",
    "bruck": "p",
}


def closed_form(op: str, algorithm: str, p: int, n: float, a: float, b: float, g: float = 0.0, k: int = 1, o: float = 0.0) -> float | None:
    """Time of one call by the closed form, or None where there is none (or it does not apply)."""
    entry = FORMS.get((op, algorithm))
    if entry is None or (op == "all_reduce" and algorithm == "ring" and k != 1):
        return None
    form, power_of_two = entry
    if power_of_two and p & (p - 1):
        return None
    if p == 1:
        return o
    return o + form(p, n, a, b, g, k)


def splits_evenly(op: str, algorithm: str, p: int, elements: int, k: int) -> bool:
    """Whether the scenario's elements divide as the closed form assumes."""
    by = _SPLIT_BY.get(algorithm)
    if by == "binomial" and op not in ("gather", "scatter"):
        return True
    if by == "k":
        return elements % k == 0
    if by == "p":
        return elements % (p * (k if algorithm == "ring" else 1)) == 0
    return True


def for_scenario(scenario) -> float | None:
    """The closed form for a scenario when the DES should reproduce it exactly, else None:
    switch topology, one call, no stragglers, no jitter, an even split."""
    s = scenario
    if s.topology != "switch" or s.stragglers or s.jitter_s or s.repetitions != 1:
        return None
    if not splits_evenly(s.op, s.algorithm, s.ranks, s.elements, s.chunks):
        return None
    g = 1.0 / s.reduce_bandwidth_Bps if s.reduce_bandwidth_Bps else 0.0
    return closed_form(s.op, s.algorithm, s.ranks, s.size_bytes, s.latency_s, 1.0 / s.bandwidth_Bps, g, s.chunks, s.overhead_s)


def ow_for_ring(p: int, latency_s: float, bandwidth_Bps: float, call_overhead_s: float = 0.0) -> tuple[float, float]:
    """(o, w) of ring all-reduce on switch(p): t(n) = o + n / w (DESIGN §4)."""
    if p == 1:
        return call_overhead_s, math.inf
    return call_overhead_s + 2 * (p - 1) * latency_s, p * bandwidth_Bps / (2 * (p - 1))


def busbw_factor(op: str, p: int) -> float:
    """nccl-tests' bus bandwidth factor: busbw = algbw * factor."""
    if op == "all_reduce":
        return 2 * (p - 1) / p
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (p - 1) / p
    return 1.0
