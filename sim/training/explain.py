"""What the DDP page shows, as plain data and sentences: one call per figure or caption.

The page (webapp/pages/ddp/page.py) reads its form, calls one of these and draws:

- :func:`explore_step`: the step at the chosen bucket cap, the bucket-size sweep with its optimum
  and fits, every DDP strategy at the same settings;
- :func:`compare_training`: the chosen FSDP / ZeRO strategy's step and every strategy beside it;
- :func:`hardware_ow`, :func:`hardware_words`: o and w on a hardware preset (fitted to the network
  comm model's own times, :mod:`sim.training.comm`) and the words under the preset picker;
- :func:`overhead_curves`, :func:`explanation`: the overhead figure's curves and why the
  simulated best bucket differs from the formula's.
"""

from __future__ import annotations

import math
from typing import Any

from sim.errors import CollsimError
from sim.training import comm
from sim.units import format_bandwidth, format_size, format_time

__all__ = [
    "MAX_NETWORK_CALL_COST",
    "CURVE_CAPTIONS",
    "check_network_cost",
    "explore_step",
    "compare_training",
    "hardware_ow",
    "hardware_words",
    "overhead_curves",
    "explanation",
    "near_best_caps",
    "STRATEGY_WORDS",
    "compute_words",
    "ow_used_words",
    "accumulation_words",
]

MAX_NETWORK_CALL_COST = (
    24_000  # message-equivalents per simulated all-reduce (64-rank ring; NCCL's pick on 2 DGX H100 nodes: 23,040, 2.4 s a sweep)
)
COMPARED = ("ddp", "zero1", "shard_grad_op", "full_shard", "no_shard", "hybrid_shard")
_SOURCED = ("gpus_per_node", "intra_bandwidth", "intra_latency", "nics_per_node", "nic_bandwidth", "inter_latency")


def check_network_cost(scenario: Any) -> None:
    """Refuse network-model steps whose all-reduces are too big to sweep interactively."""
    from sim.collective.explore import work

    if scenario.comm != "network":
        return
    cost = work(scenario.collective(4 * 2**20, 4)).cost
    if cost > MAX_NETWORK_CALL_COST:
        raise CollsimError(
            f"ranks: simulating every bucket's all-reduce on {scenario.ranks} ranks ({cost:,} message-equivalents each) "
            f"is too slow for the page; use the o / w comm model, or collsim sim ddp on the command line"
        )


def explore_step(scenario: Any) -> dict[str, Any]:
    """The step at the chosen bucket size, the bucket-size sweep with its optimum and fits, and
    every strategy at the same settings."""
    from sim.training.ddp import STRATEGIES, run_ddp
    from sim.training.ddp_sweep import optimize

    check_network_cost(scenario)
    result = run_ddp(scenario)
    best = optimize(scenario.replace(strategy="bucketed"), refine_rounds=1, refine_points=9)
    strategies = {}
    for strategy in STRATEGIES:
        try:
            strategies[strategy] = run_ddp(scenario.replace(strategy=strategy)).summary()
        except CollsimError:
            continue
    from sim.training.step_interval import ddp_interval

    summary = {**result.summary(), **ddp_interval(result)}  # the step's 80 % interval on a preset (issue 33)
    return {"result": result, "summary": summary, "optimum": best, "strategies": strategies}


def compare_training(scenario: Any) -> dict[str, Any]:
    """The chosen strategy's step and every strategy side by side (hybrid_shard only with a
    shard group size); a strategy the settings cannot run is skipped with its reason."""
    from sim.training.fsdp import compare, run_fsdp, step_interval

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
    summary = {**result.summary(), **step_interval(scenario, result.step_time_s)}  # 80 % on a preset (issue 33)
    return {"result": result, "summary": summary, "compare": rows, "skipped": skipped}


