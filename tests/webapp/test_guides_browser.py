"""The guides page in a real Chromium: each guide draws, its step slider moves the story, the
alpha slider moves the stated crossover; with COLLSIM_UPDATE_DOCS_IMG=1 each guide step is
saved as docs/img/guide-*.png."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from tests.webapp.conftest import ARTIFACTS, DOCS_IMG

pytestmark = pytest.mark.browser
SLOW = 20_000


def save(page: Page, section: str, name: str) -> None:
    """A screenshot of one guide (its card) into the artifacts, and docs/img when asked."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.locator(f"#{section}").screenshot(path=str(path))
    if os.environ.get("COLLSIM_UPDATE_DOCS_IMG") == "1":
        (DOCS_IMG / f"{name}.png").write_bytes(path.read_bytes())


def press(page: Page, slider: str, key: str, times: int) -> None:
    thumb = page.locator(f"#{slider} [role=slider]")
    thumb.focus()
    for _ in range(times):
        thumb.press(key)


def test_guides_page_walks_through_each_guide(page: Page, live_server: str):
    errors: list[str] = []
    page.on("response", lambda response: errors.append(f"{response.status} {response.url}") if response.status >= 500 else None)
    page.set_default_timeout(SLOW)
    page.goto(f"{live_server}/guides")
    expect(page.locator("#nav-guides")).to_be_visible()
    ring_text = page.locator("#guides-ring-text")
    expect(ring_text).to_contain_text("Press →")
    expect(page.locator("#guides-ring-cells .heatmaplayer")).to_have_count(1)
    save(page, "guides-ring", "guide-ring-0-start")
    gamma = page.locator("#guides-ring-formula .term-gamma")
    # (presses, what the step says, whether it pays the reduction term gamma, screenshot)
    for presses, says, reduces, name in (
        (3, "step 3 of the 7 of reduce-scatter", True, "guide-ring-1-step3"),
        (4, "step 7 of the 7 of reduce-scatter", True, "guide-ring-2-step7"),
        (3, "step 3 of the 7 of all-gather", False, "guide-ring-3-step10"),
    ):
        press(page, "guides-ring-step", "ArrowRight", presses)
        expect(ring_text).to_contain_text(says)
        (expect(gamma).to_have_css if reduces else expect(gamma).not_to_have_css)("font-weight", "700")
        save(page, "guides-ring", name)
    press(page, "guides-ring-step", "End", 1)
    expect(ring_text).to_contain_text("the lower bound")
    save(page, "guides-ring", "guide-ring-4-done")

    size = page.locator("#guides-cross-size")
    expect(size).to_have_text("n* = 753.8 KiB")
    page.locator("#guides-crossover").scroll_into_view_if_needed()
    save(page, "guides-crossover", "guide-crossover-0-default")
    press(page, "guides-cross-alpha", "ArrowRight", 20)  # alpha x ~10 (0.05 decades a step, from 5 us snapped to the grid)
    expect(size).to_have_text(re.compile(r"n\* = 7\.[0-9]+ MiB"))  # ~10 x 753.8 KiB: n* is proportional to alpha
    save(page, "guides-crossover", "guide-crossover-1-alpha-x10")

    bcast = page.locator("#guides-bcast-text")
    expect(bcast).to_contain_text("1 of 8 ranks")
    save(page, "guides-broadcast", "guide-broadcast-0-start")
    for step, holding in ((1, 2), (2, 4), (3, 8)):
        press(page, "guides-bcast-step", "ArrowRight", 1)
        expect(bcast).to_contain_text(f"{holding} of 8 ranks")
        save(page, "guides-broadcast", f"guide-broadcast-{step}-step{step}")
    expect(bcast).to_contain_text("t = 15 s")

    text = page.locator("#guides-bucket-text")
    expect(text).to_contain_text("b* = √(s w o) = 11.05 MiB")
    expect(page.locator("#guides-bucket-graph .scatterlayer .trace")).to_have_count(3)  # formula, simulated, the notes' formula
    save(page, "guides-buckets", "guide-buckets-0-course")
    page.locator("#guides-bucket-model").click()
    page.locator(".dash-dropdown-option", has_text="GPT-2").click()
    expect(text).to_contain_text("here T = 120 ms")  # only GPT-2's notes say this (the course model has T = s / w)
    save(page, "guides-buckets", "guide-buckets-1-gpt2")
    assert errors == []
