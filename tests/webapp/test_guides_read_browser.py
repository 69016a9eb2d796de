"""Guides as a student reads them in Chromium (issue 36): the tree's bytes are what a
simulated rank sends, the ring's bound is argued, ranks read r0.., the two bucket formulas
stand side by side. Screenshots go to the artifacts (guides-read-*.png)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.webapp.conftest import ARTIFACTS

pytestmark = pytest.mark.browser


def save(page: Page, section: str, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(f"#{section}").screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_a_student_reads_the_guides_numbers_as_the_simulator_gives_them(page: Page, live_server: str):
    page.set_default_timeout(20_000)
    page.goto(f"{live_server}/guides")
    ring = page.locator("#guides-ring-text")
    expect(ring).to_contain_text("Why 2(p-1)/p n is the least")
    expect(ring).to_contain_text("14 × 64 MiB = 896 MiB in all, shared by 8 ranks")
    rows, columns = page.locator("#guides-ring-cells .ytick text"), page.locator("#guides-ring-cells .xtick text")
    expect(rows).to_have_count(8)
    assert sorted(rows.all_text_contents()) == [f"r{rank}" for rank in range(8)]
    assert sorted(columns.all_text_contents()) == [f"p{piece}" for piece in range(8)]

    page.locator("#guides-cross-tree").click()
    page.locator(".dash-dropdown-option", has_text="binomial tree: reduce then broadcast").click()
    cross = page.locator("#guides-cross-text")
    expect(cross).to_contain_text("the most any rank sends is 192 MiB")
    expect(cross).not_to_contain_text("every rank sends 2 lg p n")
    expect(page.locator("#guides-cross-graph .annotation-text").first).to_contain_text("n* = ")
    page.locator("#guides-crossover").scroll_into_view_if_needed()
    save(page, "guides-crossover", "guides-read-crossover-tree")

    table = page.locator("#guides-bucket-text table")
    expect(table).to_contain_text("course notes: o + s / (n_b w)")
    expect(table).to_contain_text("once per step")
    expect(table).to_contain_text("once per bucket")
    page.locator("#guides-buckets").scroll_into_view_if_needed()
    save(page, "guides-buckets", "guides-read-buckets")
