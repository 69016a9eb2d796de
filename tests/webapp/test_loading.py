"""What a page load fetches and how long a browser may keep it (issue 21, item 6: first loads).

The speed itself is measured by bench/render_webapp.py, not here; these tests pin the mechanisms:
fingerprinted assets cached without revalidation, no dash_table bundle, dcc's lazy chunks served
with the page (and found there by dcc, in Chromium)."""

from __future__ import annotations

import re

import pytest


@pytest.fixture(scope="module")
def client():
    from webapp.app import create_app

    return create_app(background=False, warm=False).server.test_client()


def scripts_of(client) -> list[str]:
    html = client.get("/").get_data(as_text=True)
    return re.findall(r'<script src="([^"]+)"', html)


def test_fingerprinted_assets_are_cached_for_a_year_and_others_revalidated(client):
    scripts = scripts_of(client)
    plotly = next(src for src in scripts if "plotly-cartesian" in src)
    assert "?m=" in plotly
    cached = client.get(plotly)
    assert cached.status_code == 200
    assert cached.cache_control.max_age == 31_536_000 and not cached.cache_control.no_cache
    plain = client.get("/assets/plotly-cartesian.min.js")  # no fingerprint: the browser must ask again
    assert plain.cache_control.no_cache and not plain.cache_control.max_age


def test_index_leaves_out_dash_table_and_carries_dccs_chunks_after_its_bundles(client):
    scripts = scripts_of(client)
    assert not [src for src in scripts if "dash_table" in src]
    shared = next(i for i, src in enumerate(scripts) if "dash_core_components-shared" in src)
    chunks = {name: i for i, src in enumerate(scripts) for name in ("graph", "dropdown", "slider") if f"/dcc/async-{name}.v" in src}
    assert sorted(chunks) == ["dropdown", "graph", "slider"] and min(chunks.values()) > shared
    for i in chunks.values():
        response = client.get(scripts[i])
        assert response.status_code == 200 and b"webpackChunk" in response.data
        assert response.cache_control.max_age == 31_536_000  # Dash's fingerprint: cached a year


def test_no_page_renders_a_dash_table():
    """dash_table's bundle is left out of the index, so no page may render a DataTable."""
    from webapp.app import PAGES, create_app, route

    app = create_app(background=False, warm=False)
    with app.server.app_context():
        for page in PAGES:
            layout = route(page.PATH, "")
            found = [c for c in layout._traverse() if type(c).__module__.startswith("dash.dash_table")]
            assert not found, page.PATH


@pytest.mark.browser
def test_pages_draw_without_fetching_dccs_chunks_lazily(page, live_server):
    """dcc finds the chunks the index served (no request for an unfingerprinted async-*.js), and
    every page still draws its graphs."""
    for path, graph in (("/", "#coll-topology-graph"), ("/ddp", ".js-plotly-plot"), ("/guides", ".js-plotly-plot")):
        page.goto(live_server + path)
        page.locator(f"{graph} .main-svg").first.wait_for(timeout=30_000)
        page.wait_for_timeout(300)
        lazy = page.evaluate(
            "() => performance.getEntriesByType('resource').map(e => e.name).filter(n => /async-(graph|dropdown|slider)\\.js/.test(n))"
        )
        assert lazy == [], (path, lazy)
