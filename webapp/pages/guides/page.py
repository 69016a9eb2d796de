"""Guides: four walks through the course's cases, each answering one question with the
simulator's own numbers (sim.teaching): ring all-reduce step by step; why ring wins
for big messages and the tree for small ones; the 15 s broadcast; how big DDP buckets should be.

The page reads its inputs, calls sim, draws (:mod:`.figures`), with ids from :mod:`.ids`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from dash import Input, Output, dcc, html

from sim import teaching
from sim.collective import analytic, explore, runner
from sim.collective.narrative import step_sentences
from sim.errors import CollsimError
from sim.scenario import CollectiveScenario
from sim.training import overhead
from sim.training.ddp import DDPScenario
from sim.units import format_bandwidth, format_size, format_time
from webapp.components import GRAPH_CONFIG
from webapp.pages.guides import figures as draw
from webapp.pages.guides import ids
from webapp.pages.spec import drawn_into

__all__ = ["broadcast_view", "bucket_view", "crossover_view", "layout", "register", "ring_view"]


MiB = 2**20
# the course's cases (docs/examples/ring_allreduce_8.yaml, binomial_broadcast_classic.yaml)
RING = {"op": "all_reduce", "algorithm": "ring", "size": "64MiB", "latency": "5us", "bandwidth": "25GB/s", "reduce_bandwidth": "100GB/s"}
BROADCAST = {"op": "broadcast", "algorithm": "binomial", "ranks": 8, "size": "5MB", "bandwidth": "1MB/s"}
CROSS_SIZES = tuple(2 ** (k / 4) for k in range(40, 121))  # 1 KiB .. 1 GiB
BUCKET_CAPS = tuple(int(2 ** (k / 3)) for k in range(45, 91))  # 32 KiB .. 1 GiB
BUCKET_MODELS = {
    "course": "the course's model: 256 MiB of gradients in 1,024 tensors of 256 KiB",
    "gpt2": "GPT-2 124M (real tensor sizes: a 147 MiB embedding ready last)",
}


# --------------------------------------------------------------------------- ring all-reduce


@lru_cache(maxsize=8)
def _ring_run(ranks: int) -> tuple[Any, list[dict[str, Any]], list[teaching.StepBytes], list[teaching.StepCost]]:
    scenario = CollectiveScenario.from_dict({**RING, "ranks": ranks, "record": "full"})
    result, frames = explore.run(scenario, frames=True)
    return scenario, frames or [], teaching.step_bytes(result), teaching.step_costs(result)


def ring_view(ranks: int, position: int) -> dict[str, Any]:
    """Ring all-reduce of the course's 64 MiB on ``ranks`` ranks after step ``position``
    (0: before any message): buffers, bytes against the bound, what the step did and paid."""
    scenario, frames, sent, costs = _ring_run(int(ranks))
    steps = len(sent)
    position = max(0, min(int(position or 0), steps))
    n, p = scenario.size_bytes, scenario.ranks
    bound = teaching.lower_bound("all_reduce", p, n)
    cells, previous = frames[position]["cells"], frames[position - 1]["cells"] if position else None
    tree_sent = max(_traffic("reduce_broadcast", p)[1])
    if position == 0:
        title = "before any message: each rank holds only its own data"
        text = [html.P(f"{p} ranks r0–r{p - 1} each hold {format_size(n)} cut into {p} pieces p0–p{p - 1} of {format_size(n // p)}. "
                       "Press → on the slider (or drag it) to run the ring one step at a time."), _why_bound(p, n, sent)]  # fmt: skip
        sent_now = (0,) * p
    else:
        at = sent[position - 1]
        title = f"after step {position} of {steps} ({at.phase})"
        sentence = step_sentences(scenario, [at.step], [[costs[position - 1].beta_bytes] * costs[position - 1].messages])[0]
        term = teaching.step_term(scenario, costs, position - 1)
        text = [html.P([html.B(f"Step {position}: "), sentence]), html.P(term["sentence"])]
        sent_now = at.sent_by_rank
        if position == steps:
            each = "each sent exactly" if min(at.sent_by_rank) == at.busiest_rank_bytes else "the busiest sent"
            text += [html.P(html.B(f"Done: every rank holds all {p} sums, and {each} {format_size(at.busiest_rank_bytes)} = "
                                   f"{bound.formula}, the lower bound: no algorithm can send less. That is why ring is bandwidth-optimal.")),
                     _why_bound(p, n, sent)]  # fmt: skip
    terms = teaching.formula_terms(scenario)
    paying = _paid_terms(scenario, costs, position)
    formula = [html.Span("closed form: "), html.Code(terms.text), html.Span(" = ")]
    for index, term in enumerate(terms.terms):
        style = {"background": "#ffe08a", "fontWeight": "bold"} if term.name in paying else {"color": "#777"}
        formula += [
            html.Span(" + " if index else ""),
            html.Span(f"{term.symbol}: {term.plugged}", style=style, className=f"term-{term.name}"),
        ]
    formula.append(html.Span(f" → {format_time(terms.total_s)} (highlighted: the terms this step pays into)"))
    return {
        "cells": draw.ring_cells_figure(cells, previous, f"buffers {title}<br><sup>row r: rank r; column p: piece p; cell: whose data its sum holds ({_run_example(p)}); red outline: received this step</sup>"),
        "bytes": draw.bytes_figure(sent_now, bound.nbytes, "2(p-1)/p n", "bytes each rank has sent so far",
                                   reference=(tree_sent, f"binomial reduce then<br>broadcast: its busiest<br>rank sends {format_size(tree_sent)}")),
        "text": text,
        "formula": formula,
        "max": steps,
    }  # fmt: skip


def _why_bound(p: int, n: int, sent: list[teaching.StepBytes]) -> html.P:
    """Why 2(p-1)/p n is the least the busiest rank sends, counted with this p and n, and the
    ring's simulated sends beside it, phase by phase."""
    bound = teaching.lower_bound("all_reduce", p, n)
    ends = {step.phase: sum(step.sent_by_rank) for step in sent}  # cumulative: the last step of each phase wins
    phases, before = [], 0
    for phase, total in ends.items():
        phases.append(f"{format_size(total - before)} in the {phase}")
        before = total
    return html.P([html.B(f"Why {bound.formula} is the least: "),
        f"take any one byte of the {format_size(n)}. The first rank to hold its full sum needs the other {p - 1} ranks' values of it, "
        f"so each of those {p - 1} ranks sends that byte at least once (alone or added into a partial sum); then the {p - 1} ranks that do not "
        f"hold the sum yet must each receive it, {p - 1} more. Every byte is sent at least 2(p-1) = {2 * (p - 1)} times: "
        f"{2 * (p - 1)} × {format_size(n)} = {format_size(bound.nbytes * p)} in all, shared by {p} ranks, so some rank sends at least "
        f"{format_size(bound.nbytes * p)} / {p} = {format_size(bound.nbytes)}. The simulated ring sends {format_size(before)} in all "
        f"({', '.join(phases)}): {format_size(max(sent[-1].sent_by_rank))} from the busiest rank, "
        f"{format_size(min(sent[-1].sent_by_rank))} from the least busy."])  # fmt: skip


