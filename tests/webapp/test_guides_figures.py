"""The guides page's figures (webapp/figures/guides.py through webapp/pages/guides.py): valid
plotly with validation on, and drawing what sim.teaching says."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import pytest

from webapp.pages.guides import figures as draw
from webapp.pages.guides import page as guides


def valid(figure: go.Figure) -> go.Figure:
    """Round-trip through the validating constructor: an invalid property raises."""
    assert isinstance(figure, go.Figure)
    return go.Figure(figure.to_dict())


def test_ring_guide_cells_accumulate_and_bytes_reach_the_bound():
    first, last = guides.ring_view(8, 0), guides.ring_view(8, 14)
    assert first["max"] == last["max"] == 14
    cells0 = valid(first["cells"]).data[0]
    assert {v for row in cells0.z for v in row} == {1}  # each piece holds its own rank's data only
    assert [list(row) for row in valid(last["cells"]).data[0].z] == [[8] * 8] * 8  # all sums, everywhere
    after7 = guides.ring_view(8, 7)["cells"].data[0]
    assert sorted(v for row in after7.z for v in row).count(8) == 8  # reduce-scatter done: one full sum per rank
    bars = valid(last["bytes"]).data[0]
    assert list(bars.y) == [112.0] * 8 and last["bytes"].layout.meta["bound_bytes"] == 112 * 2**20
    assert guides.ring_view(8, 3)["cells"].layout.meta["changed"] == 8  # one piece per rank changes per step
    assert "Step 14:" in str(guides.ring_view(8, 99)["text"])  # past the end: the last step


def test_ring_guide_highlights_the_terms_the_step_pays():
    def highlighted(position: int) -> set[str]:
        spans = guides.ring_view(8, position)["formula"]
        return {s.className.removeprefix("term-") for s in spans if getattr(s, "className", "") and s.style.get("fontWeight") == "bold"}

    assert highlighted(0) == set()
    assert highlighted(3) == {"alpha", "beta", "gamma"}  # reduce-scatter adds
    assert highlighted(10) == {"alpha", "beta"}  # all-gather only copies


def test_contributors_label():
    assert draw.contributors(0b1000, 8) == "r3"
    assert draw.contributors(0b1100, 8) == "r2+r3"
    assert draw.contributors(0b1111, 8) == "r0–r3"
    assert draw.contributors(0xFF, 8) == "all 8"
    assert draw.contributors(0b11000011, 8) == "r6–r1"


@pytest.mark.parametrize("tree", ["recursive_doubling", "reduce_broadcast"])
def test_stated_crossover_moves_with_alpha_and_beta_as_the_formula_says(tree):
    """n* = alpha (L_B - L_A) / (beta (F_A - F_B) + gamma (G_A - G_B)): proportional to alpha, and
    to the bandwidth 1/beta (gamma follows beta on this guide: reduction at 4x the bandwidth)."""
    base = guides.crossover_view(8, tree, 1.0, 1.0)
    base_bytes = valid(base["figure"]).layout.meta["crossover_bytes"]
    more_latency = guides.crossover_view(8, tree, 2.0, 1.0)["figure"].layout.meta["crossover_bytes"]
    faster_wire = guides.crossover_view(8, tree, 1.0, 2.0)["figure"].layout.meta["crossover_bytes"]
    assert more_latency == pytest.approx(10 * base_bytes) and faster_wire == pytest.approx(10 * base_bytes)
    assert base["size"].startswith("n* = ")
    curves = {trace.name: trace for trace in base["figure"].data}
    index = min(range(len(guides.CROSS_SIZES)), key=lambda i: abs(math.log(guides.CROSS_SIZES[i] / base_bytes)))
    assert curves[tree].y[index] == pytest.approx(curves["ring"].y[index], rel=0.1)  # the curves meet at the stated size


def test_crossover_by_hand_on_the_explorer_network():
    """alpha = 5 us, 25 GB/s, reduction 100 GB/s, p = 8: n* = 11 alpha / (1.25 beta + 2.125 gamma)."""
    view = guides.crossover_view(8, "recursive_doubling", math.log10(5), math.log10(25))
    assert view["figure"].layout.meta["crossover_bytes"] == pytest.approx(11 * 5e-6 / (1.25 / 25e9 + 2.125 / 100e9), rel=1e-9)
    assert view["size"] == "n* = 753.8 KiB"


def test_broadcast_guide_15_s():
    views = [guides.broadcast_view(step) for step in range(4)]
    assert [valid(v["tree"]).layout.meta["holding"] for v in views] == [1, 2, 4, 8]
    assert list(valid(views[3]["bytes"]).data[0].y)[0] == pytest.approx(15.0)  # root: n lg p = 15 MB (the course says MB)
    assert "15 s" in str(views[3]["tree"].layout.title.text)


def test_bucket_guide_formula_optimum_and_one_percent_range():
    view = guides.bucket_view("course", 50, 10, None)
    figure = valid(view["figure"])
    s, w, o = 256 * 2**20, 10e9, 50e-6
    assert figure.layout.meta["b_star"] == pytest.approx(math.sqrt(s * w * o))
    formula = next(t for t in figure.data if t.name.startswith("course formula"))
    simulated = next(t for t in figure.data if t.name.startswith("simulated"))
    caps = list(formula.x)
    at = min(range(len(caps)), key=lambda i: abs(caps[i] - 4 * 2**20))  # above the tensor size the DES is the formula
    assert simulated.y[at] == pytest.approx(formula.y[at], rel=1e-6)
    assert simulated.y[0] < 0.5 * formula.y[0]  # below a tensor (256 KiB) buckets cannot shrink: they part
    assert "within 1 %" in str(view["text"][0]) and "will do" in str(view["text"][0])


def test_bucket_guide_bad_input_is_a_message():
    view = guides.bucket_view("course", 0, 10, None)
    assert "must be positive" in str(view["text"])
    valid(view["figure"])
