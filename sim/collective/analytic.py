"""Closed forms (Hockney alpha-beta plus gamma for reductions), after Thakur, Rabenseifner &
Gropp (2005), "Optimization of Collective Communication Operations in MPICH".

p ranks, n bytes (all_gather/gather: the gathered size; reduce_scatter: the input size),
a = latency, b = 1/bandwidth, g = 1/reduce_bandwidth, k = chunks, o = per-call overhead.

Each form is declared in its algorithm's record (``form=Form(...)`` in the ``@register`` call,
sim.algorithms.registry); this module evaluates them. The DES reproduces each form exactly on
``switch(p)`` with no skew or jitter, when the form "applies": forms marked power-of-two only
apply there, the (p-1)/p n and n/k terms assume n splits into p (or k) equal whole elements
(``Form.split``), and only forms that carry k (``Form.chunked``) apply to more than one chunk. Where a form does not apply, ``for_scenario`` returns None and
``why_no_closed_form`` says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sim.algorithms.registry import AlgorithmSpec, Form, algorithm_spec, all_specs, busbw_factor
from sim.fields import breaks, broken


def form_of(op: str, algorithm: str) -> Form | None:
    """The algorithm's closed form from its record, None where it has none."""
    spec = algorithm_spec(op, algorithm)
    return spec.closed_form if spec else None


__all__ = [
    "ClosedForm",
    "busbw_factor",
    "closed_form",
    "for_scenario",
    "form_of",
    "ow_for_ring",
    "split_parts",
    "splits_evenly",
    "status",
    "why_no_closed_form",
    "with_forms",
]


def with_forms() -> list[AlgorithmSpec]:
    """The records of every algorithm that has a closed form, in registry order."""
    return [spec for spec in all_specs() if spec.closed_form is not None]


def closed_form(op: str, algorithm: str, p: int, n: float, a: float, b: float, g: float = 0.0, k: int = 1, o: float = 0.0) -> float | None:
    """Time of one call by the closed form, or None where there is none (or it does not apply:
    a power-of-two form on other p, or a one-chunk form asked for k > 1 chunks)."""
    spec = algorithm_spec(op, algorithm)
    form = spec.closed_form if spec else None
    if form is None or (k != 1 and not form.chunked):
        return None
    if spec.form_power_of_two and p & (p - 1):
        return None
    if p == 1:
        return o
    return o + form.time(p, n, a, b, g, k)


def split_parts(op: str, algorithm: str, p: int, k: int) -> int:
    """Into how many equal pieces the closed form assumes the elements divide (1: no split)."""
    form = form_of(op, algorithm)
    return {"p": p, "k": k, "pk": p * k}.get(form.split if form else "", 1)


def splits_evenly(op: str, algorithm: str, p: int, elements: int, k: int) -> bool:
    """Whether the scenario's elements divide as the closed form assumes."""
    return elements % split_parts(op, algorithm, p, k) == 0


def why_no_closed_form(scenario) -> str | None:
    """None when ``for_scenario`` gives a time the DES reproduces exactly, else the reason, in
    words a user can act on (shown as ``analytic_note``)."""
    s = scenario
    spec = algorithm_spec(s.op, s.algorithm)
    form = spec.closed_form if spec else None
    if form is None:
        return f"no closed form for {s.op}/{s.algorithm}; the simulation is the answer"
    if spec.form_power_of_two and s.ranks & (s.ranks - 1):
        return f"the {s.op}/{s.algorithm} closed form holds for a power-of-two number of ranks, not {s.ranks}"
    if s.chunks != 1 and not form.chunked:
        return f"the {s.op}/{s.algorithm} closed form is for one chunk; {s.chunks} pipelined chunks have none"
    reason = breaks(s, "closed_form")  # topology, stragglers, jitter, repetitions: their entries in sim.fields
    if reason is not None:
        return reason
    eager = _eager_race(s, spec)
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
    eager = form_of(s.op, s.algorithm).eager
    if eager is not None and s.ranks > 1 and s.size_bytes <= s.eager_limit_bytes:
        return s.overhead_s + eager(s.ranks, s.size_bytes, s.latency_s, 1.0 / s.bandwidth_Bps, g, 1)
    # chunks beyond the element count are not sent: k elements or fewer travel as that many chunks
    chunks = min(s.chunks, max(1, s.elements))
    return closed_form(s.op, s.algorithm, s.ranks, s.size_bytes, s.latency_s, 1.0 / s.bandwidth_Bps, g, chunks, s.overhead_s)


@dataclass(frozen=True)
class ClosedForm:
    """The closed form's time for a scenario, whether the simulation should match it exactly,
    and in words why it is approximate or missing."""

    time_s: float | None
    exact: bool
    note: str


def status(scenario) -> ClosedForm:
    """The closed form with an honest status: exact (the DES reproduces it: ``for_scenario``),
    approximate (an uneven split, stragglers, jitter, repetitions: the formula's assumptions
    bend), or none with the reason. The one closed-form status; ``why_no_closed_form`` is its
    exactness test."""
    s = scenario
    exact = for_scenario(s)
    if exact is not None:
        return ClosedForm(exact, True, "")
    g = 1.0 / s.reduce_bandwidth_Bps if s.reduce_bandwidth_Bps else 0.0
    time_s = closed_form(s.op, s.algorithm, s.ranks, s.size_bytes, s.latency_s, 1.0 / s.bandwidth_Bps, g, s.chunks, s.overhead_s)
    if time_s is None:
        return ClosedForm(None, False, _why_none(s))
    bent = broken(s, "closed_form")  # the schema's reasons (sim.fields); another topology: none at all
    if "topology" in bent:
        return ClosedForm(None, False, bent["topology"])
    reasons = [reason.split(";")[0] for reason in bent.values()]  # what happens, without "closed forms assume"
    if not splits_evenly(s.op, s.algorithm, s.ranks, s.elements, s.chunks):
        parts = split_parts(s.op, s.algorithm, s.ranks, s.chunks)
        reasons.append(f"{s.elements:,} elements do not divide into {parts} equal pieces, so pieces differ by one element")
    return ClosedForm(time_s, False, "approximate: " + "; ".join(reasons or [why_no_closed_form(s) or ""]))


def _why_none(s) -> str:
    spec = algorithm_spec(s.op, s.algorithm)
    if spec is None or spec.closed_form is None:
        reason = spec.form if spec else "not a registered algorithm"
        return f"no closed form is known for {s.op}/{s.algorithm}: {reason}"
    if spec.form_power_of_two and s.ranks & (s.ranks - 1):
        return f"the {s.algorithm} formula holds for a power-of-two number of ranks, not {s.ranks}"
    return f"the {s.algorithm} formula is for one chunk; {s.chunks} pipelined chunks have no closed form"


def _eager_race(s, spec: AlgorithmSpec) -> str | None:
    """Why an eager rooted reduction has no exact closed form, or None when it has one: forms
    marked ``rendezvous`` assume each receive completes before the next is posted, as under
    rendezvous (the default); sent eagerly, messages race for the root's port instead."""
    form = spec.closed_form
    if not form.rendezvous or s.ranks == 1 or s.size_bytes > s.eager_limit_bytes:
        return None
    if form.eager is not None:
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
