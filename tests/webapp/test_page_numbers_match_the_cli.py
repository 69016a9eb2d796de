"""Issue 36, "Done when": every number the Collectives page shows on its cards and in the side by
side, for two GPU presets on two nodes, equals what ``collsim sim collective`` (run_collective)
gives for the same scenario. The page's callbacks are called directly (no browser)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.collective.analytic import busbw_factor
from sim.collective.narrative import decimal_units, size_text
from sim.units import format_bandwidth, format_time
from webapp import collective as model
from webapp.pages.collectives import callbacks as page
from webapp.pages.collectives import ids

PRESETS = ("dgx-h100", "dgx-a100")  # two nodes each
SIZE = "25MiB"


def preset_form(preset: str, nodes: str = "2") -> dict[str, str]:
    """The form after choosing ``preset`` and typing its nodes, as the page's callbacks fill it."""
    chosen = page.apply_hardware(preset, "8", "all_reduce", "ring")
    form = {**model.DEFAULTS, "hardware": preset, "size": SIZE}
    form.update({key: value for key, value in chosen.items() if key in form and isinstance(value, str)})
    form["nodes"] = nodes
    form["ranks"] = page.nodes_or_ranks(ids.field_id("nodes"), nodes, form["ranks"], preset, form["gpus_per_node"])["ranks"]
    return form


def cards(summary: list) -> dict[str, str]:
    """The text of each number card (and the NCCL line), by the card's id."""
    shown: dict[str, str] = {}

    def walk(component) -> None:
        if getattr(component, "id", None):
            shown[component.id] = str(component.children) if isinstance(component.children, str) else repr(component.children)
        children = getattr(component, "children", None)
        for child in children if isinstance(children, list) else [children]:
            if hasattr(child, "children") or hasattr(child, "id"):
                walk(child)

    for card in summary:
        walk(card)
    return shown


def cli_json(preset: str, *more: str) -> dict:
    args = ["sim", "collective", "--hardware", preset, "--nodes", "2", "--op", "all_reduce", "--size", SIZE, "--json", *more]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_every_card_equals_collsim_sim_collective(preset):
    form = preset_form(preset)
    assert form["ranks"] == "16" and form["algorithm"] == "nccl"
    data = page.validate(form)["scenario"]
    shown = cards(page.simulate(data, "step", False, 0, True)["summary"])
    ran = cli_json(preset)
    assert shown[ids.COLL_SIM_TIME] == format_time(ran["time_s"])
    low, high = ran["time_interval_s"]  # the interval the CLI prints is the card's (issue 33)
    assert shown[ids.COLL_INTERVAL] == f"{format_time(low)} – {format_time(high)}"
    assert shown[ids.COLL_NCCL_TIME] == format_time(ran["nccl"]["model_time_s"])
    if ran["analytic_time_s"] is None:
        assert shown[ids.COLL_ANALYTIC_TIME] == "none" and shown[ids.COLL_REL_ERROR] == "—"
    else:
        assert format_time(ran["analytic_time_s"]) in shown[ids.COLL_ANALYTIC_TIME]
    assert shown[ids.COLL_MESSAGES] == f"{ran['messages']:,} / {ran['steps']}"
    assert shown[ids.COLL_WIRE] == size_text(ran["bytes_on_wire"], decimal_units(ran["size_bytes"]))
    algbw = ran["size_bytes"] / ran["time_s"]
    assert shown[ids.COLL_BW] == f"{format_bandwidth(algbw)} / {format_bandwidth(algbw * busbw_factor('all_reduce', ran['ranks']))}"
    assert format_bandwidth(ran["algbw_GBps"] * 1e9) == format_bandwidth(algbw)
    note = shown[ids.COLL_NCCL_NOTE]
    for line in ran["nccl"]["lines"][:1]:
        assert line in note


def side_by_side(preset: str, other: str) -> dict:
    """The side by side as the page answers it: the form's A beside B = the form with another algorithm."""
    return page.compare_update("algorithm", other, preset_form(preset))


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_side_by_side_times_equal_collsim_sim_collective(preset):
    shown = side_by_side(preset, "ring")
    a, b = cli_json(preset)["time_s"], cli_json(preset, "--algorithm", "ring")["time_s"]
    b_shown, a_shown = re.search(r"\((.+?) vs (.+?)\)", shown["note"]).groups()
    assert (a_shown, b_shown) == (format_time(a), format_time(b))
    assert f"B takes {b / a:.3g}x the time of A" in shown["note"]
    timeline = shown["row"][0].children.figure
    assert timeline.layout.meta["span_s"] == pytest.approx(max(a, b), rel=1e-9)  # one time axis, as long as the longer run


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_side_by_side_parts_add_up_to_collsim_sim_collective(preset):
    shown = side_by_side(preset, "ring")
    parts = shown["row"][1].children.figure.layout.meta["parts"]
    times = [cli_json(preset)["time_s"], cli_json(preset, "--algorithm", "ring")["time_s"]]
    for split, time_s in zip(parts, times):
        assert split["total"] == pytest.approx(time_s, rel=1e-9)
