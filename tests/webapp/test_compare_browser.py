"""The Sim vs measured page in a browser (issue 33): fitted and predicted points drawn apart with a
legend, the split shown and changeable (and kept in the URL), the GPU logs held out beside."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SLOW = 20_000  # ms: first loads fetch plotly.js


@pytest.fixture
def app_page(page: Page, live_server: str):
    page.server_errors = []
    page.on("response", lambda response: page.server_errors.append(f"{response.status} {response.url}") if response.status >= 500 else None)
    page.set_default_timeout(SLOW)
    yield page
    assert page.server_errors == []


def drawn_traces(page: Page, graph_id: str) -> list[dict]:
    """name, role, symbol and x of each trace the browser drew in a graph."""
    page.wait_for_function(
        "id => { const p = document.querySelector('#' + id + ' .js-plotly-plot'); return !!(p && p.data && p.data.length); }",
        arg=graph_id,
        timeout=SLOW,
    )
    return page.evaluate(
        """id => document.querySelector('#' + id + ' .js-plotly-plot').data.map(t => ({
            name: t.name, role: (t.meta || {}).role || null, what: (t.meta || {}).what || null,
            symbol: (t.marker || {}).symbol || null, x: Array.from(t.x || [])}))""",
        graph_id,
    )


def legend(page: Page, graph_id: str) -> list[str]:
    """The legend entries as drawn (SVG text)."""
    return page.evaluate("id => Array.from(document.querySelectorAll('#' + id + ' .legendtext')).map(e => e.textContent)", graph_id)


def choose(page: Page, dropdown_id: str, starts: str) -> None:
    page.locator(f"#{dropdown_id}").click()
    page.locator(".dash-dropdown-option", has_text=re.compile(f"^{re.escape(starts)}")).first.click()


def test_fitted_and_predicted_points_are_drawn_apart_and_the_split_shown(app_page: Page, live_server: str):
    app_page.goto(live_server + "/compare")
    expect(app_page.locator("#cmp-o")).to_be_visible(timeout=SLOW)
    expect(app_page.locator("#cmp-split-shown")).to_contain_text("Split 'alternate'")
    expect(app_page.locator("#cmp-split-shown")).to_contain_text("predicted: sizes")
    expect(app_page.locator("#cmp-scope")).to_contain_text("What it does not show")
    simulated = {t["role"]: t for t in drawn_traces(app_page, "cmp-sim-vs-measured") if t["what"] == "simulated"}
    assert set(simulated) == {"fitted", "predicted"}
    assert simulated["fitted"]["symbol"] != simulated["predicted"]["symbol"]
    assert not set(simulated["fitted"]["x"]) & set(simulated["predicted"]["x"])  # no size both fitted and predicted
    names = legend(app_page, "cmp-sim-vs-measured")
    assert any(name.startswith("predicted (held out)") for name in names)
    assert any("in-sample, not a prediction" in name for name in names)
    expect(app_page.locator("#cmp-coverage")).to_have_text(re.compile(r"^\d+ of \d+ \(\d+%\)$"))
    expect(app_page.locator("#cmp-error-table")).to_contain_text("predicted (held out)")
    # the GPU logs beside, held out the same way
    gpu = {t["role"] for t in drawn_traces(app_page, "cmp-gpu-fig") if t["what"] == "simulated"}
    assert gpu == {"fitted", "predicted"}
    expect(app_page.locator("#cmp-gpu-note")).to_contain_text("inside their 80% interval")

    choose(app_page, "cmp-split", "none:")  # nothing held out: nothing drawn as a prediction
    expect(app_page.locator("#cmp-split-shown")).to_contain_text("nothing predicted")
    expect(app_page).to_have_url(re.compile(r"split=none"))  # written by the browser once the choices are shown
    expect(app_page.locator("#cmp-coverage")).to_have_text("n/a: nothing held out")
    app_page.wait_for_function(
        "() => document.querySelector('#cmp-sim-vs-measured .js-plotly-plot').data.every(t => (t.meta || {}).role !== 'predicted')",
        timeout=SLOW,
    )
    assert not any(name.startswith("predicted") for name in legend(app_page, "cmp-sim-vs-measured"))
    assert [t["name"] for t in drawn_traces(app_page, "cmp-ddp")] == ["measured", "simulated"]  # still drawn after the change

    app_page.goto(live_server + "/compare?split=small")  # the URL key is read back
    expect(app_page.locator("#cmp-split-shown")).to_contain_text("Split 'small'", timeout=SLOW)
