"""The Collectives page's step player and the timelines it marks (issue 21, "wrong or
misleading"): one step numbering, every rank drawn, one colour scale side by side, Play that
stops, previous / next and speed. Figures and callbacks called directly (no browser)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from dash import Patch, no_update
from dash.exceptions import PreventUpdate

from webapp import collective as model
from webapp.figures import buffers as buffers_draw
from webapp.figures import player as draw
from webapp.pages.collectives import callbacks as page
from webapp.pages.collectives import ids

BROADCAST = "?op=broadcast&algorithm=binomial&ranks=8&size=5MB&latency=0us&bandwidth=1MB/s"


def scenario(query: str) -> dict:
    return page.validate(model.form_from_query(query))["scenario"]


def hover_steps(figure) -> set[int]:
    """The step numbers the timeline's hover points carry."""
    steps = set()
    for trace in figure.data:
        if trace.customdata is not None and trace.mode == "markers":
            steps |= {int(row[3]) for row in np.asarray(trace.customdata)}
    return steps


def test_timelines_count_steps_as_the_player_does():
    shown = page.simulate(scenario(BROADCAST), "step")
    player = shown["player"]
    count = len(player["steps"])
    assert count == 3
    for name in ("rank_gantt", "link_gantt"):
        figure = shown[name]
        assert hover_steps(figure) == {1, 2, 3}, name  # player's "step 1 of 3" .. "step 3 of 3"
        bar = next(trace for trace in figure.data if trace.marker and trace.marker.showscale)
        assert bar.marker.cmin == 1 and bar.marker.cmax == 3
    assert "step 1 of 3" in draw.step_title(player, 1)


def test_timelines_mark_the_players_step():
    shown = page.simulate(scenario(BROADCAST + "&step=2"), "step", position=2)
    for name in ("rank_gantt", "link_gantt"):
        shapes = shown[name].layout.shapes
        assert len(shapes) == 1 and shapes[0].label.text == "step 2"
        assert (shapes[0].x0, shapes[0].x1) == (5.0, 10.0)  # step 2 of the 15 s broadcast: 5 s to 10 s
    marks = page.mark_step(3, shown["player"])
    for name in ("rank_gantt", "link_gantt"):
        assert isinstance(marks[name], Patch)
        shapes = marks[name].to_plotly_json()["operations"][0]["params"]["value"]
        assert [(shape["x0"], shape["x1"], shape["label"]["text"]) for shape in shapes] == [(10.0, 15.0, "step 3")]
    inputs = page.mark_step(0, shown["player"])["rank_gantt"].to_plotly_json()["operations"][0]["params"]["value"]
    assert inputs == []  # the inputs (position 0): no step to mark
    assert page.mark_step(1, None) == {"rank_gantt": no_update, "link_gantt": no_update}


def test_tree_hover_has_no_chunk_minus_one():
    figure = page.simulate(scenario(BROADCAST), "step")["rank_gantt"]
    templates = [trace.hovertemplate for trace in figure.data if trace.hovertemplate]
    assert templates and not any("chunk" in text for text in templates)


def test_ranks_that_only_receive_keep_their_lane():
    figure = page.simulate(scenario(BROADCAST), "step")["rank_gantt"]
    assert figure.layout.meta["lanes"] == 8  # ranks 1, 3, 5, 7 only receive
    assert list(figure.layout.yaxis.ticktext) == [f"rank {r}" for r in range(8)]


def test_side_by_side_keeps_every_rank_and_one_colour_scale():
    data = scenario(BROADCAST)
    shown = page.compare_panel("scatter_allgather", "algorithm", data)
    figure = shown["timeline"]
    heatmaps = [trace for trace in figure.data if trace.type == "heatmap"]
    assert [len(trace.y) for trace in heatmaps] == [8, 8]  # panel A (binomial) has rank 7, which only receives
    assert all(trace.coloraxis == "coloraxis" for trace in heatmaps)  # one scale, one colour bar
    tops = [float(np.nanmax(np.asarray(trace.z, dtype=float))) for trace in heatmaps]
    assert figure.layout.coloraxis.cmin == 0 and figure.layout.coloraxis.cmax == pytest.approx(max(tops))


def test_play_stops_at_the_last_step():
    assert page.tick(1, 3, 6) == {"step": 4, "disabled": no_update, "label": no_update}
    assert page.tick(1, 5, 6) == {"step": 6, "disabled": True, "label": "Play"}  # reaches the end: stops
    assert page.tick(1, 6, 6) == {"step": no_update, "disabled": True, "label": "Play"}  # never wraps to 0
    assert page.toggle_play(3, True, 6, 6)["step"] == 0  # Play at the end plays again from the inputs


def test_previous_next_and_speed():
    assert page.step_by(ids.COLL_NEXT, 2, 6) == 3
    assert page.step_by(ids.COLL_PREV, 2, 6) == 1
    for trigger, position in ((ids.COLL_PREV, 0), (ids.COLL_NEXT, 6), (None, 3)):
        with pytest.raises(PreventUpdate):
            page.step_by(trigger, position, 6)
    assert page.tick_interval(1) == 900 and page.tick_interval(2) == 450 and page.tick_interval(0.5) == 1800