def _run_example(p: int) -> str:
    """How a cell names a run of ranks round the ring, with this p: "r6–r0: ranks 6, 7, 0"."""
    run = [(p - 2 + i) % p for i in range(3)]
    return f"{draw.contributors(sum(1 << r for r in run), p)}: ranks {', '.join(map(str, run))}"


def _paid_terms(scenario: Any, costs: list[teaching.StepCost], position: int) -> set[str]:
    if position == 0:
        return set()
    term = teaching.step_term(scenario, costs, position - 1)
    return {name for name in ("alpha", "beta", "gamma") if term[f"{name}_s"] > 0}


# --------------------------------------------------------------------------- crossover


def crossover_view(ranks: int, tree: str, log_alpha_us: float, log_bandwidth_GBps: float) -> dict[str, Any]:
    """Ring against a latency-lean algorithm (``tree``: recursive_doubling or reduce_broadcast)
    by their closed forms at latency 10**log_alpha_us us and bandwidth 10**log_bandwidth_GBps GB/s
    (reduction at 4x the bandwidth): the curves and the crossover size, stated and solved."""
    alpha = 10 ** float(log_alpha_us) * 1e-6
    bandwidth = 10 ** float(log_bandwidth_GBps) * 1e9
    reduce_bandwidth = 4 * bandwidth
    p = int(ranks)
    beta, gamma = 1 / bandwidth, 1 / reduce_bandwidth
    times = {name: [analytic.closed_form("all_reduce", name, p, n, alpha, beta, gamma) for n in CROSS_SIZES] for name in (tree, "ring")}
    found = teaching.crossover_size("all_reduce", tree, "ring", p, alpha, bandwidth, reduce_bandwidth)
    label = f"n* = {format_size(found.size_bytes)}" if found.size_bytes else f"{found.always} wins at every size"
    network = f"α = {format_time(alpha)}, bandwidth {format_bandwidth(bandwidth)} (β = 1/bandwidth), reduction {format_bandwidth(reduce_bandwidth)}, p = {p}"
    lean = teaching.formula_terms(_all_reduce(tree, p, alpha, bandwidth, reduce_bandwidth))
    ring = teaching.formula_terms(_all_reduce("ring", p, alpha, bandwidth, reduce_bandwidth))
    text = [
        html.P(network),
        html.P([html.B(f"{tree}: "), html.Code(lean.text), f": {_latency_terms(lean)} latency terms. ", _sends(tree, p, lean)]),
        html.P([html.B("ring: "), html.Code(ring.text), f": {_latency_terms(ring)} latency terms. ", _sends("ring", p, ring)]),
        html.P([html.B("Solved for n: "), html.Code(found.formula)]),
        html.P("Each closed form reads α L + n (β F + γ G): L steps one after another, each paying α once; F n the bytes those steps "
               "carry one after another (each step's largest message, summed), which can be more than any one rank sends, "
               "and G n the bytes they add. Setting the two equal and solving for n gives the line above."),
        html.P([html.Code(found.plugged)]),
        html.P(
            f"Below {label.removeprefix('n* = ')} the {found.small} wins: its few latency terms cost less than the ring's 2(p-1). Above it the ring wins: "
            "the bytes dominate and the ring sends the fewest. Raise α and the crossover moves right (in proportion); raise the bandwidth "
            "and it moves right too: a faster wire makes bytes cheaper, so latency matters up to bigger messages."
            if found.size_bytes else f"With these numbers {found.always} wins at every size."
        ),
    ]  # fmt: skip
    return {"figure": draw.crossover_guide_figure(CROSS_SIZES, times, found.size_bytes, label), "size": label, "text": text}


