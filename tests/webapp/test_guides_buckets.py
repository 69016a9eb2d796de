"""Guide 4 sets the course notes' T = o + s / (n_b w) beside the page's n_b o + s / (n_b w) and
says which assumption about backward gives which (issue 36), with both curves and numbers; the
1 % range around b* is argued, not asserted."""

from __future__ import annotations

import math

import pytest

from sim.training import overhead
from webapp.pages.guides import page as guides

from .guides_text import words

MiB = 2**20
GRAD, CALL_S, WIRE = 256 * MiB, 50e-6, 10e9  # the course's model at the page's o and w


@pytest.mark.parametrize("buckets", [1, 2, 8, 23, 64, 1024])
def test_exact_overhead_is_the_notes_formula_once_backward_hides_every_bucket_but_the_last(buckets):
    """c >= d (T / n_b >= o + s / (n_b w)), i.e. T >= n_b o + s / w: only the last all-reduce shows."""
    enough = buckets * CALL_S + GRAD / WIRE
    assert overhead.hiding_backward_s(GRAD, buckets, CALL_S, WIRE) == pytest.approx(enough)
    for backward in (enough, 2 * enough):
        assert overhead.overhead_uniform(GRAD, buckets, backward, CALL_S, WIRE) == pytest.approx(CALL_S + GRAD / (buckets * WIRE))
        assert overhead.overhead_last_bucket(GRAD, buckets, CALL_S, WIRE) == pytest.approx(CALL_S + GRAD / (buckets * WIRE))
    if buckets > 1:  # a little faster and the o's start to queue
        assert overhead.overhead_uniform(GRAD, buckets, 0.9 * enough, CALL_S, WIRE) > overhead.overhead_last_bucket(
            GRAD, buckets, CALL_S, WIRE
        ) * (1 + 1e-9)


@pytest.mark.parametrize("buckets", [1, 2, 8, 23, 64, 1024])
def test_exact_overhead_is_the_page_formula_when_backward_is_as_fast_as_the_wire(buckets):
    """T = s / w: d - c = o, every bucket's o queues: n_b o + s / (n_b w)."""
    assert overhead.overhead_uniform(GRAD, buckets, GRAD / WIRE, CALL_S, WIRE) == pytest.approx(buckets * CALL_S + GRAD / (buckets * WIRE))
    assert overhead.overhead_uniform(GRAD, buckets, GRAD / WIRE, CALL_S, WIRE) == pytest.approx(
        overhead.overhead_simple(GRAD, buckets, CALL_S, WIRE)
    )


def test_bucket_guide_draws_the_notes_curve_and_a_slow_backward_simulation_follows_it():
    """With T = 1 s every bucket but the last hides: at caps that cut s evenly (powers of two,
    from one tensor up) the simulated overhead is o + s / (n_b w), and it falls as buckets shrink."""
    figure = guides.bucket_view("course", 50, 10, 1000)["figure"]
    notes = next(trace for trace in figure.data if trace.name.startswith("course notes"))
    simulated = next(trace for trace in figure.data if trace.name.startswith("simulated"))
    caps = list(notes.x)
    even = [i for i, cap in enumerate(caps) if cap >= 256 * 1024 and cap & (cap - 1) == 0]
    assert len(even) >= 10
    for i in even:
        n_b = max(GRAD / caps[i], 1.0)
        assert notes.y[i] == pytest.approx((CALL_S + GRAD / (n_b * WIRE)) * 1e3)
        assert simulated.y[i] == pytest.approx(notes.y[i], rel=1e-6)
    assert all(a <= b for a, b in zip(notes.y, notes.y[1:]))  # no interior optimum: smaller caps are never worse


def table(view) -> dict[str, tuple[str, str]]:
    div = view["text"][-1]
    body = div.children[1].children[1].children
    return {words(row.children[0]): (words(row.children[1]), words(row.children[2])) for row in body}


def test_bucket_guide_sets_the_two_formulas_side_by_side_with_the_scenarios_numbers():
    view = guides.bucket_view("course", 50, 10, None)
    head = words(view["text"][-1].children[1].children[0])
    assert "course notes: o + s / (n_b w)" in head and "n_b o + s / (n_b w)" in head
    rows = table(view)
    n_b = GRAD / math.sqrt(GRAD * WIRE * CALL_S)  # at b* = sqrt(s w o): 23.17 buckets
    assert rows["at b* (n_b = 23.2)"] == (
        f"{(CALL_S + GRAD / (n_b * WIRE)) * 1e3:.4g} ms",
        f"{(n_b * CALL_S + GRAD / (n_b * WIRE)) * 1e3:.4g} ms",
    )
    assert "once per step" in rows["o is paid"][0] and "once per bucket" in rows["o is paid"][1]
    assert "no interior optimum" in rows["as buckets shrink"][0]
    assert "T ≥ n_b o + s / w (= 28 ms at b*)" in rows["backward assumed"][0]  # 23.17 x 50 us + 26.84 ms
    assert "T = s / w = 26.84 ms" in rows["backward assumed"][1]
    assert rows["holds here (T = 26.84 ms)"] == ("at no cap shown", "yes")
    slow = table(guides.bucket_view("course", 50, 10, 1000))
    assert slow["holds here (T = 1 s)"] == ("for caps from 32 KiB up", "no: T ≠ s / w")


def test_bucket_guide_argues_its_one_percent_range():
    """At a cap x b* the formula is (x + 1/x) / 2 times its best: within 1 % for x in
    [1.01 - sqrt(1.01² - 1), 1.01 + sqrt(1.01² - 1)] = [0.868, 1.152]."""
    text = words(guides.bucket_view("course", 50, 10, None)["text"][0])
    low, high = 1.01 - math.sqrt(1.01**2 - 1), 1.01 + math.sqrt(1.01**2 - 1)
    assert "(x + 1/x) / 2 times its best" in text and f"x from {low:.3f} to {high:.3f}" in text
    assert "for backward as fast as the wire (T = s / w)" in text
