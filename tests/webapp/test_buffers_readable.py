"""The step player's buffers readable at every size (issue 21, item 4): NCCL's channels and an
algorithm's chunks grouped per piece (a sub-grid with one label per piece, or one merged cell
per piece when a column would be too narrow), tick labels apart at the narrowest card
(1024x768), cell words only where they fit, outlines inside their cells, titles that fit, a
note on short lines above the drawable size. Figures called directly (no browser)."""

from __future__ import annotations

import numpy as np
import pytest

from webapp import collective as model
from webapp.figures import buffers as draw
from webapp.pages.collectives import callbacks as page

from .test_player_anim import player_of

NCCL_TWO_NODES = "?hardware=dgx-h100&ranks=16"  # NCCL's pick: ring/LL128 on 16 channels, 16 x 256 cells
CASES = {
    "dgx-h100 x 2, NCCL's pick": NCCL_TWO_NODES,
    "dgx-h100 x 1, NCCL's pick": "?hardware=dgx-h100&ranks=8",
    "hgx-h100-nvls x 2, NCCL's pick": "?hardware=hgx-h100-nvls&ranks=16",
    "ring, 8 ranks": "?ranks=8",
    "ring, 16 ranks, 4 chunks": "?ranks=16&chunks=4",
    "ring, 32 ranks": "?ranks=32",
    "ring, 8 ranks, 4 chunks": "?ranks=8&chunks=4",
    "tree reduce, 16 ranks": "?op=reduce&algorithm=binomial&ranks=16",
    "double binary tree, 16 ranks, 2 chunks": "?ranks=16&algorithm=double_binary_tree&chunks=2",
    "hierarchical, 16 ranks, 2 chunks": "?ranks=16&topology=two_level&gpus_per_node=4&algorithm=hierarchical&chunks=2",
    "hierarchical, 32 ranks": "?ranks=32&topology=two_level&gpus_per_node=8&algorithm=hierarchical",
    "pipelined chain, 8 ranks, 8 chunks": "?op=broadcast&algorithm=pipelined_chain&ranks=8&chunks=8",
}


def columns_px(figure) -> float:
    """One column's width at the narrowest card, from the heatmap's own columns."""
    return draw.NARROWEST_PLOT_PX / len(figure.data[0].z[0])


def tick_boxes(figure) -> list[tuple[float, float]]:
    """Each tick label's left and right edge in pixels from the plot's left edge, at the narrowest."""
    axis = figure.layout.xaxis
    assert axis.tickvals is not None, "no tick positions set: Plotly writes a label per category, overprinted"
    low, high = axis.range
    scale = draw.NARROWEST_PLOT_PX / (high - low)
    return [
        ((x - low) * scale - draw.label_px(text) / 2, (x - low) * scale + draw.label_px(text) / 2)
        for x, text in zip(axis.tickvals, axis.ticktext)
    ]


def test_nccl_on_two_nodes_draws_one_column_per_piece_with_one_label_each():
    player = player_of(NCCL_TWO_NODES)
    assert player["chunks"] == 16 and len(player["buffers"][0]["cells"][0]) == 256  # a cell per piece x channel
    figure = draw.buffer_figure(player, 3)
    z = np.asarray(figure.data[0].z)
    assert z.shape == (16, 16)  # 16 pieces, each one cell of its 16 channels (256 columns were 1.2 px each)
    assert figure.layout.meta["cells_per_column"] == 16 and figure.layout.meta["columns"] == 16
    assert figure.layout.xaxis.tickangle == 0
    ticks = list(figure.layout.xaxis.ticktext)
    assert ticks == [f"p{p}" for p in range(0, 16, 2)]  # "p15" and its gap do not fit 19 px: every second piece
    assert list(figure.layout.xaxis.tickvals) == list(range(0, 16, 2))
    assert "one cell" in figure.layout.xaxis.title.text and "16 channels" in figure.layout.xaxis.title.text


