# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""Issue 36 in a real Chromium: what only a browser shows on the Collectives page: the
crossover's note in full with its background run, the Nodes field of a preset, the note above the
form (an op's algorithm replaced, a link's unknown keys)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .test_browser import SLOW, app_page, choose, meta, open_page, sim_time, type_into  # noqa: F401

pytestmark = pytest.mark.browser


def test_crossover_note_is_whole_and_its_background_run_fills_the_sizes(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/?ranks=16")
    note = app_page.locator("#coll-crossover-note")
    expect(note).to_contain_text("Not simulated here", timeout=SLOW)
    beyond = meta(app_page, "coll-crossover")["beyond_budget"]
    assert beyond  # which algorithm's sizes are left out is the budget's plan to decide
    for name in beyond:
        expect(note).to_contain_text(name)
    expect(note).not_to_contain_text("collsim")  # a browser user gets a button, not a command
    box, page_width = note.bounding_box(), app_page.viewport_size["width"]
    assert box["x"] >= 0 and box["x"] + box["width"] <= page_width  # whole: the line inside the plot was cut on the left
    app_page.locator("#coll-crossover-more").click()
    expect(note).to_have_text("", timeout=60_000)
    expect(app_page.locator("#coll-crossover-more")).to_be_hidden()
    assert meta(app_page, "coll-crossover")["beyond_budget"] == []


def test_a_preset_shows_nodes_that_set_the_ranks(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    expect(app_page.locator("#coll-field-nodes")).to_be_hidden()
    choose(app_page, "coll-hardware", "dgx-h100")
    expect(app_page.locator("#coll-field-nodes")).to_be_visible()
    expect(app_page.locator("#coll-nodes")).to_have_value("1")
    expect(app_page.locator("#coll-form-note")).to_contain_text("dgx-h100: 1 node of 8 GPUs = 8 ranks")
    type_into(app_page, "nodes", "2")
    expect(app_page.locator("#coll-ranks")).to_have_value("16")
    expect(app_page.locator("#coll-nodes-error")).to_have_text("")
    app_page.wait_for_function("() => location.search.includes('nodes=2') && location.search.includes('ranks=16')")
    type_into(app_page, "ranks", "32")
    expect(app_page.locator("#coll-nodes")).to_have_value("4")
    assert not app_page.server_errors


def test_changing_the_op_says_which_algorithm_it_got(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    choose(app_page, "coll-op", "barrier")
    expect(app_page.locator("#coll-algorithm")).to_contain_text("dissemination")
    expect(app_page.locator("#coll-form-note")).to_contain_text("ring does not run barrier; set to dissemination")
    expect(app_page.locator("#coll-algorithm-error")).to_have_text("")


def test_a_link_with_an_unknown_key_says_so_above_the_form(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/?rank=16&op=barrier")
    note = app_page.locator("#coll-form-note")
    expect(note).to_contain_text("Ignored in the link: rank")
    expect(note).to_contain_text("Keys: hardware, nodes, op")
    expect(note).to_contain_text("set to dissemination")
    expect(app_page.locator("#coll-sim-time")).not_to_have_text("—")