def _all_reduce(algorithm: str, p: int, alpha: float, bandwidth: float, reduce_bandwidth: float) -> CollectiveScenario:
    scenario = CollectiveScenario.from_dict(
        {"op": "all_reduce", "algorithm": algorithm, "ranks": p, "size": RING["size"], "bandwidth": "1GB/s"}
    )
    return scenario.replace(latency_s=alpha, bandwidth_Bps=bandwidth, reduce_bandwidth_Bps=reduce_bandwidth)


@lru_cache(maxsize=32)
def _traffic(algorithm: str, p: int) -> tuple[int, tuple[int, ...], tuple[teaching.StepCost, ...]]:
    """A simulated all-reduce of the course's 64 MiB on p ranks (its bytes do not depend on α or
    the bandwidth): n, the bytes each rank sent, and what each step paid."""
    result = runner.run(CollectiveScenario.from_dict({**RING, "algorithm": algorithm, "ranks": p, "record": "full"}))
    return result.scenario.size_bytes, teaching.step_bytes(result)[-1].sent_by_rank, tuple(teaching.step_costs(result))


def _sends(algorithm: str, p: int, terms: teaching.FormulaTerms) -> str:
    """The β term in bytes beside what the ranks of a simulated run send: for reduce-then-
    broadcast the β term counts the root's port twice (up the tree, then down), more than any
    rank sends (issue 36)."""
    n, sent, costs = _traffic(algorithm, p)
    beta = next(t for t in terms.terms if t.name == "beta")
    carried = sum(cost.beta_bytes for cost in costs)
    busiest, least = max(sent), min(sent)
    said = (f"Its β term is {beta.coefficient_text} = {format_size(carried)} when n = {format_size(n)}: the largest message "
            f"of each of its {len(costs)} steps, one after another. ")  # fmt: skip
    bound = teaching.lower_bound("all_reduce", p, n)
    optimal = f", the lower bound {bound.formula} (why: §1)" if math.isclose(busiest, bound.nbytes) else ""
    if least == busiest == carried:
        return said + f"In a simulated run every rank sends exactly that, {format_size(busiest)}{optimal}."
    phases: dict[str, list[int]] = {}
    for cost in costs:
        phases.setdefault(cost.phase, []).append(cost.beta_bytes)
    split = ", then ".join(f"{len(steps)} of the {phase}, {format_size(sum(steps))}" for phase, steps in phases.items())
    ranks = ", ".join(f"r{rank}" for rank, nbytes in enumerate(sent) if nbytes == busiest)
    return said + (f"Its steps are {split}; in a simulated run no rank sends all that: the most any rank sends is "
                   f"{format_size(busiest)} ({ranks}){optimal}, the least {format_size(least)}.")  # fmt: skip


def _latency_terms(terms: teaching.FormulaTerms) -> str:
    alpha = next((t for t in terms.terms if t.name == "alpha"), None)
    return f"{alpha.coefficient:g}" if alpha else "0"


