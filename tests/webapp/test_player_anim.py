"""The step player's moving chunks and its labels (issue 21: "chunks drawn as they move along
an edge during the step", "labels never overlap"). Figures called directly (no browser); the
browser side is tests/webapp/test_browser_player_anim.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from webapp import collective as model
from webapp.figures import player as draw
from webapp.pages.collectives import callbacks as page

CROWDED = {
    "ring, chunks=2, switch": "?ranks=8&chunks=2",
    "ring, chunks=2, two_level": "?ranks=8&chunks=2&topology=two_level&gpus_per_node=4",
    "double binary tree, 8": "?ranks=8&algorithm=double_binary_tree",
    "double binary tree, 16": "?ranks=16&algorithm=double_binary_tree",
    "binomial broadcast": "?op=broadcast&algorithm=binomial&ranks=8&size=5MB&latency=0us&bandwidth=1MB/s",
    "binomial reduce": "?op=reduce&algorithm=binomial&ranks=8",
    "hierarchical": "?ranks=8&topology=two_level&gpus_per_node=4&algorithm=hierarchical",
}


def player_of(query: str) -> dict:
    return page.simulate(page.validate(model.form_from_query(query))["scenario"], "step")["player"]


def motion(figure) -> tuple[np.ndarray, object]:
    moving = next(t for t in figure.data if t.name == draw.MOTION_TRACE)
    return np.asarray(moving.customdata, dtype=float), moving


def test_each_message_moves_from_its_sender_to_its_receiver_at_its_simulated_times():
    player = player_of(CROWDED["ring, chunks=2, switch"])
    where = {n["id"]: (n["x"], n["y"]) for n in player["layout"]["nodes"]}
    messages = player["messages"][0]
    paths, moving = motion(draw.topology_figure(player, 1))
    assert len(paths) == len(messages) and list(moving.x) == list(paths[:, 0])  # drawn at the senders until the browser moves them
    first, last = min(m[2] for m in messages), max(m[3] for m in messages)
    for (x0, y0, x1, y1, begin, end), message in zip(paths, messages):
        sender, receiver = where[str(message[0])], where[str(message[1])]
        assert math.dist((x0, y0), sender) < math.dist((x0, y0), receiver)  # from the sender's rim ...
        assert math.dist((x1, y1), receiver) < 0.2 < math.dist((x0, y0), (x1, y1))  # ... to the receiver's
        assert begin == pytest.approx((message[2] - first) / (last - first), abs=1e-4)
        assert end == pytest.approx((message[3] - first) / (last - first), abs=1e-4)
    # pipelined: chunk 1 leaves when chunk 0 has arrived (sub-round 2 after sub-round 1)
    by_chunk = {chunk: paths[[m[5] == chunk for m in messages]] for chunk in (0, 1)}
    assert by_chunk[0][:, 4].max() == 0 and by_chunk[1][:, 4].min() >= by_chunk[0][:, 5].max() - 1e-4 > 0


@pytest.mark.parametrize("case", ["double binary tree, 8", "binomial broadcast"])
def test_motion_follows_the_order_of_simulated_starts(case):
    player = player_of(CROWDED[case])
    for position, messages in enumerate(player["messages"], start=1):
        paths, _ = motion(draw.topology_figure(player, position))
        order = np.argsort([m[2] for m in messages], kind="stable")
        assert list(np.diff(paths[order, 4]) >= -1e-9) == [True] * (len(messages) - 1)
        assert (paths[:, 5] > paths[:, 4]).all() and paths[:, 5].max() == pytest.approx(1)


def label_boxes(figure) -> list[tuple[str, np.ndarray]]:
    """Each written label's box and each rank marker's, in pixels at the narrowest size the page
    draws the player (the figure's fixed ranges at draw.NARROWEST_PX), as Chromium sizes 10 px text."""
    layout = figure.layout
    share = layout.xaxis.domain[1] if layout.xaxis.domain else 1.0
    x_range, y_range = layout.xaxis.range, layout.yaxis.range
    scale = min(draw.NARROWEST_PX[0] * share / (x_range[1] - x_range[0]), draw.NARROWEST_PX[1] / (y_range[1] - y_range[0]))
    boxes = []
    for trace in figure.data:
        if trace.name == "message labels":
            for x, y, text in zip(trace.x, trace.y, trace.text):
                if text:
                    w, h = draw.CHAR_PX * len(text) / 2, draw.LINE_PX / 2
                    boxes.append((text, np.array([x * scale - w, y * scale - h, x * scale + w, y * scale + h])))
        if trace.name == "ranks":
            boxes += [
                (f"rank {t}", np.array([x * scale - 13, y * scale - 13, x * scale + 13, y * scale + 13]))
                for x, y, t in zip(trace.x, trace.y, trace.text)
            ]
    return boxes


@pytest.mark.parametrize("case", list(CROWDED))
def test_arrow_labels_overlap_neither_each_other_nor_the_ranks(case):
    player = player_of(CROWDED[case])
    for position in range(1, len(player["steps"]) + 1):
        boxes = label_boxes(draw.topology_figure(player, position))
        for i, (a, box_a) in enumerate(boxes):
            for b, box_b in boxes[i + 1 :]:
                if a.startswith("rank") and b.startswith("rank"):
                    continue
                apart = box_a[2] <= box_b[0] or box_b[2] <= box_a[0] or box_a[3] <= box_b[1] or box_b[3] <= box_a[1]
                assert apart, f"{case}, step {position}: {a!r} overlaps {b!r}"


def test_labels_left_to_the_hover_are_counted_and_said():
    figure = draw.topology_figure(player_of(CROWDED["double binary tree, 16"]), 1)
    labels = next(t for t in figure.data if t.name == "message labels")
    dropped = list(labels.text).count("")
    assert dropped and figure.layout.meta["labels_in_hover"] == dropped
    note = next(a for a in figure.layout.annotations if a.name == "crowded")
    assert note.text == f"{dropped} labels: hover the dots" and all("→" in h for h in labels.hovertext)


def test_chunks_also_move_on_the_logical_tree():
    player = player_of(CROWDED["double binary tree, 8"])
    figure = draw.topology_figure(player, 1)
    physical, logical = [t for t in figure.data if t.name == draw.MOTION_TRACE]
    assert (logical.xaxis, logical.yaxis) == ("x2", "y2") and physical.xaxis is None
    spots = {}  # (rank, tree) -> where the logical panel draws it
    ranks = next(t for t in figure.data if t.name == "logical ranks")
    for index, (x, y) in enumerate(zip(ranks.x, ranks.y)):
        spots.setdefault(int(ranks.text[index].lstrip("r")), []).append((x, y))
    messages = player["messages"][0]
    paths = np.asarray(logical.customdata, dtype=float)
    assert len(paths) == len(messages)  # every message of the reduce step runs up one of the two trees
    for (x0, y0, x1, y1, _, _), message in zip(paths, messages):
        sender = min(spots[message[0]], key=lambda spot: math.dist(spot, (x0, y0)))
        receiver = min(spots[message[1]], key=lambda spot: math.dist(spot, (x1, y1)))
        assert math.dist((x0, y0), sender) < math.dist((x0, y0), receiver)  # from its sender on the tree to its parent
        assert math.dist((x1, y1), receiver) < math.dist((x1, y1), sender)
    assert (paths[:, 4:] == np.asarray(motion(figure)[0])[:, 4:]).all()  # at the same simulated times as on the physical drawing
