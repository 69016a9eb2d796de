"""The Failures and checkpoints page's callbacks without a browser: its numbers are run_cost's,
the goodput curve peaks at the optimum, the simulated points sit on the expected curve, and bad
input gets one message in its own slot (or the notice when no field is to blame)."""

from __future__ import annotations

import math

import pytest

from sim.training.runcost import FAILURE_RATES, run_cost
from sim.training.runcost_cli import duration
from sim.training.runcost_fields import scenario_from_dict
from webapp.pages.runcost import ids, model, page


def cards(result: dict) -> dict[str, str]:
    return {card.children[1].id: card.children[1].children for card in result["cards"]}


def given(**changes: str) -> dict[str, str]:
    return {key: value for key, value in {**model.DEFAULTS, **changes}.items() if value}


@pytest.mark.slow  # the first run of run_cost in a process (~0.4 s)
def test_the_cards_are_run_costs_numbers():
    shown = page.run_form(**model.DEFAULTS)
    expected = run_cost(scenario_from_dict({**given(), "samples": model.LIVE_SAMPLES}))
    values = cards(shown)
    assert values[ids.make("runcost", "card-young")] == duration(expected.young_interval_s)
    assert values[ids.make("runcost", "card-daly")] == duration(expected.daly_interval_s)
    assert values[ids.make("runcost", "card-simulated")] == duration(expected.simulated_interval_s)
    assert values[ids.make("runcost", "card-goodput")].startswith(f"{expected.goodput:.2%}")
    assert shown["notice"] == "" and not any(shown["errors"].values())


def test_the_goodput_curve_peaks_at_the_exact_optimum_and_the_simulation_agrees():
    checked = model.validate(model.DEFAULTS)
    shown = model.results(checked)
    result, curve = shown["result"], shown["curve"]
    best = max(range(len(curve["goodput"])), key=curve["goodput"].__getitem__)
    step = curve["interval_s"][1] / curve["interval_s"][0]
    assert result["exact_interval_s"] / step <= curve["interval_s"][best] <= result["exact_interval_s"] * step
    assert max(curve["goodput"]) <= result["optimal_goodput"] + 1e-12
    for x, simulated, stderr in zip(curve["simulated_interval_s"], curve["simulated_goodput"], curve["simulated_stderr"]):
        expected = curve["goodput"][curve["interval_s"].index(min(curve["interval_s"], key=lambda c: abs(math.log(c / x))))]
        assert abs(simulated - expected) < 5 * stderr + 0.01, (x, simulated, expected)


def test_a_typed_interval_is_used_and_drawn():
    shown = page.run_form(**{**model.DEFAULTS, "interval": "2h"})
    assert cards(shown)[ids.make("runcost", "card-interval")].startswith("2 h (720 steps)")
    used = next(trace for trace in shown["curve"].data if str(trace.name).startswith("used:"))
    assert used.name == "used: 120 min"


def test_async_writes_keep_the_interval_at_least_one_write():
    shown = page.run_form(**{**model.DEFAULTS, "write": "async", "storage_bw": "20GB/s"})
    result = model.results(model.validate({**model.DEFAULTS, "write": "async", "storage_bw": "20GB/s"}))
    assert min(result["curve"]["interval_s"]) >= result["result"]["checkpoint"]["write_s"] - 1e-9
    assert shown["notice"] == ""


def test_the_named_failure_rates_are_offered():
    assert [name for name, _ in model.rate_options()] == list(FAILURE_RATES)
    tree = page.layout("")
    datalist = next(c for c in tree._traverse() if getattr(c, "id", None) == ids.RATES)
    assert [option.value for option in datalist.children] == list(FAILURE_RATES)


@pytest.mark.parametrize(
    ("changes", "slot", "says"),
    [
        ({"gpus": "lots"}, "gpus", "gpus: 'lots' is not a number"),
        ({"gpus": "100"}, "gpus", "do not fill nodes of 8 GPUs"),
        ({"step_time": "10"}, "step_time", "has no unit"),
        ({"failure_rate": "often"}, "failure_rate", "llama3, llama3-all, opt175b"),
        ({"precision": "int4"}, "precision", "must be one of bf16, fp16, fp32"),
        ({"storage_bw": "fast"}, "storage_bw", "storage_bw"),
    ],
)
def test_a_bad_field_shows_one_message_in_its_slot(changes: dict, slot: str, says: str):
    shown = page.run_form(**{**model.DEFAULTS, **changes})
    errors = {name: message for name, message in shown["errors"].items() if message}
    assert list(errors) == [slot] and says in errors[slot], errors
    assert shown["notice"] == page.FIX


def test_a_run_that_could_never_progress_is_said_in_the_notice():
    shown = page.run_form(**{**model.DEFAULTS, "failure_rate": "0.1"})
    assert shown["notice"].startswith("Cannot cost this run: run-cost: a checkpoint takes")
    assert not any(shown["errors"].values())


def test_a_link_comes_drawn_with_its_values():
    tree = page.layout("?write=async&interval=1h")
    found = {c.id: c for c in tree._traverse() if getattr(c, "id", None)}
    assert found[ids.field_id("write")].value == "async"
    assert found[ids.make("runcost", "card-interval")].children.startswith("1 h")


def test_a_link_key_the_page_does_not_read_is_named():
    tree = page.layout("?gpu=4096")
    note = next(c for c in tree._traverse() if getattr(c, "id", None) == ids.LINK_KEYS)
    assert "Ignored in the link: gpu" in " ".join(note.children)


def test_the_elastic_title_compares_only_the_two_choices_without_a_spare():
    """The bar chart's first bar (a spare at hand) is always the highest; its title said "better to
    shrink" above it, which read as if shrinking beat restarting at once. It now names the two
    choices it compares: wait for a spare, or continue on the nodes left."""
    from webapp.pages.runcost.figures import elastic_figure

    result = model.results(model.validate(model.DEFAULTS))["result"]
    elastic = result["elastic"]
    title = elastic_figure(result).layout.title.text
    assert "no spare at hand" in title
    assert elastic["shrink_goodput"] < result["goodput"]  # the first bar is the best: the title must not contradict it
    if elastic["better"] == "shrink":
        assert "better to continue on the nodes left than wait" in title
    else:
        assert "better to wait for a spare" in title
    waits = dict(elastic, better="wait")
    assert "better to wait for a spare than continue" in elastic_figure(dict(result, elastic=waits)).layout.title.text
    alone = dict(elastic, better="wait", shrink_goodput=None)
    assert "no node is left" in elastic_figure(dict(result, elastic=alone)).layout.title.text
