"""A curve equal to another at every size is drawn exactly under it: the guides' crossover
figure finds such curves from the numbers and marks them (issue 36: broadcast's ``linear`` hid
under ``pipelined_chain``)."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import pytest

from sim.collective import analytic
from webapp.pages.guides import figures as draw
from webapp.pages.guides import page as guides


def broadcast_times(names: tuple[str, ...], p: int = 8) -> dict[str, list[float]]:
    return {name: [analytic.closed_form("broadcast", name, p, n, 5e-6, 1 / 25e9) for n in guides.CROSS_SIZES] for name in names}


def test_crossover_figure_marks_linear_and_one_chunk_pipelined_chain_as_one_curve():
    times = broadcast_times(("binomial", "linear", "pipelined_chain"))
    assert times["linear"] == pytest.approx(times["pipelined_chain"], rel=1e-12)  # (p-1)(α + n β) both, with one chunk
    figure = go.Figure(draw.crossover_guide_figure(guides.CROSS_SIZES, times, None, "").to_dict())  # validates
    assert figure.layout.meta["coincident"] == [["linear", "pipelined_chain"]]
    traces = {trace.name.split(" ")[0]: trace for trace in figure.data}
    assert traces["pipelined_chain"].line.dash == "dash" and "= linear" in traces["pipelined_chain"].name
    assert traces["linear"].line.dash == "solid" and traces["linear"].name == "linear"
    assert traces["binomial"].line.dash == "solid" and traces["binomial"].name == "binomial"


def test_curves_that_differ_anywhere_are_not_marked():
    times = broadcast_times(("linear", "pipelined_chain"))
    times["pipelined_chain"][-1] *= 1.001  # one size apart
    assert draw.coincident(times) == {}


@pytest.mark.parametrize("tree", ["recursive_doubling", "reduce_broadcast"])
def test_the_guides_own_curves_differ_and_stay_unmarked(tree):
    figure = guides.crossover_view(8, tree, math.log10(5), math.log10(25))["figure"]
    assert figure.layout.meta["coincident"] == [] and {trace.line.dash for trace in figure.data} == {"solid"}


def test_the_crossover_line_keeps_its_label_beside_the_curves():
    figure = guides.crossover_view(8, "recursive_doubling", math.log10(5), math.log10(25))["figure"]
    assert [annotation.text for annotation in figure.layout.annotations] == ["<b>n* = 753.8 KiB</b>"]
