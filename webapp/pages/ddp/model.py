"""Plain functions behind the DDP page: form -> DDPScenario, runs, sweeps, uploads."""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import yaml

from sim.errors import CollsimError
from sim.fields import FieldInfo, check_value, fields_of, form_fields
from sim.files import parse_data
from sim.scenario import unit_kind
from sim.units import format_size, format_time, parse_bandwidth, parse_size, parse_time, require_unit
from webapp import urlstate
from webapp.collective import hardware_options  # noqa: F401 - the presets both pages offer (model.hardware_options)
from webapp.pages.ddp import ids

DEFAULTS: dict[str, str] = {
    "hardware": "",  # a preset (sim/hardware): ranks in whole nodes, its network, o / w from NCCL's model; "" by hand
    "nodes": "",  # with a preset: nodes of it (ranks = nodes x its GPUs a node); "" without one
    "preset": "gpt2",
    "strategy": "bucketed",
    "sharding": "full_shard",
    "shard_size": "4",
    "comm_model": "ow",
    "ranks": "8",
    # compute and memory (sim.training.compute): times not typed come from FLOPs at the MFU
    "precision": "bf16",
    "master": "on",
    "tokens": "8192",
    "gpu": "dgx-h100",
    "mfu": "measured",  # the preset's MFU measured on an H100 or H200 (sim.training.compute.measured); or a fraction such as 40%
    "backward": "",
    "forward": "",
    "optimizer": "0ms",
    "checkpointing": "off",
    "bucket": str(25 * 2**20),
    "accumulation": "1",  # micro-steps per step, the first k-1 under no_sync (DDPScenario.accumulation_steps)
    "o": "50us",
    "w": "10GB/s",
    "bandwidth": "25GB/s",
    "latency": "5us",
    "algorithm": "ring",
    "first_bucket": "on",
}
BOXES = form_fields("ddp")  # the boxes that are DDP scenario fields, by form key: their parser, bounds and words (sim.fields)
_BY_KEY = {key: info for info in fields_of("ddp").values() for key in (info.name, *info.keys())}
MIN_BUCKET_LOG2, MAX_BUCKET_LOG2 = 14, 32  # 16 KiB .. 4 GiB on the slider
MAX_UPLOAD_PARAMS = 20_000
MAX_UPLOAD_BYTES = 8 * 2**20  # a parameter list of MAX_UPLOAD_PARAMS entries is ~1-2 MB of JSON


def gpu_options() -> list[dict[str, str]]:
    """Hardware presets with a GPU peak (what the MFU is a fraction of)."""
    from sim.hardware.presets import list_presets, load_preset

    presets = [load_preset(name) for name in list_presets()]
    return [{"label": f"{p.gpu_model} ({p.name})", "value": p.name} for p in presets if p.gpu_peak_tflops]


def presets() -> tuple[str, ...]:
    from sim.training.params import PRESETS

    return PRESETS


def strategies() -> tuple[str, ...]:
    from sim.training.ddp import STRATEGIES

    return STRATEGIES


def shardings() -> tuple[str, ...]:
    """Training-step strategies: ddp, zero1 and the four FSDP shardings."""
    from sim.training.fsdp import STRATEGIES

    return STRATEGIES


def form_from_query(search: str | None) -> dict[str, str]:
    """The form of a link. With a hardware preset, what the link leaves out of what picking the
    preset fills (nodes or ranks, links, o and w, algorithm, GPU) comes from the preset, as
    picking it does: ``?hardware=dgx-h100&ranks=16`` runs on the preset's o and w, not the
    page's 10 GB/s (issue 36)."""
    form = urlstate.form_from_query(search, DEFAULTS)
    name = form["hardware"].strip()
    if not name:
        return form
    given = urlstate.query_keys(search)
    try:
        filled = hardware_form(name, form["ranks"] if "ranks" in given else "", nodes=form["nodes"] if "nodes" in given else None)
    except (CollsimError, ValueError):  # an unknown preset or nonsense: validation says so on its field
        return form
    return {**form, **{key: value for key, value in (filled or {}).items() if key not in given}}


