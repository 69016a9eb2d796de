"""Plain functions behind the Failures and checkpoints page: the form -> a run-cost scenario
(:func:`sim.training.runcost_fields.scenario_from_dict`, the CLI's own reader) -> :func:`run_cost`,
and goodput against the checkpoint interval from sim's closed form and its simulation."""

from __future__ import annotations

import math
from typing import Any

from sim.errors import CollsimError
from sim.training.runcost import FAILURE_RATES, RunCostScenario, goodput, run_cost
from sim.training.runcost_fields import RUNCOST, scenario_from_dict
from sim.training.runcost_sim import simulate
from webapp import urlstate
from webapp.pages.runcost import ids

__all__ = ["DEFAULTS", "FORM_FIELDS", "LIVE_SAMPLES", "curve", "form_from_query", "rate_options", "results", "url_spec", "validate"]

LIVE_SAMPLES = 20_000  # simulated intervals per point on the page (the CLI's default is 100,000): ~0.05 s a run
CURVE_POINTS, SIMULATED_POINTS = 41, 9  # closed form, simulated: intervals from an eighth to 8 x the optimum
# the form's fields, by their short keys (sim.training.runcost_fields.RUNCOST: labels, help, bounds)
FORM_FIELDS = ("step_time", "gpus", "gpus_per_node", "params", "steps", "failure_rate", "precision", "optimizer", "sharding", "write",
               "storage_bw", "node_storage_bw", "copy_bw", "rendezvous", "pg_init_per_rank", "warmup", "interval", "replace_wait",
               "nodes_lost")  # fmt: skip
INFO = {info.key: info for info in RUNCOST.values() if info.key in FORM_FIELDS}
# docs/failures.md's first example: Llama 3 405B on 16,384 GPUs; "" for a field: the scenario's default
DEFAULTS: dict[str, str] = {key: "" for key in FORM_FIELDS} | {
    "step_time": "10s", "gpus": "16384", "params": "405B", "failure_rate": "llama3-all", "storage_bw": "200GB/s",
    "precision": "bf16", "optimizer": "adam", "sharding": "sharded", "write": "sync",
}  # fmt: skip


def form_from_query(search: str | None) -> dict[str, str]:
    return urlstate.form_from_query(search, DEFAULTS)


def url_spec() -> dict[str, Any]:
    return urlstate.url_spec(list(DEFAULTS), DEFAULTS, path=ids.PATH)


def default_text(key: str) -> str:
    """What an empty field means: the scenario's default, in the field's unit."""
    value = RunCostScenario.__dataclass_fields__[INFO[key].name].default
    if value is None:
        return "the optimum"
    unit = INFO[key].unit
    if unit == "B/s":
        return f"{value / 1e9:g}GB/s"
    return f"{value:g}{unit if unit == 's' else ''}"


def rate_options() -> list[tuple[str, str]]:
    """(name, words) of each published failure rate the field accepts."""
    return [(name, f"{name}: {rate:.3g} failures per GPU-hour") for name, rate in FAILURE_RATES.items()]


def validate(form: dict[str, Any]) -> dict[str, Any]:
    """{"scenario": the scenario as data, or None; "errors": {field: message}} (the first message,
    in the slot of the field it names; one naming none goes to the notice, as "")."""
    data = {key: str(form.get(key) or "").strip() for key in FORM_FIELDS}
    given = {key: value for key, value in data.items() if value}
    try:
        scenario = scenario_from_dict({**given, "samples": LIVE_SAMPLES})
    except CollsimError as error:
        return {"scenario": None, "errors": {_field_of(error): str(error)}}
    return {"scenario": scenario.to_dict(), "errors": {}}


def _field_of(error: CollsimError) -> str:
    by_name = {info.name: key for key, info in INFO.items()}
    name = error.field or str(error).split(":", 1)[0]
    return name if name in INFO else by_name.get(name, "")


def results(checked: dict[str, Any]) -> dict[str, Any]:
    """run_cost's answer (``RunCostResult.to_dict()``) and the goodput curve, for a valid form."""
    scenario = RunCostScenario(**checked["scenario"])
    result = run_cost(scenario).to_dict()
    return {"result": result, "curve": curve(result)}


def curve(result: dict[str, Any]) -> dict[str, Any]:
    """Goodput against the checkpoint interval: Daly's expected goodput (sim.training.runcost.goodput)
    over intervals from an eighth to 8 x the exact optimum, and the seeded simulation at a few of
    them (sim.training.runcost_sim.simulate, with its standard error). Async: no interval shorter
    than a background write (checkpoints would queue)."""
    scenario = result["scenario"]
    delta, restart, mtbf = result["checkpoint"]["blocking_s"], result["restart_s"], result["mtbf_s"]
    low = result["exact_interval_s"] / 8
    if scenario["write"] == "async":
        low = max(low, result["checkpoint"]["write_s"])
    high = max(result["exact_interval_s"] * 8, result["interval_s"] * 1.5, low * 2)
    high = min(high, 5 * mtbf - delta)  # run_cost refuses an interval over 5 MTBFs: the curve stops there too
    grid = lambda count: [low * (high / low) ** (i / (count - 1)) for i in range(count)]  # noqa: E731
    closed = [goodput(x, delta, restart, mtbf) for x in grid(CURVE_POINTS)]
    runs = [simulate(x, delta, restart, mtbf, scenario["samples"], scenario["seed"]) for x in grid(SIMULATED_POINTS)]
    return {
        "interval_s": grid(CURVE_POINTS),
        "goodput": closed,
        "simulated_interval_s": grid(SIMULATED_POINTS),
        "simulated_goodput": [run.goodput for run in runs],
        "simulated_stderr": [run.goodput_stderr for run in runs],
        "finite": all(math.isfinite(value) for value in closed),
    }
