"""The Parallelism page without a browser: its form reads sim train's field table, a wrong box
gets its own message, the numbers shown are the simulator's, the figures draw the streams, the
layout and the sweep, and the DDP page links to it."""

from __future__ import annotations

import pytest

from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.scenario import FIELDS
from sim.units import format_time
from webapp.pages.parallelism import PAGE, figures, model, page

SMALL = {"nodes": "1", "model": "", "layers": "8", "hidden": "512", "heads": "8", "seq_len": "256", "vocab": "0",
         "tp": "2", "pp": "2", "dp": "2", "global_batch": "16"}  # fmt: skip


def _checked(**changes: str) -> dict:
    return model.validate_form({**model.DEFAULTS, **changes})


def test_the_form_is_sim_trains_fields_with_their_labels_and_bounds():
    assert set(model.DEFAULTS) <= set(FIELDS)
    box = page._form(model.DEFAULTS)
    labels = {child.children for part in box if hasattr(part, "children") and isinstance(part.children, list)
              for child in part.children if type(child).__name__ == "Label"}  # fmt: skip
    assert FIELDS["tp"].label in labels and FIELDS["micro_batch"].label in labels
    assert "1 to 1024" in page._hint("tp")


@pytest.mark.parametrize(
    ("changes", "slot", "words"),
    [
        ({"tp": "abc"}, "tp", "tp: expected a whole number"),
        ({"tp": "0"}, "tp", "tp: must be between 1 and 1024"),
        ({"mfu": "2"}, "mfu", "mfu: must be between"),
        ({"tp": "3"}, "heads", "64 heads must divide by tp = 3"),
        ({"schedule": "nonsense"}, "schedule", "allowed: gpipe"),
        ({"pp": "4", "dp": "2", "nodes": "1"}, "tp", "hold 8"),
    ],
)
def test_a_wrong_box_gets_its_message_in_its_slot_and_nothing_runs(changes, slot, words):
    checked = _checked(**changes)
    assert checked["scenario"] is None
    assert words in checked["errors"][slot]
    assert [name for name, message in checked["errors"].items() if message] == [slot]


@pytest.mark.slow
def test_the_default_scenario_is_valid_and_its_step_time_is_the_simulators():
    checked = PAGE.validate(dict(PAGE.defaults))
    assert checked["scenario"] is not None and not any(checked["errors"].values())
    shown = PAGE.run(checked)
    expected = simulate(TrainScenario.from_dict(checked["scenario"])).step_time_s
    step = shown["cards"][0].children[1].children
    assert step == format_time(expected)
    from sim.hardware.presets import load_preset

    preset = load_preset("dgx-a100")
    why = shown["teach"][2].children
    assert (
        f"NVLink (NVSwitch) gives {preset.intra_bandwidth_Bps / 1e9:.0f} GB/s a GPU, one NIC {preset.nic_bandwidth_Bps / 1e9:.0f} GB/s"
        in why
    )


def test_the_teaching_layer_has_the_bubble_formula_with_the_numbers_in():
    checked = _checked(**SMALL)
    result = model.run(checked["scenario"])
    numbers = model.teaching(checked["scenario"], result)
    assert (numbers["p"], numbers["m"]) == (2, 8)
    assert numbers["formula"] == pytest.approx(1 / 9)
    assert numbers["simulated"] == result.bubble_fraction
    text = " ".join(p.children for p in page._teach(numbers))
    assert "(p-1)/(m+p-1) = 1/(8+1) = 11.1%" in text
    assert "b x s x h = 1 x 256 x 512 elements x 2 B" in text


def test_interleaved_uses_the_interleaved_formula():
    checked = _checked(**{**SMALL, "schedule": "interleaved", "vpp": "2", "dp": "1", "global_batch": "8", "tp": "2", "nodes": "1"})
    assert checked["scenario"], checked["errors"]
    numbers = model.teaching(checked["scenario"], model.run(checked["scenario"]))
    assert numbers["formula"] == pytest.approx(1 / (2 * 8 + 1))
    assert "(p-1)/(v m+p-1)" in page._teach(numbers)[0].children


@pytest.mark.slow
def test_tp_stays_inside_a_node_and_dp_crosses_the_rails():
    checked = _checked()  # tp 8 on dgx-a100 (8 GPUs a node), dp 2 on 4 nodes
    result = model.run(checked["scenario"])
    rows = {row["kind"]: row for row in model.links(checked["scenario"], result.layout)}
    assert rows["tp"]["nodes"] == 1 and rows["tp"]["link"] == "NVLink (NVSwitch)"
    assert rows["dp"]["nodes"] == 2 and rows["dp"]["link"] == "NIC rail"
    assert rows["tp"]["bandwidth_Bps"] > rows["dp"]["bandwidth_Bps"]