def test_merged_cells_hover_each_channel_and_their_outlines_fit_one_cell():
    player = player_of(NCCL_TWO_NODES)
    figure = draw.buffer_figure(player, 1)
    hover = figure.data[0].hovertext
    assert hover[2][0] == "r2, p0, its 16 channels: each holds the sum of r1 and r2"  # rank 1 sent its p0 on
    assert hover[0][0] == "r0, p0, its 16 channels: each holds r0's data"
    rects = [shape for shape in figure.layout.shapes if shape.type == "rect"]
    before, after = (np.asarray(player["buffers"][i]["cells"], dtype=object) for i in (0, 1))
    changed = (before != after).reshape(16, 16, 16)  # rank, piece, channel
    assert len(rects) == changed.any(axis=2).sum() > 0  # one outline per (rank, piece) with a changed channel
    assert figure.layout.meta["changed_cells"] == changed.sum()
    assert all(shape.x1 - shape.x0 < 1 and shape.y1 - shape.y0 < 1 for shape in rects)
    changed = next(trace for trace in figure.data if trace.name == "changed in this step")
    assert "r2, p0: 16 of its 16 channels changed in this step" in changed.hovertext


def test_merged_cell_with_chunks_that_differ_says_which_hold_what():
    masks = [0b11, 0b11, 0b111, 0b1]
    words = draw._merged_hover(masks, True, "channel")
    assert words == "channels 0–1: the sum of r0 and r1; channels 2: the sum of r0, r1 and r2; channels 3: r0's data"
    assert draw._merged_word([2, 2, 3, 1], [["0", "1"], ["0", "1"], ["0", "1", "2"], ["0"]], 8, True) == "1–3 ranks"
    assert draw._merged_word([1, 0], [["0"], []], 8, False) == "r0"  # whose data has arrived; the colour says how much


def test_a_sub_grid_labels_each_piece_once_at_its_centre_with_lines_between_pieces():
    player = player_of("?ranks=8&chunks=4")
    figure = draw.buffer_figure(player, 1)
    assert len(figure.data[0].z[0]) == 32 and figure.layout.meta["cells_per_column"] == 1  # 9.6 px columns: each chunk drawn
    assert list(figure.layout.xaxis.tickvals) == [1.5 + 4 * p for p in range(8)]  # the centre of each piece's 4 columns
    assert list(figure.layout.xaxis.ticktext) == [f"p{p}" for p in range(8)]
    lines = [shape for shape in figure.layout.shapes if shape.type == "line"]
    assert sorted(shape.x0 for shape in lines) == [4 * p - 0.5 for p in range(1, 8)]
    rects = [shape for shape in figure.layout.shapes if shape.type == "rect"]
    assert len(rects) == 8  # one outline per changed piece (its 4 chunks), not 32 touching ones
    for shape in rects:
        first, last = shape.x0 + 0.46, shape.x1 - 0.46
        assert last - first == pytest.approx(3) and first % 4 == pytest.approx(0)  # exactly one piece's chunks


@pytest.mark.parametrize("case", list(CASES))
def test_tick_labels_are_apart_and_inside_the_card_at_1024x768(case):
    player = player_of(CASES[case])
    for position in (0, 1, len(player["buffers"]) - 1):
        figure = draw.buffer_figure(player, position)
        boxes = tick_boxes(figure)
        assert boxes and figure.layout.xaxis.tickangle == 0
        gaps = [b[0] - a[1] for a, b in zip(boxes, boxes[1:])]
        assert min(gaps, default=draw.TICK_GAP_PX) >= draw.TICK_GAP_PX, (case, position, gaps)
        assert boxes[0][0] >= -draw.MARGIN_PX["l"] and boxes[-1][1] <= draw.NARROWEST_PLOT_PX + draw.MARGIN_PX["r"]
        assert columns_px(figure) >= draw.MIN_COLUMN_PX, case  # no column too narrow to see, nor its outline


