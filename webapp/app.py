"""The Dash app and its shell: a navigation bar, the URL, and the page container.

Pages are the :class:`webapp.pages.Page` specs of :data:`webapp.pages.PAGES` (one package each),
registered with Dash Pages (``dash.register_page``: path, name, order, layout); the shell's links and
routing read the app's list of them. Routing: a page may write its scenario
into the query string (``?ranks=16&size=1MiB``) without being rebuilt; the query is read when the
page is built, which is what makes reload, shared links and Back/Forward restore the view. A query
the page wrote itself stops in the browser (``collsim.routeGate`` in assets/collsim.js), so an
input change sends the server no routing request. Dash's own page router rebuilds the page on
every change of the query, so the shell routes from the registry itself, behind that gate.
"""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import dash
import flask
import plotly.io as pio
from dash import ClientsideFunction, Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from sim import files
from webapp import helper, ids, jobs
from webapp.pages import PAGES, Page

__all__ = ["App", "create_app", "route", "shell"]


def pages_of(app: dash.Dash | None) -> tuple[Page, ...]:
    """The pages an app serves (:data:`webapp.pages.PAGES` unless it was made with others)."""
    return getattr(app, "collsim_pages", PAGES)


def register_pages(app: dash.Dash, pages: tuple[Page, ...]) -> None:
    """Each page into the Dash Pages registry, and its callbacks onto ``app``."""
    app.collsim_pages = tuple(sorted(pages, key=lambda page: page.order))
    for page in app.collsim_pages:
        dash.register_page(page.module, path=page.path, name=page.title, title=app.title, order=page.order, layout=page.layout)
        page.register(app)


def shell(app: dash.Dash | None = None) -> html.Div:
    """The shell; in the layout request of a page load (``/_dash-layout``, whose Referer is the
    page's address) with that page already built in it, so the first load asks no routing
    request and renders the page with the shell (:func:`built_route`)."""
    links = [dcc.Link(page.title, href=page.path, className="nav-link", id=ids.nav_id(page.name)) for page in pages_of(app)]
    built = built_route(app) if app is not None else None
    return html.Div(
        [
            dcc.Location(id=ids.URL, refresh=False),
            dcc.Store(id=ids.URL_WRITTEN),
            dcc.Store(id=ids.ROUTE_REQUEST),
            dcc.Store(id=ids.ROUTE_BUILT, data=built and {"pathname": built[0], "search": built[1]}),
            html.Header(
                [html.Span("collsim", className="brand"), html.Span("what-if explorer", className="tagline"), html.Nav(links, id=ids.NAV)],
                className="header",
            ),
            html.Main(instance_of(built[2]) if built else None, id=ids.PAGE, className="page"),
        ]
    )


def built_route(app: dash.Dash) -> tuple[str, str, object] | None:
    """(path, query, page) for the page that asked for the layout, or None outside a layout
    request, without a Referer (then the routing callback builds the page, as on any later
    navigation), or for a Referer on another host.

    The browser's gate (``collsim.routeGate``) skips the first route request that names this
    path and query, once: the page is there already. Built here as :func:`route` builds it."""
    from urllib.parse import urlsplit

    from flask import has_request_context, request

    if not has_request_context() or not request.path.endswith("_dash-layout") or not request.referrer:
        return None
    page = urlsplit(request.referrer)
    if page.netloc != request.host:
        return None
    prefix = app.config.requests_pathname_prefix or "/"
    path = "/" + page.path[len(prefix) :] if page.path.startswith(prefix) else page.path
    search = "?" + page.query if page.query else ""
    return page.path, search, route(path, search, pages=pages_of(app))


def route_requests(pages: tuple[Page, ...]) -> Any:
    """The routing callback behind the browser's gate (``collsim.routeGate``), for these pages."""

    def on_route_request(request: dict | None) -> list:
        if not request:
            raise PreventUpdate
        return instance_of(route(request.get("pathname"), request.get("search"), pages=pages), request.get("at"))

    return on_route_request


def instance_of(page: object, at: int | None = None) -> list:
    """The page container's children: a built page and which one it is (:data:`ids.PAGE_INSTANCE`:
    the ``at`` of the route request it was built for; None for the page a load's layout carries).
    A URL writer writes only for the page the browser last asked for (collsim.js, collsimQuery):
    a late write of a page being replaced, even by a page of the same path, replaced the history
    entry of the link that replaces it. Its ``at`` also tells the browser which page a server answer
    is for (collsim.js, collsimAnswer): one for a page the container no longer shows is dropped."""
    return [dcc.Store(id=ids.PAGE_INSTANCE, data=at), page]


