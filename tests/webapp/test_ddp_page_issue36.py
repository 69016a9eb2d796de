"""What an ML engineer needs on the DDP page (issue 36), at callback and figure level: the GPU's
memory beside every memory figure and "does not fit" where it does not; gradient accumulation
(no_sync) as a field and a URL key; a preset's nodes set the ranks; the o and w the results used
shown beside the boxes; a link with a preset and no o / w runs as picking the preset does; the
bucket guide's orange band drawn as its caption says. The browser side is
test_browser_ddp_memory.py."""

from __future__ import annotations

import json
import math

import pytest
from dash import no_update

from sim.training.ddp import DDPScenario, run_ddp
from sim.units import format_bandwidth, format_time
from webapp.pages.ddp import model as ddp_model
from webapp.pages.ddp import page as ddp

ISSUE_LINK = "?hardware=dgx-h100&preset=2.7B&ranks=16"
GIB = 2**30


def _filled(search: str, **changes: str) -> dict[str, str]:
    return {**ddp_model.form_from_query(search), **changes}


def _checked(form: dict[str, str]) -> dict:
    checked = ddp_model.validate_form(form)
    assert checked["errors"] == {}, checked["errors"]
    return checked


@pytest.fixture(scope="module")
def issue_training():
    """The training section of the issue's case: 2.7B on 2 x dgx-h100, DDP at 82.32 GiB a rank."""
    return ddp.simulate_training(_checked(_filled(ISSUE_LINK, sharding="ddp"))["training"])


def test_memory_chart_draws_the_gpus_80_gb_and_says_ddp_does_not_fit(issue_training):
    figure = issue_training["memory"]
    meta = figure.layout.meta
    assert meta["gpu_memory_bytes"] == 80 * 10**9
    lines = [shape for shape in figure.layout.shapes if shape.type == "line"]
    assert [line.x0 for line in lines] == [pytest.approx(80e9 / GIB)]  # the capacity line, in the chart's GiB
    assert any("GPU memory 74.51 GiB" in (note.text or "") for note in figure.layout.annotations)
    assert meta["peak_bytes"]["ddp"] > 80e9 and meta["fits"]["ddp"] is False and meta["fits"]["full_shard"] is True
    peaks = next(trace for trace in figure.data if trace.name == "peak")
    said = dict(zip(meta["peak_bytes"], peaks.text))
    assert "does not fit" in said["ddp"] and "does not fit" not in said["full_shard"]
    assert figure.layout.xaxis.range[1] > 80e9 / GIB  # the line is inside the chart


def test_step_time_chart_and_peak_card_say_does_not_fit(issue_training):
    labels = list(issue_training["strategies"].data[0].y)
    assert "<b>ddp (does not fit)</b>" in labels and "full_shard" in labels
    peak_card = json.dumps(issue_training["cards"][3].to_plotly_json(), default=str)
    assert "does not fit" in peak_card and "74.51 GiB" in peak_card


def test_memory_chart_without_a_gpu_says_the_capacity_is_unknown():
    rows = [{"sharding": "ddp", "memory": {"params_bytes": 1, "grads_bytes": 1, "optimizer_bytes": 1, "unsharded_peak_bytes": 0,
             "peak_bytes": 3}, "gpu_memory_bytes": None, "fits": None, "gpu_memory_note": "whether it fits is unknown: no GPU preset"}]  # fmt: skip
    from webapp.figures.ddp import training_memory_figure

    figure = training_memory_figure(rows, "ddp")
    assert not figure.layout.shapes and "no GPU preset" in figure.layout.title.text


def test_accumulation_is_a_field_and_url_key_run_by_the_clis_model():
    form = _filled("?preset=gpt2&backward=100ms", accumulation="4")
    checked = _checked(form)
    assert checked["ddp"]["accumulation_steps"] == 4 and checked["training"]["accumulation_steps"] == 1
    assert "accumulation=4" in ddp_model.query_from_form(form)
    assert ddp_model.form_from_query("?accumulation=4")["accumulation"] == "4"
    shown = ddp.simulate(checked["ddp"])
    expected = run_ddp(DDPScenario.from_dict(checked["ddp"])).summary()  # what collsim sim ddp --accumulation-steps 4 runs
    assert format_time(expected["step_time_s"]) in json.dumps(shown["cards"][0].to_plotly_json(), default=str)
    assert "4 micro-steps, the first 3 under no_sync" in shown["notice"]
    bad = ddp_model.validate_form({**form, "accumulation": "0"})
    assert bad["ddp"] is None and "accumulation" in bad["errors"]["accumulation"]


