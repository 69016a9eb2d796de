"""Every page is one registered unit (webapp.pages.PAGES): the app, the bench and the browser tests
enumerate the registry; each page's ids start with its prefix; a page added in a test appears in
the navigation and routes with no other file edited; every page's URL is written by one rule."""

from __future__ import annotations

import contextvars
import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import dash
import pytest
from dash import Input, Output, html

from webapp import ids as shell_ids
from webapp import urlstate
from webapp.pages import PAGES, Page

ROOT = Path(__file__).resolve().parents[2]
SHELL_IDS = {shell_ids.URL, shell_ids.URL_WRITTEN, shell_ids.PAGE_INSTANCE}  # what a page may use besides its own ids: the URL


def test_every_page_has_its_own_path_name_and_prefix():
    for attribute in ("path", "name", "prefix", "order"):
        values = [getattr(page, attribute) for page in PAGES]
        assert len(set(values)) == len(values), (attribute, values)
    assert [page.order for page in PAGES] == sorted(page.order for page in PAGES)  # the list is in navigation order


def test_every_page_package_is_a_registered_page():
    """Each package under webapp/pages/ exports its PAGE and is in the registry (found as Dash
    Pages finds its pages folder's modules), named as its package."""
    packages = {path.parent.name for path in (ROOT / "webapp" / "pages").glob("*/__init__.py")}
    assert packages == {page.name for page in PAGES}
    assert all(page.module == f"webapp.pages.{page.name}" for page in PAGES)


@pytest.mark.slow
def test_every_page_appears_in_the_navigation_in_order():
    from webapp.app import create_app, shell

    app = create_app(background=False, warm=False)
    nav = next(c for c in shell(app)._traverse() if getattr(c, "id", None) == shell_ids.NAV)
    links = [(link.id, link.href, link.children) for link in nav.children]
    assert links == [(shell_ids.nav_id(page.name), page.path, page.title) for page in PAGES]


@pytest.mark.slow
@pytest.mark.parametrize("spec", PAGES, ids=lambda spec: spec.name)
def test_a_pages_layout_ids_start_with_its_prefix(spec: Page):
    from webapp.app import create_app

    app = create_app(background=False, warm=False)
    with app.server.app_context():
        tree = spec.layout("")
    found = [c.id for c in tree._traverse() if getattr(c, "id", None) is not None]
    assert found and [i for i in found if not str(i).startswith(spec.prefix + "-")] == []


@pytest.mark.parametrize("spec", PAGES, ids=lambda spec: spec.name)
def test_a_pages_callbacks_use_its_ids_and_only_the_shells_url(spec: Page):
    app = dash.Dash(__name__, suppress_callback_exceptions=True)
    spec.register(app)
    used = set()
    for key, callback in app.callback_map.items():
        used |= {dependency["id"] for dependency in callback["inputs"] + callback["state"]}
        outputs = key.strip(".").split("...") if key.startswith("..") else [key]
        used |= {output.rsplit(".", 1)[0].split("@")[0] for output in outputs}
    assert used and sorted(i for i in used if not i.startswith(spec.prefix + "-") and i not in SHELL_IDS) == []


