"""The Dash app and its shell: a navigation bar, the URL, and the page container.

Routing: a page may write its scenario into the query string (``?ranks=16&size=1MiB``) without
being rebuilt; the query is read when the page is built, which is what makes reload, shared
links and Back/Forward restore the view. A query the page wrote itself stops in the browser
(:data:`ROUTE_GATE_JS`), so an input change sends the server no routing request.
"""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import dash
import plotly.io as pio
from dash import Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from webapp import collective, ids
from webapp.pages import collectives, compare, ddp, guides

PAGES = (collectives, ddp, compare, guides)  # each: PATH, TITLE, layout(search), register(app)


def shell() -> html.Div:
    links = [dcc.Link(page.TITLE, href=page.PATH, className="nav-link", id=f"nav-{page.NAME}") for page in PAGES]
    return html.Div(
        [
            dcc.Location(id=ids.URL, refresh=False),
            dcc.Store(id=ids.URL_WRITTEN),
            dcc.Store(id=ids.ROUTE_REQUEST),
            html.Header(
                [html.Span("collsim", className="brand"), html.Span("what-if explorer", className="tagline"), html.Nav(links, id=ids.NAV)],
                className="header",
            ),
            html.Main(id=ids.PAGE, className="page"),
        ]
    )


# The routing gate, in the browser: a query the page wrote itself (every input change writes one)
# asks the server nothing; a new path, or a query from Back/Forward or the address bar, becomes a
# route request (with a time, so the same request twice still builds the page again).
ROUTE_GATE_JS = """
function(pathname, search, written) {
    const triggered = (dash_clientside.callback_context.triggered || []).map(t => t.prop_id);
    const searchOnly = triggered.length > 0 && triggered.every(id => id.endsWith('.search'));
    if (searchOnly && (search || '') === (written || '')) { return window.dash_clientside.no_update; }
    return {pathname: pathname, search: search || '', at: Date.now()};
}
"""


def on_route_request(request: dict | None) -> object:
    """The routing callback behind the browser's gate (:data:`ROUTE_GATE_JS`)."""
    if not request:
        raise PreventUpdate
    return route(request.get("pathname"), request.get("search"))


def route(pathname: str | None, search: str | None, written: str | None = None, search_only: bool = False) -> object:
    """The page for a path (unknown paths get a short 'not found' with links).

    A page writes its inputs into the query string as they change (and the query it wrote into
    ``written``); a query it did not write comes from Back/Forward or an edited address, and
    rebuilds the page from it, so the inputs follow the browser's history."""
    if search_only and (search or "") == (written or ""):
        raise PreventUpdate
    try:
        return _route(pathname, search)
    except Exception as error:  # noqa: BLE001 - a broken page must not take the shell down
        return html.Div([html.H2("This page failed to build"), html.Pre(f"{type(error).__name__}: {error}")], className="missing")


def _route(pathname: str | None, search: str | None) -> object:
    path = (pathname or "/").rstrip("/") or "/"
    for page in PAGES:
        if path == page.PATH.rstrip("/") or (path == "/" and page.PATH == "/"):
            return page.layout(search or "")
    return html.Div(
        [html.H2("Page not found"), html.P(f"No page at {path}."), html.Ul([html.Li(dcc.Link(p.TITLE, href=p.PATH)) for p in PAGES])],
        className="card",
    )


# Dash puts @babel/polyfill (core-js 2 and regenerator) before React: ~0.1 s of a first load to
# evaluate in Chromium, and its String.prototype.trim replaces the native one (~15 ms of each
# update). Browsers the app supports need none of it but the global regeneratorRuntime that the
# lazy loaders of dash-renderer and dcc call, which webapp/assets/regenerator-runtime.js defines.
POLYFILL_TAG = re.compile(r"<script[^>]*/polyfill@[^>]*></script>\s*")


class App(dash.Dash):
    """The Dash app, served without @babel/polyfill (see :data:`POLYFILL_TAG`)."""

    def interpolate_index(self, **kwargs: Any) -> str:
        kwargs["scripts"] = POLYFILL_TAG.sub("", kwargs.get("scripts", ""))
        return super().interpolate_index(**kwargs)


def background_manager() -> Any | None:
    """A Dash background-callback manager with its own cache in a new temporary directory
    (removed when the process exits), or None when ``diskcache``/``multiprocess`` are missing
    (then large scenarios get the closed form or a refusal instead of a background run)."""
    try:
        import diskcache
        import multiprocess  # noqa: F401 - DiskcacheManager runs each job in a multiprocess.Process
        import psutil  # noqa: F401 - and stops it with psutil
    except ImportError:
        return None
    directory = tempfile.mkdtemp(prefix="collsim-ui-cache-")
    cache = diskcache.Cache(directory)

    def clean() -> None:
        cache.close()
        shutil.rmtree(directory, ignore_errors=True)

    atexit.register(clean)
    manager = dash.DiskcacheManager(cache)
    manager.directory = directory
    return manager


def create_app(db_path: str | None = None, background: bool = True) -> dash.Dash:
    """A new app with every page's callbacks registered on it (no global callback list).

    ``db_path``: a results store for the sim-vs-measured page (read-only); None: the bundled
    sample data. ``background``: run large collectives as background jobs with progress and
    Cancel (a per-app cache directory); False: only the direct path (closed form above it)."""
    manager = background_manager() if background else None
    # Dash writes responses through plotly's JSON encoder, which takes orjson when installed; for
    # these figures its cleaning pass is slower (8-rank update 7 -> 13 ms, 64 ranks 16 -> 40 ms)
    pio.json.config.default_engine = "json"
    collective.start_helper()  # the crossover's own process, warming up while the app is built
    app = App(
        __name__,
        title="collsim explorer",
        assets_folder=str(Path(__file__).parent / "assets"),
        suppress_callback_exceptions=True,
        update_title=None,
        background_callback_manager=manager,
    )
    app._background_manager = manager  # the pages' background callbacks run through it
    app.server.config["COLLSIM_DB"] = db_path
    app.layout = shell()
    app.clientside_callback(
        ROUTE_GATE_JS,
        Output(ids.ROUTE_REQUEST, "data"),
        Input(ids.URL, "pathname"),
        Input(ids.URL, "search"),
        State(ids.URL_WRITTEN, "data"),
    )
    app.callback(Output(ids.PAGE, "children"), Input(ids.ROUTE_REQUEST, "data"))(on_route_request)
    for page in PAGES:
        page.register(app)
    return app
