"""Closed forms (Hockney alpha-beta plus gamma for reductions), after Thakur, Rabenseifner &
Gropp (2005), "Optimization of Collective Communication Operations in MPICH".

p ranks, n bytes (all_gather/gather: the gathered size; reduce_scatter: the input size),
a = latency, b = 1/bandwidth, g = 1/reduce_bandwidth, k = chunks, o = per-call overhead.

The DES reproduces each form exactly on ``switch(p)`` with no skew or jitter, when the form
"applies": forms marked power-of-two only apply there, the (p-1)/p n and n/k terms assume n
splits into p (or k) equal whole elements, and only forms that carry k (``CHUNKED_FORMS``) apply
to more than one chunk. Where a form does not apply, ``for_scenario`` returns None and
``why_no_closed_form`` says why.
"""

from __future__ import annotations

import math
from collections.abc import Callable

# (p, n, a, b, g, k) -> seconds
Form = Callable[[int, float, float, float, float, int], float]


def _lg(p: int) -> int:
    return (p - 1).bit_length()  # ceil(lg p)


def _linear_reduce_eager(p: int, n: float, a: float, b: float, g: float, k: int) -> float:
    # eager fifo: arrivals every n b on the root's port (latency occupies no link), the first at
    # a + n b; the root combines each on arrival
    return (a + n * b + n * g) + (p - 2) * max(n * b, n * g)


FORMS: dict[tuple[str, str], tuple[Form, bool]] = {
    # (op, algorithm): (form, needs power-of-two p)
    ("broadcast", "linear"): (lambda p, n, a, b, g, k: (p - 1) * (a + n * b), False),
    ("broadcast", "binomial"): (lambda p, n, a, b, g, k: _lg(p) * (a + n * b), False),
    ("broadcast", "pipelined_chain"): (lambda p, n, a, b, g, k: (p - 2 + k) * (a + n * b / k), False),
    ("broadcast", "scatter_allgather"): (lambda p, n, a, b, g, k: (_lg(p) + p - 1) * a + 2 * (p - 1) / p * n * b, True),
    # rendezvous: the root receives (a + n b) and combines (n g) from one rank after the other
    ("reduce", "linear"): (lambda p, n, a, b, g, k: (p - 1) * (a + n * b + n * g), False),
    ("reduce", "binomial"): (lambda p, n, a, b, g, k: _lg(p) * (a + n * b + n * g), False),
    ("reduce", "reduce_scatter_gather"): (lambda p, n, a, b, g, k: 2 * _lg(p) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, True),
    ("all_reduce", "reduce_broadcast"): (lambda p, n, a, b, g, k: _lg(p) * (2 * a + 2 * n * b + n * g), False),
    # ring with k chunks: (p-1) k messages of n/(p k) bytes per rank and phase, one at a time
    ("all_reduce", "ring"): (lambda p, n, a, b, g, k: 2 * (p - 1) * k * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, False),
    ("all_reduce", "recursive_doubling"): (lambda p, n, a, b, g, k: _lg(p) * (a + n * b + n * g), True),
    ("all_reduce", "rabenseifner"): (lambda p, n, a, b, g, k: 2 * _lg(p) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g, True),
    ("all_gather", "ring"): (lambda p, n, a, b, g, k: (p - 1) * k * a + (p - 1) / p * n * b, False),
    ("all_gather", "recursive_doubling"): (lambda p, n, a, b, g, k: _lg(p) * a + (p - 1) / p * n * b, True),
    ("reduce_scatter", "ring"): (lambda p, n, a, b, g, k: (p - 1) * k * a + (p - 1) / p * n * b + (p - 1) / p * n * g, False),
    ("reduce_scatter", "recursive_halving"): (lambda p, n, a, b, g, k: _lg(p) * a + (p - 1) / p * n * b + (p - 1) / p * n * g, True),
    ("gather", "binomial"): (lambda p, n, a, b, g, k: _lg(p) * a + (p - 1) / p * n * b, True),
    ("scatter", "binomial"): (lambda p, n, a, b, g, k: _lg(p) * a + (p - 1) / p * n * b, True),
    ("barrier", "dissemination"): (lambda p, n, a, b, g, k: _lg(p) * a, False),
    ("send_recv", "direct"): (lambda p, n, a, b, g, k: a + n * b, False),
    # Thakur et al. 2005, section 4.4; n = bytes a rank holds (p blocks of n/p)
    ("all_to_all", "pairwise"): (lambda p, n, a, b, g, k: (p - 1) * a + (p - 1) / p * n * b, False),
    ("all_to_all", "bruck"): (lambda p, n, a, b, g, k: _lg(p) * (a + n / 2 * b), True),
}

# Forms that carry the chunk count k; every other form is for one chunk and None when k > 1.
CHUNKED_FORMS = {("broadcast", "pipelined_chain"), ("all_reduce", "ring"), ("all_gather", "ring"), ("reduce_scatter", "ring")}

# Forms whose (p-1)/p n or n/k terms need an even split of the elements: into p pieces ("p")
# k chunks ("k") or p pieces of k chunks each ("pk"). The others move the whole message in every step.
_SPLIT_BY = {
    ("broadcast", "pipelined_chain"): "k",
    ("broadcast", "scatter_allgather"): "p",
    ("reduce", "reduce_scatter_gather"): "p",
    ("all_reduce", "ring"): "pk",
    ("all_reduce", "rabenseifner"): "p",
    ("all_gather", "ring"): "pk",
    ("all_gather", "recursive_doubling"): "p",
    ("reduce_scatter", "ring"): "pk",
    ("reduce_scatter", "recursive_halving"): "p",
    ("gather", "binomial"): "p",
    ("scatter", "binomial"): "p",
    ("all_to_all", "pairwise"): "p",
    ("all_to_all", "bruck"): "p",
}


