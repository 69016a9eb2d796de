# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""Issue 21 in a real Chromium: the step player's previous / next / speed controls, Play that
stops at the last step, and the timelines marking the player's step, numbered as it is."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .test_browser import SLOW, app_page, drawn, open_page  # noqa: F401

pytestmark = pytest.mark.browser

BROADCAST = "/?op=broadcast&algorithm=binomial&ranks=8&size=5MB&latency=0us&bandwidth=1MB/s"


def marks(page: Page, graph_id: str) -> list:
    drawn(page, graph_id)
    return page.evaluate(
        "id => (document.querySelector('#' + id + ' .js-plotly-plot').layout.shapes || []).map(s => [s.x0, s.x1, s.label.text])", graph_id
    )


def test_previous_next_move_the_player_and_the_timeline_marks(app_page: Page, live_server: str, shot):
    open_page(app_page, live_server + BROADCAST)
    label = app_page.locator("#coll-step-label")
    app_page.locator("#coll-next").click()
    expect(label).to_contain_text("Step 1 of 3")
    app_page.locator("#coll-next").click()
    expect(label).to_contain_text("Step 2 of 3")
    app_page.wait_for_function(
        "() => { const p = document.querySelector('#coll-gantt-rank .js-plotly-plot');"
        " return p && p.layout.shapes && p.layout.shapes.length && p.layout.shapes[0].label.text === 'step 2'; }",
        timeout=SLOW,
    )
    assert marks(app_page, "coll-gantt-rank") == [[5, 10, "step 2"]]  # the broadcast's second 5 s
    assert marks(app_page, "coll-gantt-link") == [[5, 10, "step 2"]]
    ticks = app_page.evaluate("() => document.querySelector('#coll-gantt-rank .js-plotly-plot').layout.yaxis.ticktext")
    assert ticks == [f"rank {r}" for r in range(8)]  # ranks 1, 3, 5, 7 only receive and are still there
    shot("player-step-mark", full_page=False)
    app_page.locator("#coll-prev").click()
    expect(label).to_contain_text("Step 1 of 3")


def test_play_stops_at_the_last_step_at_the_chosen_speed(app_page: Page, live_server: str):
    open_page(app_page, live_server + BROADCAST)
    app_page.locator("#coll-speed label", has_text="2x").click()
    play = app_page.locator("#coll-play")
    play.click()
    expect(play).to_have_text("Pause")
    label = app_page.locator("#coll-step-label")
    expect(label).to_contain_text("Step 3 of 3", timeout=5_000)  # 3 steps at 0.45 s each
    expect(play).to_have_text("Play")  # stopped by itself at the end
    app_page.wait_for_timeout(1_500)  # three more ticks' worth: it does not start over
    expect(label).to_contain_text("Step 3 of 3")
    interval = app_page.evaluate("() => document.querySelector('#coll-step [role=slider]').getAttribute('aria-valuenow')")
    assert interval == "3"
