# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""The Failures and checkpoints page in a real Chromium: it opens from the navigation already
drawn (the optimal intervals, goodput against the interval, the elastic choice), a change of the
form updates the URL and the numbers, a bad field gets its message in its slot, and a link comes
back. With COLLSIM_UPDATE_DOCS_IMG=1 the screenshot is saved as docs/img/runcost.png."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from sim.training.runcost import run_cost
from sim.training.runcost_cli import duration
from sim.training.runcost_fields import scenario_from_dict
from webapp.pages.runcost import model

from .test_browser import app_page  # noqa: F401 - the fixture

pytestmark = pytest.mark.browser


def young(**changes: str) -> str:
    """Young's interval the page must show for the defaults with ``changes`` (computed here)."""
    form = {key: value for key, value in {**model.DEFAULTS, **changes}.items() if value}
    return duration(run_cost(scenario_from_dict({**form, "samples": model.LIVE_SAMPLES})).young_interval_s)


def test_runcost_page_opens_drawn_and_follows_the_form(app_page: Page, live_server: str, shot):
    page = app_page  # records server errors and fails the test on one (tests/webapp/test_browser.py)
    page.goto(live_server + "/")
    page.locator("#nav-runcost").click()
    expect(page).to_have_url(re.compile(r"/runcost$"))
    expect(page.locator("#runcost-card-young")).to_have_text(young())
    expect(page.locator("#runcost-curve .scatterlayer .trace").first).to_be_visible()
    expect(page.locator("#runcost-curve .legendtext", has_text="simulated optimum")).to_be_visible()
    expect(page.locator("#runcost-elastic .bars .point")).to_have_count(3)
    shot("runcost", docs=True)

    storage = page.locator("#runcost-storage_bw")
    storage.fill("50GB/s")
    storage.press("Enter")
    expect(page).to_have_url(re.compile(r"storage_bw=50GB%2Fs"))
    expect(page.locator("#runcost-card-young")).to_have_text(young(storage_bw="50GB/s"))

    gpus = page.locator("#runcost-gpus")
    gpus.fill("100")
    gpus.press("Enter")
    expect(page.locator("#runcost-gpus-error")).to_contain_text("do not fill nodes of 8 GPUs")
    expect(page.locator("#runcost-notice")).to_contain_text("Fix the highlighted field")

    page.goto(live_server + "/runcost?interval=2h")
    expect(page.locator("#runcost-card-interval")).to_contain_text("2 h (720 steps)")
    expect(page.locator("#runcost-interval")).to_have_value("2h")
