"""The explorer draws the 80 % interval (issue 33, item 2): the crossover's band on a preset, the
DDP page's step-time and training-step cards as "(80 %: a – b)" (callback level)."""

from __future__ import annotations

import re

from dash import no_update

from sim.collective.explore import crossover
from sim.nccl.pick import apply_hardware
from sim.scenario import CollectiveScenario
from sim.units import format_time
from webapp.figures.collectives import crossover_figure
from webapp.pages.ddp import model as ddp_model
from webapp.pages.ddp import page as ddp


def _checked(**changes: str) -> dict:
    form = {**ddp_model.DEFAULTS, **changes}
    checked = ddp.validate(None, form)
    assert not any(checked["errors"].values()), checked["errors"]
    return checked


def _preset_form() -> dict:
    filled = {key: value for key, value in ddp.apply_hardware("dgx-h100", "16", "ddp-hardware").items() if value is not no_update}
    return {"hardware": "dgx-h100", **filled, "comm_model": "network"}


def _card(cards: list, card_id: str) -> str:
    return next(card.children[1].children for card in cards if card.children[1].id == card_id)


def test_step_time_cards_show_the_80_percent_interval_on_a_preset():
    checked = _checked(**_preset_form())
    step = _card(ddp.simulate(checked["ddp"])["cards"], "ddp-step-time")
    shown = ddp.simulate_training(checked["training"])
    training = _card(shown["cards"], "ddp-train-step")
    step_bars = shown["strategies"].data[0]  # each strategy's step with whiskers of its interval
    assert step_bars.error_x.array and min(step_bars.error_x.array) > 0 and min(step_bars.error_x.arrayminus) > 0
    assert all("(80 %: " in hover for hover in step_bars.hovertemplate)
    for text in (step, training):
        found = re.fullmatch(r"(.+) \(80 %: (.+) – (.+)\)", text)
        assert found, text
        assert found.group(2) != found.group(3)


def test_step_time_cards_have_no_interval_without_a_preset():
    checked = _checked()
    assert "80 %" not in _card(ddp.simulate(checked["ddp"])["cards"], "ddp-step-time")
    shown = ddp.simulate_training(checked["training"])
    assert "80 %" not in _card(shown["cards"], "ddp-train-step") and not shown["strategies"].data[0].error_x.array


def test_crossover_figure_draws_a_band_of_the_chosen_algorithms_interval_on_a_preset():
    data = {"op": "all_reduce", "algorithm": "ring", "size": "1KiB", "hardware": "dgx-h100", "nodes": 1}
    apply_hardware(data)
    rows = crossover(CollectiveScenario.from_dict(data), (4096, 2**20, 2**26))
    figure = crossover_figure(rows, 4096, "ring")
    band = next(item for item in figure.data if item.name == "80 % interval (ring)")
    ring = [row for row in rows if row["algorithm"] == "ring" and row["time_s"] is not None]
    factor = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}[figure.layout.yaxis.title.text.split("(")[1].rstrip(")")]
    highs = [row["time_interval_s"][1] * factor for row in ring]
    assert list(band.y[: len(ring)]) == highs and band.fill == "toself"
    ring_curve = next(item for item in figure.data if item.name.startswith("ring (current)"))
    assert all("80 %: " + format_time(row["time_interval_s"][0]) in hover for row, hover in zip(ring, ring_curve.hovertemplate))
    by_hand = CollectiveScenario.from_dict({"op": "all_reduce", "algorithm": "ring", "ranks": 4, "size": "1KiB", "bandwidth": "10GB/s"})
    assert not any("80 %" in (item.name or "") for item in crossover_figure(crossover(by_hand, (4096, 2**20)), 4096, "ring").data)
