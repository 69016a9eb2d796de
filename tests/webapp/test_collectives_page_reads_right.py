"""What a student and an engineer read on the Collectives page (issue 36): the reason a side by
side names, the heatmaps' colour scale, the crossover's notes and coincident curves, the names
of ranks and pieces, units as typed, presets that set nodes, links with a changed op or an
unknown key. Callbacks and figure functions called directly (no server, no browser)."""

from __future__ import annotations

import pytest
from dash import no_update

from sim.collective import explore
from webapp import collective as model
from webapp.figures import collectives as draw
from webapp.pages.collectives import callbacks as page
from webapp.pages.collectives import ids


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


def _form_note(search: str) -> str:
    from webapp.pages.collectives.layout import layout

    def find(component):
        if getattr(component, "id", None) == ids.COLL_FORM_NOTE:
            return component
        children = getattr(component, "children", None)
        for child in children if isinstance(children, list) else [children] if children is not None else []:
            found = find(child) if hasattr(child, "children") or hasattr(child, "id") else None
            if found is not None:
                return found
        return None

    note = find(layout(search))
    assert note is not None, "the page has a note above its form"
    return " ".join(str(line.children) for line in note.children)


def test_a_link_with_unknown_keys_says_which_and_what_the_page_reads():
    text = _form_note("?rank=16&size=1MiB&colour=chunk")
    assert "colour, rank" in text and "not keys of this page" in text
    for key in ("ranks", "size", "hardware", "nodes", "step", "color", "cmp"):
        assert key in text.split("Keys: ")[1]
    written = (
        model.query_from_form(values(ranks="16", size="1MiB", hardware="dgx-h100", nodes="2")) + "&step=3&color=chunk&cmp=algorithm:tree"
    )
    assert "Ignored" not in _form_note(written)  # every key the page writes itself is read back


def test_a_link_whose_op_the_algorithm_does_not_run_gets_the_ops_default_and_says_so():
    form, notes = model.read_link("?op=barrier")
    assert form["algorithm"] == "dissemination" and not any(page.validate(form)["errors"].values())
    assert "ring does not run barrier; set to dissemination" in " ".join(notes)
    assert "set to dissemination" in _form_note("?op=barrier")
    assert model.read_link("?op=barrier&algorithm=ring")[0]["algorithm"] == "ring"  # typed in the link: kept, and refused by name
    assert "not an algorithm for barrier" in page.validate(model.read_link("?op=barrier&algorithm=ring")[0])["errors"]["algorithm"]


def test_changing_the_op_in_the_form_picks_its_default_and_says_so():
    changed = page.op_changed("barrier", "ring", "")
    assert changed["value"] == "dissemination" and "ring does not run barrier" in changed["note"]
    kept = page.op_changed("reduce_scatter", "ring", "")
    assert kept["value"] == "ring" and kept["note"] is no_update


def test_a_preset_sets_nodes_and_the_ranks_they_make_and_says_so():
    chosen = page.apply_hardware("dgx-h100", "8", "all_reduce", "ring")
    assert (chosen["nodes"], chosen["ranks"], chosen["nodes_style"]) == ("1", "8", {})
    assert "1 node of 8 GPUs = 8 ranks" in chosen["note"] and "Nodes" in chosen["note"]
    more = page.nodes_or_ranks(ids.field_id("nodes"), "2", "8", "dgx-h100", "8")
    assert more["ranks"] == "16" and more["nodes"] is no_update
    back = page.nodes_or_ranks(ids.field_id("ranks"), "2", "32", "dgx-h100", "8")
    assert back["nodes"] == "4" and back["ranks"] is no_update
    form = values(**{**{k: v for k, v in chosen.items() if k in model.DEFAULTS}, "hardware": "dgx-h100", "nodes": "2", "ranks": "16"})
    data = page.validate(form)["scenario"]
    assert data["ranks"] == 16 and data["gpus_per_node"] == 8
    linked, notes = model.read_link("?hardware=dgx-h100&nodes=2")
    assert (linked["nodes"], linked["ranks"]) == ("2", "16") and "2 nodes of 8 GPUs = 16 ranks" in notes[0]
    cleared = page.apply_hardware("", "16", "all_reduce", "nccl")
    assert cleared["nodes"] == "" and cleared["nodes_style"] == {"display": "none"}