def test_the_benchs_page_list_is_the_registry():
    spec = importlib.util.spec_from_file_location("render_webapp", ROOT / "bench" / "render_webapp.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.pages() == {page.title: page.path for page in PAGES}
    assert not hasattr(bench, "PAGES")  # no list of its own


def toy_page(registered: list) -> Page:
    """A page of a few lines: a layout that shows its query, one callback."""

    def layout(search: str = "") -> html.Div:
        return html.Div([html.Button("go", id="toy-go"), html.Div(f"toy page {search}", id="toy-text")])

    def register(app: dash.Dash) -> None:
        registered.append(app)
        app.callback(Output("toy-text", "title"), Input("toy-go", "n_clicks"), prevent_initial_call=True)(lambda clicks: f"{clicks}")

    return Page(path="/toy", name="toy", title="Toy", order=len(PAGES), prefix="toy", layout=layout, register=register)


@pytest.mark.slow
def test_a_page_added_to_an_app_appears_in_the_navigation_and_routes():
    from webapp.app import create_app, shell

    registered: list = []
    toy = toy_page(registered)

    def answers() -> dict:
        app = create_app(background=False, warm=False, pages=(*PAGES, toy))
        client = app.server.test_client()
        route = {"output": f"{shell_ids.PAGE}.children", "outputs": {"id": shell_ids.PAGE, "property": "children"},
                 "inputs": [{"id": shell_ids.ROUTE_REQUEST, "property": "data", "value": {"pathname": "/toy", "search": "?x=1"}}],
                 "changedPropIds": [f"{shell_ids.ROUTE_REQUEST}.data"]}  # fmt: skip
        routed = client.post("/_dash-update-component", json=route)
        nav = next(c for c in shell(app)._traverse() if getattr(c, "id", None) == shell_ids.NAV)
        plain = create_app(background=False, warm=False).server.test_client()
        return {"app": app, "status": client.get("/toy").status_code, "elsewhere": plain.get("/toy").status_code,
                "routed": routed.get_json(), "nav": [(link.id, link.href) for link in nav.children]}  # fmt: skip

    got = contextvars.copy_context().run(answers)  # a request sets Dash's current app in the caller's context
    assert registered == [got["app"]]  # its callbacks went onto that app
    assert ("nav-toy", "/toy") in got["nav"]
    assert got["status"] == 200 and got["elsewhere"] == 404  # a page of this app, no page of an app without it
    assert "toy page ?x=1" in json.dumps(got["routed"])  # the shell built it for its path and query


# one rule for every page's URL: the browser's writer (collsim.writeUrl) and urlstate.query_of agree
FORMS = [
    {},
    {"ranks": "16", "preset": "gpt2-xl", "o": ""},
    {"hardware": "dgx-h100", "nodes": "2"},  # under a preset: what it fills is written always
    {"hardware": "", "nodes": "3", "w": "a b&c"},  # no preset: no nodes; & and spaces encoded
]
VIEWS = [  # the Collectives page: its form, and its view (step, colour, compare field and value)
    ({"ranks": "64", "size": "32MiB"}, [3, "chunk", "algorithm", "tree"]),
    ({"ranks": None, "chunks": 0, "hardware": "dgx-h100"}, [0, None, "algorithm", ""]),
]


def node(calls: list[tuple[str, list]], shown: str | None = None) -> list[str | None]:
    """The query each call of assets/collsim.js's writers answers, run by node, with the address
    bar on the page of the call's spec (or on ``shown``); None where a writer writes nothing."""
    script = f"""
        global.window = {{dash_clientside: {{no_update: null}}, location: {{search: ""}}, history: {{replaceState() {{}}}}}};
        {(ROOT / "webapp" / "assets" / "collsim.js").read_text()}
        const calls = {json.dumps(calls)};
        console.log(JSON.stringify(calls.map(([name, args]) => {{
            window.location.pathname = {json.dumps(shown)} || args[args.length - 1].path;
            return window.dash_clientside.collsim[name](...args)[0];
        }})));
    """
    return json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True, timeout=60).stdout)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="no node to run assets/collsim.js")
