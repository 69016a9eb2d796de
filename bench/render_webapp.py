"""Browser timing of the Collectives page (a benchmark, not a test: pytest does not collect it).

For each server URL given, in turn (interleaved, so both see the same machine load), a
headless Chromium changes an input and records the time from the change to the last
``plotly_afterplot`` of any graph, and the time to the last callback response before it
(server + network); the rest is the browser drawing. Prints median and spread per case.

    python bench/render_webapp.py --serve 8061 &           # or --url of a running app
    python bench/render_webapp.py --url new=http://127.0.0.1:8061 --url old=http://... -n 7

``--serve PORT`` serves ``webapp.app.create_app()`` from whatever ``webapp`` is first on the path
(put an older checkout first on PYTHONPATH to time it).

``--fresh LABEL=CHECKOUT`` (repeatable) times the first visitor after a server start: for each
round and checkout, a new server (``--serve`` with that checkout on PYTHONPATH) is started, and
as soon as it accepts connections a browser with an empty cache opens the Collectives page;
the time from navigation start to the last figure drawn is the first visitor's wait.

    python bench/render_webapp.py --fresh old=/path/to/old --fresh new=$PWD -n 5 --no-loads --case none

What a "first load" is (``--cache``): a page opened in a new tab, timed from navigation start to
the last graph drawn (or response received), the server warm, one warm-up round not counted.

- ``returning`` (the default since 2026-11-24): a browser with a profile on disk that has opened
  the app before, as a person's own browser: its HTTP cache and Chromium's V8 code cache (kept
  only for scripts it did not have to revalidate, and only in a profile on disk) are warm.
- ``private``: a private (incognito) context that has opened the app before: HTTP cache warm, no
  code cache (scripts are parsed and compiled on every load). The only mode before 2026-11-24.
- ``cold``: a new private context for every load: nothing cached, every script downloaded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

HOOK = """() => {
    window.__ap = [];
    for (const g of document.querySelectorAll('.js-plotly-plot')) {
        if (g.__benchHooked) continue;
        g.__benchHooked = true;
        g.on('plotly_afterplot', () => window.__ap.push([g.parentElement.id, performance.now()]));
    }
}"""
RESULT = """t0 => {
    const responses = performance.getEntriesByType('resource')
        .filter(e => e.name.includes('_dash-update-component') && e.startTime >= t0 - 1);
    const plots = window.__ap.filter(([id, t]) => t >= t0);
    const spans = responses.map(r => [r.startTime, r.responseEnd]).sort((a, b) => a[0] - b[0]);
    let waiting = 0, end = -Infinity;  // time with at least one request in flight
    for (const [s, e] of spans) { if (e > end) { waiting += e - Math.max(s, end); end = e; } }
    return {last_plot: Math.max(t0, ...plots.map(p => p[1])) - t0,
            first_request: spans.length ? spans[0][0] - t0 : 0, waiting: waiting,
            bytes: responses.reduce((n, r) => n + r.transferSize, 0),
            requests: responses.length, plots: plots.map(p => p[0])};
}"""
CASES = {
    # name: (page query, field, value A, value B): the input alternates between A and B;
    # (page query, field, values...): a new value each time
    "size 64MiB<->32MiB at 8 ranks": ("?ranks=8", "size", "32MiB", "64MiB"),
    "ranks 8<->7 (all panels)": ("?ranks=8", "ranks", "7", "8"),
    "size 64MiB<->32MiB at 64 ranks": ("?ranks=64", "size", "32MiB", "64MiB"),
    "ranks 64<->63 (all panels)": ("?ranks=64", "ranks", "63", "64"),
    "size on two_level, 16 ranks": ("?topology=two_level&ranks=16&gpus_per_node=4&algorithm=hierarchical", "size", "32MiB", "64MiB"),
    "step slider at 64 ranks": ("?ranks=64", "step", "", ""),
    # a rank count the server has not seen: its crossover is computed, not read from the cache
    "ranks 8->new count (uncached)": ("?ranks=8", "ranks", *[str(p) for p in range(9, 40)]),
    "ranks 64->new count (uncached)": ("?ranks=64", "ranks", *[str(p) for p in range(65, 96)]),
    # a network the server has not seen (each bandwidth new): the crossover is computed too
    "bandwidth at 8 ranks, new value (uncached)": ("?ranks=8", "bandwidth", *[f"{b}GB/s" for b in range(11, 49)]),
    # a size the server has not seen: simulated, not read from the kept outcomes
    "size at 8 ranks, new value (uncached)": ("?ranks=8", "size", *[f"{m}MiB" for m in range(33, 63)]),
    "size at 64 ranks, new value (uncached)": ("?ranks=64", "size", *[f"{m}MiB" for m in range(33, 63)]),
}


def pages() -> dict[str, str]:
    """The registered pages (:data:`webapp.pages.PAGES`), title -> path, as the first loads time them."""
    from webapp.pages import PAGES

    return {page.title: page.path for page in PAGES}


# on a fresh page: hook every graph's plotly_afterplot as soon as it exists, to time first loads;
# and every Plotly.newPlot/react call's end: a graph drawn within one task (before the 10 ms
# poll found it) fired its afterplot unseen, and its load was timed at the last response instead
INIT = """window.__ap = []; setInterval(() => {
    for (const g of document.querySelectorAll('.js-plotly-plot')) {
        if (g.__benchHooked || !g.on) continue;
        g.__benchHooked = true;
        g.on('plotly_afterplot', () => window.__ap.push([g.parentElement.id, performance.now()]));
    }
    if (window.Plotly && window.Plotly.react && !window.Plotly.__benchWrapped) {
        window.Plotly.__benchWrapped = true;
        for (const name of ['newPlot', 'react']) {
            const call = window.Plotly[name];
            window.Plotly[name] = function (gd) {
                const el = typeof gd === 'string' ? document.getElementById(gd) : gd;
                const done = call.apply(this, arguments);
                Promise.resolve(done).then(() => window.__ap.push([el && el.parentElement ? el.parentElement.id : '', performance.now()]));
                return done;
            };
        }
    }
}, 10);"""
LOADED = """() => {
    const responses = performance.getEntriesByType('resource').map(e => e.responseEnd);
    return Math.max(...window.__ap.map(p => p[1]), ...responses);
}"""


def quiet(page, settle_ms: int = 1200, limit_s: float = 20.0) -> None:
    """Wait until no graph has redrawn and no request has been in flight for ``settle_ms``."""
    deadline = time.time() + limit_s
    last = -1
    while time.time() < deadline:
        count = page.evaluate("() => window.__ap.length + performance.getEntriesByType('resource').length")
        if count == last:
            return
        last = count
        page.wait_for_timeout(settle_ms)


def measure(page, case: str, flip: bool, index: int = 0) -> dict:
    _, field, *values = CASES[case]
    a, b = (values[0], values[1]) if len(values) == 2 else (values[index % len(values)],) * 2
    page.bring_to_front()  # a tab in the background has its animation frames throttled: +50 ms
    page.evaluate(HOOK)
    page.evaluate("() => performance.clearResourceTimings()")
    if field == "step":
        thumb = page.locator("#coll-step [role=slider]")
        t0 = page.evaluate("() => performance.now()")
        thumb.press("ArrowRight" if flip else "ArrowLeft")
    else:
        box = page.locator(f"#coll-{field}")
        box.fill(b if flip else a)
        t0 = page.evaluate("() => performance.now()")
        box.press("Enter")
    page.wait_for_timeout(300)
    quiet(page)
    return page.evaluate(RESULT, t0)


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1400, "height": 1000}
CACHES = ("returning", "private", "cold")


def run(
    urls: dict[str, str],
    repeats: int,
    chromium: str,
    cases: list[str] | None = None,
    loads: bool = True,
    caches: tuple[str, ...] = ("returning",),
) -> None:
    import tempfile

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="collsim-bench-profile-") as profile:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        if "returning" in caches:  # a profile on disk (Chromium keeps no code cache in a private context)
            context = p.chromium.launch_persistent_context(
                profile, executable_path=chromium, headless=True, args=CHROMIUM_ARGS, viewport=VIEWPORT
            )
        else:
            context = browser.new_context(viewport=VIEWPORT)
        if loads:
            for cache in caches:
                if cache == "returning":
                    first_loads(lambda: context, urls, repeats, cache)
                elif cache == "private":
                    private = browser.new_context(viewport=VIEWPORT)
                    first_loads(lambda private=private: private, urls, repeats, cache)
                    private.close()
                else:
                    first_loads(lambda: browser.new_context(viewport=VIEWPORT), urls, repeats, cache, own=True)
        for case in [name for name in CASES if not cases or any(part in name for part in cases)]:
            pages = {}
            for label, url in urls.items():
                page = context.new_page()
                page.goto(url + "/" + CASES[case][0])
                page.locator("#coll-sim-time").wait_for(timeout=30_000)
                page.wait_for_timeout(1500)
                page.evaluate(HOOK)
                pages[label] = page
            samples: dict[str, list[dict]] = {label: [] for label in urls}
            for index in range(repeats + 1):
                for label, page in pages.items():  # interleaved
                    sample = measure(page, case, index % 2 == 0, index)
                    if index:  # the first round warms up
                        samples[label].append(sample)
            for label, rows in samples.items():
                total = [row["last_plot"] for row in rows]
                wait = [row["waiting"] for row in rows]
                # browser only: neither the input's debounce nor any request in flight
                draw = [row["last_plot"] - row["first_request"] - row["waiting"] for row in rows]
                med = statistics.median
                print(
                    f"{case:32s} {label:6s} total {med(total):5.0f} ms [{min(total):.0f}-{max(total):.0f}]"
                    f" | debounce {med([r['first_request'] for r in rows]):3.0f}"
                    f" | requests in flight {med(wait):4.0f} [{min(wait):.0f}-{max(wait):.0f}]"
                    f" | browser only {med(draw):4.0f} [{min(draw):.0f}-{max(draw):.0f}]"
                    f" | {med([r['requests'] for r in rows]):.0f} requests, {med([r['bytes'] for r in rows]) / 1e3:.0f} kB,"
                    f" {med([len(r['plots']) for r in rows]):.0f} redraws",
                    flush=True,
                )
            for page in pages.values():
                page.close()
        context.close()
        browser.close()


def first_loads(context_of, urls: dict[str, str], repeats: int, cache: str = "returning", own: bool = False) -> None:
    """Per page: navigation start to the last figure drawn or response received, on a new tab of
    the context ``context_of()`` gives (``own``: a new one per load, closed after it; the
    browser's caches are what ``--cache`` says, see the module's docstring)."""
    samples: dict[tuple[str, str], list[float]] = {}
    busy: dict[tuple[str, str], list[float]] = {}
    for index in range(repeats + 1):
        for name, path in pages().items():
            for label, url in urls.items():  # interleaved
                context = context_of()
                page = context.new_page()
                page.add_init_script(INIT)
                cdp = context.new_cdp_session(page)
                cdp.send("Performance.enable")
                before = main_thread_s(cdp)
                page.goto(url + path)
                page.locator(".js-plotly-plot").first.wait_for(
                    timeout=30_000, state="attached"
                )  # a guide's first graph may be below the fold
                quiet(page, settle_ms=700)
                if index:
                    samples.setdefault((name, label), []).append(page.evaluate(LOADED))
                    busy.setdefault((name, label), []).append((main_thread_s(cdp) - before) * 1e3)
                page.close()
                if own:
                    context.close()
    for (name, label), values in samples.items():
        cpu = busy[(name, label)]
        print(
            f"first load ({cache}) {name:17s} {label:6s} {statistics.median(values):5.0f} ms [{min(values):.0f}-{max(values):.0f}]"
            f" | main thread busy {statistics.median(cpu):5.0f} ms [{min(cpu):.0f}-{max(cpu):.0f}]",
            flush=True,
        )


def main_thread_s(cdp) -> float:
    """Seconds the page's renderer main thread has been busy (Chrome's TaskDuration): less blurred
    by the machine's load than a wall time (the 1.2 s settle after the load is idle)."""
    return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")


