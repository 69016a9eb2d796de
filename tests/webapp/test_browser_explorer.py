# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""Issue 11 in a real Chromium: a player that teaches, side by side, honest closed forms, whole
runs at scale, inputs and navigation, and the guided examples."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from sim.collective.runner import run_collective
from sim.units import format_time
from webapp import collective as model
from webapp.pages.collectives.layout import EXAMPLES
from webapp.pages.ddp import model as ddp_model

from .test_browser import SLOW, app_page, drawn, meta, open_page, type_into  # noqa: F401

pytestmark = pytest.mark.browser


def sim_time(**changes: str) -> str:
    scenario, errors = model.parse_form({**model.DEFAULTS, **changes})
    assert not errors
    return format_time(run_collective(scenario).time_s)


def graph_data(page: Page, graph_id: str) -> list:
    drawn(page, graph_id)
    return page.evaluate(
        "id => document.querySelector('#' + id + ' .js-plotly-plot').data.map(t => ({name: t.name, text: t.text}))", graph_id
    )


def test_player_labels_arrows_marks_changed_cells_and_names_the_phase(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/?ranks=4")
    app_page.locator("#coll-step [role=slider]").press("ArrowRight")
    label = app_page.locator("#coll-step-label")
    expect(label).to_contain_text("Step 1 of 6 (reduce-scatter): 0 s →")
    expect(label).to_contain_text("Each rank sends one piece to its right neighbour, which adds it")
    expect(app_page.locator("#coll-topology-graph .gtitle")).to_contain_text("step 1 of 6 (reduce-scatter)")
    labels = next(t for t in graph_data(app_page, "coll-topology-graph") if t["name"] == "message labels")
    assert sorted(labels["text"]) == [f"p{i} · 16 MiB" for i in range(4)]
    expect(app_page.locator("#coll-topology-graph .textpoint", has_text="p0 · 16 MiB")).to_be_visible()
    assert meta(app_page, "coll-buffers-graph")["changed_cells"] == 4
    app_page.locator("#coll-step [role=slider]").press("End")
    expect(label).to_contain_text("Step 6 of 6 (all-gather)")
    expect(label).to_contain_text("forwards a fully reduced piece")


def test_side_by_side_on_one_time_axis_with_the_difference_split(app_page: Page, live_server: str, shot):
    open_page(app_page, live_server + "/?ranks=16&size=1GB&latency=5us&bandwidth=1GB/s&cmp=algorithm:double_binary_tree")
    expect(app_page.locator("#coll-cmp-note")).to_contain_text("B takes", timeout=SLOW)
    expect(app_page.locator("#coll-cmp-value")).to_contain_text("double binary tree")
    assert meta(app_page, "coll-cmp-timeline")["columns"] == ["A: ring", "B: double_binary_tree"]
    expect(app_page.locator("#coll-cmp-note")).to_contain_text("mostly bandwidth")
    app_page.locator("#coll-cmp-field").scroll_into_view_if_needed()
    expect(app_page.locator("#coll-cmp-field")).to_be_in_viewport()
    drawn(app_page, "coll-cmp-parts")
    shot("side-by-side", docs=True, full_page=False)
    app_page.locator("#coll-cmp-field").click()
    app_page.locator(".dash-dropdown-option", has_text="another sharing mode").click()
    app_page.locator("#coll-cmp-value").click()
    app_page.locator(".dash-dropdown-option", has_text="fifo").click()
    expect(app_page.locator("#coll-cmp-note")).to_contain_text("B takes 1x the time of A")
    expect(app_page.locator("#coll-cmp-note")).to_contain_text("the same time, part for part")
    expect(app_page).to_have_url(re.compile(r"cmp=sharing%3Afifo"))
    assert meta(app_page, "coll-cmp-timeline")["columns"] == ["A: fair", "B: fifo"]


def test_closed_form_is_marked_approximate_for_uneven_splits(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/?ranks=12")
    expect(app_page.locator("#coll-analytic-time")).to_contain_text("(approx.)")
    expect(app_page.locator("#coll-closed-note")).to_contain_text("do not divide into 12 equal pieces")
    expect(app_page.locator("#coll-breakdown .xtick", has_text="closed form (approx.)")).to_be_visible()
    open_page(app_page, live_server + "/?algorithm=double_binary_tree")
    expect(app_page.locator("#coll-analytic-time")).to_have_text("none")
    expect(app_page.locator("#coll-closed-note")).to_contain_text("no closed form is known for all_reduce/double_binary_tree")
    expect(app_page.locator("#coll-breakdown .xtick", has_text="closed form: none")).to_be_visible()
    # the reason is written beside the figure, not inside it where it would cover ticks and bars
    assert not app_page.evaluate("() => (document.querySelector('#coll-breakdown .js-plotly-plot').layout.annotations || []).length > 1")


def test_timelines_cover_the_whole_run_at_scale_with_lanes_in_numeric_order(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/?ranks=64")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="64"))
    link = meta(app_page, "coll-gantt-link")
    rank = meta(app_page, "coll-gantt-rank")
    # links: utilisation; ranks (every one busy all the time at 64): an image coloured by step (issue 21)
    assert link["utilisation"] and rank["raster"] and rank["lanes"] == 64
    scenario, _ = model.parse_form({**model.DEFAULTS, "ranks": "64"})
    assert link["span_s"] == pytest.approx(run_collective(scenario).time_s, rel=1e-6)  # the whole run
    lanes = app_page.evaluate("() => document.querySelector('#coll-gantt-rank .js-plotly-plot').data[0].y.slice(0, 4)")
    assert lanes == ["rank 0", "rank 1", "rank 2", "rank 3"]
    # the crossover is its own callback (simulations at 64 ranks, not cached in a fresh process):
    # wait for its axis before reading the ticks
    expect(app_page.locator("#coll-crossover .xtick", has_text=re.compile(r"^1 KiB$"))).to_have_count(1, timeout=SLOW)
    ticks = [tick.text_content() for tick in app_page.locator("#coll-crossover .xtick").all()]
    assert "1 KiB" in ticks and "1 GiB" in ticks or "256 MiB" in ticks


def test_empty_required_field_gets_a_message(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    type_into(app_page, "ranks", "")
    expect(app_page.locator("#coll-ranks-error")).to_have_text("ranks: required; give a whole number from 2 to 1024")
    expect(app_page.locator("#coll-notice")).to_contain_text("Fix the highlighted inputs")


def test_the_url_holds_what_was_typed_and_only_what_differs(app_page: Page, live_server: str):
    """The query is written in the browser (no request per change): only fields that differ from
    the defaults, what was typed even when invalid, form-encoded so the server reads it back."""
    open_page(app_page, live_server + "/")
    type_into(app_page, "ranks", "abc")
    expect(app_page.locator("#coll-ranks-error")).to_contain_text("ranks: expected a whole number")
    expect(app_page).to_have_url(re.compile(r"/\?ranks=abc$"))  # a shared link shows the same message
    type_into(app_page, "ranks", "16")
    type_into(app_page, "stragglers", "3:20us, 5:1ms")
    expect(app_page).to_have_url(re.compile(r"/\?ranks=16&stragglers=3%3A20us%2C\+5%3A1ms$"))
    app_page.reload()
    expect(app_page.locator("#coll-stragglers")).to_have_value("3:20us, 5:1ms")
    expect(app_page.locator("#coll-ranks")).to_have_value("16")
    type_into(app_page, "ranks", "8")
    type_into(app_page, "stragglers", "")
    expect(app_page).to_have_url(re.compile(r"/$"))  # all defaults: no query at all


def test_back_and_forward_restore_inputs_and_the_url_keeps_the_view(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    type_into(app_page, "ranks", "16")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="16"))
    expect(app_page).to_have_url(re.compile(r"\?ranks=16$"))
    type_into(app_page, "size", "1MiB")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="16", size="1MiB"))
    expect(app_page).to_have_url(re.compile(r"size=1MiB"))  # each change is a history entry
    app_page.go_back()
    expect(app_page.locator("#coll-size")).to_have_value("64MiB")
    expect(app_page.locator("#coll-ranks")).to_have_value("16")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="16"))
    app_page.go_forward()
    expect(app_page.locator("#coll-size")).to_have_value("1MiB")
    expect(app_page.locator("#coll-sim-time")).to_have_text(sim_time(ranks="16", size="1MiB"))
    thumb = app_page.locator("#coll-step [role=slider]")
    thumb.press("ArrowRight")
    thumb.press("ArrowRight")
    app_page.locator("#coll-color-by label", has_text="chunk").click()
    expect(app_page).to_have_url(re.compile(r"step=2"))
    expect(app_page).to_have_url(re.compile(r"color=chunk"))
    app_page.reload()
    expect(app_page.locator("#coll-step-label")).to_contain_text("Step 2 of 30")
    expect(app_page.locator("#coll-gantt-rank .colorbar .cbtitle")).to_contain_text("chunk")


