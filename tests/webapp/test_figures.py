"""Figure builders are pure functions of results: checked without a browser."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from sim.collective.player import link_events, player_data
from sim.collective.runner import run_collective
from webapp import collective as model
from webapp import figures
from webapp.pages.compare import figures as compare_figures


@pytest.fixture(scope="module")
def ring4():
    s, _ = model.parse_form({**model.DEFAULTS, "ranks": "4"})
    outcome = model.run(s)
    return s, outcome.result, player_data(s, outcome.result, outcome.frames)


def test_time_unit_picks_a_readable_unit():
    assert figures.time_unit(2.0) == (1.0, "s")
    assert figures.time_unit(5e-3) == (1e3, "ms")
    assert figures.time_unit(5e-6) == (1e6, "us")
    assert figures.time_unit(5e-9) == (1e9, "ns")
    assert figures.time_unit(0) == (1e9, "ns")


def test_rank_gantt_has_one_bar_per_event_in_ms(ring4):
    _, result, _ = ring4
    events = result.events()
    figure = figures.rank_gantt(events, "step")
    segments = [trace for trace in figure.data if trace.mode == "lines"]
    assert sum(len(trace.x) for trace in segments) == 3 * len(events)  # start, end, gap
    assert figure.layout.meta["bars"] == len(events) and figure.layout.meta["kinds"] == ["reduce", "send"]
    assert figure.layout.xaxis.title.text == "time (ms)"
    assert list(figure.layout.yaxis.ticktext) == ["rank 0", "rank 1", "rank 2", "rank 3"]
    ends = [x for trace in segments if trace.name == "send" for x in trace.x[1::3]]
    assert max(ends) == pytest.approx(max(e["end_s"] for e in events if e["kind"] == "send") * 1e3)
    # hover: one invisible point per bar, at its middle, saying what it is
    hover = {trace.name: trace for trace in figure.data if trace.mode == "markers" and trace.customdata is not None}
    assert sorted(hover) == ["reduce", "send"] and sum(len(trace.x) for trace in hover.values()) == len(events)
    sends = sorted((e for e in events if e["kind"] == "send"), key=lambda e: (e["start_s"], e["rank"]))
    points = sorted(zip(hover["send"].x, hover["send"].customdata[:, 0]))
    assert points[0][0] == pytest.approx((sends[0]["start_s"] + sends[0]["end_s"]) / 2 * 1e3)
    assert "send %{customdata[0]:.0f}→%{customdata[1]:.0f}" in hover["send"].hovertemplate
    assert all(trace.hoverinfo == "skip" for trace in segments)


def test_gantt_colours_by_the_chosen_column(ring4):
    _, result, _ = ring4
    by_step = figures.rank_gantt(result.events(), "step")
    by_chunk = figures.rank_gantt(result.events(), "chunk")
    assert len({trace.line.color for trace in by_step.data if trace.mode == "lines"}) == 6  # 6 steps, 6 colours
    assert len({trace.line.color for trace in by_chunk.data if trace.mode == "lines"}) == 1  # one chunk
    assert by_chunk.data[-1].marker.colorbar.title.text == "chunk"


def test_gantt_keeps_whole_lanes_and_says_when_some_were_left_out(ring4):
    _, result, _ = ring4
    events = result.events()
    per_rank = sum(1 for e in events if e["rank"] == 0)
    figure = figures.rank_gantt(events, "step", limit=2 * per_rank)
    assert figure.layout.meta["bars"] == 2 * per_rank
    assert list(figure.layout.yaxis.ticktext) == ["rank 0", "rank 1"]
    assert figure.layout.annotations[0].text.startswith("2 of 4 lanes shown")


def test_link_gantt_one_lane_per_used_link(ring4):
    _, result, _ = ring4
    rows = link_events(result, 10_000)
    assert len(rows) == 2 * len(result.messages)  # rank -> switch -> rank
    figure = figures.link_gantt(rows, "step")
    assert len(figure.layout.yaxis.ticktext) == 8


def test_breakdown_stacks_alpha_beta_gamma():
    breakdown = {"alpha (latency)": 1e-5, "beta (bandwidth)": 2e-3, "gamma (reduction)": 5e-4, "overhead / other": 0.0}
    figure = figures.breakdown_figure(2.51e-3, 2.51e-3, breakdown)
    names = [trace.name for trace in figure.data]
    assert names == ["simulated", "alpha (latency)", "beta (bandwidth)", "gamma (reduction)"]
    assert figure.layout.barmode == "stack"
    assert sum(trace.y[0] for trace in figure.data[1:]) == pytest.approx(2.51)


def test_breakdown_without_closed_form_keeps_its_reason_off_the_plot():
    figure = figures.breakdown_figure(1e-3, None, {}, False, "no closed form is known for all_reduce/double_binary_tree")
    assert not figure.layout.annotations and [trace.x[0] for trace in figure.data] == ["simulated", "closed form: none"]
    assert "no closed form is known" in figure.data[1].hovertext[0]
    approximate = figures.breakdown_figure(1e-3, 1e-3, {}, False, "approximate: uneven pieces")
    assert [trace.x[0] for trace in approximate.data] == ["simulated", "closed form (approx.)"]
    assert approximate.layout.annotations[0].text.startswith("≈ ")


def test_crossover_marks_the_winner_per_size():
    rows = [
        {"algorithm": "a", "size_bytes": 1, "time_s": 1.0, "method": "closed form", "why": ""},
        {"algorithm": "b", "size_bytes": 1, "time_s": 2.0, "method": "closed form", "why": ""},
        {"algorithm": "a", "size_bytes": 2, "time_s": 3.0, "method": "closed form", "why": ""},
        {"algorithm": "b", "size_bytes": 2, "time_s": 2.5, "method": "closed form", "why": ""},
        {"algorithm": "c", "size_bytes": None, "time_s": None, "method": "n/a", "why": "needs power of two"},
    ]
    assert figures.winners(rows) == {1: "a", 2: "b"}
    figure = figures.crossover_figure(rows, 2, "b")
    assert figure.layout.xaxis.type == "log" and figure.layout.yaxis.type == "log"
    names = [trace.name for trace in figure.data]
    assert "b (current)" in names and "c (n/a)" in names


def test_topology_player_highlights_messages_in_flight(ring4):
    _, _, player = ring4
    assert figures.player_positions(player) == 7
    start = figures.topology_figure(player, 0)
    assert start.layout.meta["in_flight"] == 0 and not start.layout.annotations
    first = figures.topology_figure(player, 1)
    assert first.layout.meta == {"step": 0, "in_flight": 4}
    assert len(first.layout.annotations) == 4
    highlighted = next(trace for trace in first.data if trace.name == "links in use")
    assert len([x for x in highlighted.x if x is not None]) == 8  # every rank's link, used both ways
    labels = next(trace for trace in first.data if trace.name == "message labels")
    assert sorted(labels.text) == [f"p{i} · 16 MiB" for i in range(4)]  # each arrow says what it carries
    assert "r0 → r1" in labels.hovertext[0] or "→ r" in labels.hovertext[0]
    assert first.layout.title.text.endswith("step 1 of 6 (reduce-scatter)")
    last = figures.step_caption(player, 6)
    assert last.startswith("Step 6 of 6 (all-gather): ") and "4 messages of 16 MiB" in last


def test_buffer_figure_counts_contributions(ring4):
    _, _, player = ring4
    start = figures.buffer_figure(player, 0)
    assert start.layout.meta["full_cells"] == 0
    assert start.data[0].text[0][0] == "r0" and start.data[0].text[3][2] == "r3"  # who holds what, by name
    end = figures.buffer_figure(player, figures.player_positions(player) - 1)
    assert end.layout.meta["full_cells"] == 16
    assert end.layout.meta["changed_cells"] == 4  # the last all-gather step fills one piece per rank
    assert figures.buffer_figure(player, 1).layout.meta["changed_cells"] == 4
    assert "the sum of r0, r1, r2 and r3" in end.data[0].hovertext[0][0] and end.data[0].text[0][0] == "r0–r3"


def test_buffer_figure_explains_when_absent(ring4):
    _, _, player = ring4
    figure = figures.buffer_figure({**player, "buffers": None, "op": "barrier"}, 0)
    assert "barrier" in figure.layout.annotations[0].text


def test_ddp_figures():
    events = [
        {"rank": 0, "kind": "backward", "start_s": 0.0, "end_s": 0.1, "bytes": 10, "bucket": -1, "name": "w"},
        {"rank": 0, "kind": "grad_ready", "start_s": 0.05, "end_s": 0.05, "bytes": 10, "bucket": 0, "name": "w"},
        {"rank": 0, "kind": "comm", "start_s": 0.05, "end_s": 0.12, "bytes": 10, "bucket": 0, "name": "bucket 0"},
    ]
    timeline = figures.ddp_timeline(events)
    assert timeline.layout.meta["kinds"] == ["backward", "grad_ready", "comm"]
    overhead = figures.overhead_figure(
        {"simulated": [(1, 0.1), (2, 0.05)], "closed form": [(1, 0.09), (2, 0.04)]}, (2, 0.05), 1, [(1, 0.11)]
    )
    assert [t.name for t in overhead.data] == ["simulated", "closed form", "measured", "optimum"]
    bars = figures.strategy_figure(
        {"flat": {"step_time_s": 0.2, "backward_end_s": 0.1}, "bucketed": {"step_time_s": 0.12, "backward_end_s": 0.1}}
    )
    assert list(bars.data[0].y) == ["bucketed", "flat"]  # overhead only, smallest first
    assert list(bars.data[0].x) == pytest.approx([20.0, 100.0]) and bars.data[0].textfont.size >= 12


def test_fit_and_comparison_figures():
    points = [{"size_bytes": 1024, "time_s": 1e-4, "residual": 0.1}, {"size_bytes": 1 << 20, "time_s": 1e-3, "residual": -0.1}]
    fit = compare_figures.fit_figure(points, {"curve": [(1024, 1e-4, 9e-5, 1.1e-4), (1 << 20, 1e-3, 9e-4, 1.1e-3)], "label": "fit"})
    assert [t.name for t in fit.data] == ["measured", "fit interval", "fit"]
    assert list(compare_figures.residual_figure(points).data[0].y) == pytest.approx([10.0, -10.0])
    rows = [{"size_bytes": 1024, "measured_s": 1e-4, "measured_lo_s": 9e-5, "measured_hi_s": 1.2e-4, "simulated_s": 1.1e-4}]
    drawn = compare_figures.sim_vs_measured_figure(rows).data  # no role: in-sample, the spread as error bars, nothing called a prediction
    assert [t.name for t in drawn] == ["measured", "simulated at the fitted points (in-sample, not a prediction)"] and drawn[
        0
    ].error_y.array


def _figures_in(value) -> list[go.Figure]:
    """Every Plotly figure in a callback's answer (dicts, tuples, lists, graphs in components)."""
    if isinstance(value, go.Figure):
        return [value]
    if isinstance(value, dict):
        return [f for item in value.values() for f in _figures_in(item)]
    if isinstance(value, (list, tuple)):
        return [f for item in value for f in _figures_in(item)]
    figure = getattr(value, "figure", None)
    children = getattr(value, "children", None)
    return _figures_in(figure) + _figures_in(children) if (figure is not None or children is not None) else []


