"""One schema produces the rest (issue 32 item 3): each scenario field's entry in sim.fields is
the source of its CLI option, its explorer box (label, hint, URL key, first value), its bounds
and its closed-form / collapsed reasons; nothing else lists them."""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys

import pytest

from sim.collective import analytic
from sim.collective.collapsed import why_not_collapsed
from sim.errors import CollsimError
from sim.fields import COLLECTIVE, DDP, command_fields, field_info, fields_of, form_fields
from sim.scenario import CollectiveScenario

# options of a command that are no scenario field: files, outputs, the model to run
COMMAND_ONLY = {
    "collective": {"model", "scenario_file", "calibration", "backend", "trace", "csv_path", "as_json", "mode"},
    "crossover": {"sizes", "as_csv", "as_json"},
    "ddp": {"scenario_file", "calibration", "backend", "sweep", "optimize", "trace", "csv_path", "as_json"},
}


def _command(name: str):
    if name == "collective":
        from sim.cli import collective as command
    elif name == "crossover":
        from sim.crossover_cli import crossover_command as command
    else:
        from sim.training.ddp_cli import ddp as command
    return command


@pytest.mark.parametrize("command, scenario", [("collective", "collective"), ("crossover", "collective"), ("ddp", "ddp")])
def test_every_option_of_a_sim_command_is_a_schema_entry_and_every_entry_for_it_an_option(command, scenario):
    options = [param for param in _command(command).params if param.name not in COMMAND_ONLY[command] | {"help"}]
    names = [field_info(param.name, scenario).name for param in options]  # unknown: field_info raises
    assert len(names) == len(set(names))
    assert set(names) == set(command_fields(command, scenario))
    for param in options:  # the flag and help are the entry's
        info = field_info(param.name, scenario)
        assert info.help in (param.help or "")
        if info.choices:
            assert list(param.type.choices) == list(info.choices)