def route(
    pathname: str | None, search: str | None, written: str | None = None, search_only: bool = False, pages: tuple[Page, ...] = PAGES
) -> object:
    """The page for a path (unknown paths get a short 'not found' with links).

    A page writes its inputs into the query string as they change (and the query it wrote into
    ``written``); a query it did not write comes from Back/Forward or an edited address, and
    rebuilds the page from it, so the inputs follow the browser's history."""
    if search_only and (search or "") == (written or ""):
        raise PreventUpdate
    try:
        return _route(pathname, search, pages)
    except Exception as error:  # noqa: BLE001 - a broken page must not take the shell down
        return html.Div([html.H2("This page failed to build"), html.Pre(f"{type(error).__name__}: {error}")], className="missing")


def _route(pathname: str | None, search: str | None, pages: tuple[Page, ...]) -> object:
    path = (pathname or "/").rstrip("/") or "/"
    for page in pages:
        if path == (page.path.rstrip("/") or "/"):
            return page.layout(search or "")
    return html.Div(
        [html.H2("Page not found"), html.P(f"No page at {path}."), html.Ul([html.Li(dcc.Link(p.title, href=p.path)) for p in pages])],
        className="card",
    )


# Dash puts @babel/polyfill (core-js 2 and regenerator) before React: ~0.1 s of a first load to
# evaluate in Chromium, and its String.prototype.trim replaces the native one (~15 ms of each
# update). Browsers the app supports need none of it but the global regeneratorRuntime that the
# lazy loaders of dash-renderer and dcc call, which webapp/assets/regenerator-runtime.js defines.
POLYFILL_TAG = re.compile(r"<script[^>]*/polyfill@[^>]*></script>\s*")
# Dash serves dash_table's bundle to every page (12 ms to evaluate); no page has a DataTable.
TABLE_TAG = re.compile(r"<script[^>]*/dash_table/[^>]*></script>\s*")
# dcc's main bundle, whose fingerprint (".v4_4_1m1795493357.js") its lazy chunks are served under
DCC_TAG = re.compile(r'<script src="(?P<prefix>[^"]*/dcc/)dash_core_components(?P<print>\.v[^"/]*\.js)"></script>')
# dcc's lazy chunks the pages draw with (Graph everywhere, Dropdown and Slider on every page with
# a form): dcc asks for each only when a page first renders one, unfingerprinted, so revalidated on
# every load, one round trip after the page was rendered. Served as scripts of the page instead,
# fingerprinted (cached for a year), they are installed before the renderer starts and dcc's
# import() finds them without a request. (Upload, on Sim vs measured only, stays lazy.)
EAGER_CHUNKS = ("graph", "dropdown", "slider")
# Assets are served with ?m=<modification time> (a new file, a new URL): those responses may be
# cached without revalidation. Flask's default (no-cache) made every page load ask the server again
# for each of the seven assets, plotly.js among them, before any could run (in one traced load on
# a loaded machine the last 304 came 0.5 s after navigation start, the cached bundles at 50 ms).
ASSET_MAX_AGE = 31_536_000  # a year, as Dash serves its own fingerprinted bundles


class App(dash.Dash):
    """The Dash app, served without @babel/polyfill and dash_table (:data:`POLYFILL_TAG`,
    :data:`TABLE_TAG`), with dcc's lazy chunks among its scripts (:data:`EAGER_CHUNKS`)."""

    def interpolate_index(self, **kwargs: Any) -> str:
        kwargs["scripts"] = page_scripts(kwargs.get("scripts", ""))
        return super().interpolate_index(**kwargs)


def page_scripts(scripts: str) -> str:
    """Dash's script tags for the index page, less the polyfill and dash_table, with dcc's lazy
    chunks that every page renders right after dcc's own bundles."""
    scripts = TABLE_TAG.sub("", POLYFILL_TAG.sub("", scripts))
    dcc = DCC_TAG.search(scripts)
    if not dcc:
        return scripts
    shared = scripts.find("</script>", scripts.find("dash_core_components-shared", dcc.end()))
    at = shared + len("</script>") if shared >= 0 else dcc.end()
    chunks = "".join(f'\n<script src="{dcc["prefix"]}async-{name}{dcc["print"]}"></script>' for name in EAGER_CHUNKS)
    return scripts[:at] + chunks + scripts[at:]


def cache_fingerprinted_assets(response: Any) -> Any:
    """Let a browser keep an asset served under its fingerprint (``?m=``) for a year."""
    from flask import request

    if request.path.startswith("/assets/") and request.args.get("m") and response.status_code in (200, 304):
        response.cache_control.no_cache = None
        response.cache_control.public = True
        response.cache_control.max_age = ASSET_MAX_AGE
    return response


