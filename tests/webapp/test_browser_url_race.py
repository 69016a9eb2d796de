# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""A page's URL writer writes only while its own page is shown (collsim.js, collsimQuery).

The race, made deterministic: a hardware preset's answer (the fields it fills, which the page's
URL writer writes) is held back by the test; a link to another page is followed, as the app's
links navigate; the page it asks for is held back too while the preset's answer lands on the
page being left. Unguarded, that page's writer put its own query on the next page's address (one
more history entry: Back led to the next page built from the wrong query, not to the page left;
landing with the link, the next page was built from it)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from webapp import collective
from webapp.pages.ddp import model as ddp_model

from .test_browser import app_page, choose, open_page  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Every address the tab shows, in order (the app changes it with history.pushState only)
RECORD_ADDRESSES = """(() => {
    window.collsimAddresses = [];
    for (const name of ['pushState', 'replaceState']) {
        const original = history[name].bind(history);
        history[name] = (...args) => { original(...args); window.collsimAddresses.push(location.pathname + location.search); };
    }
})();"""
# What a dcc.Link does on a click (the guided links and the navigation bar are dcc.Links)
FOLLOW_LINK = "href => { history.pushState({}, '', href); window.dispatchEvent(new CustomEvent('_dashprivate_pushstate')); }"

# (page left, its hardware dropdown, a field the preset's answer fills, the link followed, a field
# of the next page and the value the link gives it)
CASES = {
    "collectives to ddp": ("/", "coll-hardware", "coll-latency", "/ddp?ranks=16", "ddp-ranks", "16"),
    "ddp to collectives": ("/ddp", "ddp-hardware", "ddp-o", "/?ranks=16", "coll-ranks", "16"),
}


class HeldRequests:
    """Dash's callback requests, passed on except the first one each rule matches, which waits
    for :meth:`release` (a slow server answer, on cue)."""

    def __init__(self, page: Page, rules: dict[str, Any]):
        self.rules, self.held, self.released = rules, {}, set()
        page.route("**/_dash-update-component*", self.on_request)

    def on_request(self, route: Route) -> None:
        body = json.loads(route.request.post_data or "{}")
        for name, rule in self.rules.items():
            if name not in self.held and name not in self.released and rule(body.get("output", ""), body.get("changedPropIds", [])):
                self.held[name] = route
                return
        route.continue_()

    def wait_for(self, page: Page, name: str, timeout_s: float = 10) -> None:
        for _ in range(int(timeout_s / 0.05)):
            if name in self.held:
                return
            page.wait_for_timeout(50)  # lets Playwright deliver the requests
        raise AssertionError(f"no request for {name} in {timeout_s} s")

    def release(self, name: str) -> None:
        self.released.add(name)
        self.held.pop(name).continue_()


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_a_write_pending_when_a_link_leaves_the_page_stays_off_the_next_page(app_page: Page, live_server: str, case):
    left, hardware, filled, link, field, value = case
    app_page.add_init_script(RECORD_ADDRESSES)
    open_page(app_page, live_server + left)
    held = HeldRequests(
        app_page,
        {
            "preset": lambda output, changed: f"{hardware}.value" in changed and f"{filled}.value" in output,
            "route": lambda output, changed: output.startswith("page.children"),
        },
    )
    choose(app_page, hardware, "dgx-h100")
    held.wait_for(app_page, "preset")
    before = app_page.locator(f"#{filled}").input_value()
    shown = app_page.url
    app_page.evaluate(FOLLOW_LINK, link)
    held.wait_for(app_page, "route")

    held.release("preset")  # lands on the page being left: its fields change, its writer runs
    app_page.wait_for_function("([id, before]) => document.getElementById(id).value !== before", arg=[filled, before])
    app_page.wait_for_timeout(500)
    held.release("route")
    expect(app_page.locator(f"#{field}")).to_have_value(value)
    app_page.wait_for_timeout(500)  # the next page's own writer at load

    after = app_page.evaluate("window.collsimAddresses")
    assert after[after.index(link) :] == [link], f"the page left wrote its query on {link}: {after}"
    expect(app_page).to_have_url(live_server + link)
    app_page.go_back()  # Back returns to the page left, as it was when the link was followed
    expect(app_page).to_have_url(shown)
    expect(app_page.locator(f"#{hardware}")).to_be_visible()


def test_a_write_pending_when_a_link_rebuilds_the_same_page_leaves_the_links_history_entry(app_page: Page, live_server: str):
    """The same race with a Collectives link followed from the Collectives page: the address bar
    shows the page's own path all along, so only the page's instance tells the old page's leftover
    write (the preset's fields, answered late) from the new page's. Unguarded, it replaced the
    link's history entry with the old page's query, and Back from the link led there, not to the
    page as it was when the link was followed."""
    link = "/?op=all_gather&ranks=16"  # as the page writes it (webapp.urlstate.query_of): no rewrite
    app_page.add_init_script(RECORD_ADDRESSES)
    open_page(app_page, live_server + "/")
    held = HeldRequests(
        app_page,
        {
            "preset": lambda output, changed: "coll-hardware.value" in changed and "coll-latency.value" in output,
            "route": lambda output, changed: output.startswith("page.children"),
        },
    )
    choose(app_page, "coll-hardware", "dgx-h100")
    held.wait_for(app_page, "preset")
    before = app_page.locator("#coll-latency").input_value()
    shown, entries = app_page.url, app_page.evaluate("history.length")
    app_page.evaluate(FOLLOW_LINK, link)
    held.wait_for(app_page, "route")

    held.release("preset")  # lands on the page being left (the same path): its writer runs
    app_page.wait_for_function("before => document.getElementById('coll-latency').value !== before", arg=before)
    app_page.wait_for_timeout(500)
    held.release("route")
    expect(app_page.locator("#coll-ranks")).to_have_value("16")
    expect(app_page.locator("#coll-latency")).to_have_value(before)  # the link's page: no preset
    app_page.wait_for_timeout(500)  # the new page's own writer at load

    after = app_page.evaluate("window.collsimAddresses")
    assert after[after.index(link) :] == [link], f"the old page wrote its query over the link's entry: {after}"
    assert app_page.evaluate("history.length") == entries + 1  # the link's entry, and no other
    expect(app_page).to_have_url(live_server + link)
    app_page.go_back()  # Back: the page as it was when the link was followed
    expect(app_page).to_have_url(shown)
    expect(app_page.locator("#coll-ranks")).to_have_value("8")
    app_page.go_forward()  # and Forward: the link's page again
    expect(app_page).to_have_url(live_server + link)
    expect(app_page.locator("#coll-ranks")).to_have_value("16")


