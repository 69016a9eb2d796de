# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""Issue 21 in a real Chromium: the step player's chunks move along their arrows during the
step (in the browser, at the chosen speed, each at its simulated times), and no two labels of
the player overlap, measured with getBoundingClientRect on the drawn text, annotations and
markers for the crowded cases at the widths the page gives the player at 1024x768 and 1280x800."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from webapp.figures import player as draw

from .test_browser import SLOW, app_page, drawn, open_page  # noqa: F401
from .test_player_anim import CROWDED, player_of

pytestmark = pytest.mark.browser

PLOTLY = Path(__file__).resolve().parents[2] / "webapp" / "assets" / "plotly-cartesian.min.js"
GRAPH = "document.querySelector('#coll-topology-graph .js-plotly-plot')"
WIDTHS = {"1024x768": 386, "1280x800": 473}  # the topology figure's width on the page at these windows

BOXES = """async ([figure, width]) => {
  const holder = document.getElementById('figure');
  holder.innerHTML = '';
  const gd = document.createElement('div');
  gd.style.width = width + 'px';
  holder.appendChild(gd);
  await Plotly.newPlot(gd, figure.data, figure.layout);
  const boxes = [];
  const rect = el => { const b = el.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  gd._fullData.forEach(t => {
    const g = gd.querySelector('.trace' + t.uid);
    if (!g) { return; }
    if (t.mode.includes('text') && !['ranks', 'logical ranks'].includes(t.name)) {  // a rank's number is inside its marker
      g.querySelectorAll('.textpoint text').forEach(el => { if (el.textContent) { boxes.push([t.name + ': ' + el.textContent, rect(el)]); } });
    }
    if (['ranks', 'logical ranks', 'switches'].includes(t.name)) {
      g.querySelectorAll('path.point').forEach((el, i) => boxes.push([t.name + ' marker ' + i, rect(el)]));
    }
  });
  gd.querySelectorAll('.gtitle').forEach(el => boxes.push(['title: ' + el.textContent, rect(el)]));
  gd.querySelectorAll('g.annotation').forEach(el => {
    const text = el.querySelector('.annotation-text-g text');
    if (text && text.textContent) { boxes.push(['annotation: ' + text.textContent, rect(el.querySelector('.annotation-text-g'))]); }
  });
  return boxes;
}"""


def overlapping(boxes: list) -> list[tuple[str, str]]:
    """Pairs of boxes that intersect by more than half a pixel (markers among themselves aside)."""
    pairs = []
    for i, (a, (x0, y0, x1, y1)) in enumerate(boxes):
        for b, (u0, v0, u1, v1) in boxes[i + 1 :]:
            if "marker" in a and "marker" in b:
                continue
            if min(x1, u1) - max(x0, u0) > 0.5 and min(y1, v1) - max(y0, v0) > 0.5:
                pairs.append((a, b))
    return pairs


@pytest.mark.slow
@pytest.mark.parametrize("window", list(WIDTHS))
def test_no_two_labels_of_the_player_overlap_nor_are_cut(page: Page, window: str):
    page.set_content("<html><body style='margin:0'><div id=figure></div></body></html>")
    page.add_script_tag(path=str(PLOTLY))
    found, silent = [], []
    for case, query in CROWDED.items():
        player = player_of(query)
        for position in range(1, len(player["steps"]) + 1):
            figure = json.loads(draw.topology_figure(player, position).to_json())
            boxes = page.evaluate(BOXES, [figure, WIDTHS[window]])
            found += [f"{case}, step {position}: {a} / {b}" for a, b in overlapping(boxes)]
            found += [f"{case}, step {position}: {name} cut" for name, box in boxes if box[2] > WIDTHS[window] or box[0] < 0]
            if not any(name.startswith("message labels") for name, _ in boxes) and not figure["layout"]["meta"].get("labels_in_hover"):
                silent.append(f"{case}, step {position}")  # no label written, and no word of where they went
    assert found == []
    assert silent == []


def motion(page: Page) -> dict:
    return page.evaluate(
        f"() => {{ const p = {GRAPH}; const t = p.data.find(t => t.name === '{draw.MOTION_TRACE}'); const m = p._collsimMotion || {{}};"
        f" const moved = [...p.querySelectorAll('.trace' + p._fullData.find(t => t.name === '{draw.MOTION_TRACE}').uid + ' path.point')];"
        " return {x: m.x || [], y: m.y || [], paths: t.customdata, title: p.layout.title.text, f: m.f, duration: m.duration,"
        " drawn: moved.map(e => e.getAttribute('transform'))}; }"
    )


