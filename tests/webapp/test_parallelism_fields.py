"""The Parallelism page's boxes for attention, scatter/gather sends and the first/last stage's
layers (issue 34 follow-up): each reaches the scenario, has a URL key, gets its errors in its own
slot, and the page's step time is ``collsim sim train``'s for the same values."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.training.parallel.scenario import FIELDS
from sim.units import format_time
from webapp import urlstate
from webapp.pages.parallelism import model, page

SMALL = {"nodes": "1", "model": "", "layers": "8", "hidden": "512", "heads": "8", "seq_len": "256", "vocab": "0",
         "tp": "2", "pp": "2", "dp": "2", "global_batch": "16"}  # fmt: skip
NEW = {"attention": "standard", "scatter_gather": "off", "first_stage_layers": "3", "last_stage_layers": "5"}


def _checked(**changes: str) -> dict:
    return model.validate_form({**model.DEFAULTS, **SMALL, **changes})


def test_each_new_box_is_labelled_from_sim_trains_field_table():
    labels = {child.children for part in page._form(model.DEFAULTS) if isinstance(getattr(part, "children", None), list)
              for child in part.children if type(child).__name__ == "Label"}  # fmt: skip
    for name in NEW:
        assert FIELDS[name].label in labels, name
    assert "scatter_gather" in model.FLAGS and "sequence_parallel" in model.FLAGS


def test_each_new_box_reaches_the_scenario():
    scenario = _checked(**NEW)["scenario"]
    assert scenario is not None
    assert (scenario["attention"], scenario["scatter_gather"]) == ("standard", False)
    assert (scenario["first_stage_layers"], scenario["last_stage_layers"]) == (3, 5)
    default = _checked()["scenario"]
    assert (default["attention"], default["scatter_gather"], default["first_stage_layers"]) == ("flash", True, None)


def test_the_new_boxes_have_url_keys_read_back_and_written_only_when_changed():
    form = model.form_from_query("?attention=standard&scatter_gather=off&first_stage_layers=3&last_stage_layers=5")
    assert {name: form[name] for name in NEW} == NEW
    spec = model.url_spec()
    assert set(NEW) <= set(spec["names"])
    query = urlstate.query_of(spec, {**model.DEFAULTS, "first_stage_layers": "3"})
    assert "first_stage_layers=3" in query and "attention" not in query


@pytest.mark.parametrize(
    ("changes", "slot", "words"),
    [
        ({"attention": "fused"}, "attention", "allowed: flash, standard"),
        ({"first_stage_layers": "x"}, "first_stage_layers", "expected a whole number"),
        ({"first_stage_layers": "9"}, "first_stage_layers", "must split evenly"),
        ({"last_stage_layers": "8"}, "last_stage_layers", "each needs at least one"),
    ],
)
def test_a_wrong_new_box_gets_its_message_in_its_own_slot(changes, slot, words):
    scenario, errors = _checked(**changes).values()
    assert scenario is None and words in errors[slot]
    assert [name for name, message in errors.items() if message] == [slot]  # no other box blamed


@pytest.mark.slow
def test_the_pages_step_time_is_sim_trains_for_the_same_values():
    checked = _checked(**NEW)
    shown = page.run_checked(checked)
    args = ["sim", "train", "--hardware", "dgx-a100", "--nodes", "1", "--layers", "8", "--hidden", "512", "--heads", "8",
            "--seq-len", "256", "--vocab", "0", "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16",
            "--attention", "standard", "--no-scatter-gather", "--first-stage-layers", "3", "--last-stage-layers", "5",
            "--json"]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    cli_step = json.loads(result.output)["step_time_s"]
    assert shown["cards"][0].children[1].children == format_time(cli_step)
    plain = page.run_checked(_checked())  # the boxes change the answer: not the default's time
    assert plain["cards"][0].children[1].children != format_time(cli_step)
