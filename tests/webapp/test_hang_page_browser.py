# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""The Hangs page in a real Chromium: it opens from the navigation already drawn (verdict, wait-for
graph with its cycle, the tools' tabs), a change of the form updates the URL and the verdict, a bad
program gets its message under the box, and a link comes back. With COLLSIM_UPDATE_DOCS_IMG=1 the
screenshot is saved as docs/img/hangs.png."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .test_browser import app_page  # noqa: F401 - the fixture

pytestmark = pytest.mark.browser


def test_hang_page_opens_drawn_and_follows_the_form(app_page: Page, live_server: str, shot):
    page = app_page  # records server errors and fails the test on one (tests/webapp/test_browser.py)
    page.goto(live_server + "/")
    page.locator("#nav-hang").click()
    expect(page).to_have_url(re.compile(r"/hangs$"))
    verdict = page.locator("#hang-verdict")
    expect(verdict).to_contain_text("deadlock: wait-for cycle 0 -> 1 -> 0")
    expect(page.locator("#hang-graph .gtitle")).to_contain_text("cycle 0 → 1 → 0")
    expect(page.locator("#hang-graph .annotation")).to_have_count(2)  # the two arrows of the cycle
    expect(page.locator("#hang-ranks tbody tr")).to_have_count(2)
    expect(page.locator("#hang-tool-nccl")).to_contain_text("Watchdog caught collective operation timeout")
    shot("hangs", docs=True)

    timeout = page.locator("#hang-timeout")
    timeout.fill("5")
    timeout.press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]timeout=5(&|$)"))
    expect(verdict).to_contain_text("Process-group timeout: 5 s.")
    expect(page.locator("#hang-tool-nccl")).to_contain_text("Timeout(ms)=5000")

    page.locator("#hang-spec").fill("1:0:1")
    page.locator("#hang-spec").press("Enter")
    expect(page.locator("#hang-spec-error")).to_be_empty()  # no mutation picked: the spec waits
    page.locator("#hang-mutation").click()
    page.locator(".dash-dropdown-option", has_text="(swap)").first.click()
    expect(verdict).to_contain_text("completes")
    expect(page).to_have_url(re.compile(r"mutation=swap"))

    box = page.locator("#hang-program")
    box.fill("ranks: [[")
    box.blur()
    expect(page.locator("#hang-program-error")).to_contain_text("program: malformed YAML")
    expect(page.locator("#hang-notice")).to_contain_text("Fix the highlighted field")
    expect(page).to_have_url(re.compile(r"program=ranks"))

    page.goto(live_server + "/hangs?case=rank_dies")
    expect(verdict).to_contain_text("missing party")
    expect(page.locator("#hang-program")).to_have_value(re.compile(r"op: die"))
