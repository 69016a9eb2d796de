"""Plain functions behind the Parallelism page: form <-> :class:`~sim.training.parallel.TrainScenario`
(labels, help and bounds from the scenario's field table), the run, the sweep, and the numbers the
teaching layer writes out (each read from the scenario, the preset or the simulated result)."""

from __future__ import annotations

from typing import Any

from sim.errors import CollsimError
from sim.fields import FieldInfo
from sim.training.parallel.scenario import FIELDS
from webapp import urlstate
from webapp.pages.parallelism import ids

__all__ = [
    "DEFAULTS",
    "FLAGS",
    "FORM_FIELDS",
    "OPTIONAL",
    "check_sweep",
    "form_from_query",
    "links",
    "run",
    "run_with_interval",
    "sweep",
    "teaching",
    "url_spec",
    "validate_form",
]

# The page's first scenario: the 22B model of Korthikanti et al. 2022 on 4 DGX A100 nodes, TP inside
# a node, two pipeline stages, two data-parallel replicas on the NIC rails (every stream shows).
DEFAULTS: dict[str, str] = {
    "hardware": "dgx-a100",
    "nodes": "4",
    "model": "megatron-22b",
    "layers": "",  # shape fields: empty takes the model preset's value
    "hidden": "",
    "heads": "",
    "seq_len": "",
    "vocab": "",
    "tp": "8",
    "pp": "2",
    "dp": "2",
    "ep": "1",
    "vpp": "1",
    "schedule": "1f1b",
    "recompute": "none",
    "attention": "flash",
    "sequence_parallel": "off",
    "scatter_gather": "on",
    "first_stage_layers": "",  # empty: every stage alike
    "last_stage_layers": "",
    "zero": "0",
    "micro_batch": "1",
    "global_batch": "32",
    "precision": "bf16",
    "mfu": "0.7",
}
FORM_FIELDS: dict[str, FieldInfo] = {name: FIELDS[name] for name in DEFAULTS}
SHAPE = ("layers", "hidden", "heads", "seq_len", "vocab")
FLAGS = tuple(name for name, info in FORM_FIELDS.items() if info.kind == "flag")  # on/off boxes
OPTIONAL = (*SHAPE, "first_stage_layers", "last_stage_layers")  # empty: the scenario's default
MAX_PASSES = 20_000  # micro-batches x layers a page run simulates (GPT-3 175B, 64 micro-batches: 6,144 in ~2 s)
MAX_SWEEP_NODES = 64  # 512 GPUs: some tens of layouts, each a few seconds at most
# micro-batches x layers of the sweep's dp = 1 layouts (global batch / micro-batch x layers): GPT-3 175B
# on 64 nodes, global batch 512 (49,152) sweeps in ~35 s here; twice that stays within the explorer's limit
MAX_SWEEP_PASSES = 100_000


def form_from_query(search: str | None) -> dict[str, str]:
    return urlstate.form_from_query(search, DEFAULTS)


def url_spec() -> dict[str, Any]:
    """The URL writer's spec: the fields that differ from the defaults."""
    return urlstate.url_spec(list(DEFAULTS), DEFAULTS, path=ids.PATH)


def _number(name: str, text: str) -> int | float | None:
    """A box's text as its field's kind, in its bounds (FIELDS); CollsimError naming the field."""
    info = FIELDS[name]
    if not text and name in OPTIONAL:
        return None
    try:
        value: int | float = int(text) if info.kind == "int" else float(text)
    except ValueError:
        kind = "a whole number" if info.kind == "int" else "a number"
        raise CollsimError(f"{name}: expected {kind} from {info.low:g} to {info.high:g}, got {text!r}", field=name) from None
    if not info.low <= value <= info.high:
        raise CollsimError(f"{name}: must be between {info.low:g} and {info.high:g}, got {text}", field=name)
    return value


def _data(form: dict[str, str], errors: dict[str, str]) -> dict[str, Any]:
    """The scenario dict of the form's boxes, each checked alone (a wrong box gets its message)."""
    data: dict[str, Any] = {name: form[name] == "on" for name in FLAGS}
    for name in DEFAULTS:
        text = form[name].strip()
        if name in FLAGS:
            continue
        try:
            if FIELDS[name].kind in ("int", "float"):
                data[name] = _number(name, text)
            elif FIELDS[name].choices and text not in FIELDS[name].choices and (text or name != "model"):
                raise CollsimError(f"{name}: {text!r} is not allowed; allowed: {', '.join(FIELDS[name].choices)}", field=name)
            else:
                data[name] = text or None
        except CollsimError as error:
            errors[name] = str(error)
    return data


