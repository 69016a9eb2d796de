"""An open dropdown of a page's form lies on top of the page: its options wider than the form's
column reach over the content beside it, and a click there must pick the option, not the figure
under it (the Hangs page's "Start from a case" list lay under the wait-for graph: its options could
not be clicked, 2026-11-28; the form column is sticky, a stacking context of its own, drawn under
the content that follows it)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# a page and its form's dropdown whose options are wider than the form's column
CASES = [("/hangs", "#hang-field-case")]

ON_TOP = """([x, y]) => { const e = document.elementFromPoint(x, y); return !!(e && e.closest('[role=option]')); }"""


@pytest.mark.parametrize(("path", "dropdown"), CASES)
def test_an_open_dropdowns_options_are_on_top_of_the_content_beside_the_form(page, live_server, path, dropdown):
    from playwright.sync_api import expect

    page.goto(live_server + path)
    page.locator(dropdown).click()
    options = page.locator("[role=option]")
    expect(options.first).to_be_visible()
    sidebar = page.locator("aside.sidebar").bounding_box()
    reaching = 0
    for index in range(options.count()):
        options.nth(index).scroll_into_view_if_needed()  # the list scrolls past a few options
        box = options.nth(index).bounding_box()
        if not box or box["height"] == 0:
            continue
        # a point of the option beyond the form's column (over the content), and one inside it
        beyond = sidebar["x"] + sidebar["width"] + 20
        if box["x"] + box["width"] > beyond:
            reaching += 1
            assert page.evaluate(ON_TOP, [beyond, box["y"] + box["height"] / 2]), f"option {index} lies under the content"
        assert page.evaluate(ON_TOP, [box["x"] + 10, box["y"] + box["height"] / 2]), f"option {index} is covered"
    assert reaching, "no option reached beyond the form's column: the case tests nothing"
    name = options.first.inner_text()
    options.first.click()
    expect(page.locator(dropdown)).to_contain_text(name.split(":")[0])
