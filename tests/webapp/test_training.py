"""The DDP page's training-step section: FSDP / ZeRO scenario from the form, figures, callbacks."""

from __future__ import annotations

import pytest

from sim.training.fsdp import FSDPScenario, compare, run_fsdp
from webapp import figures
from webapp.pages.ddp import model as ddp_model
from webapp.pages.ddp import page as ddp


def _form(**changes: str) -> dict[str, str]:
    return {**ddp_model.DEFAULTS, **changes}


def _scenario(**changes: str) -> FSDPScenario:
    form = _form(**changes)
    base, errors = ddp_model.parse_form(form)
    assert not errors
    scenario, errors = ddp_model.training_scenario(base.to_dict(), form)
    assert not errors, errors
    return scenario


def test_training_scenario_carries_the_ddp_inputs_and_the_sharding():
    scenario = _scenario(sharding="shard_grad_op", ranks="16", o="20us", w="5GB/s")
    assert scenario.sharding == "shard_grad_op" and scenario.ranks == 16
    assert scenario.o_s == pytest.approx(20e-6) and scenario.w_Bps == pytest.approx(5e9)
    assert _scenario(sharding="hybrid_shard", shard_size="4").group_size == 4


def test_training_scenario_errors_name_their_field():
    base, _ = ddp_model.parse_form(_form())
    scenario, errors = ddp_model.training_scenario(base.to_dict(), _form(sharding="hybrid_shard", shard_size="3"))
    assert scenario is None and list(errors) == ["shard_size"] and "divides ranks (8)" in errors["shard_size"]
    # a bad shard size matters only to hybrid_shard
    assert ddp_model.training_scenario(base.to_dict(), _form(shard_size="3"))[0].shard_size is None
    _, errors = ddp_model.parse_form(_form(sharding="zero3"))
    assert "allowed: ddp, zero1" in errors["sharding"]
    _, errors = ddp_model.parse_form(_form(sharding="hybrid_shard", shard_size="x"))
    assert errors["shard_size"].startswith("shard_size:")


def test_training_timeline_has_compute_all_gather_reduce_scatter_lanes():
    result = run_fsdp(_scenario(sharding="full_shard"))
    figure = figures.training_timeline(result.events())
    assert figure.layout.meta["lanes"] == ["compute", "all-gather", "reduce-scatter"]
    gathers = [trace for trace in figure.data if trace.name == "all_gather"][0]
    # full_shard gathers every unit for forward and again (but the root) for backward
    assert len(gathers.x) == 2 * len(result.units) - 1
    ddp_figure = figures.training_timeline(run_fsdp(_scenario(sharding="ddp")).events())
    assert ddp_figure.layout.meta["lanes"] == ["compute", "all-reduce"]
    assert figures.training_timeline([]).layout.annotations[0].text == "no events"


def test_strategy_and_memory_figures_follow_compare():
    rows = compare(_scenario(sharding="full_shard"), ["ddp", "zero1", "shard_grad_op", "full_shard"])
    times = figures.training_strategies_figure(rows, "full_shard")
    assert [trace.name for trace in times.data] == ["step time", "exposed comm"]
    assert times.layout.meta["step_time_s"]["ddp"] == pytest.approx(rows[0]["step_time_s"])
    assert "<b>full_shard</b>" in list(times.data[0].y)
    memory = figures.training_memory_figure(rows, "full_shard")
    assert [trace.name for trace in memory.data][:4] == ["params", "grads", "optimizer", "unsharded (peak)"]
    peaks = memory.layout.meta["peak_bytes"]
    # ZeRO-1 shards the optimizer state only; full_shard shards parameters and gradients too
    assert peaks["ddp"] > peaks["zero1"] > peaks["full_shard"]
    stacked = sum(trace.x[3] for trace in memory.data if trace.type == "bar") * 2**30  # every part, activations included
    assert stacked == pytest.approx(peaks["full_shard"])


def test_page_callbacks_run_the_training_step():
    form = _form(sharding="hybrid_shard", shard_size="4")
    checked = ddp.validate(None, form)
    data, training = checked["ddp"], checked["training"]
    assert data and training["sharding"] == "hybrid_shard" and not any(checked["errors"].values())
    search = ddp_model.query_from_form(form)  # what the browser writes (webapp.urlstate)
    assert "sharding=hybrid_shard" in search and "shard_size" not in search  # 4 is the default
    again = ddp.validate(None, form, data)
    assert again["ddp"] is ddp.no_update and again["training"] == training  # only the training section reruns
    shown = ddp.simulate_training(training)
    assert set(shown) == set(ddp.TRAIN_OUTPUTS)
    assert "hybrid_shard" in shown["notice"] and "shard group 4 of 8 ranks" in shown["notice"]
    assert "hybrid_shard" in shown["strategies"].layout.meta["step_time_s"]
    assert "ddp-train-peak" in str(shown["cards"]) and "activations (Korthikanti" in str(shown["caption"])
    names = [trace.name for trace in shown["memory"].data]
    assert "activations" in names and "fp32 master weights" in names  # bf16 with master weights, gpt2 at 8192 tokens
    bad = ddp.validate(None, _form(sharding="hybrid_shard", shard_size="3"))
    assert bad["ddp"] is None and bad["training"] is None
    assert bad["errors"]["shard_size"].startswith("shard_size:")
    assert ddp.simulate_training(None)["notice"].startswith("Fix the highlighted inputs")
    assert ddp.shard_size_field("full_shard") == {"display": "none"} and ddp.shard_size_field("hybrid_shard") == {}


def test_forward_time_on_the_page_hides_forward_all_gathers():
    """The page's forward (from FLOPs by default) is not 0: full_shard's forward all-gathers overlap it."""
    with_forward = run_fsdp(_scenario())
    zero_forward = run_fsdp(_scenario(forward="0ms"))
    assert with_forward.units[1].forward_s > 0 and zero_forward.units[1].forward_s == 0
    assert with_forward.exposed_comm_s < zero_forward.exposed_comm_s
    assert "all exposed" in str(ddp.simulate_training(ddp.validate(None, _form(forward="0ms"))["training"])["caption"])