def validate_form(form: dict[str, Any]) -> dict[str, Any]:
    """{"scenario": the checked scenario's dict or None, "errors": {field: message}} (every field
    named, "" where it is right)."""
    from sim.training.parallel import TrainScenario

    form = {key: str(form.get(key) if form.get(key) is not None else DEFAULTS[key]) for key in DEFAULTS}
    errors: dict[str, str] = {}
    data = _data(form, errors)
    scenario = None
    if not errors:
        try:
            scenario = TrainScenario.from_dict(data)
            check_size(scenario)
        except CollsimError as error:
            scenario, errors[error.field if error.field in DEFAULTS else _slot(error.field)] = None, str(error)
    return {"scenario": scenario.to_dict() if scenario else None, "errors": {name: errors.get(name, "") for name in DEFAULTS}}


def _slot(field: str | None) -> str:
    """The box a scenario error on a field the form has no box for is shown under."""
    return {"experts": "ep", "ep_imbalance": "ep", "top_k": "ep", "grad_accum": "global_batch"}.get(field or "", "model")


def scenario_of(data: dict[str, Any]) -> Any:
    from sim.training.parallel import TrainScenario

    return TrainScenario.from_dict(data)


def check_size(scenario: Any) -> None:
    """Refuse a step the explorer would not simulate in seconds: more than :data:`MAX_PASSES`
    micro-batch x layer passes a pipeline (each is some events on every stage)."""
    passes = scenario.micro_batches * scenario.layers
    if passes > MAX_PASSES:
        raise CollsimError(
            f"global_batch: {scenario.micro_batches} micro-batches x {scenario.layers} layers = {passes:,} layer passes a pipeline; "
            f"the explorer simulates up to {MAX_PASSES:,} (raise micro_batch or dp, or run collsim sim train)", field="global_batch"
        )  # fmt: skip


def run(data: dict[str, Any]) -> Any:
    """The simulated step with its events (sim.training.parallel.simulate)."""
    from sim.training.parallel import simulate

    return simulate(_sized(data), events=True)


def run_with_interval(data: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(the step with its events, its 80 % interval's keys), as ``collsim sim train`` gives them
    (sim.training.parallel.interval: the step run twice more, each collective costed once)."""
    from sim.training.parallel.interval import simulate_with_interval

    return simulate_with_interval(_sized(data), events=True)


def _sized(data: dict[str, Any]) -> Any:
    scenario = scenario_of(data)
    check_size(scenario)
    return scenario


def check_sweep(data: dict[str, Any]) -> None:
    """Refuse, before it starts, a sweep the explorer would not finish in its time."""
    if data["nodes"] > MAX_SWEEP_NODES:
        raise CollsimError(
            f"nodes: the explorer's sweep takes up to {MAX_SWEEP_NODES} nodes, got {data['nodes']}; "
            "run `collsim sim train --sweep` for more", field="nodes"
        )  # fmt: skip
    passes = data["global_batch"] // data["micro_batch"] * data["layers"]
    if passes > MAX_SWEEP_PASSES:
        raise CollsimError(
            f"global_batch: the sweep's dp = 1 layouts run {data['global_batch'] // data['micro_batch']} micro-batches x "
            f"{data['layers']} layers = {passes:,} layer passes; the explorer's sweep takes up to {MAX_SWEEP_PASSES:,} "
            "(a smaller global batch or a larger micro-batch, or `collsim sim train --sweep`)", field="global_batch"
        )  # fmt: skip


def sweep(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every valid (tp, pp, dp[, ep]) for the scenario's GPUs, fits first, fastest first
    (sim.training.parallel.cli.sweep_layouts, as ``collsim sim train --sweep``)."""
    from sim.training.parallel.cli import sweep_layouts

    check_sweep(data)
    flags = {key: value for key, value in data.items() if key not in ("tp", "pp", "dp", "ep", "grad_accum")}
    return sweep_layouts(flags)


# ----------------------------------------------------------------------------- what the page explains


def _preset(name: str) -> Any:
    from sim.hardware.presets import load_preset

    return load_preset(name)


def links(data: dict[str, Any], layout: dict[str, int]) -> list[dict[str, Any]]:
    """For each kind of group of size > 1 the link its traffic crosses (sim.training.parallel.teaching)."""
    from sim.training.parallel.teaching import group_links

    return group_links(_preset(data["hardware"]), layout)


def teaching(data: dict[str, Any], result: Any) -> dict[str, Any]:
    """The numbers of the teaching layer (sim.training.parallel.teaching)."""
    from sim.training.parallel.teaching import teaching_numbers

    return teaching_numbers(scenario_of(data), _preset(data["hardware"]), result)