# --------------------------------------------------------------------------- the 15 s broadcast


Case = tuple[tuple[str, Any], ...]  # a scenario's fields as hashable pairs, for the caches


@lru_cache(maxsize=8)
def _broadcast_run(case: Case, algorithm: str = "binomial", chunks: int = 1) -> tuple[Any, Any, list[teaching.StepBytes]]:
    """The broadcast ``case`` simulated with ``algorithm`` in ``chunks``."""
    scenario = CollectiveScenario.from_dict({**dict(case), "algorithm": algorithm, "chunks": chunks, "record": "full"})
    result = runner.run(scenario)
    return scenario, result, teaching.step_bytes(result)


def broadcast_view(position: int, case: Case = tuple(BROADCAST.items())) -> dict[str, Any]:
    """The course's binomial broadcast (``case``: 5 MB to 8 ranks at 1 MB/s) after step
    ``position``: every number from the simulated run (and, for comparison, linear and
    pipelined-chain runs of the same case)."""
    scenario, result, sent = _broadcast_run(case)
    p, n = scenario.ranks, scenario.size_bytes
    steps = len(sent)
    position = max(0, min(int(position or 0), steps))
    edges = [(int(m[0]), int(m[1]), int(m[5])) for m in result.messages]
    now_s = max((float(m[3]) for m in result.messages if int(m[5]) < position), default=0.0)
    text = [_broadcast_now(result, position, now_s), _broadcast_form(case, result, steps), _broadcast_price(case, edges, sent)]
    sent_now = sent[position - 1].sent_by_rank if position else (0,) * p
    return {
        "tree": draw.broadcast_tree_figure(p, edges, position, f"binomial tree, after step {position} of {steps} (t = {format_time(now_s)})"),
        "bytes": draw.bytes_figure(sent_now, teaching.lower_bound("broadcast", p, n).nbytes, "n", "bytes each rank has sent so far", decimal=True),
        "text": text,
    }  # fmt: skip


def _megabytes(nbytes: float) -> str:
    return f"{nbytes / 1e6:g} MB"


def _step_span_s(result: Any, step: int) -> float:
    """How long step ``step`` (counted from 0) of a run took: its first start to its last end."""
    spans = [(float(m[2]), float(m[3])) for m in result.messages if int(m[5]) == step]
    return max(end for _, end in spans) - min(start for start, _ in spans)


def _broadcast_now(result: Any, position: int, now_s: float) -> html.P:
    s = result.scenario
    holders = 1 + sum(1 for m in result.messages if int(m[5]) < position)
    said = f"t = {format_time(now_s)}: {holders} of {s.ranks} ranks hold the {_megabytes(s.size_bytes)}."
    if position:
        count = sum(1 for m in result.messages if int(m[5]) == position - 1)
        said += (f" In step {position} every rank that already had the data sent it once: {count} message{'s' if count != 1 else ''} "
                 f"of {_megabytes(s.size_bytes)} at {format_bandwidth(s.bandwidth_Bps)}, all at the same time, so the step takes "
                 f"{format_time(_step_span_s(result, position - 1))}.")  # fmt: skip
    return html.P(said)


def _broadcast_form(case: Case, result: Any, steps: int) -> html.P:
    scenario = result.scenario
    terms = teaching.formula_terms(scenario)
    _, linear_result, linear_sent = _broadcast_run(case, "linear")
    rounds = {format_time(_step_span_s(result, step)) for step in range(steps)}
    return html.P(["Closed form ", html.Code(terms.text), f" = {_in_megabytes(terms, scenario.bandwidth_Bps)}; simulated: {steps} rounds of "
                   f"{' or '.join(sorted(rounds))} = {format_time(result.time_s)}. Sending to one rank after the other (linear, simulated) "
                   f"takes {len(linear_sent)} rounds: {format_time(linear_result.time_s)}."])  # fmt: skip


CHAIN_CHUNKS = 8  # the pipelined chain the broadcast guide compares with