def near_best_caps(rows: list[dict[str, Any]], tolerance: float = 0.01) -> dict[str, Any]:
    """The bucket caps of a sweep whose overhead is within ``tolerance`` (1 %) of the best one:
    the recommendation as a range, since the overhead curve is flat around its minimum.
    Returns {"low", "high"} (bytes), "best" (the sweep's best row) and "count" (caps within)."""
    if not rows:
        raise CollsimError("near_best_caps: empty sweep")
    best = min(rows, key=lambda row: (row["overhead_s"], row.get("num_buckets", 0), -row["bucket_cap_bytes"]))  # ties: as optimize
    limit = best["overhead_s"] * (1 + tolerance) + 1e-12
    near = [row["bucket_cap_bytes"] for row in rows if row["overhead_s"] <= limit]
    return {"low": min(near), "high": max(near), "best": best, "count": len(near), "tolerance": tolerance}


STRATEGY_WORDS = {
    "naive": "naive: after backward, one blocking all-reduce per parameter tensor, in registration order (no overlap, many calls)",
    "flat": "flat: after backward, one all-reduce of every gradient together (one call, no overlap)",
    "overlap": "overlap: one asynchronous all-reduce per tensor as soon as its gradient is ready (full overlap, one call per tensor)",
    "bucketed": "bucketed (PyTorch DDP): gradients grouped into buckets of up to the bucket cap in reverse registration order; "
    "a bucket's all-reduce starts once its gradients are ready (overlap, few calls)",
}


def _mfu_words(scenario: Any) -> str:
    """Where FLOP-derived or measured compute times come from (MFU, peak, measurement)."""
    from sim.hardware.presets import load_preset
    from sim.training import compute
    from sim.training.ddp import compute_rate, mfu_of

    found = compute.measured(scenario.preset, scenario.precision, scenario.peak_gpu) if scenario.mfu == compute.MEASURED else None
    if found is not None and found.backward_mfu is None:
        return f" (measured at {found.tokens} images per GPU: {found.source}; tokens and the GPU's peak are not used)"
    gpu = load_preset(scenario.peak_gpu)
    precision = scenario.precision or "fp32"
    forward_mfu, backward_mfu = mfu_of(scenario, "forward"), mfu_of(scenario, "backward")
    mfu = f"{backward_mfu:.0%} MFU" if forward_mfu == backward_mfu else f"{forward_mfu:.1%} (forward) / {backward_mfu:.1%} (backward) MFU"
    text = (
        f" (from FLOPs: forward 2 x tokens x params, backward 4 x; {scenario.tokens:,} tokens at {mfu} of "
        f"{gpu.gpu_model}'s {gpu.gpu_peak_tflops[precision]:g} TFLOP/s {precision} peak = {compute_rate(scenario) / 1e12:.4g} TFLOP/s backward"
        f"{'; a typed forward time wins' if scenario.forward_time_s is not None else ''})"
    )
    if found is not None:
        text += f"; the MFU was measured: {found.source}, {found.tokens:,} tokens"
        if found.gpu not in gpu.gpu_model:
            text += f" (assumed the same on the {gpu.gpu_model})"
    return text


def compute_words(summary: dict[str, Any], scenario: Any) -> str:
    """Where the step's compute times come from: typed, or from FLOPs at the stated MFU of the
    GPU's peak."""
    parts = [f"forward {format_time(summary['forward_time_s'])}", f"backward {format_time(summary['backward_time_s'])}",
             f"optimizer {format_time(summary['optimizer_time_s'])}"]  # fmt: skip
    text = "Compute: " + ", ".join(parts)
    if scenario.mfu is not None:
        text += _mfu_words(scenario)
    if scenario.activation_checkpointing:
        text += "; activation checkpointing: backward includes recomputing the forward"
    precision = scenario.precision or "as the parameter list gives"
    return text + f". Precision: {precision} ({format_size(summary['grad_bytes'])} of gradients)."