def _validated(figure: go.Figure) -> go.Figure:
    """The figure rebuilt with Plotly's property validation on (the app builds most without it)."""
    return go.Figure(figure.to_dict())


def test_a_figure_with_an_invalid_property_fails_validation():
    from webapp.figures.common import figure_layout

    figure = go.Figure(layout={**figure_layout("t"), "titel": "typo"}, _validate=False)  # how the app builds them: unchecked
    assert "titel" in figure.to_dict()["layout"]  # serialised as it is
    with pytest.raises(ValueError):
        _validated(figure)


@pytest.mark.slow
def test_every_figure_is_valid_plotly_json():
    """Every figure every page draws, rebuilt with validation on: an invalid property (which
    plotly.js would ignore silently) fails here."""
    from webapp.pages.collectives import callbacks as page
    from webapp.pages.compare import page as compare
    from webapp.pages.ddp import page as ddp

    def form(**changes):
        return page.validate({**model.DEFAULTS, **changes})["scenario"]

    answers = [
        page.simulate(form(ranks="4"), "step"),
        page.simulate(form(ranks="32"), "chunk"),  # timelines as rasters
        page.simulate(form(ranks="1024", topology="ring", chunks="4"), "step"),  # refused: notes
        page.show_step(3, page.simulate(form(ranks="4", chunks="2"), "step")["player"]),
        page.compare_update("algorithm", "double_binary_tree", {**model.DEFAULTS}),
        page.crossover_panel(form(hardware="dgx-h100", topology="two_level", ranks="16", gpus_per_node="8")),
        ddp.simulate(ddp.validate(None, ddp_model_defaults())["ddp"]),
        ddp.simulate_training(ddp.validate(None, ddp_model_defaults())["training"]),
        compare.overlay(None),
    ]
    groups = compare.overlays.fittable_groups(compare.overlays.open_results(None))
    answers.append(compare.update(compare.group_id(groups[0]), "mean", "ring"))
    answers.append(compare.overlay(compare.overlays.ddp_configs(compare.overlays.open_results(None))[-1]))
    built = _figures_in(answers)
    assert len(built) >= 20
    for figure in built:
        _validated(figure).to_json()