def _broadcast_price(case: Case, edges: list[tuple[int, int, int]], sent: list[teaching.StepBytes]) -> html.P:
    scenario = _broadcast_run(case)[0]
    n, root = scenario.size_bytes, scenario.root
    bound = teaching.lower_bound("broadcast", scenario.ranks, n)
    chain, chain_result, chain_sent = _broadcast_run(case, "pipelined_chain", CHAIN_CHUNKS)
    latency = {name: _latency_terms(teaching.formula_terms(case)) for name, case in (("tree", scenario), ("chain", chain))}
    rounds = sum(1 for src, _, _ in edges if src == root)
    return html.P(f"The price: the root r{root} sends {_megabytes(n)} in each of {rounds} rounds, {_megabytes(sent[-1].sent_by_rank[root])} in all, "
                  f"where one copy ({bound.formula} = {_megabytes(bound.nbytes)}) is the least any broadcast must send ({bound.why}). "
                  f"A pipelined chain in {CHAIN_CHUNKS} chunks (simulated) has no rank send more than {_megabytes(chain_sent[-1].busiest_rank_bytes)} "
                  f"and takes {format_time(chain_result.time_s)} here, but pays {latency['chain']} latency terms where the tree pays "
                  f"{latency['tree']} (free here: α = {format_time(scenario.latency_s)}).")  # fmt: skip


def _in_megabytes(terms: teaching.FormulaTerms, bandwidth_Bps: float) -> str:
    """The plugged-in terms with bytes in MB, as the course states the example."""
    parts = []
    for term in terms.terms:
        if term.name == "alpha":
            parts.append(term.plugged)
        else:
            parts.append(f"{term.coefficient / 1e6:g} MB / {format_bandwidth(bandwidth_Bps)} = {format_time(term.value_s)}")
    return " + ".join(parts)


# --------------------------------------------------------------------------- DDP buckets


def _bucket_scenario(model: str, o_us: float, w_GBps: float, backward_ms: float | None) -> DDPScenario:
    w = float(w_GBps) * 1e9
    if model == "gpt2":
        scenario = DDPScenario(preset="gpt2", o_s=float(o_us) * 1e-6, w_Bps=w, backward_time_s=0.12)
    else:
        scenario = DDPScenario(
            param_bytes=(256 * 1024,) * 1024, first_bucket_bytes=None, o_s=float(o_us) * 1e-6, w_Bps=w, backward_time_s=1.0
        )
    grad = 256 * MiB if model != "gpt2" else None
    if backward_ms:
        return scenario.replace(backward_time_s=float(backward_ms) * 1e-3)
    if grad is not None:  # the formula's assumption: backward as fast as the wire, T = s / w
        return scenario.replace(backward_time_s=grad / w)
    return scenario


@lru_cache(maxsize=32)
def bucket_view(model: str, o_us: float, w_GBps: float, backward_ms: float | None) -> dict[str, Any]:
    """The course formula's U-curve beside the simulated DDP overhead, b*, the 1 % ranges and
    where the two part."""
    try:
        if not (o_us and float(o_us) > 0 and w_GBps and float(w_GBps) > 0) or (backward_ms is not None and float(backward_ms) <= 0):
            raise CollsimError("o and w must be positive numbers (T: empty for s / w, else a positive number of ms)")
        scenario = _bucket_scenario(model, o_us, w_GBps, backward_ms)
        guide = teaching.bucket_guide(scenario, BUCKET_CAPS)
    except CollsimError as error:
        return {"figure": draw.bucket_figure_note(str(error)), "text": [html.P(str(error), className="error")]}
    low, high = guide["formula_range"]
    slow, shigh = guide["simulated_range"]
    text = [
        html.P([html.B("Course formula: "), "overhead(n_b) = n_b o + s / (n_b w) with n_b = s / b buckets, for backward as fast as the wire "
                "(T = s / w): each bucket pays o, and the last bucket's s / (n_b w) cannot hide behind backward. It is smallest at ",
                html.B(f"b* = √(s w o) = {format_size(guide['b_star'])}"),
                f" (s = {format_size(guide['grad_bytes'])}). But the curve is flat there: at a cap x b* it is (x + 1/x) / 2 times its best, "
                f"within 1 % for x from {low / guide['b_star']:.3f} to {high / guide['b_star']:.3f}, so any cap from ",
                html.B(f"{format_size(low)} to {format_size(high)}"), " will do: pick a round number in that range, not one point."]),
        html.P([html.B("Simulated: "), (f"within 1 % of its best from {format_size(slow)} to {format_size(shigh)}" if shigh > slow else
                f"best at {format_size(slow)}") + f" (among the caps tried, ×{BUCKET_CAPS[1] / BUCKET_CAPS[0]:.3g} apart; shaded orange)."]),
        html.Ul([html.Li(note) for note in guide["notes"]]),
        _two_formulas(scenario, guide),
    ]  # fmt: skip
    last_bucket = [
        overhead.overhead_last_bucket(guide["grad_bytes"], max(guide["grad_bytes"] / cap, 1.0), scenario.o_s, scenario.w_Bps)
        for cap in guide["caps"]
    ]
    return {"figure": draw.bucket_figure(guide, last_bucket), "text": text}


