"""What a student and an engineer read on the Collectives page (issue 36): the reason a side by
side names, the heatmaps' colour scale, the crossover's notes and coincident curves, the names
of ranks and pieces, units as typed, presets that set nodes, links with a changed op or an
unknown key. Callbacks and figure functions called directly (no server, no browser)."""

from __future__ import annotations

import pytest

from sim.collective import explore
from webapp import collective as model
from webapp.figures import collectives as draw
from webapp.pages.collectives import callbacks as page


def values(**changes: str) -> dict[str, str]:
    return {**model.DEFAULTS, **changes}


def scenario_of(**changes: str) -> dict | None:
    return page.validate(values(**changes))["scenario"]


def test_side_by_side_names_the_largest_increase_not_a_larger_offsetting_decrease():
    data = scenario_of(size="1MiB")
    a = page.scenario_of(data)
    b = a.replace(algorithm="recursive_doubling")
    parts = [explore.decompose(s) for s in (a, b)]
    diff = {name: parts[1][name] - parts[0][name] for name in ("latency", "bandwidth", "reduction")}
    assert parts[1]["total"] > parts[0]["total"] and diff["latency"] < -diff["bandwidth"] / 2  # the case of the issue
    title = draw.parts_figure(["A", "B"], parts).layout.meta["summary"]
    largest = max(diff, key=diff.get)
    assert largest == "bandwidth" and f"mostly {largest}" in title and "mostly latency" not in title
    shown = page.compare_panel("recursive_doubling", "algorithm", data)
    assert "mostly bandwidth (+" in shown["note"] and "latency −" in shown["note"]


def test_side_by_side_a_decrease_is_explained_by_the_largest_decrease():
    a = {"latency": 1e-5, "bandwidth": 4e-5, "reduction": 1e-5, "overhead": 0.0, "contention": 0.0, "total": 6e-5}
    b = {"latency": 3e-5, "bandwidth": 1e-5, "reduction": 1e-5, "overhead": 0.0, "contention": 0.0, "total": 5e-5}
    title = draw.parts_figure(["A", "B"], [a, b]).layout.meta["summary"]
    assert "−10 us, mostly bandwidth (−30 us)" in title and "latency +20 us the other way" in title


def _luminance(colour: str) -> float:
    from plotly.colors import hex_to_rgb, unlabel_rgb

    red, green, blue = hex_to_rgb(colour) if colour.startswith("#") else unlabel_rgb(colour)
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def _scale_of(figure) -> tuple[list, dict]:
    """A heatmap's colour scale as the browser gets it (the JSON), and its colour bar."""
    data = figure.to_plotly_json()
    heatmap = next(item for item in data["data"] if item["type"] == "heatmap")
    if heatmap.get("coloraxis"):
        axis = data["layout"]["coloraxis"]
        return axis["colorscale"], axis["colorbar"]
    return heatmap["colorscale"], heatmap["colorbar"]


def test_utilisation_heatmaps_draw_busy_dark_with_one_labelled_scale():
    shown = page.simulate(scenario_of(ranks="64"), "step", background=False)
    links = shown["link_gantt"]
    assert links.layout.meta["utilisation"]  # too many crossings for bars: the heatmap of the issue
    compared = page.compare_panel("recursive_doubling", "algorithm", scenario_of(ranks="8"))["timeline"]
    scales = []
    for figure in (links, compared):
        scale, bar = _scale_of(figure)
        assert isinstance(scale, list), "a named scale means what Plotly.js's own table says (legacy Blues: 0 dark)"
        assert _luminance(scale[0][1]) > _luminance(scale[-1][1]) + 100  # idle light, busy dark
        assert "in flight" in bar["title"]["text"]
        scales.append(scale)
    assert scales[0] == scales[1]  # one colour scale in both


def test_crossover_says_which_curves_lie_on_each_other():
    figure = page.crossover_panel(scenario_of(op="broadcast", algorithm="binomial"))
    names = {item.name.split(" (")[0]: item for item in figure.data if item.name and item.name != "fastest"}
    rows = {}
    for item in figure.data:
        if item.name and item.x and item.x[0] is not None and item.name.split(" (")[0] in names:
            rows[item.name.split(" (")[0]] = list(item.y)
    assert rows["linear"] == pytest.approx(rows["pipelined_chain"], rel=1e-9)  # the data: one curve under the other
    assert "= pipelined_chain" in names["linear"].name and "= linear" in names["pipelined_chain"].name
    assert names["pipelined_chain"].line.dash == "dash"  # drawn over linear: dashed, so both show
    assert "=" not in names["binomial"].name and "=" not in names["scatter_allgather"].name
    assert figure.layout.meta["coincident"] == {"linear": ["pipelined_chain"], "pipelined_chain": ["linear"]}
    apart = page.crossover_panel(scenario_of(op="broadcast", algorithm="pipelined_chain", chunks="4"))  # 4 chunks: the chain pipelines
    assert apart.layout.meta["coincident"] == {}