def url_spec() -> dict[str, Any]:
    """The URL writer's spec: fields that differ from the defaults; under a preset the fields it fills
    always (a link read back fills those it lacks from the preset), without one no nodes (hidden)."""
    return urlstate.url_spec(
        list(DEFAULTS), DEFAULTS, path=ids.PATH, pinned_by="hardware", pinned=(*HARDWARE_FIELDS, "nodes"), cleared=("nodes",)
    )


def query_from_form(form: dict[str, Any]) -> str:
    return urlstate.query_of(url_spec(), form)  # the link of a form, as the browser writes it


# ----------------------------------------------------------------------------- hardware presets

TYPICAL_BUCKET_BYTES = 25 * 2**20  # DDP's default bucket_cap_mb: where o / w meet NCCL's prediction
HARDWARE_FIELDS = ("ranks", "bandwidth", "latency", "o", "w", "algorithm", "gpu")  # what picking a preset fills


def hardware_nodes(name: str, ranks_text: str) -> int:
    """Whole nodes of preset ``name`` in ``ranks_text`` ranks; CollsimError naming ranks (or an
    unknown preset) otherwise."""
    from sim.hardware.presets import load_preset

    preset = load_preset(name)
    gpus, ranks = preset.gpus_per_node, int(ranks_text)
    if ranks < gpus or ranks % gpus:
        less = " (less than one node)" if ranks < gpus else ""
        raise CollsimError(
            f"ranks: {name} has {gpus} GPUs a node; give whole nodes ({gpus}, {2 * gpus}, {3 * gpus}, ...), got {ranks}{less}"
        )
    if preset.max_nodes is not None and ranks // gpus > preset.max_nodes:
        raise CollsimError(
            f"ranks: {name} has no NICs and runs on at most {preset.max_nodes} node(s) ({preset.max_nodes * gpus} ranks), got {ranks}"
        )
    try:
        preset.check_nodes(ranks // gpus)  # e.g. GB200 trays that do not spread evenly over NVLink domains
    except CollsimError as error:
        raise CollsimError(f"ranks: {ranks} ranks = {ranks // gpus} nodes; {error}") from None
    return ranks // gpus


def scenario_fields_for(name: str, nodes: int) -> dict[str, Any]:
    from sim.hardware.presets import scenario_fields

    return scenario_fields(name, nodes)


def hardware_ow(name: str, nodes: int) -> dict[str, Any]:
    """o and w on ``nodes`` nodes of a preset (sim.training.explain.hardware_ow)."""
    from sim.training.explain import hardware_ow as fitted

    return fitted(name, nodes)


def _rate_text(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:.4g}GB/s"


def _time_text(seconds: float) -> str:
    return f"{seconds * 1e6:.4g}us"


def hardware_form(name: str | None, ranks: str | None, pick: bool = True, nodes: str | None = None) -> dict[str, str] | None:
    """The form values a preset sets, or None for "no preset".

    ``pick`` (the preset was just chosen): ranks rounded down to whole nodes (at least one, at
    most the preset's limit), the NIC's bandwidth and latency for the network model, o and w for
    the o / w model (fitted to the network model's times), algorithm nccl (NCCL's pick) on a GPU
    preset; ``nodes`` given (the Nodes field): that many nodes, ranks from them. Otherwise (ranks
    changed under a chosen preset): nodes and o and w for the new node count, or nothing while the
    ranks are not whole nodes (the ranks field says why)."""
    if not name:
        return None
    from sim.hardware.presets import load_preset

    preset = load_preset(name)
    gpus = preset.gpus_per_node
    text = str(ranks or "").strip()
    if pick or nodes is not None:
        typed = str(nodes or "").strip()
        count = int(typed) if typed.isdigit() else (int(text) // gpus if text.isdigit() else 1)
        nodes = max(count, 1, -(-2 // gpus))  # the page takes 2 ranks or more
        nodes = min(nodes, preset.max_nodes or nodes, 1024 // gpus)
        fields = scenario_fields_for(name, nodes)
        values = {
            "nodes": str(nodes),
            "ranks": str(fields["ranks"]),
            "bandwidth": _rate_text(fields["bandwidth_Bps"]),
            "latency": _time_text(fields["latency_s"]),
            "algorithm": "nccl" if preset.nccl is not None else "ring",  # NCCL's pick on its channels
        }
        if preset.gpu_peak_tflops:  # the MFU's peak is this machine's GPU
            values["gpu"] = name
    else:
        try:
            nodes = hardware_nodes(name, text) if text.isdigit() else 0
        except CollsimError:
            nodes = 0
        if not nodes or nodes * gpus < 2:
            return {}
        values = {"nodes": str(nodes)}
    ow = hardware_ow(name, nodes)
    return {**values, "o": _time_text(ow["o_s"]), "w": _rate_text(ow["w_Bps"])}


def hardware_caption(form: dict[str, Any]) -> dict[str, Any] | None:
    """Words under the picker (sim.training.explain.hardware_words); None without a preset."""
    from sim.training.explain import hardware_words

    name = str(form.get("hardware") or "").strip()
    if not name:
        return None
    ranks = str(form.get("ranks") or "").strip()
    try:
        nodes = hardware_nodes(name, ranks) if ranks.isdigit() else 0
    except CollsimError:
        nodes = 0
    o_s, w_Bps = _boxes(form)
    return hardware_words(name, nodes, str(form.get("comm_model") or "ow"), o_s, w_Bps)


def _boxes(form: dict[str, Any]) -> tuple[float | None, float | None]:
    try:
        return parse_time(str(form.get("o")), "o"), parse_bandwidth(str(form.get("w")), "w")
    except CollsimError:
        return None, None


def bucket_bytes_from_slider(log2_value: float | None) -> int:
    return int(round(2 ** float(log2_value if log2_value is not None else math.log2(25 * 2**20))))


def slider_from_bucket(text: str) -> float:
    try:
        nbytes = parse_size(text, "bucket")
    except CollsimError:
        nbytes = 25 * 2**20
    return min(MAX_BUCKET_LOG2, max(MIN_BUCKET_LOG2, math.log2(max(nbytes, 1))))


def _backward(text: str) -> dict[str, Any]:
    """A total backward time ("120ms"), a gradient production rate ("4GB/s"), or nothing (empty:
    from FLOPs at the MFU): the page's one box for two scenario fields, checked by their entries."""
    text = (text or "").strip()
    if not text:
        return {}
    if text.lower().endswith("/s") or text.lower().endswith("bps"):
        _check_entry(_BY_KEY["backward_rate"], text, "backward")
        return {"backward_rate": text}
    _check_entry(_BY_KEY["backward_time"], text, "backward")
    return {"backward_time": text}


def _check_entry(info: FieldInfo, text: str, key: str) -> None:
    """``text`` in box ``key`` read as field ``info`` of a DDP scenario and within its entry's
    bounds (sim.fields.check_value): the scenario's own parser and words, said at the box."""
    from sim.training.ddp import DDPScenario

    if (kind := unit_kind(info.name)) and key != info.name:
        require_unit(text, key, kind)
    try:
        check_value(info, DDPScenario.PARSERS[info.name](text, key))
    except CollsimError as error:
        raise CollsimError(str(error), field=key) from None


def _ranks(text: str) -> None:
    """The page's own limit (the schema's is the command line's 65,536)."""
    if not (text.isdigit() and 2 <= int(text) <= 1024):
        raise CollsimError(f"ranks: expected a whole number from 2 to 1024, got {text!r}")


def _sharding(text: str) -> None:
    if text not in shardings():
        raise CollsimError(f"sharding: unknown {text!r}; allowed: {', '.join(shardings())}")


def _shard_size(text: str) -> None:
    if not (text.isdigit() and int(text) >= 1):
        raise CollsimError(f"shard_size: expected a whole number of ranks per shard group, got {text!r}")


_OWN_CHECKS = {"ranks": _ranks, "backward": _backward, "sharding": _sharding, "shard_size": _shard_size}  # boxes no entry checks
_EMPTY_IS_NONE = ("forward", "optimizer")  # empty: from FLOPs at the MFU (or 0)


def _field_checks(form: dict[str, str]) -> dict[str, str]:
    """Each box the scenario reads, checked on its own: each wrong box gets its message."""
    relevant = ("ranks", "backward", "forward", "optimizer", "tokens", "mfu", "sharding", "accumulation") + (
        ("shard_size",) if form["sharding"] == "hybrid_shard" else ()
    )
    relevant += ("o", "w") if form["comm_model"] == "ow" else ("bandwidth", "latency")
    errors: dict[str, str] = {}
    for key in relevant:
        text = form[key].strip()
        try:
            if key in _OWN_CHECKS:
                _OWN_CHECKS[key](text)
            elif text or key not in _EMPTY_IS_NONE:
                _check_entry(BOXES[key], text, key)
        except CollsimError as error:
            errors[key] = str(error)
    return errors


# DDP fields with no box of their own, and the box their errors show at (the others: their own box)
_SHOWN_AT = {
    "ranks": "ranks", "gpus_per_node": "ranks", "nodes": "nodes", "topology": "hardware", "intra_latency_s": "hardware",
    "intra_bandwidth_Bps": "hardware", "nics_per_node": "hardware", "nic_bandwidth": "hardware", "bucket_cap_bytes": "bucket",
    "backward_time_s": "backward", "backward_rate_Bps": "backward", "layer_times": "backward", "profile_file": "backward",
    "flops_per_s": "tokens", "params": "upload", "param_bytes": "upload", "params_file": "upload", "element_bytes": "upload",
}  # fmt: skip


def error_box(error: CollsimError, fallback: str = "strategy") -> str:
    """The box a scenario error shows at, by its ``field`` (a DDP field's key, name or alias,
    sim.fields; or one of the page's own boxes), not by its words; ``fallback`` when it names none."""
    name = error.field or ""
    if name in DEFAULTS:
        return name
    info = _BY_KEY.get(name)
    if info is not None and info.group == "ddp":
        return info.url_key
    return _SHOWN_AT.get(info.name if info is not None else name, fallback)


def parse_form(form: dict[str, Any], uploaded: list[dict[str, Any]] | None = None) -> tuple[Any, dict[str, str]]:
    """(DDPScenario, {}) or (None, {field: message})."""
    from sim.training.ddp import DDPScenario

    form = {key: str(form.get(key) if form.get(key) is not None else DEFAULTS[key]) for key in DEFAULTS}
    errors = _field_checks(form)
    hardware = form["hardware"].strip()
    if hardware and "ranks" not in errors:
        try:
            _check_nodes(hardware, form["nodes"].strip(), hardware_nodes(hardware, form["ranks"]))
        except CollsimError as error:
            errors[error_box(error, "ranks")] = str(error)
    if errors:
        return None, errors
    data: dict[str, Any] = {
        "strategy": form["strategy"],
        "comm": form["comm_model"],
        "ranks": form["ranks"],
        "bucket_size": form["bucket"],
        "accumulation_steps": form["accumulation"].strip(),  # read by the scenario's parser, as the box was checked
        **_backward(form["backward"]),
        **_compute(form),
    }
    data["first_bucket"] = None if form["first_bucket"] != "on" else 2**20
    if uploaded:
        data["params"] = uploaded
    else:
        data["preset"] = form["preset"]
    nodes = hardware_nodes(hardware, form["ranks"]) if hardware else 0
    if form["comm_model"] == "ow" and not (hardware and _preset_ow(form, hardware, nodes)):
        data.update(o=form["o"], w=form["w"])
    if hardware:  # the network of both comm models; its boxes are the NIC's, inside a node the preset's fabric
        fields = scenario_fields_for(hardware, nodes)
        data.update({key: fields[key] for key in ("hardware", "topology", "gpus_per_node", "intra_bandwidth_Bps", "intra_latency_s")})
        data.update({"bandwidth_Bps": fields["bandwidth_Bps"], "latency_s": fields["latency_s"]})
    if form["comm_model"] == "network":
        data.update(bandwidth=form["bandwidth"], latency=form["latency"], algorithm=form["algorithm"])
        data.pop("bandwidth_Bps", None), data.pop("latency_s", None)
    try:
        return DDPScenario.from_dict(data), {}
    except CollsimError as error:
        return None, {error_box(error): str(error)}


def _check_nodes(hardware: str, nodes: str, whole: int) -> None:
    """The Nodes field agrees with the ranks (``whole`` nodes of them): a link that says both
    differently is refused, not read one way."""
    from sim.hardware.presets import load_preset

    if nodes and (not nodes.isdigit() or int(nodes) != whole):
        ranks = whole * load_preset(hardware).gpus_per_node
        raise CollsimError(f"nodes: {whole} node(s) of {hardware} make the {ranks} ranks given, got nodes {nodes!r}; change one")


def _compute(form: dict[str, str]) -> dict[str, Any]:
    """Precision, tokens, MFU and its GPU, typed forward and optimizer times, checkpointing."""
    data: dict[str, Any] = {
        "precision": form["precision"],
        "master_weights": form["master"] == "on",
        "tokens": form["tokens"].strip(),
        "mfu": form["mfu"],
        "gpu": form["gpu"] or None,
        "activation_checkpointing": form["checkpointing"] == "on",
    }
    for name in ("forward", "optimizer"):
        if form[name].strip():
            data[f"{name}_time"] = form[name].strip()
    return data


def _preset_ow(form: dict[str, str], hardware: str, nodes: int) -> bool:
    """Whether the o and w boxes hold the preset's values (then the run fits them at its own
    buckets, sim.training.comm) rather than the user's."""
    from sim.training.explain import edited

    return not edited(*_boxes(form), hardware_ow(hardware, nodes))


def parse_upload(contents: str | None, filename: str | None) -> tuple[list[dict[str, Any]] | None, str]:
    """(params as dicts, "") from an uploaded JSON/YAML parameter list, or (None, message)."""
    from sim.training.params import params_from_list

    if not contents:
        return None, ""
    name = filename or "upload"
    if len(contents) > MAX_UPLOAD_BYTES * 4 // 3 + 1024:  # base64: checked before decoding or parsing
        return None, f"{name}: larger than {format_size(MAX_UPLOAD_BYTES)}; the explorer takes parameter lists up to that"
    try:
        _, encoded = contents.split(",", 1)
        text = base64.b64decode(encoded).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None, f"{name}: not a text file; expected JSON or YAML with a 'params' list"
    kind = "JSON" if name.lower().endswith(".json") else "YAML"
    try:
        data = parse_data(text, ".json" if kind == "JSON" else "")
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        return None, f"{name}: malformed {kind}: {str(error).splitlines()[0][:200]}"
    except CollsimError as error:  # aliases, a key given twice
        return None, f"{name}: {error}"
    if not isinstance(data, dict) or "params" not in data:
        return None, f'{name}: expected an object with a \'params\' list, e.g. {{"params": [{{"name": "fc.weight", "numel": 1024}}]}}'
    try:
        params = params_from_list(data["params"], name)
    except CollsimError as error:
        return None, str(error)
    except (TypeError, ValueError, KeyError) as error:
        return None, f"{name}: invalid parameter entry: {error}"
    if len(params) > MAX_UPLOAD_PARAMS:
        return None, f"{name}: {len(params)} parameters; the explorer takes up to {MAX_UPLOAD_PARAMS}"
    return [param.to_dict() for param in params], ""


def check_network_cost(scenario: Any) -> None:
    from sim.training.explain import check_network_cost as check

    check(scenario)


def run(scenario: Any) -> dict[str, Any]:
    """The DDP figures' data (sim.training.explain.explore_step)."""
    from sim.training.explain import explore_step

    return explore_step(scenario)


def validate_form(form: dict[str, Any], uploaded: list | None = None) -> dict[str, Any]:
    """{"ddp": DDP scenario dict or None, "training": training-step scenario dict or None,
    "errors": {field: message}}: the form checked field by field, then as scenarios."""
    form = {key: form.get(key) if form.get(key) is not None else DEFAULTS[key] for key in DEFAULTS}
    scenario, errors = parse_form(form, uploaded)
    if scenario is not None:
        try:
            check_network_cost(scenario)
        except CollsimError as error:
            scenario, errors = None, {error_box(error, "ranks"): str(error)}
    training = None
    if scenario is not None:
        training, errors = training_scenario(scenario.to_dict(), form)
    if "upload" in errors:  # the upload box shows its own message; a list that fails later goes by the preset
        errors["preset"] = errors.pop("upload")
    ddp = scenario.to_dict() if scenario is not None and training is not None else None
    return {"ddp": ddp, "training": training.to_dict() if training is not None else None, "errors": errors}


def explore(scenario: Any) -> dict[str, Any]:
    """Everything the DDP section shows: :func:`run`'s answer, the caps within 1 % of the best
    overhead, the notice, where the compute times come from, and the words beside the figure."""
    from sim.training.explain import accumulation_words, compute_words, hardware_notice, near_best_caps, ow_used_words

    shown = run(scenario)
    summary = shown["summary"]
    near = near_best_caps(shown["optimum"]["sweep"])
    notice = f"{summary['num_params']} parameters, {format_size(summary['grad_bytes'])} of gradients, strategy {summary['strategy']}, comm model {summary['comm']}."
    if scenario.comm == "network" and scenario.hardware:
        notice += (
            f" Network: {scenario.ranks // scenario.gpus_per_node} x {scenario.hardware} ({scenario.ranks} ranks, {scenario.algorithm})."
        )
    notice += hardware_notice(summary) + accumulation_words(summary) + default_ow_words(scenario)
    words = explanation(shown, scenario)
    words["near"] = (
        f"Recommended bucket cap: {format_size(near['low'])} to {format_size(near['high'])}, the {near['count']} caps of the sweep whose "
        f"overhead is within 1 % of the best ({format_time(near['best']['overhead_s'])} at {format_size(near['best']['bucket_cap_bytes'])}); "
        "the curve is flat there, so any of them does."
    )
    return {**shown, "near": near, "notice": notice, "words": words, "compute": compute_words(summary, scenario),
            "ow_used": ow_used_words(summary, scenario)}  # fmt: skip


def default_ow_words(scenario: Any) -> str:
    """A sentence when the step runs on the page's default o and w (no preset, boxes untouched):
    a default that sets the answer is said, not left to a grey box (issue 36)."""
    o_s, w_Bps = parse_time(DEFAULTS["o"], "o"), parse_bandwidth(DEFAULTS["w"], "w")
    if scenario.comm != "ow" or scenario.hardware or (scenario.o_s, scenario.w_Bps) != (o_s, w_Bps):
        return ""
    return (
        f" o = {DEFAULTS['o']} and w = {DEFAULTS['w']} are the page's defaults, not measured on any machine: "
        "pick a hardware preset or type your own."
    )


TRAINING_CAPTIONS = (
    "Step time and exposed comm: the step's length and the part of it the compute stream spends waiting for "
    "communication (step time minus compute), every strategy at the same inputs; the chosen one is bold.",
    "Memory per rank: parameters and gradients at the chosen precision, optimizer state (Adam: 8 bytes an element) and "
    "fp32 master weights, each sharded over the group or whole, the peak of unsharded buffers (gathered parameters, "
    "unsharded gradients), and activations (Korthikanti et al. 2022 for a transformer preset; checkpointing keeps layer inputs only).",
)


def explore_training(scenario: Any) -> dict[str, Any]:
    """Everything the training section shows: :func:`run_training`'s answer, its notice and captions."""
    shown = run_training(scenario)
    summary, chosen = shown["summary"], scenario.sharding
    group = f", shard group {summary['shard_group']} of {summary['ranks']} ranks" if chosen == "hybrid_shard" else ""
    notice = f"Training step with {chosen}{group}: {summary['num_units']} units, {format_size(summary['grad_bytes'])} of gradients."
    if scenario.comm == "network" and scenario.hardware:
        notice += f" Every strategy on one network: {scenario.ranks // scenario.gpus_per_node} x {scenario.hardware}, its links and NICs ({scenario.algorithm})."
    notice += "".join(f" Note: {note}." for note in summary["notes"])
    notice += "".join(f" Not compared: {name} ({reason})." for name, reason in shown["skipped"].items())
    forward = next((u["forward_s"] for u in summary["units"]), 0.0)
    timeline = (
        f"Timeline of {chosen}: compute (forward and optimizer light, backward solid), and the collectives on the comm stream one "
        "at a time: all-gathers of unit parameters, reduce-scatters of unit gradients (all-reduces for ddp, no_shard and across "
        "hybrid groups). Same colour, same unit; hover for names and sizes."
        + (" Forward takes no time here, so the forward all-gathers run back to back, all exposed." if not forward else "")
    )
    return {**shown, "notice": notice, "captions": [*TRAINING_CAPTIONS, timeline]}


def training_scenario(ddp_data: dict[str, Any], form: dict[str, Any]) -> tuple[Any, dict[str, str]]:
    """(FSDPScenario, {}) for the form's sharding on top of a valid DDP scenario dict, or
    (None, {field: message}). ``shard_size`` is kept whenever it divides the ranks (the
    comparison then shows hybrid_shard too); it is required only for hybrid_shard."""
    from sim.training.fsdp import FSDPScenario

    sharding = str(form.get("sharding") or DEFAULTS["sharding"])
    text = str(form.get("shard_size") or "").strip()
    ranks = int(ddp_data["ranks"])
    size = int(text) if text.isdigit() and int(text) >= 1 and ranks % int(text) == 0 else None
    if sharding == "hybrid_shard" and size is None:
        return None, {"shard_size": f"shard_size: must be a whole number of ranks that divides ranks ({ranks}), got {text!r}"}
    # a preset's network (NIC rails) for every strategy; one synchronised step (no_sync is the DDP section's)
    data = {**ddp_data, "sharding": sharding, "shard_size": size, "accumulation_steps": 1}
    try:
        return FSDPScenario.from_dict(data), {}
    except CollsimError as error:
        return None, {error_box(error, "sharding"): str(error)}


def run_training(scenario: Any) -> dict[str, Any]:
    """The training section's data (sim.training.explain.compare_training)."""
    from sim.training.explain import compare_training

    return compare_training(scenario)


def overhead_curves(optimum: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
    from sim.training.explain import overhead_curves as curves

    return curves(optimum)


def measured_overheads(preset: str, store: Any = None) -> list[tuple[float, float]]:
    """(bucket bytes, overhead s) measured for this model in the results store, when any."""
    try:
        if store is None:
            from real.store import open_store

            store = open_store(None)
        rows = store.ddp_steps(model=preset)
    except Exception:  # noqa: BLE001 - no store, no sample data, no torch: no measured points
        return []
    points: dict[int, list[float]] = {}
    for row in rows:
        if row.get("bucket_bytes") and row.get("overhead_s") is not None and row.get("strategy") in (None, "bucketed"):
            points.setdefault(int(row["bucket_bytes"]), []).append(float(row["overhead_s"]))
    return [(size, sum(values) / len(values)) for size, values in sorted(points.items())]


def explanation(answer: dict[str, Any], scenario: Any) -> dict[str, Any]:
    """Words beside the overhead figure (sim.training.explain.explanation), with the store's
    measured points when it has any for this model."""
    from sim.training.explain import explanation as words

    return words(answer, scenario, measured=bool(scenario.preset and measured_overheads(scenario.preset)))