def ddp_model_defaults() -> dict[str, str]:
    from webapp.pages.ddp import model as ddp_model

    return dict(ddp_model.DEFAULTS)


def test_many_bars_are_drawn_as_a_raster():
    s, _ = model.parse_form({**model.DEFAULTS, "ranks": "32"})
    events = run_collective(s).events()
    assert len(events) > figures.SEGMENT_BARS
    figure = figures.rank_gantt(events, "step")
    raster = figure.data[0]
    assert raster.type == "heatmap" and raster.z.shape == (32, figures.RASTER_BINS)
    assert figure.layout.meta["bars"] == len(events)
    assert "time bins" in figure.layout.annotations[0].text
    last_step = len({e["step"] for e in events})  # numbered as the player numbers steps: from 1
    assert raster.z[0, -1] == last_step  # every lane ends busy with the last step
    assert raster.z.dtype == "float32" and list(raster.y) == [f"rank {r}" for r in range(32)]  # hover names the lane
    assert len(figure.layout.yaxis.ticktext) <= figures.MAX_LANE_LABELS  # 32 lanes, every other one labelled
    assert figure.layout.yaxis.ticktext[:2] == ("rank 0", "rank 2")


def test_crossover_winners_are_one_trace():
    rows = [
        {"algorithm": name, "size_bytes": size, "time_s": time, "method": "closed form", "why": ""}
        for size in (1, 4, 16, 64)
        for name, time in (("a", size), ("b", 8.0))
    ]
    figure = figures.crossover_figure(rows, 4, "a")
    (fastest,) = [trace for trace in figure.data if trace.name == "fastest"]
    assert list(fastest.x) == [1, 4, 16, 64] and len(set(fastest.marker.color)) == 2