def first_visitors(browser, checkouts: dict[str, str], repeats: int) -> None:
    """Per checkout: a fresh server, then at once a first visitor with an empty browser cache
    (interleaved rounds; the server process and its children are stopped after each visit)."""
    import os
    import signal
    import socket
    import subprocess

    samples: dict[str, list[float]] = {label: [] for label in checkouts}
    starts: dict[str, list[float]] = {label: [] for label in checkouts}  # process start to accepting connections
    for _ in range(repeats):
        for label, checkout in checkouts.items():
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            env = {**os.environ, "PYTHONPATH": checkout}
            server = subprocess.Popen(
                [sys.executable, __file__, "--serve", str(port)], env=env, start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            started = time.time()
            try:
                deadline = time.time() + 120
                while time.time() < deadline:
                    try:
                        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                        starts[label].append(time.time() - started)
                        break
                    except OSError:
                        time.sleep(0.05)
                context = browser.new_context(viewport={"width": 1400, "height": 1000})  # an empty cache
                page = context.new_page()
                page.add_init_script(INIT)
                page.goto(f"http://127.0.0.1:{port}/")
                page.locator("#coll-sim-time").wait_for(timeout=60_000)
                quiet(page, settle_ms=700)
                samples[label].append(page.evaluate(LOADED))
                context.close()
            finally:
                os.killpg(server.pid, signal.SIGTERM)  # the server and its crossover helper, started here
                server.wait(timeout=30)
    for label, values in samples.items():
        up = starts[label]
        print(
            f"first visitor after start {label:6s} {statistics.median(values):5.0f} ms [{min(values):.0f}-{max(values):.0f}]"
            f" | server start to accepting {statistics.median(up):.1f} s [{min(up):.1f}-{max(up):.1f}]",
            flush=True,
        )


def serve(port: int) -> None:
    from werkzeug.serving import make_server

    from webapp.app import create_app

    make_server("127.0.0.1", port, create_app().server, threaded=True).serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", type=int, help="serve the app on 127.0.0.1:PORT instead")
    parser.add_argument("--url", action="append", default=[], help="LABEL=URL of a running app (repeat to compare)")
    parser.add_argument("-n", type=int, default=7, help="measurements per case and URL (median of these)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--case", action="append", help="only the update cases whose name contains this (repeatable)")
    parser.add_argument("--no-loads", action="store_true", help="skip the first-load measurements")
    parser.add_argument("--fresh", action="append", default=[], help="LABEL=CHECKOUT: time the first visitor after a server start")
    parser.add_argument(
        "--cache", action="append", choices=CACHES, help="first loads with this browser cache (repeatable; default returning)"
    )
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return
    urls = dict(item.split("=", 1) for item in args.url)
    if args.fresh:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS)
            first_visitors(browser, dict(item.split("=", 1) for item in args.fresh), args.n)
            browser.close()
    if not urls and not args.fresh:
        sys.exit("give --url LABEL=URL (or --serve PORT to start a server, or --fresh LABEL=CHECKOUT)")
    if urls:
        run(urls, args.n, args.chromium, args.case, not args.no_loads, tuple(args.cache or ("returning",)))


if __name__ == "__main__":
    main()