@pytest.mark.slow
def test_the_timeline_has_a_lane_per_stage_and_stream_and_shades_the_bubble():
    checked = _checked()
    result = model.run(checked["scenario"])
    stages = page._pipeline(result.layout)
    figure = figures.timeline_figure(result.events, stages, result.step_time_s, "t")
    labels = list(figure.layout.yaxis.ticktext)
    assert len(stages) == 2
    for stream in ("compute", "TP", "PP", "DP"):
        assert any(label.endswith(stream) for label in labels), (stream, labels)
    assert len(figure.layout.shapes) >= 2  # each stage's compute stream idles at least at one end
    assert {trace.name for trace in figure.data} >= {"forward", "backward", "TP", "PP", "DP"}


@pytest.mark.slow
def test_the_cluster_draws_every_gpu_coloured_by_stage():
    checked = _checked()
    result = model.run(checked["scenario"])
    figure = figures.cluster_figure(result.layout, 4, model.links(checked["scenario"], result.layout), "c")
    cells = figure.data[0]
    assert len(cells.x) == 32 and len(set(cells.marker.color)) == 2  # two stages, every GPU used
    assert "NIC rail" in figure.layout.annotations[-1].text


@pytest.mark.slow
def test_the_sweep_ranks_fits_first_then_fastest_and_marks_what_does_not_fit():
    checked = _checked(**SMALL)
    shown = page.sweep_view(checked["scenario"])
    rows = model.sweep(checked["scenario"])
    keys = [(row["fits"], row["step_time_s"]) for row in rows]
    assert keys == sorted(keys, key=lambda key: (not key[0], key[1]))
    assert "layouts of 1 node(s)" in shown["status"]
    assert len(shown["table"].children[1].children) == len(rows)
    assert len(shown["chart"].data[0].x) == len(rows)


def test_a_sweep_too_large_for_the_explorer_is_refused_with_the_limit():
    checked = _checked(nodes="128", dp="64", global_batch="128")
    assert checked["scenario"], checked["errors"]
    with pytest.raises(Exception, match="takes up to 64 nodes"):
        model.sweep(checked["scenario"])


def test_the_url_writes_only_what_differs_and_reads_back():
    from webapp import urlstate

    query = urlstate.query_of(model.url_spec(), {**model.DEFAULTS, "tp": "4"})
    assert query == "?tp=4"
    assert model.form_from_query(query)["tp"] == "4"


def test_the_ddp_page_links_to_the_parallelism_page():
    from webapp.pages.ddp import page as ddp

    links = [part for part in ddp._content()._traverse() if type(part).__name__ == "Link"]
    assert any(link.href == "/parallelism" for link in links)


def test_a_step_too_long_for_the_explorer_is_refused_on_the_global_batch():
    checked = _checked(global_batch="100000", dp="1", nodes="2")  # 100,000 micro-batches x 48 layers
    assert checked["scenario"] is None
    assert "layer passes a pipeline; the explorer simulates up to 20,000" in checked["errors"]["global_batch"]


def test_a_long_timeline_draws_each_ops_layers_as_one_bar():
    rows = [{"rank": 0, "stream": "compute", "kind": "F", "name": f"F mb{mb} stage0 layer{layer}", "start_s": mb + layer * 0.1,
             "end_s": mb + layer * 0.1 + 0.05, "nbytes": 0, "peer": -1, "group": []}
            for mb in range(3) for layer in range(4)]  # fmt: skip
    merged = figures.coarse(rows)
    assert [row["name"] for row in merged] == ["F mb0 stage0", "F mb1 stage0", "F mb2 stage0"]
    assert [row["start_s"] for row in merged] == [0, 1, 2]
    assert [row["end_s"] for row in merged] == pytest.approx([0.35, 1.35, 2.35])


def test_a_sweep_of_too_many_layer_passes_is_refused_on_the_global_batch():
    checked = _checked(nodes="64", dp="32", global_batch="4096")  # its dp = 1 layouts: 4,096 x 48 layers
    assert checked["scenario"], checked["errors"]
    with pytest.raises(Exception, match=r"196,608 layer passes; the explorer's sweep takes up to 100,000"):
        model.sweep(checked["scenario"])


@pytest.mark.slow
def test_a_link_with_a_wrong_field_comes_with_its_message_in_its_slot():
    tree = page.layout("?tp=abc")
    slots = {component.id: component.children for component in tree._traverse() if getattr(component, "id", "") == "par-tp-error"}
    assert slots == {"par-tp-error": "tp: expected a whole number from 1 to 1024, got 'abc'"}
    store = next(component for component in tree._traverse() if getattr(component, "id", "") == "par-scenario")
    assert store.data is None