def test_guided_examples_are_one_click_away(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    expect(app_page.locator("#coll-intro")).to_contain_text("Start here")
    app_page.get_by_role("link", name=re.compile("Why ring is bandwidth-optimal")).click()
    expect(app_page.locator("#coll-sim-time")).to_have_text("15 s")
    app_page.get_by_role("link", name=re.compile("scatter \\+ ring all-gather")).click()
    expect(app_page.locator("#coll-cmp-note")).to_contain_text("B takes 0.583x the time of A (8.75 s vs 15 s)", timeout=SLOW)
    app_page.get_by_role("link", name=re.compile("How big should my DDP buckets be")).click()
    # the page built from the link's query, which its URL writer then rewrites in place (keys at
    # their defaults dropped: this one names only defaults); asserting the link's own "?" raced it
    href = dict(EXAMPLES)["How big should my DDP buckets be?"]
    expect(app_page).to_have_url(live_server + "/ddp" + ddp_model.query_from_form(ddp_model.form_from_query(href.partition("/ddp")[2])))
    expect(app_page.locator("#ddp-preset")).to_contain_text(ddp_model.form_from_query(href.partition("/ddp")[2])["preset"])
    expect(app_page.locator("#ddp-intro")).to_contain_text("A data-parallel training step")


@pytest.mark.parametrize("size", [(1024, 768), (900, 700)])
def test_nothing_clips_in_a_small_window_and_the_sidebar_scrolls(browser, live_server: str, size):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    try:
        open_page(page, live_server + "/")
        for graph in (
            "coll-topology-graph",
            "coll-buffers-graph",
            "coll-breakdown",
            "coll-gantt-rank",
            "coll-gantt-link",
            "coll-crossover",
        ):
            drawn(page, graph)
        overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{overflow}px of horizontal overflow at {size}"
        sidebar = page.locator(".sidebar")
        assert sidebar.evaluate("e => e.getBoundingClientRect().height") <= size[1]
        button = page.get_by_role("button", name="SVG", exact=True)
        button.scroll_into_view_if_needed()
        expect(button).to_be_in_viewport()
        clipped = page.evaluate(
            """() => [...document.querySelectorAll('.js-plotly-plot')].filter(g => {
                const r = g.getBoundingClientRect(), p = g.closest('.col, .content').getBoundingClientRect();
                return r.right > p.right + 2; }).map(g => g.parentElement.id)"""
        )
        assert clipped == []
    finally:
        page.close()


def test_sim_vs_measured_works_on_every_group_it_offers(app_page: Page, live_server: str):
    app_page.goto(live_server + "/compare")
    expect(app_page.locator("#cmp-o")).to_be_visible(timeout=SLOW)
    expect(app_page.locator("#cmp-intro")).to_contain_text("the fit t = o + n / w")
    app_page.locator("#cmp-runs").click()
    options = app_page.locator(".dash-dropdown-option").all_inner_texts()
    published = [text for text in options if "published" in text]
    app_page.keyboard.press("Escape")
    assert published, "the sample data has published groups"
    app_page.locator("#cmp-runs").click()
    app_page.locator(".dash-dropdown-option", has_text=published[0]).first.click()
    expect(app_page.locator("#cmp-notice")).to_contain_text("Simulated ring")
    expect(app_page.locator("#cmp-runs")).to_contain_text("published")
    expect(app_page).to_have_url(re.compile(r"group=published"))
    expect(app_page.locator("#cmp-stat")).to_contain_text("mean")
    expect(app_page.locator("#cmp-sim-vs-measured .scatterlayer .trace").first).to_be_attached()
    assert app_page.locator("#cmp-error-table tr").count() >= 3


def test_hardware_picker(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/")
    app_page.locator("#coll-hardware").click()
    app_page.locator(".dash-dropdown-option", has_text="dgx-h100").first.click()
    expect(app_page.locator("#coll-topology")).to_contain_text("two_level")
    expect(app_page.locator("#coll-bandwidth")).to_have_value("50GB/s")
    expect(app_page.locator("#coll-notice")).to_contain_text("on 8 ranks (two_level)")
    expect(app_page.locator("#coll-crossover .legendtext", has_text="NCCL's pick")).to_be_visible()
    expect(app_page).to_have_url(re.compile(r"hardware=dgx-h100"))


def test_sharing_placement_and_eager_limit_are_inputs(app_page: Page, live_server: str):
    """The network model's own choices are on the form: rank placement (two_level), how flows
    share links, and the eager limit; each changes the run, the URL keeps it, a bad value is named."""
    base = dict(topology="two_level", ranks="16", gpus_per_node="4", size="16MiB")
    open_page(app_page, live_server + "/?topology=two_level&ranks=16&gpus_per_node=4&size=16MiB&placement=round_robin")
    expect(app_page.locator("#coll-placement")).to_contain_text("round robin")
    round_robin = sim_time(**base, placement="round_robin")
    assert round_robin != sim_time(**base)  # alternating nodes loads the NICs
    expect(app_page.locator("#coll-sim-time")).to_have_text(round_robin)
    app_page.locator("#coll-sharing").click()
    app_page.locator(".dash-dropdown-option", has_text=re.compile("^fifo$")).first.click()
    fifo = sim_time(**base, placement="round_robin", sharing="fifo")
    assert fifo != round_robin
    expect(app_page.locator("#coll-sim-time")).to_have_text(fifo)
    expect(app_page).to_have_url(re.compile(r"sharing=fifo"))
    type_into(app_page, "eager_limit", "lots")
    expect(app_page.locator("#coll-eager_limit-error")).to_contain_text("eager_limit")
    type_into(app_page, "eager_limit", "64KiB")
    expect(app_page.locator("#coll-eager_limit-error")).to_have_text("")
    expect(app_page).to_have_url(re.compile(r"eager_limit=64KiB"))
