"""The DDP page shows a scenario's error at the box of the field the error carries (issue 32 item
3, "errors carry their field"), not at the box whose key the message happens to start with, and
checks a box that is a DDP field by that field's entry (sim.fields), not in words of its own."""

from __future__ import annotations

import dataclasses

import pytest

from sim.errors import CollsimError
from sim.fields import check_value
from sim.training.ddp import DDPScenario
from webapp.pages.ddp import model


def _errors(**changes: str) -> dict[str, str]:
    return model.validate_form({**model.DEFAULTS, **changes})["errors"]


@pytest.mark.parametrize(
    "field, box",
    [("bucket_size", "bucket"), ("bucket_cap_bytes", "bucket"), ("accumulation_steps", "accumulation"), ("comm", "comm_model"),
     ("w_Bps", "w"), ("intra_latency_s", "hardware"), ("gpus_per_node", "ranks"), ("backward_rate", "backward"),
     ("param_bytes", "preset"), ("first_bucket_bytes", "first_bucket")],
)  # fmt: skip
def test_a_ddp_error_whose_message_does_not_start_with_its_key_lands_at_its_fields_box(monkeypatch, field, box):
    _refuse(monkeypatch, "the step cannot be built this way", field)  # names no key in its words
    assert _errors() == {box: "the step cannot be built this way"}


def test_an_error_about_no_box_goes_to_the_strategy_as_before(monkeypatch):
    _refuse(monkeypatch, "iteration: after the warm-up", "iteration")
    assert _errors() == {"strategy": "iteration: after the warm-up"}


def _refuse(monkeypatch, message: str, field: str) -> None:
    def refuse(data):
        raise CollsimError(message, field=field)

    monkeypatch.setattr(DDPScenario, "from_dict", staticmethod(refuse))


def test_a_power_of_two_algorithm_on_twelve_ranks_is_said_at_the_ranks():
    errors = _errors(comm_model="network", ranks="12", algorithm="recursive_doubling")
    assert list(errors) == ["ranks"] and errors["ranks"].startswith("algorithm recursive_doubling") and "power-of-two" in errors["ranks"]


@pytest.mark.parametrize(
    "data, field, box",
    [({"backward_time": "1ms"}, "preset", "preset"),  # no parameter source
     ({"preset": "gpt2", "param_bytes": "4MiB", "backward_time": "1ms"}, "preset", "preset"),  # two of them
     ({"preset": "gpt2", "backward_time": "1ms", "backward_rate": "1GB/s"}, "backward_time", "backward")],  # two profiles
)  # fmt: skip
def test_the_ddp_scenarios_source_errors_carry_a_field_that_is_one_of_its_keys(data, field, box):
    with pytest.raises(CollsimError) as raised:
        DDPScenario.from_dict({"w": "1GB/s", **data})
    assert raised.value.field == field
    assert model.error_box(raised.value) == box


def test_a_box_that_is_a_ddp_field_is_checked_by_its_entry(monkeypatch):
    info = model.BOXES["w"]
    with pytest.raises(CollsimError) as said:
        check_value(info, 0.0)
    assert _errors(w="0GB/s")["w"] == str(said.value)  # the entry's words, not the page's own
    monkeypatch.setitem(model.BOXES, "accumulation", dataclasses.replace(model.BOXES["accumulation"], high=4))
    assert "between 1 and 4" in _errors(accumulation="8")["accumulation"]  # the entry's bounds, whatever they are
    assert "accumulation" not in _errors(accumulation="4")


def test_each_wrong_box_still_gets_its_own_message():
    errors = _errors(tokens="0", forward="-1ms", o="-1us", w="10")
    assert set(errors) == {"tokens", "forward", "o", "w"}
    assert "must be >= 1" in errors["tokens"] and "time >= 0" in errors["forward"] and "has no unit" in errors["w"]


@pytest.mark.parametrize(
    "data, field, words",
    [({"slowdown": "fast"}, "slowdown", "slowdown: expected a number, got 'fast'"),
     ({"flops_per_s": "fast", "tokens": 1024, "backward_time": None}, "flops_per_s", "flops_per_s: cannot read 'fast'"),
     ({"params": [{"numel": 3}], "preset": None}, "params", "params[0]: 'name' must be a string")],
)  # fmt: skip
def test_a_scenario_files_bad_value_is_one_error_carrying_its_field_not_a_traceback(data, field, words):
    """A scenario file's words where numbers go (slowdown, flops_per_s) once raised a bare
    ValueError (a traceback from ``sim ddp --scenario``); a parameter entry's error named no field."""
    base = {"preset": "gpt2", "w": "1GB/s", "backward_time": "1ms"}
    given = {key: value for key, value in {**base, **data}.items() if value is not None}
    with pytest.raises(CollsimError, match=words.replace("[", r"\[")) as raised:
        DDPScenario.from_dict(given)
    assert raised.value.field == field


def test_a_scenario_file_reads_flops_with_a_unit_as_the_flag_does():
    data = {"preset": "gpt2", "w": "1GB/s", "flops_per_s": "100TFLOPS", "tokens": 1024}
    assert DDPScenario.from_dict(data).flops_per_s == 100e12


def test_every_ddp_field_has_a_box_for_its_errors():
    """No message is lost: the page shows only the slots of its boxes (DEFAULTS; upload's moves to preset)."""
    from sim.fields import fields_of

    keys = {key for info in fields_of("ddp").values() for key in (info.name, *info.keys())}
    for key in sorted(keys):
        assert model.error_box(CollsimError("x", field=key)) in {*model.DEFAULTS, "upload"}, key


@pytest.mark.parametrize("box, text, field, value", [("tokens", "1e3", "tokens", 1000), ("accumulation", "2.0", "accumulation_steps", 2)])
def test_a_whole_number_the_entry_reads_reaches_the_scenario_as_it_was_checked(box, text, field, value):
    """The box is checked by the scenario's parser, which reads 1e3 as 1000: the page hands the
    scenario the text, not a second reading of its own (int("1e3") once raised past the check)."""
    checked = model.validate_form({**model.DEFAULTS, box: text})
    assert checked["errors"] == {} and checked["ddp"][field] == value