def test_the_browsers_url_writer_and_python_write_one_query():
    from webapp import collective
    from webapp.pages.collectives.layout import VIEW_DEFAULTS
    from webapp.pages.ddp import model

    spec = model.url_spec()
    forms = [{**model.DEFAULTS, **changes} for changes in FORMS]
    calls = [("writeUrl", [*(form[name] for name in spec["names"]), None, spec]) for form in forms]
    written = node(calls)
    assert written == [model.query_from_form(form) for form in forms]
    assert written[0] == "" and "nodes=2" in written[2] and "ranks=" in written[2] and "nodes" not in written[3]
    spec = urlstate.url_spec(list(collective.DEFAULTS), {**collective.DEFAULTS, **VIEW_DEFAULTS}, path="/")
    calls = [
        ("urlFromForm", [*({**collective.DEFAULTS, **form}[name] for name in spec["names"]), *view, None, spec]) for form, view in VIEWS
    ]
    views = [
        {"step": str(step or 0), "color": color or "step", "cmp": f"{field}:{value}" if value else ""}
        for step, color, field, value in (v for _, v in VIEWS)
    ]
    python = [urlstate.query_of(spec, {**collective.DEFAULTS, **form, **view}) for (form, _), view in zip(VIEWS, views)]
    assert node(calls) == python and "step=3" in python[0] and "cmp=algorithm%3Atree" in python[0]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="no node to run assets/collsim.js")
def test_a_url_writer_writes_nothing_while_the_address_bar_shows_another_page():
    """A write still pending when a link left the page (test_browser_url_race.py has the race in
    Chromium) answers no_update: each page's spec names its path, and only there it writes."""
    specs = {page.path: spec for page in PAGES for spec in [_url_spec(page)] if spec}
    assert specs["/"]["path"] == "/" and specs["/ddp"]["path"] == "/ddp" and len(specs) >= 6  # every page with a writer
    for path, spec in specs.items():
        form = [f"{value}x" for value in spec["defaults"].values()]  # every field away from its default
        name = "urlFromForm" if path == "/" else "writeUrl"
        args = [*form, *([0, "step", "", ""] if path == "/" else []), None, spec]
        assert node([(name, args)])[0].startswith("?")  # on its own page: written
        elsewhere = "/ddp" if path == "/" else "/"
        assert node([(name, args)], shown=elsewhere) == [None], f"the writer of {path} wrote on {elsewhere}"
        assert node([(name, args)], shown=path + "/") != [None]  # a trailing slash is the same page (as the shell routes it)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="no node to run assets/collsim.js")
