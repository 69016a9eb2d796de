"""The guides name ranks r0..r(p-1) and pieces p0..p(p-1), as the Collectives page does, so
"p0" never means rank 0 on one page and piece 0 on the other (issue 36)."""

from __future__ import annotations

import pytest

from webapp.pages.guides import figures as draw
from webapp.pages.guides import page as guides


@pytest.mark.parametrize("p", [4, 8, 16])
def test_ring_guide_rows_are_ranks_r_and_columns_are_pieces_p(p):
    cells = guides.ring_view(p, 0)["cells"].data[0]
    assert list(cells.y) == [f"r{rank}" for rank in range(p)]
    assert list(cells.x) == [f"p{piece}" for piece in range(p)]
    # before any message each piece holds its own rank's data: row r reads "r<r>" everywhere
    assert [set(row) for row in cells.text] == [{f"r{rank}"} for rank in range(p)]


def test_cell_labels_name_ranks_with_r():
    assert draw.contributors(0b1000, 8) == "r3"
    assert draw.contributors(0b1100, 8) == "r2+r3"
    assert draw.contributors(0b1111, 8) == "r0–r3"
    assert draw.contributors(0b11000011, 8) == "r6–r1"


def test_the_ring_title_example_is_a_run_this_p_has():
    for p in (4, 8, 16):
        title = guides.ring_view(p, 0)["cells"].layout.title.text
        assert f"r{p - 2}–r0: ranks {p - 2}, {p - 1}, 0" in title


def test_bytes_bars_and_broadcast_tree_name_ranks_with_r():
    assert list(guides.ring_view(8, 3)["bytes"].data[0].x) == [f"r{rank}" for rank in range(8)]
    view = guides.broadcast_view(2)
    assert list(view["bytes"].data[0].x) == [f"r{rank}" for rank in range(8)]
    nodes = next(trace for trace in view["tree"].data if trace.mode == "markers+text")
    assert list(nodes.text) == [f"r{rank}" for rank in range(8)]
