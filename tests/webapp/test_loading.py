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


def as_json(value) -> str:
    import json

    from plotly.utils import PlotlyJSONEncoder

    return json.dumps(value, cls=PlotlyJSONEncoder, sort_keys=True)


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
    from webapp.app import create_app, route
    from webapp.pages import PAGES

    app = create_app(background=False, warm=False)
    with app.server.app_context():
        for page in PAGES:
            layout = route(page.path, "")
            found = [c for c in layout._traverse() if type(c).__module__.startswith("dash.dash_table")]
            assert not found, page.path


@pytest.mark.browser
@pytest.mark.slow
def test_pages_draw_without_fetching_dccs_chunks_lazily(page, live_server):
    """dcc finds the chunks the index served (no request for an unfingerprinted async-*.js), and
    every registered page still draws its graphs."""
    from webapp.pages import PAGES

    for spec in PAGES:
        path = spec.path
        page.goto(live_server + path)
        page.locator(f"[id^='{spec.prefix}-'] .js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
        page.wait_for_timeout(300)
        lazy = page.evaluate(
            "() => performance.getEntriesByType('resource').map(e => e.name).filter(n => /async-(graph|dropdown|slider)\\.js/.test(n))"
        )
        assert lazy == [], (path, lazy)


def test_guides_come_drawn_with_the_values_their_inputs_start_at():
    """The guides' layout carries what each callback answers for the inputs' first values, and
    those values are the ones VIEWS names (a changed default would draw a stale first view)."""
    from webapp.pages.guides import page as guides

    page = guides.layout("")
    components = {getattr(c, "id", None): c for c in page._traverse()}
    for outputs, inputs, view in guides.VIEWS.values():
        for component_id, value in inputs.values():
            assert components[component_id].value == value, component_id
        shown = view(**{name: value for name, (_, value) in inputs.items()})
        for name, (component_id, prop) in outputs.items():
            assert as_json(getattr(components[component_id], prop)) == as_json(shown[name]), (component_id, prop)
    figures = [c for c in page._traverse() if type(c).__name__ == "Graph"]
    assert len(figures) == 6 and all(c.figure.data for c in figures)


def test_collectives_layout_comes_drawn_for_a_scenario_run_at_once_and_not_for_others():
    import importlib

    from webapp import collective as model
    from webapp.app import create_app, route
    from webapp.pages.collectives import ids

    layout = importlib.import_module("webapp.pages.collectives.layout")

    app = create_app(background=True, warm=False)
    with app.server.app_context():
        page = route("/", "?ranks=16")
        graphs = {c.id: c.figure for c in page._traverse() if type(c).__name__ == "Graph"}
        assert all(
            getattr(graphs[name], "data", None)
            for name in ("coll-topology-graph", "coll-buffers-graph", "coll-gantt-rank", "coll-crossover")
        )
        stores = {c.id: getattr(c, "data", None) for c in page._traverse() if type(c).__name__ == "Store"}
        assert stores[ids.COLL_CROSSOVER_DRAWN] is True
        invalid = route("/", "?ranks=zero")
        assert {c.id: getattr(c, "data", None) for c in invalid._traverse() if type(c).__name__ == "Store"}[
            ids.COLL_CROSSOVER_DRAWN
        ] is False
        values = model.form_from_query("?ranks=16")
        assert layout.drawn_at_load(values, background=True)
        assert not layout.drawn_at_load({**values, "ranks": "zero"}, background=True)  # invalid: the callback says why
        big = model.form_from_query("?ranks=512&size=1GiB")
        assert not layout.drawn_at_load(big, background=True) and layout.first_view(big, layout.VIEW_DEFAULTS) == {}


@pytest.mark.browser
def test_a_first_load_asks_no_route_and_no_run_and_finds_dccs_lazies_resolved(page, live_server):
    """The page comes with the layout request and the Collectives panels and crossover with the
    page: the route callback, the simulation and the crossover answer nothing at load (204),
    validation and the Channels placeholder are not asked at all (the layout has them), the
    figures are drawn from the layout, and Graph, Dropdown and Slider were resolved before the
    first render."""
    answered = []
    page.on(
        "response", lambda r: answered.append((r.request.post_data_json.get("output"), r.status)) if "update-component" in r.url else None
    )
    page.goto(live_server + "/?ranks=8&size=32MiB")
    page.locator("#coll-topology-graph .main-svg").first.wait_for(timeout=30_000)
    page.locator("#coll-crossover .main-svg").first.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    statuses = {output: status for output, status in answered}
    assert statuses.get("page.children", 204) == 204
    run = next(output for output in statuses if "coll-topology-graph.figure" in output)
    crossover = next(output for output in statuses if "coll-crossover.figure" in output)  # with the note and button under it
    assert statuses[run] == 204 and statuses[crossover] == 204
    assert not [output for output in statuses if "coll-scenario.data" in output or "coll-chunks.placeholder" in output]  # in the layout
    ready = page.evaluate("() => window.collsimLazyReady")
    assert "Graph" in ready and len(ready) >= 3
    drawn = page.locator("#coll-sim-time").inner_text()
    assert drawn not in ("", "—")
    page.locator("#coll-size").fill("16MiB")  # and the page still runs what the form asks
    page.locator("#coll-size").press("Enter")
    page.wait_for_function("(before) => document.querySelector('#coll-sim-time').innerText !== before", arg=drawn, timeout=30_000)
