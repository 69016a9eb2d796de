"""Plain functions behind the DDP page: form -> DDPScenario, runs, sweeps, uploads.

``sim.training.ddp`` is imported inside the functions, so the page can say what is missing (rather than
fail) on a checkout without it.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import math
from typing import Any

import yaml

from sim.errors import CollsimError
from sim.units import format_bandwidth, format_size, format_time, parse_bandwidth, parse_size, parse_time
from webapp import urlstate

DEFAULTS: dict[str, str] = {
    "hardware": "",  # a preset (sim/hardware): ranks in whole nodes, its network, o / w from NCCL's model; "" by hand
    "preset": "gpt2",
    "strategy": "bucketed",
    "sharding": "full_shard",
    "shard_size": "4",
    "comm_model": "ow",
    "ranks": "8",
    "backward": "120ms",
    "bucket": str(25 * 2**20),
    "o": "50us",
    "w": "10GB/s",
    "bandwidth": "25GB/s",
    "latency": "5us",
    "algorithm": "ring",
    "first_bucket": "on",
}
MIN_BUCKET_LOG2, MAX_BUCKET_LOG2 = 14, 32  # 16 KiB .. 4 GiB on the slider
MAX_UPLOAD_PARAMS = 20_000


def missing() -> list[str]:
    """Modules the page needs that this checkout lacks."""
    return [name for name in ("sim.training.ddp", "sim.training.params", "sim.training.overhead") if importlib.util.find_spec(name) is None]


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
    return urlstate.form_from_query(search, DEFAULTS)


def query_from_form(form: dict[str, Any]) -> str:
    return urlstate.query_from_form(form, DEFAULTS)


# ----------------------------------------------------------------------------- hardware presets

TYPICAL_BUCKET_BYTES = 25 * 2**20  # DDP's default bucket_cap_mb: where o / w meet NCCL's prediction
HARDWARE_FIELDS = ("ranks", "bandwidth", "latency", "o", "w")  # what picking a preset fills


def hardware_options() -> list[str]:
    from webapp.collective import hardware_options as options

    return options()


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
    return ranks // gpus


def scenario_fields_for(name: str, nodes: int) -> dict[str, Any]:
    from sim.hardware.presets import scenario_fields

    return scenario_fields(name, nodes)


def hardware_ow(name: str, nodes: int) -> dict[str, Any]:
    """o and w of one all-reduce on ``nodes`` nodes of a preset, and where they come from.

    DDP's o / w model charges every bucket ``o + bytes / w``, with w the algorithm bandwidth
    (per-rank bytes / time, DESIGN §4; a bus bandwidth would overstate it by 2(p-1)/p). On a GPU
    preset NCCL's own tuning model (sim.hardware.nccl_model) predicts each call: o is its time for
    an empty all-reduce (the per-call latency of its small-message pick) and w the slope from there
    to its time for a 25 MiB bucket (DDP's default), so the line meets NCCL's prediction at both
    ends of the usual bucket sizes. NCCL picks per size, so between them the line is an
    approximation. A preset without NCCL (gloo on CPUs) gets the ring all-reduce's closed form
    on its links, exact on its one-NIC-per-host switch.
    """
    from sim.collective.analytic import ow_for_ring
    from sim.hardware.presets import load_preset

    preset = load_preset(name)
    ranks = nodes * preset.gpus_per_node
    if preset.nccl is None:
        latency, bandwidth = preset.inter_latency_s or 0.0, preset.nic_bandwidth_Bps or preset.intra_bandwidth_Bps or 0.0
        o_s, w_Bps = ow_for_ring(ranks, latency, bandwidth)
        how = (
            f"ring all-reduce (gloo) on the preset's links: o = 2(p-1) x latency = 2 x {ranks - 1} x {format_time(latency)}, "
            f"w = p B / (2(p-1)) with B = {format_bandwidth(bandwidth)} (collsim's closed form, exact on this switch)"
        )
        return {"o_s": o_s, "w_Bps": w_Bps, "how": how}
    from sim.hardware.nccl_model import NCCL_VERSION, predict

    empty = predict(preset, nodes, "all_reduce", 0)
    bucket = predict(preset, nodes, "all_reduce", TYPICAL_BUCKET_BYTES)
    o_s = empty.time_s
    w_Bps = TYPICAL_BUCKET_BYTES / (bucket.time_s - o_s)
    how = (
        f"NCCL {NCCL_VERSION}'s tuning model for all-reduce on {nodes} node(s): o is its time for an empty call "
        f"({empty.nccl_algorithm}/{empty.nccl_protocol}), w the slope up to its {format_time(bucket.time_s)} for a "
        f"{format_size(TYPICAL_BUCKET_BYTES)} bucket ({bucket.nccl_algorithm}/{bucket.nccl_protocol}, algbw "
        f"{bucket.algbw_GBps:.4g} GB/s, busbw {bucket.busbw_GBps:.4g} GB/s), so o + {format_size(TYPICAL_BUCKET_BYTES)} / w "
        "is NCCL's own prediction"
    )
    return {"o_s": o_s, "w_Bps": w_Bps, "how": how}


def _rate_text(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:.4g}GB/s"


def _time_text(seconds: float) -> str:
    return f"{seconds * 1e6:.4g}us"


def hardware_form(name: str | None, ranks: str | None, pick: bool = True) -> dict[str, str] | None:
    """The form values a preset sets, or None for "no preset".

    ``pick`` (the preset was just chosen): ranks rounded down to whole nodes (at least one, at
    most the preset's limit), the NIC's bandwidth and latency for the network model, o and w for
    the o / w model. Otherwise (ranks changed under a chosen preset): o and w for the new node
    count, or nothing while the ranks are not whole nodes (the ranks field says why)."""
    if not name:
        return None
    from sim.hardware.presets import load_preset

    preset = load_preset(name)
    gpus = preset.gpus_per_node
    text = str(ranks or "").strip()
    if pick:
        nodes = int(text) // gpus if text.isdigit() else 1
        nodes = max(nodes, 1, -(-2 // gpus))  # the page takes 2 ranks or more
        nodes = min(nodes, preset.max_nodes or nodes, 1024 // gpus)
        fields = scenario_fields_for(name, nodes)
        values = {
            "ranks": str(fields["ranks"]),
            "bandwidth": _rate_text(fields["bandwidth_Bps"]),
            "latency": _time_text(fields["latency_s"]),
        }
    else:
        try:
            nodes = hardware_nodes(name, text) if text.isdigit() else 0
        except CollsimError:
            nodes = 0
        if not nodes or nodes * gpus < 2:
            return {}
        values = {}
    ow = hardware_ow(name, nodes)
    return {**values, "o": _time_text(ow["o_s"]), "w": _rate_text(ow["w_Bps"])}


_SOURCED = ("gpus_per_node", "intra_bandwidth", "intra_latency", "nics_per_node", "nic_bandwidth", "inter_latency")


def hardware_caption(form: dict[str, Any]) -> dict[str, Any] | None:
    """Words under the picker: the preset, the network or o / w it sets, and the sources of its
    figures; None without a preset."""
    from sim.hardware.presets import load_preset

    name = str(form.get("hardware") or "").strip()
    if not name:
        return None
    preset = load_preset(name)
    ranks = str(form.get("ranks") or "").strip()
    try:
        nodes = hardware_nodes(name, ranks) if ranks.isdigit() else 0
    except CollsimError:
        nodes = 0
    head = f"{name}: {preset.description}."
    if not nodes:
        return {"lines": [head, f"Ranks must be whole nodes of {preset.gpus_per_node} GPUs."], "sources": _sources(preset, [])}
    lines = [f"{head} {nodes} node(s) x {preset.gpus_per_node} GPUs = {nodes * preset.gpus_per_node} ranks."]
    if form.get("comm_model") == "network":
        lines.append(_network_line(preset, nodes))
        return {"lines": lines, "sources": _sources(preset, [])}
    ow = hardware_ow(name, nodes)
    lines.append(f"o = {format_time(ow['o_s'])}, w = {format_bandwidth(ow['w_Bps'])}: {ow['how']}.")
    if _edited(form, ow):
        lines.append("The o and w boxes hold other values now: the figures run with the boxes.")
    return {"lines": lines, "sources": _sources(preset, ["nccl.graphs"] if preset.nccl else [])}


def _network_line(preset: Any, nodes: int) -> str:
    fields = scenario_fields_for(preset.name, nodes)
    inside = (
        f"inside a node {format_bandwidth(fields['intra_bandwidth_Bps'])} and {format_time(fields['intra_latency_s'])} "
        f"a message through {preset.intra_fabric}"
        if preset.gpus_per_node > 1
        else "one rank a node"
    )
    between = (
        f"between nodes {preset.nics_per_node} NIC(s) a node of {format_bandwidth(fields['bandwidth_Bps'])}, "
        f"{format_time(fields['latency_s'])} (the link bandwidth and latency boxes; GPU g uses NIC g x NICs / GPUs)"
        if nodes > 1
        else "one node: no NIC in the way"
    )
    return f"Network: the preset's two_level, as collsim sim collective --hardware {preset.name} --nodes {nodes}: {inside}; {between}."


def _edited(form: dict[str, Any], ow: dict[str, Any]) -> bool:
    try:
        o_s, w_Bps = parse_time(str(form.get("o")), "o"), parse_bandwidth(str(form.get("w")), "w")
    except CollsimError:
        return True
    return not (math.isclose(o_s, ow["o_s"], rel_tol=1e-3, abs_tol=1e-9) and math.isclose(w_Bps, ow["w_Bps"], rel_tol=1e-3))


def _sources(preset: Any, extra: list[str]) -> list[tuple[str, str]]:
    return [(key, preset.sources[key]) for key in (*_SOURCED, *extra) if preset.sources.get(key)]


def bucket_bytes_from_slider(log2_value: float | None) -> int:
    return int(round(2 ** float(log2_value if log2_value is not None else math.log2(25 * 2**20))))


def slider_from_bucket(text: str) -> float:
    try:
        nbytes = parse_size(text, "bucket")
    except CollsimError:
        nbytes = 25 * 2**20
    return min(MAX_BUCKET_LOG2, max(MIN_BUCKET_LOG2, math.log2(max(nbytes, 1))))


def _backward(text: str) -> dict[str, Any]:
    """A total backward time ("120ms") or a gradient production rate ("4GB/s")."""
    text = (text or "").strip()
    if text.lower().endswith("/s") or text.lower().endswith("bps"):
        rate = parse_bandwidth(text, "backward")
        if rate <= 0:
            raise CollsimError(f"backward: a rate must be positive, got {text!r}")
        return {"backward_rate": text}
    seconds = parse_time(text, "backward")
    if seconds < 0:
        raise CollsimError(f"backward: must be a time >= 0 such as 120ms, or a rate such as 4GB/s, got {text!r}")
    return {"backward_time": text}


def _field_checks(form: dict[str, str]) -> dict[str, str]:
    errors: dict[str, str] = {}
    checks = {
        "ranks": lambda t: (
            None if t.isdigit() and 2 <= int(t) <= 1024 else _raise(f"ranks: expected a whole number from 2 to 1024, got {t!r}")
        ),
        "backward": _backward,
        "o": lambda t: None if parse_time(t, "o") >= 0 else _raise(f"o: must be >= 0, got {t!r}"),
        "w": lambda t: None if parse_bandwidth(t, "w") > 0 else _raise(f"w: must be a positive rate such as 10GB/s, got {t!r}"),
        "bandwidth": lambda t: (
            None if parse_bandwidth(t, "bandwidth") > 0 else _raise(f"bandwidth: must be a positive rate such as 25GB/s, got {t!r}")
        ),
        "latency": lambda t: None if parse_time(t, "latency") >= 0 else _raise(f"latency: must be >= 0, got {t!r}"),
        "sharding": lambda t: None if t in shardings() else _raise(f"sharding: unknown {t!r}; allowed: {', '.join(shardings())}"),
        "shard_size": lambda t: (
            None if t.isdigit() and int(t) >= 1 else _raise(f"shard_size: expected a whole number of ranks per shard group, got {t!r}")
        ),
    }
    relevant = ("ranks", "backward", "sharding") + (("shard_size",) if form["sharding"] == "hybrid_shard" else ())
    relevant += ("o", "w") if form["comm_model"] == "ow" else ("bandwidth", "latency")
    for name in relevant:
        try:
            checks[name](form[name].strip())
        except CollsimError as error:
            errors[name] = str(error)
    return errors


def _raise(message: str) -> None:
    raise CollsimError(message)


_ERROR_FIELDS = (
    ("hardware", "hardware"),
    ("gpus_per_node", "ranks"),
    ("ranks", "ranks"),
    ("algorithm", "algorithm"),
    ("preset", "preset"),
    ("param", "upload"),
    ("strategy", "strategy"),
    ("bucket", "bucket"),
    ("backward", "backward"),
    ("w:", "w"),
    ("o:", "o"),
    ("bandwidth", "bandwidth"),
    ("latency", "latency"),
    ("comm", "comm_model"),
)


def parse_form(form: dict[str, Any], uploaded: list[dict[str, Any]] | None = None) -> tuple[Any, dict[str, str]]:
    """(DDPScenario, {}) or (None, {field: message})."""
    from sim.training.ddp import DDPScenario

    form = {key: str(form.get(key) if form.get(key) is not None else DEFAULTS[key]) for key in DEFAULTS}
    errors = _field_checks(form)
    hardware = form["hardware"].strip()
    if hardware and "ranks" not in errors:
        try:
            hardware_nodes(hardware, form["ranks"])
        except CollsimError as error:
            errors["hardware" if str(error).startswith("hardware") else "ranks"] = str(error)
    if errors:
        return None, errors
    data: dict[str, Any] = {
        "strategy": form["strategy"],
        "comm": form["comm_model"],
        "ranks": form["ranks"],
        "bucket_size": form["bucket"],
        **_backward(form["backward"]),
    }
    data["first_bucket"] = None if form["first_bucket"] != "on" else 2**20
    if uploaded:
        data["params"] = uploaded
    else:
        data["preset"] = form["preset"]
    if form["comm_model"] == "ow":
        data.update(o=form["o"], w=form["w"])
    else:
        data.update(bandwidth=form["bandwidth"], latency=form["latency"], algorithm=form["algorithm"])
        if hardware:  # the boxes are the NIC's (between nodes); inside a node the preset's fabric
            fields = scenario_fields_for(hardware, hardware_nodes(hardware, form["ranks"]))
            data.update({key: fields[key] for key in ("hardware", "topology", "gpus_per_node", "intra_bandwidth_Bps", "intra_latency_s")})
    try:
        return DDPScenario.from_dict(data), {}
    except CollsimError as error:
        message = str(error)
        name = next((field for prefix, field in _ERROR_FIELDS if message.startswith(prefix)), "strategy")
        if "power-of-two" in message:
            name = "ranks"
        return None, {name: message}


def parse_upload(contents: str | None, filename: str | None) -> tuple[list[dict[str, Any]] | None, str]:
    """(params as dicts, "") from an uploaded JSON/YAML parameter list, or (None, message)."""
    from sim.training.params import params_from_list

    if not contents:
        return None, ""
    name = filename or "upload"
    try:
        _, encoded = contents.split(",", 1)
        text = base64.b64decode(encoded).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None, f"{name}: not a text file; expected JSON or YAML with a 'params' list"
    try:
        data = json.loads(text) if name.lower().endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        return None, f"{name}: malformed {'JSON' if name.lower().endswith('.json') else 'YAML'}: {str(error).splitlines()[0]}"
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


MAX_NETWORK_CALL_COST = 16_000  # message-equivalents per simulated all-reduce (64-rank ring fits)


def check_network_cost(scenario: Any) -> None:
    """Refuse network-model steps whose all-reduces are too big to sweep in the browser."""
    from webapp.collective import estimate_cost

    if scenario.comm != "network":
        return
    cost = estimate_cost(scenario.collective(4 * 2**20, 4))
    if cost > MAX_NETWORK_CALL_COST:
        raise CollsimError(
            f"ranks: simulating every bucket's all-reduce on {scenario.ranks} ranks ({cost:,} message-equivalents each) "
            f"is too slow for the page; use the o / w comm model, or collsim sim ddp on the command line"
        )


def run(scenario: Any) -> dict[str, Any]:
    """The step at the chosen bucket size, the bucket-size sweep with its optimum and fits, and
    every strategy at the same settings."""
    from sim.training.ddp import STRATEGIES, optimize, run_ddp

    check_network_cost(scenario)
    result = run_ddp(scenario)
    best = optimize(scenario.replace(strategy="bucketed"), refine_rounds=1, refine_points=9)
    strategies = {}
    for strategy in STRATEGIES:
        try:
            strategies[strategy] = run_ddp(scenario.replace(strategy=strategy)).summary()
        except CollsimError:
            continue
    return {"result": result, "summary": result.summary(), "optimum": best, "strategies": strategies}


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
    data = {**ddp_data, "sharding": sharding, "shard_size": size}  # a preset's network (NIC rails) for every strategy
    try:
        return FSDPScenario.from_dict(data), {}
    except CollsimError as error:
        message = str(error)
        return None, {"shard_size" if message.startswith(("shard_size", "hybrid")) else "sharding": message}


COMPARED = ("ddp", "zero1", "shard_grad_op", "full_shard", "no_shard", "hybrid_shard")


def run_training(scenario: Any) -> dict[str, Any]:
    """The chosen strategy's step and every strategy side by side (hybrid_shard only with a
    shard group size)."""
    from sim.training.fsdp import compare, run_fsdp

    check_network_cost(scenario)
    names = [name for name in COMPARED if name != "hybrid_shard" or scenario.shard_size]
    result = run_fsdp(scenario)
    skipped: dict[str, str] = {}
    try:
        rows = compare(scenario, names)
    except CollsimError:  # one strategy the settings cannot run does not take the others with it
        rows = []
        for name in names:
            try:
                rows += compare(scenario, [name])
            except CollsimError as error:
                skipped[name] = str(error)
    return {"result": result, "summary": result.summary(), "compare": rows, "skipped": skipped}


def overhead_curves(optimum: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
    """Simulated, closed-form and fitted overhead over bucket size, from an ``optimize`` answer."""
    from sim.training import overhead as formula

    rows = optimum["sweep"]
    curves = {"simulated": [(row["bucket_cap_bytes"], row["overhead_s"]) for row in rows]}
    closed = [(row["bucket_cap_bytes"], row["formula_overhead_s"]) for row in rows if row.get("formula_overhead_s") is not None]
    if closed:
        curves["closed form"] = closed
    fit = optimum.get("fit")
    if fit and fit.get("w_Bps"):
        s = optimum["formula_inputs"]["s_bytes"]
        curves["fitted"] = [
            (row["bucket_cap_bytes"], formula.overhead_simple(s, row["num_buckets"], fit["o_s"], fit["w_Bps"])) for row in rows
        ]
    return curves


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


CURVE_CAPTIONS = {
    "simulated": "simulated: this step with the model's own parameter list and backward profile, bucket by bucket "
    "(the ground truth of the model)",
    "closed form": "closed form: overhead(n_b) = max(d, n_b (d - c) + c), equal buckets ready at a uniform rate "
    "(c = T / n_b of backward per bucket, d = o + s / (n_b w) of communication)",
    "fitted": "fitted: that formula with o and w fitted to the simulated curve (what a measurement would give)",
    "measured": "measured: overheads of this model in the results store",
}


def explanation(answer: dict[str, Any], scenario: Any) -> dict[str, Any]:
    """Words beside the overhead figure: a caption per curve, what b* assumes, and why the
    simulated best bucket differs from it (the bucket ready last and what it holds)."""
    from sim.training.ddp import resolve_params

    optimum, summary = answer["optimum"], answer["summary"]
    curves = list(overhead_curves(optimum)) + (["measured"] if scenario.preset and measured_overheads(scenario.preset) else [])
    captions = [CURVE_CAPTIONS[name] for name in curves if name in CURVE_CAPTIONS]
    formula = optimum.get("best_bucket_bytes_formula")
    assumes = ""
    if scenario.comm == "ow" and formula:
        assumes = (
            f"b* = sqrt(s w o) = {format_size(formula)} assumes all s bytes split into equal buckets whose gradients are ready "
            f"at a uniform rate during backward, each bucket's compute as long as its transfer (c = s / (n_b w))."
        )
    return {"captions": captions, "assumes": assumes, "why": _why_best_differs(summary, optimum, resolve_params(scenario))}


def _why_best_differs(summary: dict[str, Any], optimum: dict[str, Any], params: list) -> str:
    buckets = summary.get("buckets") or []
    if not buckets:
        return ""
    last = max(buckets, key=lambda bucket: (bucket["ready_s"], bucket["index"]))
    sizes = {param.name: param.numel * param.element_bytes for param in params}
    biggest = max(last["params"], key=lambda name: sizes.get(name, 0))
    share = sizes.get(biggest, 0) / max(summary["grad_bytes"], 1)
    best = format_size(optimum["best_bucket_bytes_sim"])
    tail = last["end_s"] - max(last["start_s"], summary["backward_end_s"])
    text = (
        f"The simulated best ({best}) differs because the buckets are neither equal nor ready at a uniform rate: "
        f"the last one ({format_size(last['bytes'])}, {len(last['params'])} parameters) is ready only when backward ends"
    )
    if params and last["params"] and biggest == params[0].name and share > 0.05:
        text += (
            f", since the parameter registered first, {biggest} ({format_size(sizes[biggest])}, {share:.0%} of all gradients), "
            "gets its gradient last (in GPT-2 the token embedding, tied to the output layer)"
        )
    return text + f"; its all-reduce ({format_time(tail)} after backward) overlaps no compute at any bucket size."
