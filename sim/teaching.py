"""The teaching layer: why a collective takes the time it does, as data a page can show.

Pure functions of a scenario or a result (standard library only, the closed forms from the
algorithms' records):

- :func:`lower_bound`: the bytes the busiest rank must send in any algorithm of an op, and why;
- :func:`step_bytes`: per step, the bytes each rank has sent so far and each link has carried,
  beside that bound;
- :func:`formula_terms`: the closed form term by term (alpha, beta, gamma), in symbols and with
  the scenario's numbers plugged in; :func:`step_costs` and :func:`step_term` say which part of
  it a step pays;
- :func:`crossover_size`: the message size where two algorithms' closed forms meet, solved from
  ``alpha L_1 + n (beta F_1 + gamma G_1) = alpha L_2 + n (beta F_2 + gamma G_2)``;
- :func:`bucket_guide`: the course's DDP bucket formula ``n_b o + s / (n_b w)`` beside the
  simulated overhead, its optimum ``b* = sqrt(s w o)``, the caps within 1 % of the best, and
  where and why the two part.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim.algorithms.registry import algorithm_spec, ceil_lg
from sim.collective.narrative import phase_of
from sim.collective.results import CollectiveResult
from sim.errors import CollsimError
from sim.units import format_bandwidth, format_size, format_time

__all__ = [
    "COST_PARTS",
    "Bound",
    "Crossover",
    "Difference",
    "FormulaTerms",
    "StepBytes",
    "StepCost",
    "Term",
    "bucket_guide",
    "crossover_size",
    "difference",
    "formula_terms",
    "lower_bound",
    "step_bytes",
    "step_costs",
    "step_term",
]


# --------------------------------------------------------------------------- lower bound


@dataclass(frozen=True)
class Bound:
    """The bytes some rank must send in any algorithm of ``op`` on p ranks and n bytes
    (``nbytes``), the formula in symbols and the reason in words."""

    op: str
    nbytes: float
    formula: str
    why: str


def lower_bound(op: str, p: int, n: float) -> Bound:
    """What the busiest rank must send, whatever the algorithm (Patarasuk & Yuan 2009 for
    all-reduce; the others by the same counting of what each rank lacks)."""
    if p <= 1:
        return Bound(op, 0.0, "0", "one rank holds everything already")
    share = (p - 1) / p * n
    bounds = {
        "all_reduce": (2 * share, "2(p-1)/p n", "every rank's result needs the other p-1 ranks' pieces reduced in, and every piece it owns must leave it reduced: (p-1)/p n out to reduce, (p-1)/p n out to share the result"),
        "reduce_scatter": (share, "(p-1)/p n", "each rank's n bytes hold p-1 pieces that other ranks must reduce"),
        "all_gather": (share, "(p-1)/p n", "all ranks together receive (p-1) n bytes, so on average each sends (p-1)/p n"),
        "all_to_all": (share, "(p-1)/p n", "each rank holds a block for every other rank"),
        "broadcast": (n, "n", "the root holds the only copy: it must send all n bytes at least once"),
        "reduce": (share, "(p-1)/p n", "the root's result needs every other rank's n bytes reduced in; spread over p ranks that is at least (p-1)/p n out of some rank"),
        "scatter": (share, "(p-1)/p n", "the root holds the other ranks' p-1 blocks"),
        "gather": (share, "(p-1)/p n", "the root must receive the other ranks' p-1 blocks (counted as sent by the ranks that hold them)"),
        "send_recv": (n, "n", "the sender holds the only copy"),
        "barrier": (0.0, "0", "a barrier moves no data"),
    }  # fmt: skip
    if op not in bounds:
        raise CollsimError(f"op: no lower bound for {op!r}; known: {', '.join(bounds)}")
    nbytes, formula, why = bounds[op]
    return Bound(op, nbytes, formula, why)


# --------------------------------------------------------------------------- bytes per step


@dataclass(frozen=True)
class StepBytes:
    """After ``step`` (the event table's step number, counted from 0): the bytes each rank has
    sent so far (``sent_by_rank[r]``) and each directed link has carried (``link_bytes``, by
    link name), the busiest rank's total and the lower bound it is measured against."""

    step: int
    phase: str
    sent_by_rank: tuple[int, ...]
    link_bytes: dict[str, int] = field(hash=False)
    bound_bytes: float = 0.0

    @property
    def busiest_rank_bytes(self) -> int:
        return max(self.sent_by_rank, default=0)

    @property
    def busiest_link_bytes(self) -> int:
        return max(self.link_bytes.values(), default=0)


def step_bytes(result: CollectiveResult) -> list[StepBytes]:
    """Cumulative bytes per rank and per link after each step of a run recorded message by
    message (``record="full"`` or a small ``auto`` run); the lower bound rides along."""
    if result.truncated:
        raise CollsimError("step_bytes: the run aggregated its messages; run it with record='full'")
    s, names = result.scenario, result.links["name"]
    bound = lower_bound(s.op, s.ranks, s.size_bytes).nbytes
    by_step: dict[int, list[tuple[int, int, int]]] = {}
    for src, dst, _start, _end, nbytes, step, _chunk in result.messages:
        by_step.setdefault(int(step), []).append((int(src), int(dst), int(nbytes)))
    sent = [0] * s.ranks
    links: dict[str, int] = {}
    out = []
    for step in sorted(by_step):
        for src, dst, nbytes in by_step[step]:
            sent[src] += nbytes
            for index in result.routes[(src, dst)]:
                links[str(names[index])] = links.get(str(names[index]), 0) + nbytes
        out.append(StepBytes(step, phase_of(s.op, s.algorithm, s.ranks, step), tuple(sent), dict(links), bound))
    return out


# --------------------------------------------------------------------------- the closed form, term by term


@dataclass(frozen=True)
class Term:
    """One term of a closed form: ``symbol`` (α, β or γ), its coefficient in symbols
    (``coefficient_text``: "2(p-1)", "2(p-1)/p n") and in numbers (``coefficient``: a count for
    α, bytes for β and γ), the unit cost (``unit_s``: seconds, or seconds per byte) and the
    term's value in seconds."""

    name: str
    symbol: str
    coefficient_text: str
    coefficient: float
    unit_s: float
    value_s: float

    @property
    def plugged(self) -> str:
        """The term with the numbers in: "14 × 5 us = 70 us", "1.75 × 64 MiB / 25 GB/s = 4.7 ms"."""
        if self.name == "alpha":
            return f"{_number(self.coefficient)} × {format_time(self.unit_s)} = {format_time(self.value_s)}"
        return (
            f"{format_size(self.coefficient)} / {format_bandwidth(1 / self.unit_s)} = {format_time(self.value_s)}" if self.unit_s else "0"
        )


@dataclass(frozen=True)
class FormulaTerms:
    """A closed form split into its α (latency), β (bandwidth) and γ (reduction) terms."""

    op: str
    algorithm: str
    terms: tuple[Term, ...]
    overhead_s: float

    @property
    def total_s(self) -> float:
        return self.overhead_s + sum(term.value_s for term in self.terms)

    @property
    def text(self) -> str:
        """In symbols: "2(p-1) α + 2(p-1)/p n β + (p-1)/p n γ"."""
        return " + ".join(term.symbol if term.coefficient_text == "1" else f"{term.coefficient_text} {term.symbol}" for term in self.terms)


def _number(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 1e-9 else f"{value:.4g}"


# coefficient expressions in p (and k, chunks) the closed forms use, tried in this order; a
# coefficient that matches none is written as a number
_COEFFICIENTS: tuple[tuple[str, Callable[[int, int], float]], ...] = (
    ("1", lambda p, k: 1.0),
    ("lg p", lambda p, k: float(ceil_lg(p))),
    ("2 lg p", lambda p, k: 2.0 * ceil_lg(p)),
    ("(p-1)", lambda p, k: p - 1.0),
    ("2(p-1)", lambda p, k: 2.0 * (p - 1)),
    ("(p-1)/p", lambda p, k: (p - 1) / p),
    ("2(p-1)/p", lambda p, k: 2 * (p - 1) / p),
    ("(p-1) k", lambda p, k: (p - 1.0) * k),
    ("2(p-1) k", lambda p, k: 2.0 * (p - 1) * k),
    ("(lg p + p - 1)", lambda p, k: ceil_lg(p) + p - 1.0),
    ("(p - 2 + k)", lambda p, k: p - 2.0 + k),
    ("(p - 2 + k)/k", lambda p, k: (p - 2.0 + k) / k),
)


def _symbolic(coefficient: Callable[[int, int], float], k: int) -> str | None:
    """The expression of ``_COEFFICIENTS`` equal to ``coefficient(p, k)`` at several p (k as
    the scenario has it, so one chunk reads "2(p-1)", not "2(p-1) k")."""
    probes = [(p, k) for p in (4, 8, 16, 64)]
    for text, expression in _COEFFICIENTS:
        if all(math.isclose(coefficient(p, k), expression(p, k), rel_tol=1e-9, abs_tol=1e-12) for p, k in probes):
            return text
    return None


def formula_terms(scenario: Any) -> FormulaTerms | None:
    """The scenario's closed form as α, β and γ terms with its numbers plugged in (α: latency,
    β: 1/bandwidth, γ: 1/reduce bandwidth; a zero term is left out); None without a closed form."""
    s = scenario
    spec = algorithm_spec(s.op, s.algorithm)
    form = spec.closed_form if spec else None
    if form is None:
        return None
    k = s.chunks if form.chunked else 1
    beta = 1.0 / s.bandwidth_Bps
    gamma = 1.0 / s.reduce_bandwidth_Bps if s.reduce_bandwidth_Bps else 0.0
    parts = (  # (name, symbol, unit cost, coefficient(p, k) per unit n for β and γ)
        ("alpha", "α", s.latency_s, lambda p, kk: form.time(p, 0.0, 1.0, 0.0, 0.0, kk)),
        ("beta", "β", beta, lambda p, kk: form.time(p, 1.0, 0.0, 1.0, 0.0, kk)),
        ("gamma", "γ", gamma, lambda p, kk: form.time(p, 1.0, 0.0, 0.0, 1.0, kk)),
    )
    terms = []
    for name, symbol, unit, coefficient in parts:
        per = coefficient(s.ranks, k)
        if per == 0 or (name == "gamma" and not gamma):
            continue
        text = _symbolic(coefficient, k) or _number(per)
        if name != "alpha":
            text = "n" if text == "1" else f"{text} n"
        scaled = per if name == "alpha" else per * s.size_bytes
        terms.append(Term(name, symbol, text, scaled, unit, scaled * unit))
    return FormulaTerms(s.op, s.algorithm, tuple(terms), s.overhead_s)


# --------------------------------------------------------------------------- what each step pays


@dataclass(frozen=True)
class StepCost:
    """What one step adds on the critical path of a run on a switch: one latency (α), its
    largest message (``beta_bytes`` × β) and its largest reduction (``gamma_bytes`` × γ)."""

    step: int
    phase: str
    messages: int
    beta_bytes: int
    gamma_bytes: int


def step_costs(result: CollectiveResult) -> list[StepCost]:
    """Per step: messages, the bytes of its largest message and of its largest reduction. On
    ``switch(p)`` with one port per rank, the sum over steps of α + β bytes + γ bytes is the
    closed form (tests/collective/test_teaching.py checks ring all-reduce and binomial broadcast)."""
    s = result.scenario
    messages: dict[int, list[int]] = {}
    for _src, _dst, _start, _end, nbytes, step, _chunk in result.messages:
        messages.setdefault(int(step), []).append(int(nbytes))
    reduced: dict[int, int] = {}
    for _rank, _start, _end, nbytes, step, _chunk in result.computes:
        reduced[int(step)] = max(reduced.get(int(step), 0), int(nbytes))
    return [
        StepCost(step, phase_of(s.op, s.algorithm, s.ranks, step), len(sizes), max(sizes), reduced.get(step, 0))
        for step, sizes in sorted(messages.items())
    ]


def step_term(scenario: Any, costs: Sequence[StepCost], position: int) -> dict[str, Any]:
    """The part of the closed form step ``costs[position]`` pays, in words and numbers:
    ``sentence``, the step's ``alpha_s``, ``beta_s``, ``gamma_s``, and the ``phase_*`` totals of
    all steps of its phase (together the phase's share of the closed form)."""
    s = scenario
    beta = 1.0 / s.bandwidth_Bps
    gamma = 1.0 / s.reduce_bandwidth_Bps if s.reduce_bandwidth_Bps else 0.0
    cost = costs[position]
    mine = [c for c in costs if c.phase == cost.phase]
    index = mine.index(cost) + 1

    def parts(items: Sequence[StepCost]) -> tuple[float, float, float]:
        return (len(items) * s.latency_s, sum(c.beta_bytes for c in items) * beta, sum(c.gamma_bytes for c in items) * gamma)

    alpha_s, beta_s, gamma_s = parts([cost])
    phase_alpha, phase_beta, phase_gamma = parts(mine)
    paid = [f"α = {format_time(alpha_s)}", f"{format_size(cost.beta_bytes)} β = {format_time(beta_s)}"]
    if cost.gamma_bytes and gamma:
        paid.append(f"{format_size(cost.gamma_bytes)} γ = {format_time(gamma_s)}")
    name = cost.phase or "the algorithm"
    sentence = (
        f"Step {position + 1} is step {index} of the {len(mine)} of {name}: it pays {' + '.join(paid)}; "
        f"the {len(mine)} together pay {len(mine)} α + {format_size(sum(c.beta_bytes for c in mine))} β"
        + (f" + {format_size(sum(c.gamma_bytes for c in mine))} γ" if phase_gamma else "")
        + f" = {format_time(phase_alpha + phase_beta + phase_gamma)} of the closed form."
    )
    return {"sentence": sentence, "alpha_s": alpha_s, "beta_s": beta_s, "gamma_s": gamma_s,
            "phase": cost.phase, "phase_alpha_s": phase_alpha, "phase_beta_s": phase_beta, "phase_gamma_s": phase_gamma}  # fmt: skip


# --------------------------------------------------------------------------- crossover


@dataclass(frozen=True)
class Crossover:
    """Where two algorithms' closed forms meet: ``size_bytes`` (None when they never do: one
    wins at every size, ``always``), which wins below (``small``) and above (``large``), and the
    formula solved for n, in symbols and with the numbers in."""

    op: str
    first: str
    second: str
    size_bytes: float | None
    small: str
    large: str
    formula: str
    plugged: str
    always: str = ""


def _lfg(op: str, algorithm: str, p: int, k: int) -> tuple[float, float, float]:
    spec = algorithm_spec(op, algorithm)
    form = spec.closed_form if spec else None
    if form is None:
        reason = spec.form if spec else "not a registered algorithm"
        raise CollsimError(f"algorithm: {op}/{algorithm} has no closed form to solve ({reason})")
    if spec.form_power_of_two and p & (p - 1):
        raise CollsimError(f"ranks: the {op}/{algorithm} closed form holds for a power-of-two number of ranks, not {p}")
    kk = k if form.chunked else 1
    return form.time(p, 0.0, 1.0, 0.0, 0.0, kk), form.time(p, 1.0, 0.0, 1.0, 0.0, kk), form.time(p, 1.0, 0.0, 0.0, 1.0, kk)


def crossover_size(
    op: str, first: str, second: str, p: int, latency_s: float, bandwidth_Bps: float, reduce_bandwidth_Bps: float | None = None, k: int = 1
) -> Crossover:
    """Solve ``α L_1 + n (β F_1 + γ G_1) = α L_2 + n (β F_2 + γ G_2)`` for n: the size where
    ``first`` and ``second`` take the same time by their closed forms. With each form read as
    ``α L + n (β F + γ G)`` (L latency terms, F and G bytes sent and reduced per byte of n) and
    A the algorithm with fewer latency terms: ``n* = α (L_B - L_A) / (β (F_A - F_B) + γ (G_A - G_B))``.
    Below n* A wins, above it B; ``always`` names the winner when they never cross."""
    if bandwidth_Bps <= 0 or latency_s < 0:
        raise CollsimError("crossover: bandwidth must be positive and latency at least 0")
    (l1, f1, g1), (l2, f2, g2) = _lfg(op, first, p, k), _lfg(op, second, p, k)
    beta = 1.0 / bandwidth_Bps
    gamma = 1.0 / reduce_bandwidth_Bps if reduce_bandwidth_Bps else 0.0
    latency_gap = latency_s * (l1 - l2)  # first's extra latency
    bandwidth_gap = beta * (f2 - f1) + gamma * (g2 - g1)  # what first saves per byte
    cheap_start = first if latency_gap < 0 else second  # fewer latency terms: faster at n -> 0
    cheap_bytes = first if bandwidth_gap > 0 else second  # fewer bytes: faster as n grows
    # written with A the algorithm of fewer latency terms, B the other: both brackets positive
    (a, la, fa, ga), (b, lb, fb, gb) = sorted([(first, l1, f1, g1), (second, l2, f2, g2)], key=lambda item: item[1])
    formula = "n* = α (L_B − L_A) / (β (F_A − F_B)" + (" + γ (G_A − G_B))" if gamma else ")") + f", A = {a}, B = {b}"
    numbers = (
        f"{format_time(latency_s)} × ({_number(lb)} − {_number(la)}) / (({_number(fa)} − {_number(fb)}) / {format_bandwidth(bandwidth_Bps)}"
    )
    numbers += f" + ({_number(ga)} − {_number(gb)}) / {format_bandwidth(reduce_bandwidth_Bps)})" if gamma else ")"
    if latency_gap == 0 or bandwidth_gap == 0 or cheap_start == cheap_bytes:
        winner = "" if latency_gap == 0 and bandwidth_gap == 0 else cheap_bytes if bandwidth_gap else cheap_start
        return Crossover(op, first, second, None, winner, winner, formula, numbers + ": no positive solution", always=winner or "tie")
    size = latency_gap / bandwidth_gap
    return Crossover(op, first, second, size, cheap_start, cheap_bytes, formula, f"{numbers} = {format_size(size)}")


# --------------------------------------------------------------------------- side by side

COST_PARTS = ("latency", "bandwidth", "reduction", "overhead", "contention")  # explore.decompose's parts


@dataclass(frozen=True)
class Difference:
    """B's time minus A's (``total_s``), each cost part's share of it (``parts_s``), the part that
    explains most of it (``main``: the largest contribution in the direction of the total) and
    the largest one against it (``against``, "" when none)."""

    total_s: float
    parts_s: dict[str, float]
    main: str
    against: str

    def sentence(self) -> str:
        """The difference in words: +19.71 us, mostly bandwidth (+52.43 us); latency −55 us the other way."""
        if not self.main:
            return "no difference: the same time, part for part"
        text = f"{_signed(self.total_s)}, mostly {self.main} ({_signed(self.parts_s[self.main])})"
        if self.against:
            text += f"; {self.against} {_signed(self.parts_s[self.against])} the other way"
        return text


def _signed(seconds: float) -> str:
    return ("+" if seconds >= 0 else "−") + format_time(abs(seconds))


def difference(first: dict[str, float], second: dict[str, float]) -> Difference:
    """How ``second`` differs from ``first``, two :func:`sim.collective.explore.decompose` splits.
    The reason named is the part that contributes most in the direction of the difference
    (an increase is explained by the largest increase, never by a larger decrease that offsets
    part of it); below float rounding (1e-9 of the larger total) there is no difference."""
    parts = {name: second.get(name, 0.0) - first.get(name, 0.0) for name in COST_PARTS}
    total = second["total"] - first["total"]
    noise = 1e-9 * max(abs(first["total"]), abs(second["total"]))
    if abs(total) <= noise and all(abs(value) <= noise for value in parts.values()):
        return Difference(0.0, {name: 0.0 for name in COST_PARTS}, "", "")
    sign = 1.0 if total >= 0 else -1.0
    main = max(parts, key=lambda name: sign * parts[name])
    against = min(parts, key=lambda name: sign * parts[name])
    return Difference(total, parts, main, against if sign * parts[against] < -noise else "")


# --------------------------------------------------------------------------- DDP buckets


def bucket_guide(scenario: Any, caps: Sequence[int]) -> dict[str, Any]:
    """The course's bucket formula beside the simulation, for a DDP scenario with ``comm="ow"``
    (an all-reduce of b bytes takes o + b / w) at each bucket cap in ``caps``.

    Returns ``caps``; ``formula_s`` (``n_b o + s / (n_b w)`` with n_b = s / cap, the course's
    curve); ``simulated_s`` (the DES overhead: comm end minus backward end); ``buckets`` (the
    bucket count the simulation made); ``b_star`` = sqrt(s w o); ``formula_range``: the caps
    within 1 % of the formula's best, b* x [0.868, 1.152] (from (x + 1/x) / 2 <= 1.01, x = cap / b*);
    ``simulated_range``: the unbroken run of ``caps`` around the simulation's best within 1 % of
    it; and ``notes``: where and why the simulation parts from the formula, each a sentence."""
    from sim.training.ddp_sweep import sweep_bucket_sizes
    from sim.training.overhead import optimal_bucket_bytes, overhead_simple

    if scenario.comm != "ow":
        raise CollsimError(f"comm: the bucket formula needs comm='ow' (o + b / w per all-reduce), got {scenario.comm!r}")
    rows = sweep_bucket_sizes(scenario, [int(cap) for cap in caps])
    grad = float(rows[0]["grad_bytes"])
    o_s, w_Bps = scenario.o_s, scenario.w_Bps
    formula = [overhead_simple(grad, max(grad / cap, 1.0), o_s, w_Bps) for cap in caps]
    simulated = [row["overhead_s"] for row in rows]
    return {
        "caps": list(caps),
        "formula_s": formula,
        "simulated_s": simulated,
        "buckets": [row["num_buckets"] for row in rows],
        "grad_bytes": grad,
        "b_star": (b_star := optimal_bucket_bytes(grad, w_Bps, o_s)),
        # (x + 1/x) / 2 <= 1.01 with x = cap / b*: the formula's own 1 % range, not the grid's
        "formula_range": (b_star * (1.01 - math.sqrt(1.01**2 - 1)), b_star * (1.01 + math.sqrt(1.01**2 - 1))),
        "simulated_range": _within(caps, simulated, 0.01),
        "notes": _parting_notes(scenario, rows, formula, grad),
    }


def _within(caps: Sequence[int], values: Sequence[float], tolerance: float) -> tuple[int, int]:
    """(smallest, largest) cap of the unbroken run of caps around the best whose values are
    within ``tolerance`` of the best (a cap beyond a bump above it is not in the range)."""
    best = min(range(len(values)), key=values.__getitem__)
    limit = values[best] * (1 + tolerance)
    low = high = best
    while low > 0 and values[low - 1] <= limit:
        low -= 1
    while high < len(values) - 1 and values[high + 1] <= limit:
        high += 1
    return caps[low], caps[high]


def _parting_notes(scenario: Any, rows: Sequence[dict[str, Any]], formula: Sequence[float], grad: float) -> list[str]:
    """Sentences saying where the simulated overhead leaves the formula by more than 5 % and
    which of the formula's assumptions fails there."""
    from sim.training.ddp import prepare

    notes = []
    parted = [(row, f) for row, f in zip(rows, formula) if abs(row["overhead_s"] - f) > 0.05 * f]
    if not parted:
        return ["The simulation follows the formula within 5 % at every cap shown: its assumptions hold here."]
    prepared = prepare(scenario.replace(strategy="bucketed"))
    sizes = [param.nbytes for param in prepared.params]
    wire_s = grad / scenario.w_Bps
    backward_s = prepared.backward.total_s
    if not math.isclose(backward_s, wire_s, rel_tol=0.05):
        faster = "faster" if backward_s < wire_s else "slower"
        notes.append(
            f"The formula assumes backward computes each bucket exactly as fast as the wire sends it (T = s / w = {format_time(wire_s)}); "
            f"here T = {format_time(backward_s)}, {faster}, so "
            + (
                "communication queues up behind compute and more of it is exposed."
                if backward_s < wire_s
                else "small buckets hide behind compute and only the last one shows."
            )
        )
    small = [row for row, _ in parted if row["bucket_cap_bytes"] < max(sizes)]
    if small:
        notes.append(
            f"Below {format_size(max(sizes))} (the largest gradient tensor) buckets hold whole tensors: a tensor larger than "
            "the cap fills a bucket alone, so the simulation makes fewer, larger buckets than s / cap and its curve flattens where "
            "the formula's rises; its exposed last all-reduce is as large as the last tensor, whatever the cap."
        )
    if scenario.first_bucket_bytes:
        notes.append(
            f"DDP's first bucket is capped at {format_size(scenario.first_bucket_bytes)} whatever the cap, so the first all-reduce starts early; "
            "the formula's buckets are all the same size."
        )
    caps = ", ".join(format_size(row["bucket_cap_bytes"]) for row, _ in parted[:4])
    more = f" and {len(parted) - 4} more" if len(parted) > 4 else ""
    notes.insert(0, f"The simulation leaves the formula by more than 5 % at caps {caps}{more}.")
    return notes