def _two_formulas(scenario: DDPScenario, guide: dict[str, Any]) -> html.Div:
    """The course notes' o + s / (n_b w) beside this page's n_b o + s / (n_b w): which
    assumption about backward gives which, each evaluated at b* and for this T."""
    s, o, w, backward = guide["grad_bytes"], scenario.o_s, scenario.w_Bps, scenario.backward_time_s
    at = s / guide["b_star"]  # n_b at b*
    holds = [cap for cap in guide["caps"] if overhead.hiding_backward_s(s, max(s / cap, 1.0), o, w) <= backward]
    rows = [
        ("backward assumed", f"slow enough that each bucket's all-reduce ends before the next is ready: T ≥ n_b o + s / w "
         f"(= {format_time(overhead.hiding_backward_s(s, at, o, w))} at b*)", f"as fast as the wire: T = s / w = {format_time(s / w)}"),
        ("o is paid", "once per step: only the last bucket's all-reduce shows", "once per bucket: the wire is busy all through backward, so "
         "each bucket's o queues behind the one before and all n_b of them show"),
        ("what overlaps backward", "every bucket's all-reduce but the last, o and bytes", "the bytes of all buckets but the last; none of the o"),
        ("as buckets shrink", "falls: no interior optimum", f"falls, then rises: smallest at b* = {format_size(guide['b_star'])}"),
        (f"at b* (n_b = {at:.3g})", format_time(overhead.overhead_last_bucket(s, at, o, w)), format_time(overhead.overhead_simple(s, at, o, w))),
        (f"holds here (T = {format_time(backward)})", f"for caps from {format_size(holds[0])} up" if holds else "at no cap shown",
         "yes" if math.isclose(backward, s / w, rel_tol=1e-9) else "no: T ≠ s / w"),
    ]  # fmt: skip
    head = html.Tr([html.Th(""), html.Th("course notes: o + s / (n_b w)"), html.Th("the formula above: n_b o + s / (n_b w)")])
    body = [html.Tr([html.Th(name), html.Td(notes), html.Td(page)]) for name, notes, page in rows]
    return html.Div([html.P(html.B("Two formulas, two assumptions (green dotted: the notes' curve):")),
                     html.Table([html.Thead(head), html.Tbody(body)], className="two-formulas")])  # fmt: skip


# --------------------------------------------------------------------------- layout


def _graph(graph_id: str, height: int) -> dcc.Graph:
    return dcc.Graph(
        id=graph_id, config=GRAPH_CONFIG, figure={"layout": {"height": height, "xaxis": {"visible": False}, "yaxis": {"visible": False}}}
    )


def _section(anchor: str, title: str, intro: str, children: list[Any]) -> html.Section:
    """One guide: a card the contents link to (``#anchor``), its title and what it shows."""
    return html.Section([html.H2(title), html.P(intro), *children], id=anchor, className="card guide")


def _step_slider(component_id: str, steps: int, marks: dict[int, str] | None = None) -> html.Div:
    return html.Div([html.Label("step (0: before any message)", className="label"),
                     dcc.Slider(id=component_id, min=0, max=steps, step=1, value=0, updatemode="drag", **({"marks": marks} if marks else {}))], style={"flex": "1"})  # fmt: skip


def _side_by_side(left: Any, right: Any) -> html.Div:
    """A figure with what goes beside it: three fifths and two fifths of the row."""
    return html.Div(
        [html.Div(left, className="col", style={"flex": "3"}), html.Div(right, className="col", style={"flex": "2"})], className="row"
    )


def _label(text: str, component: Any) -> html.Div:
    return html.Div([html.Label(text, className="label"), component], className="field", style={"minWidth": "220px"})


def _slider(component_id: str, low: float, high: float, value: float, marks: dict[float, str], step: float) -> dcc.Slider:
    # a log scale: the box Dash 4 shows beside a slider would hold the logarithm, so it is off
    return dcc.Slider(id=component_id, min=low, max=high, value=value, step=step, marks={k: {"label": v} for k, v in marks.items()},
                      updatemode="drag", allow_direct_input=False)  # fmt: skip


def _wide_slider(label: str, slider: Any) -> html.Div:
    """A labelled slider that takes its share of a row."""
    return html.Div([html.Label(label, className="label"), slider], style={"flex": "1", "padding": "0 24px"})