def test_a_url_writer_writes_only_for_the_page_the_browser_last_asked_for():
    """Once the routing gate has asked for a page (a link, Back), a late write of the page being
    replaced, even by a page of the same path, answers no_update; the page built for that request
    (its instance: the request's time, webapp.app.instance_of) writes. test_browser_url_race.py
    has the race in Chromium."""
    from webapp.pages.ddp import model

    spec = model.url_spec()
    values = [f"{value}x" for value in spec["defaults"].values()]
    script = f"""
        global.window = {{dash_clientside: {{no_update: null}}, location: {{pathname: "/ddp", search: ""}}, history: {{replaceState() {{}}}}}};
        {(ROOT / "webapp" / "assets" / "collsim.js").read_text()}
        global.dash_clientside = {{...window.dash_clientside, callback_context: {{triggered: [{{prop_id: "url.search"}}]}}}};
        const writer = window.dash_clientside.collsim, values = {json.dumps(values)}, spec = {json.dumps(spec)};
        const loaded = writer.writeUrl(...values, null, spec)[0];  // the page a load's layout carries
        const request = writer.routeGate("/ddp", "?ranks=16", "", null);  // a link to the same page
        const again = writer.routeGate("/ddp", "?ranks=32", "", null);  // and another before it was built
        console.log(JSON.stringify([loaded, writer.writeUrl(...values, null, spec)[0], writer.writeUrl(...values, request.at, spec)[0],
                                    writer.writeUrl(...values, again.at, spec)[0], again.at > request.at]));
    """
    result = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True, timeout=60)
    loaded, stale, superseded, current, later = json.loads(result.stdout)
    assert loaded and loaded.startswith("?") and current == loaded  # the current page writes
    assert stale is None and superseded is None  # the pages the browser no longer asks for do not
    assert later  # two requests in one millisecond are still two instances


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="no node to run assets/collsim.js")
def test_a_server_answer_for_a_page_the_container_no_longer_shows_is_dropped():
    """collsim.js's guard on Dash's callback requests, the answers released in a chosen order:
    a preset's answer asked of the page a link replaced (even by one of the same path, whose
    component ids are the same) comes back empty (204, as a callback that prevents its update), as
    do a route answer superseded by a later route request and a background run's poll of the page
    replaced; the new page's own answers, and the route it was built from, pass.
    test_browser_url_race.py has the race in Chromium."""
    script = f"""
        const held = [];
        global.window = {{dash_clientside: {{no_update: null}}, location: {{pathname: "/", search: ""}}, history: {{replaceState() {{}}}},
            fetch: (url, options) => new Promise(resolve => held.push(() => resolve(new Response("{{}}", {{status: 200}}))))}};
        {(ROOT / "webapp" / "assets" / "collsim.js").read_text()}
        global.dash_clientside = {{...window.dash_clientside, callback_context: {{triggered: [{{prop_id: "url.search"}}]}}}};
        const gate = window.dash_clientside.collsim.routeGate, update = "/_dash-update-component";
        const preset = {{output: "coll-latency.value", inputs: [{{id: "coll-hardware", property: "value", value: "dgx-h100"}}]}};
        const ask = (body, query = "") => window.fetch(update + query, {{method: "POST", body: JSON.stringify(body)}});
        const route = request => ask({{output: "page.children", inputs: [{{id: "{shell_ids.ROUTE_REQUEST}", property: "data", value: request}}]}});
        const status = async (answer, index) => {{ held[index](); return (await answer).status; }};
        (async () => {{
            const early = ask(preset), poll = ask(preset, "?cacheKey=k");  // of the page a load's layout carries
            const shown = [await status(poll, 1)];  // while that page is shown: it passes
            const first = route(gate("/", "?ranks=16", "", null)), second = route(gate("/", "?ranks=32", "", null));
            shown.push(await status(first, 2), await status(second, 3));  // the first link's page was never shown
            const later = ask(preset, "?cacheKey=k"), fresh = ask(preset);
            shown.push(await status(early, 0), await status(later, 4), await status(fresh, 5));
            console.log(JSON.stringify(shown));
        }})();
    """
    result = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True, timeout=60)
    poll, superseded, routed, early, later_poll, fresh = json.loads(result.stdout)
    assert (poll, routed, fresh) == (200, 200, 200)  # the shown page's answers, the route asked for
    assert (superseded, early, later_poll) == (204, 204, 204)  # a route no longer asked for, the old page's answers


def _url_spec(page: Page) -> dict | None:
    """The URL writer's spec a page's layout carries (a dcc.Store whose data names a path), or None."""
    tree = page.layout("")
    for component in tree._traverse() if hasattr(tree, "_traverse") else ():
        data = getattr(component, "data", None)
        if isinstance(data, dict) and {"names", "defaults", "path"} <= set(data):
            return data
    return None


@pytest.mark.browser
@pytest.mark.slow
def test_every_registered_page_opens_from_its_link_and_writes_its_url_in_the_browser(page, live_server):
    """Each page of the registry, reached by its link, is drawn with its own ids; on the DDP page
    (the query once written by the server) a changed input is written into the URL by the browser's
    writer, and a reload restores it."""
    import re

    from playwright.sync_api import expect

    page.goto(live_server + "/no-such-page")
    for spec in PAGES:
        page.locator(f"#{shell_ids.nav_id(spec.name)}").click()
        expect(page).to_have_url(re.compile(re.escape(live_server + spec.path) + r"(\?.*)?$"))
        expect(page.locator(f"#{shell_ids.PAGE} [id^='{spec.prefix}-']").first).to_be_attached()
    page.goto(live_server + "/ddp")
    ranks = page.locator("#ddp-ranks")
    ranks.fill("16")
    ranks.press("Enter")
    expect(page).to_have_url(re.compile(r"/ddp\?.*ranks=16"))
    page.reload()
    expect(page.locator("#ddp-ranks")).to_have_value("16")