def test_a_preset_sets_nodes_and_the_nodes_set_the_ranks():
    picked = ddp.apply_hardware("dgx-h100", "8", "ddp-hardware")
    assert (picked["nodes"], picked["ranks"]) == ("1", "8")
    typed = ddp.apply_hardware("dgx-h100", "8", "ddp-nodes", "2")
    assert (typed["nodes"], typed["ranks"]) == ("2", "16") and typed["bandwidth"] is no_update  # typed links stay
    assert typed["o"] != picked["o"]  # o and w for two nodes
    assert ddp.apply_hardware("dgx-h100", "32", "ddp-ranks")["nodes"] == "4"
    assert _filled("?hardware=dgx-h100&nodes=2")["ranks"] == "16"
    words = ddp_model.hardware_caption(_filled("?hardware=dgx-h100&nodes=2"))
    assert "2 node(s) x 8 GPUs = 16 ranks (the Nodes field sets the ranks)" in words["lines"][0]
    refused = ddp_model.validate_form(_filled("?hardware=dgx-h100&nodes=3&ranks=16"))
    assert refused["ddp"] is None and refused["errors"]["nodes"].startswith("nodes:")
    assert ddp.nodes_field("") == {"display": "none"} and ddp.nodes_field("dgx-h100") == {}


def test_a_link_with_a_preset_and_no_o_w_runs_as_picking_the_preset_does():
    linked = _filled(ISSUE_LINK)
    picked = {k: v for k, v in ddp.apply_hardware("dgx-h100", "16", "ddp-hardware").items() if v is not no_update}
    assert {key: linked[key] for key in picked} == picked  # o, w, links, algorithm nccl, GPU: the preset's, not 10 GB/s
    assert _checked(linked)["ddp"] == _checked({**linked, **picked})["ddp"]
    # the link it writes keeps o and w even where they equal the page's defaults
    typed = {**linked, "o": ddp_model.DEFAULTS["o"], "w": ddp_model.DEFAULTS["w"]}
    assert ddp_model.form_from_query(ddp_model.query_from_form(typed))["w"] == ddp_model.DEFAULTS["w"]


def test_the_pages_default_o_and_w_are_said_in_the_notice():
    shown = ddp.simulate(_checked(_filled("?preset=gpt2&backward=100ms"))["ddp"])
    assert "o = 50us and w = 10GB/s are the page's defaults" in shown["notice"]
    typed = ddp.simulate(_checked(_filled("?preset=gpt2&backward=100ms&w=20GB/s"))["ddp"])
    assert "defaults" not in typed["notice"]


def test_the_o_and_w_the_results_used_are_shown_beside_the_boxes():
    form = _filled(ISSUE_LINK)
    data = _checked(form)["ddp"]
    summary = run_ddp(DDPScenario.from_dict(data)).summary()
    shown = ddp.simulate(data)["ow_used"]
    assert f"o = {format_time(summary['o_s'])}, w = {format_bandwidth(summary['w_Bps'])}" in shown and "not the boxes" in shown
    assert format_bandwidth(summary["w_Bps"]) not in form["w"]  # the boxes hold the 1 MiB..1 GiB line, the run its own
    plain = ddp.simulate(_checked(_filled("?preset=gpt2&backward=100ms&w=20GB/s"))["ddp"])["ow_used"]
    assert "w = 20 GB/s (the boxes)" in plain


def test_bucket_guide_draws_the_simulated_best_as_wide_as_its_step_of_the_sweep():
    from webapp.pages.guides.page import BUCKET_CAPS, bucket_view

    for model in ("course", "gpt2"):
        figure = bucket_view(model, 50, 10, None)["figure"]
        orange = [shape for shape in figure.layout.shapes if shape.fillcolor == "#ff7f0e"]
        assert len(orange) == 1 and orange[0].line.width > 0
        width = math.log(orange[0].x1 / orange[0].x0)  # in log units: what the log axis shows
        assert width >= math.log(BUCKET_CAPS[1] / BUCKET_CAPS[0]) * 0.99  # at least one step of the sweep
        assert list(figure.layout.meta["simulated_band"]) == [orange[0].x0, orange[0].x1]