def walk(component) -> list[str]:
    """Every string in a Dash component tree (what the page shows)."""
    if isinstance(component, str):
        return [component]
    if isinstance(component, (list, tuple)):
        return [text for child in component for text in walk(child)]
    children = getattr(component, "children", None)
    return walk(children) if children is not None else []


def test_buffer_hover_speaks_the_axes_words():
    player = page.simulate(scenario("?op=reduce&algorithm=binomial&ranks=8"), "step")["player"]
    inputs = buffers_draw.buffer_figure(player, 0).data[0].hovertext
    assert inputs[0][0] == "r0, p0: r0's data"  # not "sum of ranks 0", not "cell 0"
    after = buffers_draw.buffer_figure(player, 1).data[0].hovertext
    texts = [text for row in after for text in row]
    assert not any("cell " in text for text in texts)
    assert any(text.startswith("r0, p4: the sum of r") for text in texts)


def test_step_titles_and_captions_carry_no_markup():
    player = page.simulate(scenario("?op=all_reduce&algorithm=reduce_broadcast&ranks=8"), "step")["player"]
    title = draw.step_title(player, 1)
    assert title == "step 1 of 6, reduce (up the tree)" and "((" not in title and "))" not in title
    two_level = scenario("?op=all_reduce&algorithm=hierarchical&topology=two_level&ranks=16&gpus_per_node=4")
    caption = page.simulate(two_level, "step")["caption"]
    assert "``" not in caption and "node_ranks" not in caption and "placement" in caption


def test_closed_form_card_says_exact_not_float_noise():
    shown = page.simulate(scenario("?op=all_reduce&algorithm=ring&ranks=8"), "step")
    texts = walk(shown["summary"])
    assert "exact" in texts and not any("e-16" in text or "e-17" in text for text in texts)


def test_physical_ring_that_equals_the_closed_form_says_so():
    shown = page.simulate(scenario("?op=all_reduce&algorithm=ring&ranks=8&topology=ring"), "step")
    texts = walk(shown["summary"])
    assert "none" not in texts and "exact" in texts
    assert any("equals it exactly" in text for text in texts)
    names = [trace.x[0] for trace in shown["breakdown"].data]
    assert "closed form: none" not in names and "closed form" in names
    # a ring that does not match (one rank's link is slower: stragglers) still says there is none
    other = page.simulate(scenario("?op=all_reduce&algorithm=ring&ranks=8&topology=ring&stragglers=3:1ms"), "step")
    assert "none" in walk(other["summary"])


def test_nccl_arrows_name_only_what_the_message_carried():
    form = {**model.DEFAULTS, **model.hardware_form("dgx-h100", "16"), "hardware": "dgx-h100", "algorithm": "nccl_ring"}
    shown = page.simulate(page.validate(form)["scenario"], "step", position=1)
    player = shown["player"]
    labels = next(trace for trace in shown["topology"].data if trace.name == "message labels")
    # each ring message carries a slice of one piece (NCCL's 1 MiB Simple slices), and the arrow names that one piece
    # written where there is room (the piece alone when the long form does not fit), else in the hover
    assert any(labels.text) and all(re.fullmatch(r"(p\d+( · [\d.]+ [KM]iB)?)?", text) for text in labels.text)
    assert all(re.search(r"carries p\d+: [\d.]+ [KM]iB", hover) for hover in labels.hovertext)
    first = {(m[0], m[1]): m[6] for m in player["messages"][0]}
    assert first[(0, 1)] == "p15" and first[(1, 2)] == "p0"  # rank r starts the ring with piece r-1


def test_arrow_labels_keep_off_the_switch():
    shown = page.simulate(scenario(BROADCAST + "&step=1"), "step", position=1)  # step 1: rank 0 -> rank 4, across the switch
    labels = next(trace for trace in shown["topology"].data if trace.name == "message labels")
    switch = next(trace for trace in shown["topology"].data if trace.name == "switches")
    (sx, sy), (x, y) = (switch.x[0], switch.y[0]), (labels.x[0], labels.y[0])
    assert np.hypot(x - sx, y - sy) > 0.3  # ranks sit on a unit circle: the label is well off the centre


def test_changed_outlines_fit_their_cells_and_the_title_fits():
    player = page.simulate(scenario("?ranks=4"), "step")["player"]
    figure = buffers_draw.buffer_figure(player, 1)
    rects = [shape for shape in figure.layout.shapes if shape.type == "rect"]
    assert len(rects) == figure.layout.meta["changed_cells"] == 4
    assert all(shape.x1 - shape.x0 < 1 and shape.y1 - shape.y0 < 1 for shape in rects)  # inside one cell, never a neighbour's
    first_line = figure.layout.title.text.split("<br>")[0]
    assert first_line == "Buffers after step 1 of 6 (reduce-scatter)"  # the key goes to a second line


def test_lane_labels_are_never_cut():
    for query in ("?ranks=16&size=1MB", "?ranks=64"):  # bars, and the whole-run utilisation at 64 ranks
        figure = page.simulate(scenario(query), "step")["link_gantt"]
        assert "12->switch" in list(figure.layout.yaxis.ticktext)
        assert figure.layout.yaxis.automargin is True, query  # the margin grows to the longest label ("12->switch")