def test_ddp_timeline_keeps_whole_lane_names():
    """Lane names such as "measured optimizer" were clipped at the left edge: the axis now grows
    its margin to fit them."""
    rows = [
        {"rank": 0, "kind": "measured optimizer", "start_s": 0.0, "end_s": 1e-3, "bucket": -1},
        {"rank": 0, "kind": "simulated backward", "start_s": 0.0, "end_s": 2e-3, "bucket": -1},
    ]
    figure = figures.ddp_timeline(rows, "t")
    assert figure.layout.yaxis.automargin is True
    assert list(figure.layout.yaxis.categoryarray) == ["measured optimizer", "simulated backward"]


def test_every_trace_type_is_in_the_served_plotly_bundle():
    """The app serves plotly.js's cartesian bundle (webapp/assets, 1.5 MB instead of 4.8 MB, for
    a faster first load); a trace type outside it would draw nothing. Every go.* trace the webapp
    builds must be one the bundle registers."""
    import re
    from pathlib import Path

    root = Path(figures.__file__).parents[1]
    bundle = (root / "assets" / "plotly-cartesian.min.js").read_text()[:400]
    assert "plotly.js (cartesian - minified) v" in bundle
    cartesian = {"Bar", "Box", "Contour", "Heatmap", "Histogram", "Histogram2d", "Histogram2dContour", "Image", "Pie", "Scatter"}
    cartesian |= {"Scatterternary", "Violin"}
    used = set()
    for path in root.rglob("*.py"):
        used |= set(re.findall(r"\bgo\.([A-Z][A-Za-z0-9]+)\(", path.read_text()))
    assert used - {"Figure"} <= cartesian, used - cartesian


