"""Playwright against the system Chromium, one live server and one browser per session."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
]
ARTIFACTS = Path(os.environ.get("COLLSIM_ARTIFACTS", Path(__file__).resolve().parents[2] / "build" / "webapp-artifacts"))
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium fonts-liberation)")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "headless": True, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1400, "height": 1000}, "accept_downloads": True}


@pytest.fixture(scope="session")
def live_server():
    from werkzeug.serving import make_server

    from webapp.app import create_app

    server = make_server("127.0.0.1", 0, create_app().server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def shot(page, request):
    """shot(name, docs=False): a full-page screenshot into the artifacts; with docs=True and
    COLLSIM_UPDATE_DOCS_IMG=1 also into docs/img (so a plain test run leaves the tree clean)."""

    def take(name: str, docs: bool = False, full_page: bool = True) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        if docs and os.environ.get("COLLSIM_UPDATE_DOCS_IMG") == "1":
            DOCS_IMG.mkdir(parents=True, exist_ok=True)
            (DOCS_IMG / f"{name}.png").write_bytes(path.read_bytes())
        return path

    return take


@pytest.fixture(scope="session")
def shared_context(browser, browser_context_args):
    """One context for the session: pages share the HTTP cache, so plotly.js loads once."""
    from playwright.sync_api import expect

    expect.set_options(timeout=10_000)
    context = browser.new_context(**browser_context_args)
    yield context
    context.close()


@pytest.fixture
def page(shared_context):
    """A fresh page per test (replaces pytest-playwright's page, which opens a context per test)."""
    page = shared_context.new_page()
    yield page
    page.close()
