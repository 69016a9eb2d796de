# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""Issue 21 in a real Chromium: nothing hidden at 1024x768 (the buffers beside the topology,
nothing wider than the window), 64 ranks drawn as groups, lane labels ("12->switch") whole."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .test_browser import SLOW, app_page, drawn, open_page  # noqa: F401

pytestmark = pytest.mark.browser


def box(page: Page, selector: str) -> dict:
    return page.locator(selector).first.bounding_box()


def test_nothing_hidden_at_1024x768(app_page: Page, live_server: str, shot):
    app_page.set_viewport_size({"width": 1024, "height": 768})
    open_page(app_page, live_server + "/?ranks=8")
    for graph in ("coll-topology-graph", "coll-buffers-graph"):
        drawn(app_page, graph)
    topology, buffers = box(app_page, "#coll-topology-graph"), box(app_page, "#coll-buffers-graph")
    assert buffers["y"] < topology["y"] + topology["height"] / 2  # beside the topology, not below it
    assert buffers["x"] >= topology["x"] + topology["width"] - 1
    assert buffers["x"] + buffers["width"] <= 1024
    assert app_page.evaluate("() => document.documentElement.scrollWidth") <= 1024  # no sideways scrolling
    title = app_page.locator("#coll-buffers-graph .gtitle").first
    assert box(app_page, "#coll-buffers-graph .gtitle")["x"] + title.bounding_box()["width"] <= buffers["x"] + buffers["width"]
    for control in ("#coll-prev", "#coll-play", "#coll-next"):
        expect(app_page.locator(control)).to_be_visible()
    shot("player-1024x768", full_page=False)


def test_64_ranks_are_groups_and_lane_labels_are_whole(app_page: Page, live_server: str, shot):
    open_page(app_page, live_server + "/?ranks=64&step=2")
    drawn(app_page, "coll-topology-graph")
    expect(app_page.locator("#coll-topology-graph .gtitle")).to_contain_text("64 ranks in 9 groups")
    expect(app_page.locator("#coll-topology-graph")).to_contain_text("ranks 6–61 (56 ranks)")
    shot("player-64-ranks", full_page=False)
    open_page(app_page, live_server + "/?ranks=16&size=1MB")
    drawn(app_page, "coll-gantt-link")
    ticks = app_page.locator("#coll-gantt-link .ytick text")
    expect(ticks.filter(has_text="12->switch")).to_have_count(1)
    label, plot = box(app_page, "#coll-gantt-link .ytick text >> text=12->switch"), box(app_page, "#coll-gantt-link")
    assert label["x"] >= plot["x"]  # the whole label inside the card, not cut at its left edge