def ow_used_words(summary: dict[str, Any], scenario: Any) -> str:
    """The o and w the results used, for beside the o and w boxes: the boxes' own values, or on
    a preset with the boxes untouched the line refitted at this step's bucket sizes (so a box
    showing one pair while b* and the times use another is said, issue 36). "" under network."""
    if scenario.comm != "ow":
        return ""
    used = f"The results use o = {format_time(summary['o_s'])}, w = {format_bandwidth(summary['w_Bps'])}"
    fit = (summary.get("hardware_comm") or {}).get("ow_fit")
    if fit:
        where = f"at this step's {len(fit['sizes'])} bucket size(s)"
        return used + f" (not the boxes: refitted to the network model's all-reduce times {where}); b* and every time use them."
    return used + " (the boxes)."


def accumulation_words(summary: dict[str, Any]) -> str:
    """What gradient accumulation (no_sync) does to the step, one sentence; "" without it."""
    steps = summary["accumulation_steps"]
    if steps <= 1:
        return ""
    return (
        f" Gradient accumulation: {steps} micro-steps, the first {steps - 1} under no_sync (no all-reduce), so the step's "
        f"{format_time(summary['overhead_s'])} overhead is paid once per {steps} micro-batches ({format_time(summary['overhead_s'] / steps)} each)."
    )


# --- hardware presets ---------------------------------------------------------------------


def hardware_ow(name: str, nodes: int) -> dict[str, Any]:
    """o and w of one all-reduce on ``nodes`` nodes of a preset, and where they come from: the
    line fitted to the network comm model's all-reduce times (NCCL's pick in the DES; ring on a
    gloo preset) over DDP's bucket sizes, 1 MiB to 1 GiB. A run with these boxes untouched fits
    them again at its own buckets (``sim ddp --hardware ... --comm ow``)."""
    fit = comm.hardware_ow(name, nodes, (("element_bytes", 4),))
    return {"o_s": fit.o_s, "w_Bps": fit.w_Bps, "how": fit.how}


def hardware_words(name: str, nodes: int, comm_model: str, o_s: float | None, w_Bps: float | None) -> dict[str, Any]:
    """Words under the preset picker: the preset, its nodes, the network or o / w it sets, and
    the sources of its figures. ``o_s``/``w_Bps``: the boxes' values (None: unreadable)."""
    from sim.hardware.presets import load_preset

    preset = load_preset(name)
    head = f"{name}: {preset.description}."
    if not nodes:
        return {"lines": [head, f"Ranks must be whole nodes of {preset.gpus_per_node} GPUs."], "sources": _sources(preset, [])}
    ranks = f"{nodes} node(s) x {preset.gpus_per_node} GPUs = {nodes * preset.gpus_per_node} ranks"
    lines = [f"{head} {ranks} (the Nodes field sets the ranks)."]
    if comm_model == "network":
        lines.append(network_line(preset, nodes))
        return {"lines": lines, "sources": _sources(preset, [])}
    ow = hardware_ow(name, nodes)
    lines.append(f"o = {format_time(ow['o_s'])}, w = {format_bandwidth(ow['w_Bps'])}: {ow['how']}.")
    if edited(o_s, w_Bps, ow):
        lines.append("The o and w boxes hold other values now: the figures run with the boxes.")
    else:
        lines.append("The run fits o and w again at its own bucket sizes, so ow and network agree (the notice gives them).")
    return {"lines": lines, "sources": _sources(preset, ["nccl.graphs"] if preset.nccl else [])}


def edited(o_s: float | None, w_Bps: float | None, ow: dict[str, Any]) -> bool:
    """Whether the boxes differ from the preset's o and w (to 0.1 %)."""
    if o_s is None or w_Bps is None:
        return True
    return not (math.isclose(o_s, ow["o_s"], rel_tol=1e-3, abs_tol=1e-9) and math.isclose(w_Bps, ow["w_Bps"], rel_tol=1e-3))


def network_line(preset: Any, nodes: int) -> str:
    from sim.hardware.presets import scenario_fields

    fields = scenario_fields(preset.name, nodes)
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
    pick = " Algorithm nccl: each bucket runs what NCCL would pick (Ring or Tree on its channels, as collsim sim collective --hardware)."
    return f"Network: the preset's two_level, as collsim sim collective --hardware {preset.name} --nodes {nodes}: {inside}; {between}." + (
        pick if preset.nccl is not None else ""
    )


