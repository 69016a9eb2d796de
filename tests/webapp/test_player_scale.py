"""The step player at every size (issue 21, "readable at every size"): an aggregate above the
drawable size, the logical tree / node grid with each step's edges, a phase per step for the
double binary tree, NCCL's tree and hierarchical, chunk arrows side by side, a step-coloured
per-rank timeline at 64 ranks. Figures and callbacks called directly (no browser)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from webapp import collective as model
from webapp.figures import player as draw
from webapp.pages.collectives import callbacks as page
from webapp.pages.collectives.layout import scenario_of


def shown(query: str, position: int = 1) -> dict:
    return page.simulate(page.validate(model.form_from_query(query))["scenario"], "step", position=position)


def test_64_ranks_is_drawn_as_groups_not_a_disc():
    panels = shown("?ranks=64", position=3)
    player, figure = panels["player"], panels["topology"]
    groups = player["layout"]["groups"]
    assert player["aggregate"] and len(groups) == 9 and sum(group["size"] for group in groups) == 64
    assert [g["name"] for g in groups][:2] == ["r0", "r1"] and groups[6]["name"] == "ranks 6–61 (56 ranks)"
    assert figure.layout.meta["in_flight"] == 64  # every message of the step, summed into the groups' arrows
    labels = next(trace for trace in figure.data if trace.name == "message labels")
    assert labels.mode == "text" and "1 message · 1 MiB" in labels.text  # rank r -> r+1, one piece
    names = next(trace for trace in figure.data if trace.name == "groups").text
    assert [name for name in names if "inside" in name] == ["ranks 6–61 (56 ranks)<br>↻ 55 msgs, 55 MiB inside"]  # 55 pieces among the 56


def test_two_level_aggregate_is_one_group_per_node_with_its_phases():
    player = shown("?ranks=64&topology=two_level&gpus_per_node=8&algorithm=hierarchical")["player"]
    assert [g["name"] for g in player["layout"]["groups"]] == [f"node {i} (8 ranks)" for i in range(8)]
    assert player["phases"][0] == "intra-node reduce-scatter" and player["phases"][-1] == "intra-node all-gather"
    assert "inter-node all-reduce" in player["phases"]
    first = player["messages"][0]
    assert all(row[0] == row[1] for row in first)  # a reduce-scatter step stays inside the nodes: loops only


def test_double_binary_tree_draws_its_two_trees_and_names_each_step():
    player = shown("?ranks=8&algorithm=double_binary_tree")["player"]
    assert player["phases"] == ["reduce up the trees", "broadcast down the trees"]
    assert "children send their partial sums to their parent" in player["sentences"][0]
    panels = player["logical"]["panels"]
    assert [panel["parents"] for panel in panels] == [[-1, 2, 4, 2, 0, 6, 4, 6], [1, 3, 1, 7, 5, 3, 5, -1]]
    figure = draw.topology_figure(player, 1)
    arrows = [a for a in figure.layout.annotations if a.showarrow and a.xref == "x2"]
    assert len(arrows) == 14  # every edge of both trees carries a partial sum up in the reduce step
    roots = [panel["positions"][panel["root"]] for panel in panels]
    assert all(y == 1 for _, y in roots)  # the root on top


def test_binomial_and_nccl_trees_are_found_from_their_messages():
    player = shown("?op=broadcast&algorithm=binomial&ranks=8")["player"]
    assert player["logical"]["panels"][0]["parents"] == [-1, 0, 0, 2, 0, 4, 4, 6]
    nccl = {**model.DEFAULTS, **model.hardware_form("dgx-h100", "16"), "hardware": "dgx-h100", "algorithm": "nccl_tree", "size": "16MiB"}
    player = page.simulate(page.validate(nccl)["scenario"], "step")["player"]
    assert player["logical"]["kind"] == "trees"
    assert player["phases"] == ["reduce up the tree", "broadcast down the tree"]
    assert shown("?ranks=8")["player"]["logical"] is None  # a ring is not a tree


def test_hierarchical_draws_the_node_grid_and_a_phase_per_step():
    player = shown("?ranks=16&topology=two_level&gpus_per_node=4&algorithm=hierarchical")["player"]
    assert player["logical"]["kind"] == "grid" and player["logical"]["nodes"][1] == [4, 5, 6, 7]
    assert player["phases"] == ["intra-node reduce-scatter"] * 3 + ["inter-node all-reduce"] * 6 + ["intra-node all-gather"] * 3
    assert player["sentences"][3].startswith("Across nodes, the ranks with the same local index")
    figure = draw.topology_figure(player, 4)
    assert figure.layout.title.text.replace("<br>", " ").startswith("Topology (two_level): step 4 of 12 ")  # too long for one line:
    assert re.search(r"<br><span[^>]*>inter-node all-reduce</span>$", figure.layout.title.text)  # the phase on a second


def test_two_chunks_on_one_chord_are_two_arrows_with_labels_apart():
    player = shown("?ranks=8&chunks=2")["player"]  # ring all-reduce: each step sends both chunks on every chord
    figure = draw.topology_figure(player, 1)
    messages = player["messages"][0]
    arrows = [a for a in figure.layout.annotations if a.showarrow]
    labels = next(trace for trace in figure.data if trace.name == "message labels")
    both = [i for i, m in enumerate(messages) if (m[0], m[1]) == (0, 1)]
    assert sorted(messages[i][5] for i in both) == [0, 1]
    first, second = (arrows[i] for i in both)
    assert (first.ax, first.ay) != (second.ax, second.ay) and first.arrowcolor != second.arrowcolor
    apart = math.hypot(labels.x[both[0]] - labels.x[both[1]], labels.y[both[0]] - labels.y[both[1]])
    assert labels.mode == "markers+text" and apart > 0.12  # on a unit circle: labels apart, not overprinted
    texts = sorted(labels.text[i] for i in both)  # the long form where every label has room, else the chunk's cells
    assert re.fullmatch(r"(round 1: )?p\d\.0( · 4 MiB)?", texts[0]) and re.fullmatch(r"(round 2: )?p\d\.1( · 4 MiB)?", texts[1])


def test_tree_arrows_say_their_sub_rounds():
    player = shown("?ranks=4&algorithm=double_binary_tree&chunks=2")["player"]
    rounds = [a.text for a in draw.topology_figure(player, 1).layout.annotations if a.name == "sub-round"]
    assert "1,3" in rounds  # the logical tree says in which sub-round each chunk crosses the edge


def test_rank_timeline_at_64_ranks_shows_its_steps():
    figure = shown("?ranks=64")["rank_gantt"]
    image = np.asarray(figure.data[0].z, dtype=float)
    assert figure.layout.meta["raster"] and image.shape[0] == 64
    row = image[0][~np.isnan(image[0])]
    assert len(np.unique(row)) == 126  # every step its own colour along a rank's lane, not one block


@pytest.mark.slow
def test_start_up_warms_the_first_visitors_run():
    from webapp.app import create_app

    model._outcomes.clear()
    create_app(background=False)
    default = page.validate(model.form_from_query(""))["scenario"]
    key = (scenario_of(default).to_json(), model.MAX_SIM_MESSAGES, True)
    assert key in model._outcomes  # the first visitor's simulation is already done
    assert page.simulate(default, "step", background=False)["player"]["steps"]  # and drawn from it