# (page left, the link followed: a query the next page writes back otherwise, and the address it
# writes for it, as webapp.urlstate.query_of computes it)
REWRITTEN = {
    "guided ddp link at the defaults": ("/", "/ddp?preset=gpt2&comm_model=ow", "/ddp" + ddp_model.query_from_form(ddp_model.DEFAULTS)),
    "collectives link at the defaults": ("/ddp", "/?ranks=8&op=all_reduce", "/" + collective.query_from_form(collective.DEFAULTS)),
}


@pytest.mark.parametrize("case", REWRITTEN.values(), ids=list(REWRITTEN))
def test_back_from_a_page_whose_link_it_rewrote_returns_to_the_page_before(app_page: Page, live_server: str, case):
    """A page rewrites the address it was built from (keys at their defaults dropped) in place: a
    new history entry sent Back to the link's address, which built the page again, which wrote
    again, and Back never left the page."""
    left, link, rewritten = case
    assert rewritten != link  # the page does rewrite this link
    app_page.add_init_script(RECORD_ADDRESSES)
    open_page(app_page, live_server + left)
    shown = app_page.url
    if left == "/":
        app_page.get_by_role("link", name=re.compile("How big should my DDP buckets be")).click()  # the guided link itself
    else:
        app_page.evaluate(FOLLOW_LINK, link)
    expect(app_page).to_have_url(live_server + rewritten)
    for _ in range(2):  # Back, and Back again after Forward: each time to the page before
        app_page.go_back()
        expect(app_page).to_have_url(shown)
        expect(app_page.locator("#coll-sim-time, #ddp-step-time").first).to_be_visible()
        app_page.go_forward()
        expect(app_page).to_have_url(live_server + rewritten)
    assert rewritten in app_page.evaluate("window.collsimAddresses")


# (page, a dropdown whose answer fills fields, the option picked, a field that answer fills, a link
# to the same page with other values, a field the link sets and the value it gives it)
SAME_PAGE = {
    "collectives": ("/", "coll-hardware", "dgx-h100", "coll-latency", "/?op=all_gather&ranks=16", "coll-ranks", "16"),
    "ddp": ("/ddp", "ddp-hardware", "dgx-h100", "ddp-o", "/ddp?ranks=16", "ddp-ranks", "16"),
    "hangs": ("/hangs", "hang-case", "size_mismatch", "hang-program", "/hangs?timeout=7", "hang-timeout", "7"),
}
FIELDS = "() => Object.fromEntries([...document.querySelectorAll('#page input[id], #page textarea[id]')].map(box => [box.id, box.value]))"


@pytest.mark.parametrize("case", SAME_PAGE.values(), ids=list(SAME_PAGE))
def test_an_answer_for_a_replaced_page_leaves_the_page_that_replaced_it_as_its_link_built_it(app_page: Page, live_server: str, case):
    """An answer that fills a page's fields (a hardware preset's, a hang case's program) held back
    while a link to the same page (the same component ids) is followed and its page arrives first:
    released, it belongs to the page it was asked for, which is gone. Unguarded, it filled the new
    page's fields (Collectives: ranks 8, latency 14us, bandwidth 50GB/s, a two_level topology, no
    hardware selected) and the URL got one more entry with that mix."""
    left, dropdown, option, filled, link, field, value = case
    app_page.goto(live_server + left)
    expect(app_page.locator(f"#{filled}")).to_be_visible()
    held = HeldRequests(app_page, {"answer": lambda output, changed: f"{dropdown}.value" in changed and f"{filled}.value" in output})
    app_page.locator(f"#{dropdown}").click()
    app_page.locator(".dash-dropdown-option", has_text=re.compile(f"^{re.escape(option)}")).first.click()
    held.wait_for(app_page, "answer")
    entries = app_page.evaluate("history.length")
    app_page.evaluate(FOLLOW_LINK, link)
    expect(app_page.locator(f"#{field}")).to_have_value(value)  # the new page arrived first
    app_page.wait_for_timeout(1000)  # its own callbacks at load
    built = app_page.evaluate(FIELDS)
    assert built[field] == value

    held.release("answer")  # the old page's answer, late
    app_page.wait_for_timeout(1500)
    assert app_page.evaluate(FIELDS) == built, "the replaced page's answer filled the new page's fields"
    expect(app_page.locator(f"#{dropdown}")).not_to_contain_text(option)
    expect(app_page).to_have_url(live_server + link)
    assert app_page.evaluate("history.length") == entries + 1  # the link's entry, and no other