def _ring_guide() -> html.Div:
    """Guide 1: ring all-reduce step by step."""
    return _section(
        ids.GUIDE_RING,
        "1. Ring all-reduce, step by step",
        "The course's case: 64 MiB of gradients, α = 5 us, 25 GB/s links, reductions at 100 GB/s. The ring does a reduce-scatter "
        "(p-1 steps: each piece collects one more rank's data per step) then an all-gather (p-1 steps: the finished sums travel round).",
        [
            html.Div([_label("ranks p", dcc.Dropdown(id=ids.GUIDES_RING_RANKS, options=[4, 8, 16], value=8, clearable=False)),
                      _step_slider(ids.GUIDES_RING_STEP, 14)],
                     className="row"),
            html.Div(id=ids.GUIDES_RING_TEXT, className="guide-text"),
            html.Div(id=ids.GUIDES_RING_FORMULA, className="guide-formula"),
            _side_by_side(_graph(ids.GUIDES_RING_CELLS, 470), _graph(ids.GUIDES_RING_BYTES, 320)),
        ],
    )  # fmt: skip


def _crossover_guide() -> html.Div:
    """Guide 2: the ring/tree crossover moved by alpha and bandwidth."""
    return _section(
        ids.GUIDE_CROSSOVER,
        "2. Why ring wins for big messages and the tree for small ones",
        "Move α (latency per message) and the bandwidth (1/β): the crossover size, where the two closed forms meet, moves with them.",
        [
            html.Div([
                _label("ranks p", dcc.Dropdown(id=ids.GUIDES_CROSS_RANKS, options=[4, 8, 16, 64], value=8, clearable=False)),
                _label("against ring", dcc.Dropdown(id=ids.GUIDES_CROSS_TREE, clearable=False, value="recursive_doubling", options=[
                    {"label": "recursive doubling (butterfly)", "value": "recursive_doubling"},
                    {"label": "binomial tree: reduce then broadcast", "value": "reduce_broadcast"}])),
                _wide_slider("α (latency)", _slider(ids.GUIDES_CROSS_ALPHA, -1, 3, math.log10(5), {-1: "0.1 us", 0: "1 us", 1: "10 us", 2: "100 us", 3: "1 ms"}, 0.05)),
                _wide_slider("bandwidth (1/β)", _slider(ids.GUIDES_CROSS_BANDWIDTH, 0, 3, math.log10(25), {0: "1 GB/s", 1: "10 GB/s", 2: "100 GB/s", 3: "1 TB/s"}, 0.05)),
            ], className="row"),
            html.Div([html.Div("crossover size", className="card-title"), html.Div(id=ids.GUIDES_CROSS_SIZE, className="card-value")], className="card number",
                     style={"display": "inline-block", "margin": "8px 0"}),
            _side_by_side(_graph(ids.GUIDES_CROSS_GRAPH, 420), html.Div(id=ids.GUIDES_CROSS_TEXT, className="guide-text")),
        ],
    )  # fmt: skip


def _broadcast_guide() -> html.Div:
    """Guide 3: the course's 15 s binomial broadcast."""
    return _section(
        ids.GUIDE_BROADCAST,
        "3. The 15 s broadcast",
        "The course's example: the root sends 5 MB to 8 ranks over 1 MB/s links (no latency) along a binomial tree.",
        [
            html.Div(_step_slider(ids.GUIDES_BCAST_STEP, 3, {k: str(k) for k in range(4)}), style={"maxWidth": "420px"}),
            html.Div(id=ids.GUIDES_BCAST_TEXT, className="guide-text"),
            _side_by_side(_graph(ids.GUIDES_BCAST_TREE, 340), _graph(ids.GUIDES_BCAST_BYTES, 320)),
        ],
    )  # fmt: skip


def _bucket_guide() -> html.Div:
    """Guide 4: the DDP bucket U-curve beside the simulation."""
    return _section(
        ids.GUIDE_BUCKETS,
        "4. How big should my DDP buckets be?",
        "DDP all-reduces gradients in buckets while backward still runs; only what is left when backward ends costs time. "
        "An all-reduce of b bytes takes o + b / w.",
        [
            html.Div([
                _label("model", dcc.Dropdown(id=ids.GUIDES_BUCKET_MODEL, options=[{"label": v, "value": k} for k, v in BUCKET_MODELS.items()],
                                             value="course", clearable=False)),
                _label("o: per all-reduce (us)", dcc.Input(id=ids.GUIDES_BUCKET_O, type="number", value=50, min=0, debounce=True)),
                _label("w: bandwidth (GB/s)", dcc.Input(id=ids.GUIDES_BUCKET_W, type="number", value=10, min=0, debounce=True)),
                _label("T: backward (ms; empty: s / w)", dcc.Input(id=ids.GUIDES_BUCKET_T, type="number", value=None, min=0, debounce=True)),
            ], className="row"),
            _side_by_side(_graph(ids.GUIDES_BUCKET_GRAPH, 520), html.Div(id=ids.GUIDES_BUCKET_TEXT, className="guide-text")),
        ],
    )  # fmt: skip


