# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""The step player's buffers in a real Chromium (issue 21, "readable at every size"): no two
labels overlap and none is cut, measured with getBoundingClientRect on the drawn tick labels,
axis and figure titles and cell words, for NCCL's channels on dgx-h100 x 2 and the plain
algorithms at 8-32 ranks with chunks, at the widths the page gives the buffers at 1024x768 and
1280x800; and on the page itself at 1024x768 with dgx-h100 x 2 picked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from webapp.figures import buffers as draw

from .test_browser import app_page, drawn, open_page  # noqa: F401
from .test_browser_player_anim import overlapping
from .test_buffers_readable import CASES, player_of

pytestmark = pytest.mark.browser

PLOTLY = Path(__file__).resolve().parents[2] / "webapp" / "assets" / "plotly-cartesian.min.js"
WIDTHS = {"1024x768": 386, "1280x800": 473}  # the buffers figure's width on the page at these windows

LABELS = """(gd) => {
  const rect = el => { const b = el.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const origin = gd.getBoundingClientRect();
  const boxes = [];
  const add = (name, el) => { const [x0, y0, x1, y1] = rect(el); boxes.push([name, [x0 - origin.left, y0 - origin.top, x1 - origin.left, y1 - origin.top]]); };
  gd.querySelectorAll('.xtick text').forEach(el => add('x tick ' + el.textContent, el));
  gd.querySelectorAll('.ytick text').forEach(el => add('y tick ' + el.textContent, el));
  gd.querySelectorAll('.g-xtitle text').forEach(el => add('x title', el));
  gd.querySelectorAll('.gtitle tspan.line').forEach((el, i) => add('title line ' + i + ': ' + el.textContent, el));
  gd.querySelectorAll('.annotation-text-g').forEach(el => add('note', el));
  const cells = [...gd.querySelectorAll('.heatmap-label')].filter(el => el.textContent);
  const plot = gd.querySelector('.nsewdrag');
  return {boxes, plot: plot ? rect(plot).map((v, i) => v - (i % 2 ? origin.top : origin.left)) : null,
          width: origin.width, cells: cells.length, cut: cells.filter(el => { const b = el.getBBox(); return b.width > 0 && b.width + 2 > gd._fullLayout._size.w / gd.data[0].z[0].length; }).map(el => el.textContent)};
}"""

DRAW = """async ([figure, width]) => {
  document.body.innerHTML = '<div id=figure style="width:' + width + 'px"></div>';
  const gd = document.getElementById('figure');
  await Plotly.newPlot(gd, figure.data, figure.layout);
  return (LABELS)(gd);
}""".replace("(LABELS)", f"({LABELS})")


def problems(where: str, drawn: dict) -> list[str]:
    """Overlapping labels, labels outside the figure, titles running into the plot, cut words."""
    boxes, found = drawn["boxes"], []
    found += [f"{where}: {a} / {b}" for a, b in overlapping(boxes)]
    found += [f"{where}: {name} cut" for name, (x0, y0, x1, _) in boxes if x0 < -0.5 or x1 > drawn["width"] + 0.5 or y0 < -0.5]
    if drawn["plot"]:
        top = drawn["plot"][1]
        found += [f"{where}: {name} runs into the grid" for name, box in boxes if name.startswith("title") and box[3] > top + 0.5]
    found += [f"{where}: cell word {word!r} wider than its cell" for word in drawn["cut"]]
    return found


@pytest.mark.slow
@pytest.mark.parametrize("window", list(WIDTHS))
def test_no_label_of_the_buffers_overlaps_nor_is_cut(page: Page, window: str):
    page.set_content("<html><body style='margin:0'></body></html>")
    page.add_script_tag(path=str(PLOTLY))
    found = []
    for case, query in CASES.items():
        player = player_of(query)
        for position in sorted({0, 1, 3, len(player["buffers"]) - 1}):
            figure = json.loads(draw.buffer_figure(player, position).to_json())
            shown = page.evaluate(DRAW, [figure, WIDTHS[window]])
            assert len([name for name, _ in shown["boxes"] if name.startswith("x tick")]) == len(figure["layout"]["xaxis"]["tickvals"])
            found += problems(f"{case}, position {position}", shown)
    for query in ("?ranks=64", "?hardware=dgx-h100&ranks=32"):  # above the drawable size: a note on short lines
        from webapp import collective as model
        from webapp.pages.collectives import callbacks as page_callbacks

        note = page_callbacks.simulate(page_callbacks.validate(model.form_from_query(query))["scenario"], "step")["buffers"]
        found += problems(query, page.evaluate(DRAW, [json.loads(note.to_json()), WIDTHS[window]]))
    assert found == []


def test_nccl_channels_on_two_dgx_nodes_read_per_piece_at_1024x768(app_page: Page, live_server: str, shot):
    app_page.set_viewport_size({"width": 1024, "height": 768})
    open_page(app_page, live_server + "/?hardware=dgx-h100&ranks=16&step=3")
    drawn(app_page, "coll-buffers-graph")
    graph = "#coll-buffers-graph .js-plotly-plot"
    expect(app_page.locator("#coll-buffers-graph .gtitle")).to_contain_text("Buffers after step 3 of 30")
    ticks = app_page.locator("#coll-buffers-graph .xtick text")
    expect(ticks).to_have_count(8)  # p0, p2, ... p14: one label per second piece, none per channel
    assert ticks.all_text_contents() == [f"p{p}" for p in range(0, 16, 2)]
    meta = app_page.evaluate(f"() => document.querySelector('{graph}').layout.meta")
    assert meta["cells_per_column"] == 16 and meta["columns"] == 16  # a piece's 16 channels in one cell
    shown = app_page.evaluate(f"() => ({LABELS})(document.querySelector('{graph}'))")
    assert shown["width"] <= WIDTHS["1024x768"]
    assert problems("dgx-h100 x 2 at 1024x768", shown) == []
    xtitle = app_page.locator("#coll-buffers-graph .g-xtitle")
    expect(xtitle).to_contain_text("its 16 channels")
    app_page.locator("#coll-buffers-graph").scroll_into_view_if_needed()
    shot("buffers-dgx-h100-1024x768", docs=True, full_page=False)