def wait_arrived(page: Page) -> None:
    """Until the chunks of the step drawn now have all arrived."""
    page.wait_for_function(
        f"() => {{ const p = {GRAPH}; const m = p && p._collsimMotion; const t = p && p.data.find(t => t.name === '{draw.MOTION_TRACE}');"
        " return m && t && m.paths === t.customdata && m.f === 1; }",
        timeout=SLOW,
    )


def test_chunks_move_from_sender_to_receiver_at_their_simulated_times(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/?ranks=8&chunks=2")
    drawn(app_page, "coll-topology-graph")
    app_page.locator("#coll-next").click()
    expect(app_page.locator("#coll-step-label")).to_contain_text("Step 1 of 14")
    wait_arrived(app_page)
    last = motion(app_page)
    paths, trail = last["paths"], app_page.evaluate(f"() => {GRAPH}._collsimMotion.trail")
    assert "step 1 of 14" in last["title"] and trail[-1][0] == 1
    assert len({frame[0] for frame in trail}) > 3  # drawn moving over several frames, not in one jump
    xs, ys = trail[-1][1], trail[-1][2]
    assert all(math.isclose(x, p[2], abs_tol=1e-9) and math.isclose(y, p[3], abs_tol=1e-9) for x, y, p in zip(xs, ys, paths))
    assert last["drawn"] == [t for t in last["drawn"] if t.startswith("translate(")] and len(set(last["drawn"])) == len(paths)
    first, second = [i for i, p in enumerate(paths) if p[4] == 0], [i for i, p in enumerate(paths) if p[4] > 0]
    assert first and second  # two sub-rounds: chunk 0 of every ring pair, then chunk 1
    for f, xs, ys in trail:  # each dot at its sender until its simulated start, then on its way, at its receiver after its end
        for i, (x0, y0, x1, y1, begin, end) in enumerate(paths):
            u = min(1, max(0, (f - begin) / (end - begin)))
            assert math.isclose(xs[i], x0 + u * (x1 - x0), abs_tol=1e-9) and math.isclose(ys[i], y0 + u * (y1 - y0), abs_tol=1e-9)
    # some frame showed the first sub-round under way while the second waited at its senders
    assert any(0 < f < min(paths[i][4] for i in second) for f, _, _ in trail), [f for f, _, _ in trail]


def test_the_logical_panel_stays_drawn_and_its_chunks_move_too(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/?ranks=8&algorithm=double_binary_tree&step=1")
    drawn(app_page, "coll-topology-graph")
    wait_arrived(app_page)
    count = app_page.evaluate(
        f"() => {{ const p = {GRAPH}; return p._fullData.filter(t => t.name === 'logical ranks' || t.name === 'logical edges')"
        ".map(t => p.querySelectorAll('.trace' + t.uid + ' path.point, .trace' + t.uid + ' path.js-line').length); }"
    )
    assert count[0] > 0 and count[1] == 16  # the trees' edges and both trees' 8 ranks
    ends = app_page.evaluate(  # the logical panel's dots, where its motion ended, against their paths' ends in pixels
        f"() => {{ const p = {GRAPH}; const t = p._fullData.filter(t => t.name === '{draw.MOTION_TRACE}')[1];"
        " const xa = p._fullLayout.xaxis2, ya = p._fullLayout.yaxis2;"
        " return [...p.querySelectorAll('.trace' + t.uid + ' path.point')].map((e, i) => [e.getAttribute('transform'),"
        " xa.c2p(t.customdata[i][2]), ya.c2p(t.customdata[i][3])]); }"
    )
    assert len(ends) == 14  # every edge of both trees carries a partial sum up
    for transform, x, y in ends:
        drawn_x, drawn_y = map(float, re.fullmatch(r"translate\(([-\d.e]+),([-\d.e]+)\)", transform).groups())
        assert math.isclose(drawn_x, x, abs_tol=0.01) and math.isclose(drawn_y, y, abs_tol=0.01)


def test_motion_takes_the_play_timers_period_at_the_chosen_speed(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/?ranks=8&chunks=2")
    drawn(app_page, "coll-topology-graph")
    durations = {}
    for step, speed in enumerate(("0.5x", "2x"), start=1):
        app_page.locator("#coll-speed label", has_text=speed).click()
        app_page.locator("#coll-next").click()
        expect(app_page.locator("#coll-step-label")).to_contain_text(f"Step {step} of 14")
        wait_arrived(app_page)
        durations[speed] = motion(app_page)["duration"]
    assert durations == {"0.5x": pytest.approx(0.85 * 900 / 0.5), "2x": pytest.approx(0.85 * 900 / 2)}


@pytest.mark.parametrize("window", [(1280, 800), (1024, 768)])
@pytest.mark.parametrize(
    "name, query", [("ring-chunks2", "/?ranks=8&chunks=2&step=3"), ("dbt", "/?ranks=8&algorithm=double_binary_tree&step=1")]
)
def test_player_screenshots(app_page: Page, live_server: str, shot, window, name, query):
    app_page.set_viewport_size({"width": window[0], "height": window[1]})
    open_page(app_page, live_server + query)
    drawn(app_page, "coll-topology-graph")
    expect(app_page.locator("#coll-topology-graph .gtitle")).to_contain_text("step")
    wait_arrived(app_page)
    shot(f"player-anim-{name}-{window[0]}x{window[1]}", docs=True, full_page=False)


def idle(page: Page) -> None:
    """Until no Dash callback is in flight (real time: the server answers on its own clock)."""
    page.wait_for_function("() => !document.querySelector('[data-dash-is-loading=\"true\"]')", polling=20, timeout=SLOW)


def play_on_the_test_clock(page: Page, slice_ms: int = 20) -> None:
    """Click Play and move the page's clock (its Play timer, the motion's frames, performance.now)
    on by ``slice_ms`` at a time, each slice only once the server has answered the last one: at
    any load the steps come a timer period apart in the page's time, as on an idle machine."""
    page.clock.pause_at(page.evaluate("() => Date.now()") + 1000)
    page.locator("#coll-play").click()
    for _ in range(20_000 // slice_ms):  # 3 steps at 0.5x take about 6 s of the page's time
        idle(page)
        if page.locator("#coll-play").inner_text() == "Play" and page.evaluate(
            f"() => {{ const p = {GRAPH}; return !!(p && p._collsimMotion && p._collsimMotion.f === 1 && /step 3 of 3/.test(p.layout.title.text)); }}"
        ):
            return
        page.clock.run_for(slice_ms)
    raise AssertionError("Play did not reach the last step in 20 s of the page's time")


@pytest.fixture
def clock_page(browser, browser_context_args, live_server: str):
    """A page in a context of its own: Playwright's clock belongs to the whole browser context,
    so a clock paused on the session's shared context would stop every later test's timers."""
    context = browser.new_context(**browser_context_args)
    page = context.new_page()
    page.server_errors = []
    page.on("response", lambda response: page.server_errors.append(f"{response.status} {response.url}") if response.status >= 500 else None)
    page.set_default_timeout(SLOW)
    yield page
    context.close()
    assert page.server_errors == []


def test_play_moves_the_chunks_of_every_step(clock_page: Page, live_server: str):
    app_page = clock_page
    app_page.clock.install()  # runs on real time until paused (play_on_the_test_clock)
    open_page(app_page, live_server + "/?op=broadcast&algorithm=binomial&ranks=8&size=5MB&latency=0us&bandwidth=1MB/s")
    drawn(app_page, "coll-topology-graph")
    app_page.locator("#coll-speed label", has_text="0.5x").click()
    idle(app_page)
    app_page.evaluate(  # record every motion the player starts, as it is set on the graph, with its step's title
        f"() => {{ window.__motions = []; const g = {GRAPH}; let current = g._collsimMotion;"
        " Object.defineProperty(g, '_collsimMotion', {configurable: true, get() { return current; },"
        " set(m) { current = m; window.__motions.push([g.layout.title.text, m]); }}); }"
    )
    play_on_the_test_clock(app_page)
    motions = app_page.evaluate("() => window.__motions.map(([title, m]) => [title, m.frames, m.trail.map(([f]) => f)])")
    steps: dict[str, tuple[int, list[float]]] = {}  # per step, its motion over the most frames (a redraw starts a new one)
    for title, frames, fs in motions:
        step = re.search(r"step \d of 3", title)
        if step and frames >= steps.get(step.group(), (-1, []))[0]:
            steps[step.group()] = (frames, fs)
    assert set(steps) == {f"step {k} of 3" for k in (1, 2, 3)}, motions  # every step's motion was started
    for step, (frames, fs) in steps.items():  # and drawn moving over several frames, start to end, not in one jump
        assert frames >= 3 and fs[-1] == 1 and any(0 < f < 1 for f in fs) and fs == sorted(fs), (step, fs)