def test_nodes_that_make_no_run_get_a_message():
    errors = page.validate(values(nodes="100000"))["errors"]
    assert "only with a hardware preset" in errors["nodes"]
    chosen = {k: v for k, v in page.apply_hardware("dgx-h100", "8", "all_reduce", "ring").items() if k in model.DEFAULTS}
    errors = page.validate(values(**{**chosen, "hardware": "dgx-h100", "nodes": "100000", "ranks": "800000"}))["errors"]
    assert "the explorer takes up to 1024" in errors["nodes"]
    errors = page.validate(values(**{**chosen, "hardware": "dgx-h100", "nodes": "2", "ranks": "24"}))["errors"]
    assert "2 nodes are 16 ranks, but Ranks says 24" in errors["nodes"]


def test_sizes_come_back_in_the_units_they_were_typed_in():
    from webapp.figures import player as player_draw

    query = "?op=broadcast&algorithm=binomial&ranks=8&size=5MB&latency=0us&bandwidth=1MB/s"
    shown = page.simulate(page.validate(model.form_from_query(query))["scenario"], "step", background=False)
    player = shown["player"]
    assert "messages of 5 MB" in " ".join(player["sentences"]) and "MiB" not in " ".join(player["sentences"])
    assert str(shown["summary"]).count("35 MB") == 1 and "MiB" not in str(shown["summary"])  # 7 messages of 5 MB on the wire
    caption = player_draw.step_caption(player, 1)
    assert "5 MB in all" in caption and "MiB" not in caption
    hover = " ".join(str(item.get("hovertext")) for item in player_draw.topology_figure(player, 1).to_plotly_json()["data"])
    assert "5 MB" in hover and "4.768" not in hover
    binary = page.simulate(scenario_of(size="64MiB"), "step", background=False)
    assert "8 MiB" in " ".join(binary["player"]["sentences"]) and "896 MiB" in str(binary["summary"])


def test_buffers_name_ranks_r_and_pieces_p_and_say_which_ranks_a_cell_sums():
    from webapp.figures import buffers as buffers_draw
    from webapp.figures import player as player_draw

    shown = page.simulate(scenario_of(ranks="4"), "step", background=False)
    player = shown["player"]
    figure = buffers_draw.buffer_figure(player, 1).to_plotly_json()
    heatmap = figure["data"][0]
    assert list(heatmap["y"]) == ["r0", "r1", "r2", "r3"]  # ranks r..., never p...
    assert heatmap["text"][0][0] == "r0" and "r0+r3" in [word for row in heatmap["text"] for word in row]  # r3 sent p3 on to r0
    assert not any("/" in word for row in heatmap["text"] for word in row)  # no "1/4": which ranks, not how many of p
    axis = figure["layout"]["xaxis"]
    assert "p0–p3" in axis["title"]["text"] and "1/4" not in axis["title"]["text"] and list(axis["ticktext"]) == ["p0", "p1", "p2", "p3"]
    assert "r0+r3" in figure["layout"]["title"]["text"]  # the key says how a cell reads
    topology = player_draw.topology_figure(player, 1).to_plotly_json()
    ranks = next(item for item in topology["data"] if item.get("name") == "ranks")
    assert list(ranks["text"]) == ["r0", "r1", "r2", "r3"]
    labels = next(item for item in topology["data"] if item.get("name") == "message labels")
    assert all(text.startswith("r") and " → r" in text for text in labels["hovertext"])  # "r3 → r0<br>carries p3: ..."


def test_crossover_sizes_left_out_are_said_under_it_with_a_background_run_not_a_command():
    data = scenario_of(ranks="16")
    shown = page.crossover_view(data)
    beyond = shown["figure"].layout.meta["beyond_budget"]
    assert beyond  # the helper's budget leaves some sizes out (which algorithm: the budget's plan decides)
    assert all(name in shown["note"] for name in beyond) and "collsim" not in shown["note"] and shown["more_style"] == {}
    assert not any("collsim" in (note.text or "") for note in shown["figure"].layout.annotations)  # nothing inside the plot to cut off
    more = page.crossover_in_background(1, values(ranks="16"))
    assert more["figure"].layout.meta["beyond_budget"] == [] and more["note"] == "" and more["more_style"] == {"display": "none"}
    for name in beyond:
        curve = next(item for item in more["figure"].data if item.name.startswith(name))
        assert len(curve.x) == len(model.CROSSOVER_SIZES) and None not in curve.y
    quiet = page.crossover_view(scenario_of(ranks="8"))
    assert quiet["note"] == "" and quiet["more_style"] == {"display": "none"}