@pytest.mark.parametrize("case", list(CASES))
def test_cell_words_only_where_they_fit_and_outlines_inside_their_cells(case):
    player = player_of(CASES[case])
    for position in range(1, min(4, len(player["buffers"]))):
        figure = draw.buffer_figure(player, position)
        heatmap = figure.data[0]
        if heatmap.text is not None:
            widest = max(len(word) for row in heatmap.text for word in row)
            assert widest * draw.CELL_CHAR_PX + 4 <= columns_px(figure), (case, widest, columns_px(figure))
        pieces = len(heatmap.z[0]) // (1 if figure.layout.meta["cells_per_column"] > 1 else player["chunks"])
        width = len(heatmap.z[0]) // pieces  # columns per piece
        for shape in (s for s in figure.layout.shapes if s.type == "rect"):
            assert shape.y1 - shape.y0 < 1, case  # never taller than its row
            first, last = round(shape.x0 + 0.46), round(shape.x1 - 0.46)
            assert first // width == last // width, case  # inside one piece's columns


@pytest.mark.parametrize("case", list(CASES))
def test_every_title_line_fits_the_narrowest_card(case):
    player = player_of(CASES[case])
    for position in range(len(player["buffers"])):
        title = draw.buffer_figure(player, position).layout.title.text
        heading = [line for line in title.split("<br>") if not line.startswith("<span")]
        assert all(draw.label_px(line, draw.TITLE_CHAR_PX) <= draw.FIGURE_PX - 8 for line in heading), (case, heading)


def test_a_long_phase_goes_to_its_own_line():
    player = player_of("?hardware=hgx-h100-nvls&ranks=16")
    title = draw.buffer_figure(player, 1).layout.title.text
    assert title.startswith("Buffers after step 1 of 2<br>(reduce and multicast in the switch)<br>")
    short = draw.buffer_figure(player_of("?ranks=4"), 1)
    assert short.layout.title.text.split("<br>")[0] == "Buffers after step 1 of 6 (reduce-scatter)"
    assert short.layout.margin.t < draw.buffer_figure(player, 1).layout.margin.t  # room made for the third line


def test_nodes_are_marked_between_their_rows():
    figure = draw.buffer_figure(player_of(NCCL_TWO_NODES), 1)
    rows = [shape for shape in figure.layout.shapes if shape.type == "line" and shape.y0 == shape.y1]
    assert [shape.y0 for shape in rows] == [7.5]  # between rank 7 (node 0) and rank 8 (node 1)
    assert not [s for s in draw.buffer_figure(player_of("?ranks=8"), 1).layout.shapes if s.type == "line"]


def test_column_grid_thins_labels_and_merges_pieces_by_the_pixels_they_get():
    assert [draw.column_grid(cells, 1).stride for cells in (8, 16, 32)] == [1, 2, 4]  # "p31" and its gap: 27 px; a column: 9.6
    assert draw.column_grid(256, 16).per_column == 16 and draw.column_grid(32, 4).per_column == 1
    wide = draw.column_grid(256, 16, plot_px=2000)  # a wide card keeps every channel
    assert wide.per_column == 1 and wide.stride == 1 and wide.tickvals[:2] == [7.5, 23.5]
    for cells, chunks in ((8, 1), (64, 1), (512, 16), (24 * 8, 24), (96, 3)):
        grid = draw.column_grid(cells, chunks)
        assert grid.column_px >= draw.MIN_COLUMN_PX or grid.per_column == 1 and chunks == 1
        spacing = grid.stride * draw.NARROWEST_PLOT_PX / grid.pieces
        assert spacing >= draw.label_px(grid.ticktext[-1]) + draw.TICK_GAP_PX or grid.stride >= grid.pieces


def test_above_the_drawable_size_the_note_is_on_short_lines():
    for query in ("?ranks=64", "?hardware=dgx-h100&ranks=32"):  # 64 ranks; 32 ranks x 16 channels = 512 cells
        figure = page.simulate(page.validate(model.form_from_query(query))["scenario"], "step")["buffers"]
        (note,) = figure.layout.annotations
        lines = note.text.split("<br>")
        assert len(lines) > 1 and all(draw.label_px(line, 7.5) <= draw.FIGURE_PX - 20 for line in lines), lines
        assert "32 ranks" in note.text


def test_the_rows_fill_the_grid_exactly():
    figure = draw.buffer_figure(player_of("?ranks=32"), 3)  # hover points of the outlines padded the autorange: a blank row's height
    assert list(figure.layout.yaxis.range) == [31.5, -0.5] and list(figure.layout.xaxis.range) == [-0.5, 31.5]  # rank 0 on top