def layout(search: str = "") -> html.Div:
    ring = _ring_guide()
    cross = _crossover_guide()
    bcast = _broadcast_guide()
    buckets = _bucket_guide()
    contents = html.Nav([html.A(title, href=f"#{anchor}", style={"marginRight": "16px"}) for anchor, title in (
        (ids.GUIDE_RING, "Ring all-reduce"), (ids.GUIDE_CROSSOVER, "Ring or tree?"), (ids.GUIDE_BROADCAST, "The 15 s broadcast"), (ids.GUIDE_BUCKETS, "DDP buckets"))])  # fmt: skip
    page = html.Div([html.H1("Guides"), contents, ring, cross, bcast, buckets], id="guides-page", style={"display": "grid", "gap": "16px"})
    return drawn_into(page, first_views())


# --------------------------------------------------------------------------- callbacks


# Each guide's callback: its outputs, its inputs and their values as the layout sets them. The
# layout comes with what the callbacks answer for those values (:func:`first_views`), so a first
# load draws the guides without a round trip, and the callbacks run only when an input changes.
VIEWS = {
    "ring": (
        {"cells": (ids.GUIDES_RING_CELLS, "figure"), "bytes": (ids.GUIDES_RING_BYTES, "figure"), "text": (ids.GUIDES_RING_TEXT, "children"),
         "formula": (ids.GUIDES_RING_FORMULA, "children"), "max": (ids.GUIDES_RING_STEP, "max")},
        {"ranks": (ids.GUIDES_RING_RANKS, 8), "position": (ids.GUIDES_RING_STEP, 0)},
        lambda ranks, position: ring_view(ranks, position),
    ),
    "cross": (
        {"figure": (ids.GUIDES_CROSS_GRAPH, "figure"), "size": (ids.GUIDES_CROSS_SIZE, "children"), "text": (ids.GUIDES_CROSS_TEXT, "children")},
        {"ranks": (ids.GUIDES_CROSS_RANKS, 8), "tree": (ids.GUIDES_CROSS_TREE, "recursive_doubling"),
         "log_alpha_us": (ids.GUIDES_CROSS_ALPHA, math.log10(5)), "log_bandwidth_GBps": (ids.GUIDES_CROSS_BANDWIDTH, math.log10(25))},
        lambda ranks, tree, log_alpha_us, log_bandwidth_GBps: crossover_view(ranks, tree, log_alpha_us, log_bandwidth_GBps),
    ),
    "broadcast": (
        {"tree": (ids.GUIDES_BCAST_TREE, "figure"), "bytes": (ids.GUIDES_BCAST_BYTES, "figure"), "text": (ids.GUIDES_BCAST_TEXT, "children")},
        {"position": (ids.GUIDES_BCAST_STEP, 0)},
        lambda position: broadcast_view(position),
    ),
    "buckets": (
        {"figure": (ids.GUIDES_BUCKET_GRAPH, "figure"), "text": (ids.GUIDES_BUCKET_TEXT, "children")},
        {"model": (ids.GUIDES_BUCKET_MODEL, "course"), "o_us": (ids.GUIDES_BUCKET_O, 50), "w_GBps": (ids.GUIDES_BUCKET_W, 10), "backward_ms": (ids.GUIDES_BUCKET_T, None)},
        lambda model, o_us, w_GBps, backward_ms: bucket_view(model, o_us, w_GBps, backward_ms),
    ),
}  # fmt: skip


@lru_cache(maxsize=1)
def first_views() -> dict[str, dict[str, Any]]:
    """{component id: {property: value}}: what each guide's callback answers for the inputs the
    layout starts with (the layout's own values, :data:`VIEWS`); kept (the inputs never change)."""
    drawn: dict[str, dict[str, Any]] = {}
    for outputs, inputs, view in VIEWS.values():
        shown = view(**{name: value for name, (_, value) in inputs.items()})
        for name, (component_id, prop) in outputs.items():
            drawn.setdefault(component_id, {})[prop] = shown[name]
    return drawn


def register(app: Any) -> None:
    for outputs, inputs, view in VIEWS.values():
        app.callback(
            output={name: Output(*target) for name, target in outputs.items()},
            inputs={name: Input(component_id, "value") for name, (component_id, _) in inputs.items()},
            prevent_initial_call=True,  # the layout comes drawn (first_views)
        )(view)
