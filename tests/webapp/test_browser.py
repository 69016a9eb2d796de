"""What a person sees: each page in a real Chromium, driven like a user (Playwright).

One browser and one server per session (conftest.py), a fresh page per test. Expected numbers
come from the simulator itself, so a test fails when the page shows anything else.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from sim.collective.runner import run_collective
from sim.units import format_time
from webapp import collective as model

pytestmark = pytest.mark.browser
SLOW = 20_000  # ms: first loads fetch plotly.js
LOADED = 60_000  # ms: a result computed under load (at load 10-14 a 256-rank background run and a step time took over 20 s, 2026-11-28)


def sim_time(**changes: str) -> str:
    scenario, errors = model.parse_form({**model.DEFAULTS, **changes})
    assert not errors
    return format_time(run_collective(scenario).time_s)


@pytest.fixture
def app_page(page: Page, live_server: str):
    """A fresh page that records server errors (HTTP 5xx) and console errors."""
    page.server_errors = []
    page.console_errors = []
    page.on("response", lambda response: page.server_errors.append(f"{response.status} {response.url}") if response.status >= 500 else None)
    page.on("console", lambda message: page.console_errors.append(message.text) if message.type == "error" else None)
    page.set_default_timeout(SLOW)
    yield page
    assert page.server_errors == []


def open_page(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator("#coll-sim-time, #ddp-step-time, #cmp-o, #cmp-notice").first).to_be_visible(timeout=SLOW)


def drawn(page: Page, graph_id: str) -> None:
    """Wait until the graph has been drawn once: graphs draw after the callbacks that fill them."""
    page.wait_for_function(
        "id => { const p = document.querySelector('#' + id + ' .js-plotly-plot'); return !!(p && p.layout && p.data); }",
        arg=graph_id,
        timeout=SLOW,
    )


def meta(page: Page, graph_id: str) -> dict:
    drawn(page, graph_id)
    return page.evaluate("id => document.querySelector('#' + id + ' .js-plotly-plot').layout.meta", graph_id)


def type_into(page: Page, field: str, text: str) -> None:
    box = page.locator(f"#coll-{field}")
    box.fill(text)
    box.press("Enter")


def choose(page: Page, dropdown_id: str, label: str) -> None:
    page.locator(f"#{dropdown_id}").click()
    page.locator(".dash-dropdown-option", has_text=re.compile(f"^{re.escape(label)}$")).first.click()


def test_landing_page_shows_a_simulated_collective(app_page: Page, live_server: str, shot):
    open_page(app_page, live_server + "/")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time())
    expect(app_page.locator("#coll-analytic-time")).to_have_text(sim_time())  # ring on a switch: exact
    expect(app_page.locator("#coll-notice")).to_contain_text("Simulated all_reduce/ring on 8 ranks")
    for graph in ("coll-topology-graph", "coll-buffers-graph", "coll-breakdown", "coll-gantt-rank", "coll-gantt-link", "coll-crossover"):
        expect(app_page.locator(f"#{graph} .main-svg").first).to_be_visible()
    expect(app_page.locator("#coll-crossover .legendtext", has_text="ring (current)")).to_be_visible()
    thumb = app_page.locator("#coll-step [role=slider]")
    for _ in range(3):
        thumb.press("ArrowRight")
    expect(app_page.locator("#coll-step-label")).to_contain_text("Step 3 of 14 (reduce-scatter)")
    app_page.wait_for_function("() => document.querySelector('#coll-topology-graph .js-plotly-plot').layout.meta.step === 2")
    shot("collectives", docs=True)


def test_changing_inputs_updates_numbers_and_url_and_reload_restores(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    type_into(app_page, "ranks", "16")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="16"))
    type_into(app_page, "size", "1MiB")
    expected = sim_time(ranks="16", size="1MiB")
    expect(app_page.locator("#coll-sim-time")).to_have_text(expected)
    expect(app_page).to_have_url(re.compile(r"ranks=16"))
    assert "size=1MiB" in app_page.url
    app_page.reload()
    expect(app_page.locator("#coll-ranks")).to_have_value("16")
    expect(app_page.locator("#coll-size")).to_have_value("1MiB")
    expect(app_page.locator("#coll-sim-time")).to_have_text(expected)


def test_a_new_rank_count_draws_each_graph_once(app_page: Page, live_server: str):
    """A figure with another height (more lanes, more buffer rows) changes its graph's size;
    Dash asks Plotly to resize then, which would draw the whole figure a second time for a width
    that did not change (webapp/assets/resize.js lets only a real width change through)."""
    open_page(app_page, live_server + "/?ranks=8")
    for graph in ("coll-buffers-graph", "coll-gantt-link"):
        drawn(app_page, graph)
    app_page.wait_for_load_state("networkidle")
    # count each graph's drawings, and the resize requests Dash makes after a new figure changed
    # the graph's height (resize.js decides whether they redraw)
    app_page.evaluate(
        """() => { window.__draws = {}; window.__resizes = {};
        for (const g of document.querySelectorAll('.js-plotly-plot')) {
            g.on('plotly_afterplot', () => { const id = g.parentElement.id; window.__draws[id] = (window.__draws[id] || 0) + 1; });
        }
        const resize = Plotly.Plots.resize;
        Plotly.Plots.resize = function (target) {
            const gd = typeof target === 'string' ? document.getElementById(target) : target;
            const id = gd && gd.parentElement ? gd.parentElement.id : '';
            window.__resizes[id] = (window.__resizes[id] || 0) + 1;
            return resize.apply(this, arguments);
        }; }"""
    )
    type_into(app_page, "ranks", "12")
    expect(app_page.locator("#coll-notice")).to_contain_text("on 12 ranks")
    app_page.wait_for_function(
        """() => ['coll-gantt-link', 'coll-buffers-graph'].every(id => (window.__draws[id] || 0) >= 1 && (window.__resizes[id] || 0) >= 1)"""
    )
    app_page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")  # a redraw would start here
    draws = app_page.evaluate("() => window.__draws")
    assert draws["coll-buffers-graph"] == 1 and draws["coll-gantt-link"] == 1, draws
    # the graphs still follow a real width change
    app_page.set_viewport_size({"width": 1100, "height": 900})
    app_page.wait_for_function("() => window.__draws['coll-gantt-link'] >= 2", timeout=5_000)


def test_a_shared_link_opens_the_same_view(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/?op=broadcast&algorithm=binomial&ranks=16&size=4MiB")
    expect(app_page.locator("#coll-op")).to_contain_text("broadcast")
    expect(app_page.locator("#coll-algorithm")).to_contain_text("binomial")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(op="broadcast", algorithm="binomial", ranks="16", size="4MiB"))
    # an algorithm the op does not offer: the link's value stays in its field with the message, never
    # silently replaced by another algorithm
    app_page.goto(live_server + "/?op=broadcast&algorithm=ring&ranks=16")
    expect(app_page.locator("#coll-algorithm")).to_contain_text("ring (unknown)")
    expect(app_page.locator("#coll-algorithm-error")).to_contain_text("ring")


def test_algorithm_and_topology_dropdowns(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    choose(app_page, "coll-algorithm", "recursive doubling")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(algorithm="recursive_doubling"))
    expect(app_page.locator("#coll-gpus_per_node")).to_be_hidden()  # two_level only (shown in the browser)
    choose(app_page, "coll-topology", "two_level")
    expect(app_page.locator("#coll-gpus_per_node")).to_be_visible()
    expect(app_page.locator("#coll-intra_latency")).to_be_visible()
    type_into(app_page, "ranks", "16")
    type_into(app_page, "gpus_per_node", "4")
    expect(app_page.locator("#coll-sim-time")).to_have_text(
        sim_time(algorithm="recursive_doubling", topology="two_level", ranks="16", gpus_per_node="4")
    )
    expect(app_page.locator("#coll-topology-graph .main-svg").first).to_contain_text("node3")
    choose(app_page, "coll-topology", "ring")
    expect(app_page.locator("#coll-gpus_per_node")).to_be_hidden()
    expect(app_page.locator("#coll-placement")).to_be_hidden()


def test_step_player_plays_and_shows_buffers(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/?ranks=4")
    expect(app_page.locator("#coll-step-label")).to_contain_text("6 steps to play")
    app_page.locator("#coll-step [role=slider]").press("ArrowRight")
    expect(app_page.locator("#coll-step-label")).to_contain_text("Step 1 of 6 (reduce-scatter)")
    expect(app_page.locator("#coll-step-label")).to_contain_text("4 messages of 16 MiB")
    assert meta(app_page, "coll-topology-graph") == {"step": 0, "in_flight": 4}
    assert meta(app_page, "coll-buffers-graph")["full_cells"] == 0
    app_page.locator("#coll-play").click()
    expect(app_page.locator("#coll-play")).to_have_text("Pause")
    expect(app_page.locator("#coll-step-label")).to_contain_text("Step 6 of 6", timeout=15_000)
    expect(app_page.locator("#coll-play")).to_have_text("Play")  # stops by itself at the last step
    app_page.locator("#coll-step [role=slider]").press("End")
    expect(app_page.locator("#coll-step-label")).to_contain_text("Step 6 of 6 (all-gather)")
    app_page.wait_for_function("() => document.querySelector('#coll-buffers-graph .js-plotly-plot').layout.meta.full_cells === 16")


def test_bad_inputs_show_messages_and_other_panels_keep_working(app_page: Page, live_server: str, shot):
    open_page(app_page, live_server + "/")
    good = sim_time()
    expect(app_page.locator("#coll-sim-time")).to_have_text(good)
    type_into(app_page, "ranks", "abc")
    expect(app_page.locator("#coll-ranks-error")).to_have_text("ranks: expected a whole number, got 'abc'")
    expect(app_page.locator("#coll-notice")).to_contain_text("Fix the highlighted inputs")
    expect(app_page.locator("#coll-sim-time")).to_have_text(good)  # the last valid figures stay
    expect(app_page.locator("#coll-crossover .main-svg").first).to_be_visible()
    shot("bad-input", docs=True, full_page=False)
    type_into(app_page, "ranks", "8")
    type_into(app_page, "bandwidth", "0")
    expect(app_page.locator("#coll-bandwidth-error")).to_contain_text("bandwidth: must be a positive, finite rate")
    expect(app_page.locator("#coll-ranks-error")).to_be_empty()
    type_into(app_page, "bandwidth", "25GB/s")
    choose(app_page, "coll-algorithm", "recursive doubling")
    type_into(app_page, "ranks", "12")
    expect(app_page.locator("#coll-ranks-error")).to_contain_text("needs a power-of-two number of ranks, got 12")
    type_into(app_page, "size", "lots")
    expect(app_page.locator("#coll-size-error")).to_contain_text("cannot read 'lots'")
    type_into(app_page, "ranks", "16")
    type_into(app_page, "size", "64MiB")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(algorithm="recursive_doubling", ranks="16"))
    for field in model.DEFAULTS:
        expect(app_page.locator(f"#coll-{field}-error")).to_be_empty()


def test_very_large_scenarios_are_refused_with_the_cli_command(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    type_into(app_page, "chunks", "4")
    type_into(app_page, "ranks", "1024")  # ~10 million message-equivalents: above the background cap
    expect(app_page.locator("#coll-notice")).to_contain_text("too much to simulate in the browser", timeout=10_000)
    expect(app_page.locator("#coll-notice")).to_contain_text("collsim sim collective --op all_reduce --algorithm ring --ranks 1024")
    expect(app_page.locator("#coll-sim-time")).to_have_text("—")
    expect(app_page.locator("#coll-progress")).to_be_hidden()
    type_into(app_page, "ranks", "64")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="64", chunks="4"))


def _job_processes(before: frozenset[int] = frozenset()) -> list:
    """Background jobs of the live server: python children of this test process that were not
    there ``before`` (earlier tests in the session may leave helpers such as multiprocessing's
    resource tracker running)."""
    import psutil

    return [
        child
        for child in psutil.Process().children()
        if child.pid not in before and "python" in child.name() and child.status() != psutil.STATUS_ZOMBIE
    ]


def until(condition, timeout_s: float = 5.0) -> bool:
    """True as soon as ``condition()`` is (asked every 50 ms), False after ``timeout_s``."""
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _pids() -> frozenset[int]:
    return frozenset(child.pid for child in _job_processes())


def test_large_scenario_shows_progress_and_cancel_stops_it(app_page: Page, live_server: str, shot):
    open_page(app_page, live_server + "/")
    before = _pids()
    expect(app_page.locator("#coll-progress")).to_be_hidden()
    type_into(app_page, "ranks", "1024")  # ring all-reduce: ~2.5 million message-equivalents, ~10 s
    expect(app_page.locator("#coll-notice")).to_contain_text("in the background", timeout=10_000)
    expect(app_page.locator("#coll-progress")).to_be_visible()
    expect(app_page.locator("#coll-cancel")).to_be_enabled()
    expect(app_page.locator("#coll-progress-text")).to_contain_text(
        re.compile(r"[1-9]\d*% \(\d[\d,]* of 2,095,104 messages"), timeout=10_000
    )  # the count sim.collective.explore.work told
    assert int(app_page.locator("#coll-progress-bar").get_attribute("value")) > 0
    assert _job_processes(before), "the run should be a separate process"
    shot("progress", full_page=False)
    app_page.locator("#coll-cancel").click()
    expect(app_page.locator("#coll-notice")).to_contain_text("Cancelled")
    expect(app_page.locator("#coll-progress")).to_be_hidden()
    assert until(lambda: not _job_processes(before)), "the job's process is really gone, not just ignored"
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time())  # the last finished run stays
    # a medium scenario runs in the background to completion
    type_into(app_page, "ranks", "256")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="256"), timeout=15_000)
    expect(app_page.locator("#coll-notice")).to_contain_text("Simulated all_reduce/ring on 256 ranks")
    expect(app_page.locator("#coll-progress")).to_be_hidden()
    # and small ones are still answered directly
    type_into(app_page, "ranks", "16")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="16"))


def test_a_new_input_stops_a_running_background_job(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    before = _pids()
    type_into(app_page, "ranks", "1024")
    expect(app_page.locator("#coll-progress")).to_be_visible(timeout=10_000)
    type_into(app_page, "ranks", "8")
    expect(app_page.locator("#coll-progress")).to_be_hidden()
    expect(app_page.locator("#coll-notice")).to_contain_text("Simulated all_reduce/ring on 8 ranks")
    assert until(lambda: not _job_processes(before))
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time())


def test_downloads(app_page: Page, live_server: str, tmp_path):
    open_page(app_page, live_server + "/?ranks=4")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="4"))
    files = {}
    for button in ("scenario YAML", "scenario JSON", "events CSV", "Chrome trace", "PNG", "SVG"):
        with app_page.expect_download() as info:
            app_page.get_by_role("button", name=button, exact=True).click()
        download = info.value
        path = tmp_path / download.suggested_filename
        download.save_as(path)
        files[button] = path
    assert "ranks: 4" in files["scenario YAML"].read_text()
    assert json.loads(files["scenario JSON"].read_text())["algorithm"] == "ring"
    assert files["events CSV"].read_text().splitlines()[0].startswith("rank,peer,resource,kind")
    assert json.loads(files["Chrome trace"].read_text())["traceEvents"]
    assert files["PNG"].read_bytes()[:4] == b"\x89PNG"
    assert files["SVG"].read_text().lstrip().startswith("<svg")


def settled(page: Page, read, quiet_ms: int = 600, timeout_ms: int = 15_000):
    """``read()`` once it gives the same answer twice ``quiet_ms`` apart: twenty key presses on a
    slider fire updates that land one after another, and the label and the URL follow the last."""
    last = read()
    for _ in range(timeout_ms // quiet_ms):
        page.wait_for_timeout(quiet_ms)
        now = read()
        if now == last:
            return now
        last = now
    raise AssertionError(f"still changing after {timeout_ms} ms: {last}")


def test_ddp_page(app_page: Page, live_server: str, shot, tmp_path):
    open_page(app_page, live_server + "/ddp")
    expect(app_page.locator("#ddp-buckets")).not_to_be_empty()
    before = app_page.locator("#ddp-buckets").inner_text()
    thumb = app_page.locator("#ddp-bucket-slider [role=slider]")
    for _ in range(20):
        thumb.press("ArrowLeft")
    expect(app_page.locator("#ddp-bucket-label")).not_to_have_text("bucket cap 25 MiB")
    expect(app_page.locator("#ddp-buckets")).not_to_have_text(before)
    expect(app_page).to_have_url(re.compile(r"bucket="))  # written by the browser
    label = settled(app_page, lambda: (app_page.locator("#ddp-bucket-label").inner_text(), app_page.url))[0]
    shot("ddp", docs=True)
    app_page.reload()
    expect(app_page.locator("#ddp-bucket-label")).to_have_text(label)
    box = app_page.locator("#ddp-w")
    box.fill("0")
    box.press("Enter")
    # the w entry's words (sim.fields.check_value), as every surface says them
    expect(app_page.locator("#ddp-w-error")).to_contain_text("w: must be a positive, finite rate")
    box.fill("10GB/s")
    box.press("Enter")
    expect(app_page.locator("#ddp-w-error")).to_be_empty()
    bad = tmp_path / "model.json"
    bad.write_text('{"params": [{"name": "fc.weight", "numel": 10}')
    app_page.locator("#ddp-upload input[type=file]").set_input_files(str(bad))
    expect(app_page.locator("#ddp-upload-error")).to_contain_text("model.json: malformed JSON")
    # a parameter list has no measured MFU (the default): the page says so, and runs with a typed one
    # ("8 parameters" alone also matched the preset's "148 parameters" still shown)
    good = tmp_path / "tiny.json"
    good.write_text(json.dumps({"params": [{"name": f"layer{i}.weight", "shape": [1024, 1024]} for i in range(8)]}))
    app_page.locator("#ddp-upload input[type=file]").set_input_files(str(good))
    expect(app_page.locator("#ddp-upload-info")).to_contain_text("tiny.json: 8 parameters, 32 MiB")
    expect(app_page.locator("#ddp-mfu-error")).to_contain_text("no measurement of a model given by its parameter list")
    mfu = app_page.locator("#ddp-mfu")
    mfu.fill("40%")
    mfu.press("Enter")
    expect(app_page.locator("#ddp-notice")).to_have_text(re.compile(r"^8 parameters, 16 MiB of gradients"))  # bf16 gradients


def test_compare_page(app_page: Page, live_server: str, shot):
    app_page.goto(live_server + "/compare")
    expect(app_page.locator("#cmp-o")).to_be_visible(timeout=SLOW)
    expect(app_page.locator("#cmp-fit .main-svg").first).to_be_visible()
    before = app_page.locator("#cmp-o").inner_text()
    choose(app_page, "cmp-stat", "min")
    expect(app_page.locator("#cmp-o")).not_to_have_text(before)
    expect(app_page).to_have_url(re.compile(r"stat=min"))  # written by the browser once the choices are shown
    if app_page.locator("#cmp-ddp-config").count():
        expect(app_page.locator("#cmp-ddp-note")).to_contain_text("fitted")
        assert any(kind.startswith("simulated") for kind in meta(app_page, "cmp-ddp-overlay")["kinds"])
    shot("compare", docs=True)


def test_navigation_between_pages(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    app_page.locator("#nav-ddp").click()
    expect(app_page).to_have_url(re.compile(r"/ddp$"))
    expect(app_page.locator("#ddp-step-time, .missing").first).to_be_visible()
    app_page.locator("#nav-compare").click()
    expect(app_page.locator("#cmp-o, .missing").first).to_be_visible()
    app_page.locator("#nav-collectives").click()
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time())
    app_page.goto(live_server + "/no-such-page")
    expect(app_page.get_by_text("Page not found")).to_be_visible()


def test_two_users_run_background_jobs_at_once(app_page: Page, live_server: str, shared_context):
    """Each job has its own cache key and process: two pages get their own results."""
    other = shared_context.new_page()
    try:
        open_page(app_page, live_server + "/")
        open_page(other, live_server + "/?size=1MiB")
        type_into(app_page, "ranks", "256")
        type_into(other, "ranks", "256")
        expect(app_page.locator("#coll-notice")).to_contain_text("in the background")
        expect(other.locator("#coll-notice")).to_contain_text("in the background")
        expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="256"), timeout=LOADED)
        expect(other.locator("#coll-sim-time")).to_have_text(sim_time(ranks="256", size="1MiB"), timeout=LOADED)
    finally:
        other.close()