def closed_form(op: str, algorithm: str, p: int, n: float, a: float, b: float, g: float = 0.0, k: int = 1, o: float = 0.0) -> float | None:
    """Time of one call by the closed form, or None where there is none (or it does not apply:
    a power-of-two form on other p, or a one-chunk form asked for k > 1 chunks)."""
    entry = FORMS.get((op, algorithm))
    if entry is None or (k != 1 and (op, algorithm) not in CHUNKED_FORMS):
        return None
    form, power_of_two = entry
    if power_of_two and p & (p - 1):
        return None
    if p == 1:
        return o
    return o + form(p, n, a, b, g, k)


def split_parts(op: str, algorithm: str, p: int, k: int) -> int:
    """Into how many equal pieces the closed form assumes the elements divide (1: no split)."""
    by = _SPLIT_BY.get((op, algorithm))
    return {"p": p, "k": k, "pk": p * k}.get(by or "", 1)


def splits_evenly(op: str, algorithm: str, p: int, elements: int, k: int) -> bool:
    """Whether the scenario's elements divide as the closed form assumes."""
    return elements % split_parts(op, algorithm, p, k) == 0


def why_no_closed_form(scenario) -> str | None:
    """None when ``for_scenario`` gives a time the DES reproduces exactly, else the reason, in
    words a user can act on (shown as ``analytic_note``)."""
    s = scenario
    key = (s.op, s.algorithm)
    if key not in FORMS:
        return f"no closed form for {s.op}/{s.algorithm}; the simulation is the answer"
    if FORMS[key][1] and s.ranks & (s.ranks - 1):
        return f"the {s.op}/{s.algorithm} closed form holds for a power-of-two number of ranks, not {s.ranks}"
    if s.chunks != 1 and key not in CHUNKED_FORMS:
        return f"the {s.op}/{s.algorithm} closed form is for one chunk; {s.chunks} pipelined chunks have none"
    if s.topology != "switch":
        return f"closed forms assume one port per rank into a switch, not the {s.topology} topology"
    if s.stragglers:
        return "stragglers start some ranks late; closed forms assume all start together"
    if s.jitter_s:
        return "jitter varies message times; closed forms assume fixed costs"
    if s.repetitions != 1:
        return f"{s.repetitions} back-to-back calls may overlap; the closed form is for one call"
    eager = _eager_race(s)
    if eager:
        return eager
    parts = split_parts(s.op, s.algorithm, s.ranks, s.chunks) if s.ranks > 1 else 1
    if parts > 1 and s.size_bytes % s.element_bytes:
        return f"{s.size_bytes} B is not a whole number of {s.element_bytes}-byte elements; the closed form splits elements"
    if s.elements % parts:
        from sim.units import format_size

        return (
            f"{format_size(s.size_bytes)} ({s.elements} elements of {s.element_bytes} B) does not split evenly "
            f"into {parts} pieces; the closed form assumes equal pieces"
        )
    return None


def for_scenario(scenario) -> float | None:
    """The closed form for a scenario when the DES should reproduce it exactly, else None
    (``why_no_closed_form`` says why): switch topology, one call, no stragglers, no jitter,
    the chunk count the form carries, an even split."""
    s = scenario
    if why_no_closed_form(s) is not None:
        return None
    g = 1.0 / s.reduce_bandwidth_Bps if s.reduce_bandwidth_Bps else 0.0
    if (s.op, s.algorithm) == ("reduce", "linear") and s.ranks > 1 and s.size_bytes <= s.eager_limit_bytes:
        return s.overhead_s + _linear_reduce_eager(s.ranks, s.size_bytes, s.latency_s, 1.0 / s.bandwidth_Bps, g, 1)
    # chunks beyond the element count are not sent: k elements or fewer travel as that many chunks
    chunks = min(s.chunks, max(1, s.elements))
    return closed_form(s.op, s.algorithm, s.ranks, s.size_bytes, s.latency_s, 1.0 / s.bandwidth_Bps, g, chunks, s.overhead_s)


# Rooted reductions whose closed forms assume each receive completes before the next is posted,
# as under rendezvous (the default). Sent eagerly, messages race for the root's port instead.
_RECEIVE_RACES = {("reduce", "linear"), ("reduce", "binomial"), ("all_reduce", "reduce_broadcast")}


def _eager_race(s) -> str | None:
    """Why an eager rooted reduction has no exact closed form, or None when it has one."""
    if (s.op, s.algorithm) not in _RECEIVE_RACES or s.ranks == 1 or s.size_bytes > s.eager_limit_bytes:
        return None
    if s.algorithm == "linear":
        if s.sharing == "fifo":
            return None  # its own form: arrivals every a + n b, combined on arrival
        return "eager sends share the root's port under fair sharing; the closed form assumes rendezvous (eager_limit below the size)"
    if s.ranks & (s.ranks - 1):
        return (
            f"eager sends race for the root's port at {s.ranks} ranks (not a power of two); "
            "the closed form assumes rendezvous (eager_limit below the size)"
        )
    return None


def ow_for_ring(p: int, latency_s: float, bandwidth_Bps: float, call_overhead_s: float = 0.0) -> tuple[float, float]:
    """(o, w) of ring all-reduce on switch(p): t(n) = o + n / w, as nccl-tests' algbw."""
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
