# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""The Parallelism page in a real Chromium: reached from its nav link it comes drawn for the
default; a changed field updates the step time and the URL; a wrong field shows its message in
its slot; the sweep runs (a background job) for a small case and shows a ranked table."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from sim.units import format_time
from webapp.pages.parallelism import model

from .test_browser import LOADED, SLOW, app_page, drawn  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SMALL = "?nodes=1&model=&layers=8&hidden=512&heads=8&seq_len=256&vocab=0&tp=2&pp=2&dp=2&global_batch=16"


def step_time(**changes: str) -> str:
    checked = model.validate_form({**model.DEFAULTS, **changes})
    return format_time(model.run(checked["scenario"]).step_time_s)


def test_the_page_opens_from_its_link_drawn_for_the_default(app_page: Page, live_server: str, shot):
    app_page.goto(live_server + "/ddp")
    app_page.locator("a[href='/parallelism']").last.click()  # the DDP page's link to it
    expect(app_page).to_have_url(re.compile(r"/parallelism$"))
    app_page.goto(live_server + "/")
    app_page.locator("#nav-parallelism").click()
    expect(app_page.locator("#par-step-time")).to_have_text(step_time(), timeout=SLOW)
    for graph in ("par-timeline", "par-cluster"):
        drawn(app_page, graph)
    expect(app_page.locator("#par-timeline .ytick text", has_text="stage 1 (rank 16) PP")).to_be_attached()
    expect(app_page.locator("#par-teach")).to_contain_text("(p-1)/(m+p-1) = 1/(16+1)")
    expect(app_page.locator("#par-cluster")).to_contain_text("DP x2: across 2 nodes, NIC rail")
    shot("parallelism", docs=True)


def test_a_field_change_updates_the_step_time_and_the_url(app_page: Page, live_server: str):
    app_page.goto(live_server + "/parallelism")
    expect(app_page.locator("#par-step-time")).to_have_text(step_time(), timeout=SLOW)
    box = app_page.locator("#par-global_batch")
    box.fill("64")
    box.press("Enter")
    expect(app_page.locator("#par-step-time")).to_have_text(step_time(global_batch="64"), timeout=LOADED)
    expect(app_page).to_have_url(re.compile(r"/parallelism\?global_batch=64$"))
    app_page.reload()
    expect(app_page.locator("#par-global_batch")).to_have_value("64")


def test_a_wrong_field_shows_its_message_in_its_slot(app_page: Page, live_server: str):
    app_page.goto(live_server + "/parallelism")
    expect(app_page.locator("#par-step-time")).to_be_visible(timeout=SLOW)
    box = app_page.locator("#par-tp")
    box.fill("3")
    box.press("Enter")
    expect(app_page.locator("#par-heads-error")).to_have_text("heads: 64 heads must divide by tp = 3")
    expect(app_page.locator("#par-notice")).to_contain_text("Fix the highlighted inputs")
    box.fill("x")
    box.press("Enter")
    expect(app_page.locator("#par-tp-error")).to_contain_text("tp: expected a whole number from 1 to 1024, got 'x'")


def test_the_sweep_runs_for_a_small_case_and_shows_a_ranked_table(app_page: Page, live_server: str, shot):
    app_page.goto(live_server + "/parallelism" + SMALL)
    expect(app_page.locator("#par-step-time")).to_be_visible(timeout=SLOW)
    app_page.locator("#par-sweep-run").click()
    rows = model.sweep(model.validate_form(model.form_from_query(SMALL))["scenario"])
    expect(app_page.locator("#par-sweep-status")).to_contain_text(f"{len(rows)} layouts of 1 node(s) of dgx-a100", timeout=60_000)
    body = app_page.locator("#par-sweep-table tbody tr")
    expect(body).to_have_count(len(rows))
    first = rows[0]
    expect(body.first).to_contain_text(format_time(first["step_time_s"]))
    drawn(app_page, "par-sweep-chart")
    app_page.locator("#par-sweep-table").scroll_into_view_if_needed()
    shot("parallelism-sweep", docs=True)