def not_found_status(response: Any) -> Any:
    """A page load of an address that is no page gets HTTP 404 (the shell still says "Page not
    found" and links the pages): crawlers, link checkers and monitors read the status, not the
    text. Dash's own routes (``/_dash-...``, ``/_favicon...``) and assets are left alone."""
    from flask import request

    path = request.path.rstrip("/") or "/"
    if request.method != "GET" or response.status_code != 200 or response.mimetype != "text/html":
        return response
    if path.startswith(("/_", "/assets")) or path in {(page.path.rstrip("/") or "/") for page in pages_of(flask.current_app.dash_app)}:
        return response
    response.status_code = 404
    return response


def refuse_paths() -> None:
    """Every request (a page's layout, a callback, a download) runs refusing server paths that a
    link or form names: only files of ``collsim ui --files`` folders open (:mod:`sim.files`)."""
    flask.g.collsim_refusing = files.refusing_paths()
    flask.g.collsim_refusing.__enter__()


def stop_refusing_paths(error: BaseException | None = None) -> None:
    refusing = flask.g.pop("collsim_refusing", None)
    if refusing is not None:
        refusing.__exit__(None, None, None)


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
    manager = jobs.FollowingManager(cache)  # a job ends once its page stops polling it (webapp/jobs.py)
    manager.directory = directory
    return manager


def create_app(db_path: str | None = None, background: bool = True, warm: bool = True, pages: tuple[Page, ...] = PAGES) -> dash.Dash:
    """A new app with every page's callbacks registered on it (no global callback list).

    ``db_path``: a results store for the sim-vs-measured page (read-only); None: the bundled
    sample data. ``background``: run large collectives as background jobs with progress and
    Cancel (a per-app cache directory); False: only the direct path (closed form above it).
    ``warm``: do a first visitor's server work once before serving (:func:`warm_up`). ``pages``:
    the pages it serves (:data:`webapp.pages.PAGES`)."""
    manager = background_manager() if background else None
    # Dash writes responses through plotly's JSON encoder, which takes orjson when installed; for
    # these figures its cleaning pass is slower (8-rank update 7 -> 13 ms, 64 ranks 16 -> 40 ms)
    pio.json.config.default_engine = "json"
    helper.start_helper()  # the crossover's own process, warming up while the app is built
    app = App(
        __name__,
        title="collsim explorer",
        assets_folder=str(Path(__file__).parent / "assets"),
        suppress_callback_exceptions=True,
        update_title=None,
        background_callback_manager=manager,
        use_pages=True,
        pages_folder="",  # the pages register themselves (register_pages), no folder is scanned
    )
    app._background_manager = manager  # the pages' background callbacks run through it
    app.server.config["COLLSIM_DB"] = db_path
    app.server.dash_app = app  # not_found_status reads the app's pages
    app.server.before_request(refuse_paths)
    app.server.teardown_request(stop_refusing_paths)
    app.server.after_request(cache_fingerprinted_assets)
    app.server.after_request(not_found_status)
    register_pages(app, pages)
    app.layout = lambda: shell(app)
    app.clientside_callback(
        ClientsideFunction("collsim", "routeGate"),
        Output(ids.ROUTE_REQUEST, "data"),
        Input(ids.URL, "pathname"),
        Input(ids.URL, "search"),
        State(ids.URL_WRITTEN, "data"),
        State(ids.ROUTE_BUILT, "data"),
    )
    app.callback(Output(ids.PAGE, "children"), Input(ids.ROUTE_REQUEST, "data"))(route_requests(app.collsim_pages))
    if warm:
        warm_up(app)
    return app


def warm_up(app: dash.Dash) -> None:
    """A first visitor's server work, done once at start-up: every page's layout and the
    figures of its default inputs (:meth:`webapp.pages.Page.first_run`), encoded as a response is
    (the imports, first-call setup and the Collectives page's default simulation, which is kept,
    cost a first visitor ~0.4 s of CPU: 125 ms -> 18 ms for the Collectives run, 65 ms -> 5 ms for
    the DDP layout, which now carries its runs), and each page's own ``warm`` work last (the default
    crossover, waited for from the helper process: else the first page waited for it, and the
    helper's start-up work shared the CPU with the browser's first load). Nothing here may stop the
    app from starting: a failure is logged and skipped."""
    import json
    import logging

    from plotly.utils import PlotlyJSONEncoder

    pages = pages_of(app)
    steps = [lambda page=page: route(page.path, "", pages=pages) for page in pages] + [page.first_run for page in pages]
    steps += [warm for page in pages for warm in page.warm]
    with app.server.app_context():
        for step in steps:
            try:
                json.dumps(step(), cls=PlotlyJSONEncoder)
            except Exception:  # noqa: BLE001 - warming is an optimisation, never a reason not to start
                logging.getLogger(__name__).exception("warming the app up")