def test_crossover_says_which_points_were_beyond_the_budget():
    rows = [
        {"algorithm": "ring", "size_bytes": 1024, "time_s": 1e-5, "method": "closed form", "why": ""},
        {"algorithm": "nccl_tree", "size_bytes": 1024, "time_s": 2e-5, "method": "simulated", "why": ""},
        {"algorithm": "nccl_tree", "size_bytes": 1 << 30, "time_s": None, "method": "n/a", "why": "too large to simulate here"},
    ]
    figure = figures.crossover_figure(rows, 1024, "ring")
    assert figure.layout.meta["beyond_budget"] == ["nccl_tree"]
    assert not any("not simulated" in note.text for note in figure.layout.annotations)  # said under it, by the page (it was cut off)
    quiet = figures.crossover_figure(rows[:2], 1024, "ring")
    assert quiet.layout.meta["beyond_budget"] == []


def test_crossover_time_axis_labels_powers_of_ten_written_out():
    """Over two decades or more the time axis labels each power of ten as a plain number (Plotly
    would also label the 2s and 5s between, and write 1e-4 ms as "100μ"); under two, Plotly's own."""
    rows = [
        {"algorithm": "ring", "size_bytes": 1024, "time_s": 1e-7, "method": "closed form", "why": ""},
        {"algorithm": "ring", "size_bytes": 1 << 30, "time_s": 1e-2, "method": "closed form", "why": ""},
    ]
    wide = figures.crossover_figure(rows, 1024, "ring").layout.yaxis
    assert wide.type == "log" and wide.dtick == 1 and wide.exponentformat == "none"
    rows[1] = {**rows[1], "time_s": 5e-7}
    narrow = figures.crossover_figure(rows, 1024, "ring").layout.yaxis
    assert narrow.dtick is None and narrow.exponentformat is None


def test_figures_carry_no_template(ring4):
    """Figures are built unchecked from layout dicts: without an explicit empty template plotly.py
    would attach its default (7 kB each, and a grey-blue plot area instead of the app's white)."""
    import json

    from plotly.utils import PlotlyJSONEncoder

    _, result, _ = ring4
    built = [
        figures.rank_gantt(result.events(), "step"),
        figures.note_figure("nothing", "Empty"),
        figures.crossover_figure([{"algorithm": "ring", "size_bytes": 1024, "time_s": 1e-5, "method": "closed form", "why": ""}]),
    ]
    for figure in built:
        assert json.loads(json.dumps(figure, cls=PlotlyJSONEncoder))["layout"]["template"] == {}