def _labels(component) -> dict[str, str]:
    """{input id: label text} of every html.Label under ``component``."""
    found = {}
    if getattr(component, "htmlFor", None) and type(component).__name__ == "Label":
        found[component.htmlFor] = component.children
    children = getattr(component, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        if child is not None and not isinstance(child, (str, int, float)):
            found.update(_labels(child))
    return found


def test_every_box_of_the_collectives_form_is_a_schema_entry_with_its_label_url_key_and_first_value():
    from webapp import collective as model
    from webapp.pages.collectives import ids

    layout = importlib.import_module("webapp.pages.collectives.layout")  # the package exports a function named layout
    boxes = form_fields("collectives")
    assert list(model.DEFAULTS) == list(boxes)  # the form's boxes and their order: the schema's
    labels = _labels(layout.form(dict(model.DEFAULTS)))
    for key, info in boxes.items():
        assert key == info.url_key and info.group == "collectives"
        expected = "Chunks k" if key == "chunks" else info.label  # chunks: relabelled Channels for NCCL algorithms
        assert labels[ids.field_id(key)] == expected
        assert model.form_from_query(f"?{key}=x")[key] == "x"  # the URL key reads into the box
    assert model.DEFAULTS["size"] == COLLECTIVE["size_bytes"].start == "64MiB"
    assert model.DEFAULTS["chunks"] == str(field_info("chunks").default)  # no start: the dataclass default


@pytest.mark.slow
def test_every_scenario_box_of_the_ddp_form_is_a_ddp_entry_with_its_label_and_url_key():
    from webapp.pages.ddp import ids
    from webapp.pages.ddp import model as ddp_model
    from webapp.pages.ddp import page as ddp

    labels = _labels(ddp.layout(""))
    boxes = form_fields("ddp")
    assert boxes and set(boxes) <= set(ddp_model.DEFAULTS)
    for key, info in boxes.items():
        assert labels[ids.field_id(key, ddp.PAGE)] == info.label
        assert DDP[info.name].url_key == key
    assert boxes["master"].name == "master_weights" and boxes["comm_model"].name == "comm"


SAMPLES = {"topology": "ring", "stragglers": "3:1ms", "jitter_s": 1e-6, "repetitions": 3, "verify": True, "groups": "2x4"}
BASE = {"op": "all_reduce", "algorithm": "ring", "ranks": 8, "size": "1MiB", "bandwidth": "1GB/s"}


@pytest.mark.parametrize("what", ["closed_form", "collapsed"])
def test_a_field_whose_entry_breaks_the_closed_form_or_collapse_says_so_with_the_entrys_reason(what):
    breaking = [name for name, info in COLLECTIVE.items() if getattr(info, what)]
    assert breaking and set(breaking) <= set(SAMPLES)  # a new breaking field needs a sample here
    for name in breaking:
        scenario = CollectiveScenario.from_dict({**BASE, name: SAMPLES[name]})
        reason = getattr(COLLECTIVE[name], what).format(value=getattr(scenario, name))
        said = analytic.why_no_closed_form(scenario) if what == "closed_form" else why_not_collapsed(scenario)
        assert said == reason
        if what == "closed_form":
            assert reason.split(";")[0] in analytic.status(scenario).note
    plain = CollectiveScenario.from_dict(BASE)
    assert analytic.why_no_closed_form(plain) is None and why_not_collapsed(plain) is None


def test_a_reason_added_to_an_entry_reaches_the_closed_form_and_the_collapse_without_other_edits(monkeypatch):
    seeded = CollectiveScenario.from_dict({**BASE, "seed": 5})
    assert analytic.why_no_closed_form(seeded) is None
    entry = dataclasses.replace(COLLECTIVE["seed"], closed_form="seed {value} is not 0", collapsed="seed {value} again")
    monkeypatch.setitem(COLLECTIVE, "seed", entry)
    assert analytic.why_no_closed_form(seeded) == "seed 5 is not 0"
    assert analytic.status(seeded).note == "approximate: seed 5 is not 0"
    assert why_not_collapsed(seeded) == "seed 5 again"


@pytest.mark.parametrize(
    "name, value, words",
    [("ranks", 0, "must be between 1 and 65536"), ("chunks", 0, "must be >= 1"), ("latency", "-1us", "must be a time >= 0"),
     ("bandwidth", "0GB/s", "positive, finite rate"), ("eager_limit", -1, "non-negative size"), ("sharing", "lifo", "one of fifo, fair"),
     ("seed", -1, "must be between 0 and"), ("overhead", "-1us", "must be a time >= 0")],
)  # fmt: skip
def test_an_out_of_bounds_value_is_refused_with_the_entrys_key_as_its_field(name, value, words):
    with pytest.raises(CollsimError, match=words) as error:
        CollectiveScenario.from_dict({**BASE, name: value})
    assert error.value.field == field_info(name).key


def test_the_collectives_page_routes_an_error_by_its_field_not_by_its_words():
    from webapp import collective as model

    error = CollsimError("every message would arrive late", field="intra_latency_s")  # names no key in its text
    assert model._form_field(error) == "intra_latency"
    assert model._form_field(CollsimError("bandwidth: too slow", field=None)) == "bandwidth"


def test_one_rank_limit_for_every_scenario():
    assert fields_of("ddp")["ranks"].high == COLLECTIVE["ranks"].high


SYNTHETIC = """
import dataclasses, json, sys
import sim.fields as fields
fields.COLLECTIVE["loss_rate"] = fields.FieldInfo(
    "loss_rate", "Loss rate", "fraction of messages each link loses, e.g. 0.01", low=0, high=1, kind="float",
    commands=("collective", "crossover"), group="collectives", hint="per link, 0 to 1", start="0")
from click.testing import CliRunner
from sim.cli import cli
from webapp import collective as model
from webapp.pages.collectives import ids
import importlib
layout = importlib.import_module("webapp.pages.collectives.layout")
help_text = {name: CliRunner().invoke(cli, ["sim", name, "--help"], terminal_width=200).output for name in ("collective", "crossover")}
box = str(layout.form(dict(model.DEFAULTS)))
form = model.form_from_query("?loss_rate=0.5")
print(json.dumps({"help": help_text, "default": model.DEFAULTS.get("loss_rate"), "label": layout.LABELS.get("loss_rate"),
                  "box": ids.field_id("loss_rate") in box, "url": model.query_from_form(form),
                  "scenario": model.scenario_fields(form).get("loss_rate")}))
"""


@pytest.mark.slow
def test_a_new_entry_in_the_table_alone_gives_a_cli_option_and_an_explorer_box_with_its_url_key():
    """The "six files" claim, testable: an entry added to sim.fields (here in a fresh process) is an
    option of the commands it names, a box of the Collectives form with its label, hint and first
    value, read from and written to the URL, and passed on to the scenario mapping."""
    done = subprocess.run([sys.executable, "-c", SYNTHETIC], capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    for name in ("collective", "crossover"):
        assert "--loss-rate FLOAT" in seen["help"][name] and "fraction of messages each link loses" in seen["help"][name]
        assert "(0 to 1)" in seen["help"][name]
    assert seen["default"] == "0" and seen["label"] == ["Loss rate", "per link, 0 to 1"] and seen["box"]
    assert seen["url"] == "?loss_rate=0.5" and seen["scenario"] == "0.5"