def hardware_notice(summary: dict[str, Any]) -> str:
    """One sentence on what the buckets ran on the preset (the DDP page's notice)."""
    hardware = summary.get("hardware_comm")
    if not hardware:
        return ""
    if hardware["ow_fit"]:
        return f" o and w: {hardware['ow_fit']['how']}."
    picks = hardware["picks"]
    ran = sorted(
        {
            f"{p['nccl_pick']} as {p['algorithm']} on {p['channels']} channels"
            if p["algorithm"]
            else f"{p['nccl_pick']} (NCCL's model: {p['why']})"
            for p in picks
        }
    )
    return f" Buckets run NCCL's pick: {'; '.join(ran)}." if ran else ""


def _sources(preset: Any, extra: list[str]) -> list[tuple[str, str]]:
    return [(key, preset.sources[key]) for key in (*_SOURCED, *extra) if preset.sources.get(key)]


# --- the overhead figure ------------------------------------------------------------------

CURVE_CAPTIONS = {
    "simulated": "simulated: this step with the model's own parameter list and backward profile, bucket by bucket "
    "(the ground truth of the model)",
    "closed form": "closed form: overhead(n_b) = max(d, n_b (d - c) + c), equal buckets ready at a uniform rate "
    "(c = T / n_b of backward per bucket, d = o + s / (n_b w) of communication)",
    "fitted": "fitted: that formula with o and w fitted to the simulated curve (what a measurement would give)",
    "measured": "measured: overheads of this model in the results store",
}


def overhead_curves(optimum: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
    """Simulated, closed-form and fitted overhead over bucket size, from an ``optimize`` answer."""
    from sim.training import overhead as formula

    rows = optimum["sweep"]
    curves = {"simulated": [(row["bucket_cap_bytes"], row["overhead_s"]) for row in rows]}
    closed = [(row["bucket_cap_bytes"], row["formula_overhead_s"]) for row in rows if row.get("formula_overhead_s") is not None]
    if closed:
        curves["closed form"] = closed
    fit = optimum.get("fit")
    if fit and fit.get("w_Bps") and math.isfinite(fit["w_Bps"]):  # a flat sweep fits w = inf: no line to draw
        s = optimum["formula_inputs"]["s_bytes"]
        curves["fitted"] = [
            (row["bucket_cap_bytes"], formula.overhead_simple(s, row["num_buckets"], fit["o_s"], fit["w_Bps"])) for row in rows
        ]
    return curves


def explanation(answer: dict[str, Any], scenario: Any, measured: bool = False) -> dict[str, Any]:
    """Words beside the overhead figure: a caption per curve (``measured``: the store has points
    for this model), what b* assumes, and why the simulated best bucket differs from it (the
    bucket ready last and what it holds)."""
    from sim.training.ddp import resolve_params

    optimum, summary = answer["optimum"], answer["summary"]
    curves = list(overhead_curves(optimum)) + (["measured"] if measured else [])
    captions = [CURVE_CAPTIONS[name] for name in curves if name in CURVE_CAPTIONS]
    best_formula = optimum.get("best_bucket_bytes_formula")
    assumes = ""
    if scenario.comm == "ow" and best_formula:
        assumes = (
            f"b* = sqrt(s w o) = {format_size(best_formula)} assumes all s bytes split into equal buckets whose gradients are ready "
            f"at a uniform rate during backward, each bucket's compute as long as its transfer (c = s / (n_b w))."
        )
    return {"captions": captions, "assumes": assumes, "why": why_best_differs(summary, optimum, resolve_params(scenario))}


def why_best_differs(summary: dict[str, Any], optimum: dict[str, Any], params: list) -> str:
    """Why the simulated best bucket is not b*: the last bucket is ready only when backward ends
    (in GPT-2 it holds the token embedding, registered first, tied to the output layer)."""
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
