"""Measured FSDP / ZeRO steps (``collsim real fsdp --save FILE``) against ``sim fsdp``, per
strategy: the spec keys (``kind: fsdp``) are in :mod:`real.compare`'s docstring, which
dispatches here; ``fsdp_document`` writes the measured rows file that ``compare_fsdp`` reads."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from real.compare import ddp_measured, judge, percent, summarize
from sim.errors import CollsimError
from sim.scenario import parse_bool

FSDP_MEASURED_KIND = "collsim-fsdp-measured"
FSDP_SPEC_KEYS = ("kind", "measured", "model", "ranks", "strategies", "o", "w", "backward_prefetch", "limit_all_gathers", "overlap")
FSDP_ORDER = ("ddp", "zero1", "shard_grad_op", "full_shard", "no_shard", "hybrid_shard")


def fsdp_document(launches: list[list[dict[str, Any]]], model: str, world_size: int, params: list[dict[str, Any]], meta: dict[str, Any],
                  shard_size: int | None = None) -> dict[str, Any]:  # fmt: skip
    """The measured-rows file that ``collsim real fsdp --save`` and ``collsim validate`` write and
    an FSDP comparison spec reads: the rows of ``real.fsdp.run_bench`` per launch (each tagged with
    its launch), the model's parameter list (so the comparison needs no torch) and run facts."""
    rows = [{**row, "launch": index} for index, launch_rows in enumerate(launches) for row in launch_rows]
    return {"kind": FSDP_MEASURED_KIND, "version": 1, "model": model, "world_size": world_size, "shard_size": shard_size,
            "units": "blocks" if model != "mlp" else "fc1,fc2,fc3", "launches": len(launches), "meta": meta, "params": params,
            "rows": rows}  # fmt: skip


def load_fsdp_document(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise CollsimError(f"measured: {str(path)!r} not found; write one with: collsim real fsdp --save FILE")
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise CollsimError(f"measured: {str(path)!r} is not JSON ({error}); write one with: collsim real fsdp --save FILE") from None
    if not isinstance(document, dict) or document.get("kind") != FSDP_MEASURED_KIND:
        raise CollsimError(
            f"measured: {str(path)!r} is not a file of measured FSDP steps (kind {FSDP_MEASURED_KIND!r}); write one with collsim real fsdp --save FILE"
        )
    return document


def fsdp_comm(document: dict[str, Any]) -> tuple[float, float, str]:
    """(o, w) fitted to the all-reduces measured in the same launches (median over launches per
    size), t = o + n/w; a noisy fit (w <= 0 or o < 0) falls back to the mean rate with o = 0, as
    ``collsim real fsdp`` does."""
    import math

    from sim.training.overhead import fit_ow

    per_size: dict[int, list[float]] = defaultdict(list)
    for row in document["rows"]:
        if row.get("kind") == "allreduce":
            for size, seconds in zip(row["sizes"], row["times_s"]):
                per_size[int(size)].append(float(seconds))
    if len(per_size) < 2:
        raise CollsimError("measured FSDP file has no all-reduce timings to fit o and w; give o and w in the spec")
    sizes = sorted(per_size)
    times = [statistics.median(per_size[size]) for size in sizes]
    o_s, w_Bps = fit_ow(sizes, times)
    if not (0 < w_Bps < math.inf and o_s >= 0):
        o_s, w_Bps = 0.0, sum(sizes) / sum(times)
        return (
            o_s,
            w_Bps,
            f"noisy o + n/w fit: o = 0, w = mean rate {w_Bps / 1e9:.3g} GB/s of the all-reduces measured in the same launches",
        )
    return o_s, w_Bps, f"o = {o_s * 1e6:.0f} us, w = {w_Bps / 1e9:.3g} GB/s fitted to the all-reduces measured in the same launches"


def fsdp_points(document: dict[str, Any], strategies: list[str] | None = None, o_s: float | None = None, w_Bps: float | None = None,
                options: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:  # fmt: skip
    """Per strategy: the measured step (median per launch, median over launches; spread: range
    over launches, else p10-p90 of rounds) against ``sim fsdp`` for that strategy, replaying the
    no-communication step's forward, backward and optimizer times (median over every baseline
    round) with (o, w) from the all-reduces of the same launches. The simulator never sees the
    strategies' step times: every prediction is out of sample. Returns (points, model)."""
    from sim.training.fsdp import STRATEGIES, FSDPScenario, run_fsdp
    from sim.training.params import param_from_dict

    steps = [{**row, "run_id": f"launch{row.get('launch', 0)}"} for row in document["rows"] if row.get("kind") == "step"]
    baseline = [row for row in steps if row["strategy"] == "none"]
    if not baseline:
        raise CollsimError("measured FSDP file has no no-communication (baseline) rounds to replay")
    measured = sorted(
        {row["strategy"] for row in steps if row["strategy"] != "none"},
        key=lambda name: FSDP_ORDER.index(name) if name in FSDP_ORDER else 99,
    )
    wanted = list(strategies or measured)
    unknown = [name for name in wanted if name not in STRATEGIES]
    if unknown:
        raise CollsimError(f"strategies: unknown {', '.join(unknown)}; allowed: {', '.join(STRATEGIES)}")
    missing = [name for name in wanted if name not in measured]
    if missing:
        raise CollsimError(f"strategies: no measured steps for {', '.join(missing)}; measured: {', '.join(measured)}")
    if o_s is None or w_Bps is None:
        fitted_o, fitted_w, source = fsdp_comm(document)
        o_s, w_Bps = (fitted_o if o_s is None else o_s), (fitted_w if w_Bps is None else w_Bps)
        if any(value is not None for value in (options or {}).get("_given", ())):
            source += " (o or w overridden by the spec)"
    else:
        source = "o and w from the spec"
    phases = {key: statistics.median(row[key] for row in baseline) for key in ("forward_s", "backward_s", "optimizer_s")}
    params = tuple(param_from_dict(entry, index) for index, entry in enumerate(document["params"]))
    world_size, shard_size = int(document["world_size"]), document.get("shard_size")
    extra_options = {key: value for key, value in (options or {}).items() if not key.startswith("_")}
    result = []
    for name in wanted:
        scenario = FSDPScenario(params=params, sharding=name, ranks=world_size, comm="ow", o_s=max(0.0, o_s), w_Bps=w_Bps,
                                forward_time_s=phases["forward_s"], backward_time_s=phases["backward_s"], optimizer_time_s=phases["optimizer_s"],
                                shard_size=shard_size or (world_size if name == "hybrid_shard" else None), units=document.get("units", "blocks"),
                                **extra_options)  # fmt: skip
        point = judge(ddp_measured([row for row in steps if row["strategy"] == name], "step_s"), run_fsdp(scenario).step_time_s)
        result.append({"strategy": name, "world_size": world_size, **point})
    model = {"o_s": o_s, "w_Bps": w_Bps, "baseline": phases, "source": source, "baseline_rounds": len(baseline),
             "launches": int(document.get("launches") or 1), "model": document.get("model")}  # fmt: skip
    return result, model


def compare_fsdp(fields: dict[str, Any], base: Path | None = None) -> dict[str, Any]:
    """An FSDP comparison spec (``kind: fsdp``, ``measured: FILE``) against ``sim fsdp``."""
    from sim.scenario import unknown_key
    from sim.units import parse_bandwidth, parse_time, require_unit

    for key in fields:
        if key not in FSDP_SPEC_KEYS:
            raise unknown_key(key, FSDP_SPEC_KEYS, "compare spec (kind: fsdp)", "key")
    if not fields.get("measured"):
        raise CollsimError("compare spec (kind: fsdp): give 'measured: FILE', the rows written by collsim real fsdp --save FILE")
    path = Path(str(fields["measured"]))
    if base is not None and not path.is_absolute():
        path = base / path
    document = load_fsdp_document(path)
    for key, value in (("model", fields.get("model")), ("ranks", fields.get("ranks"))):
        have = document.get("model") if key == "model" else document.get("world_size")
        if value is not None and str(value) != str(have):
            raise CollsimError(f"compare spec: {key} {value!r} but {str(path)!r} measured {key} {have!r}")
    strategies = fields.get("strategies")
    if isinstance(strategies, str):
        strategies = [name.strip() for name in strategies.split(",") if name.strip()]
    require_unit(fields.get("o"), "o", "time")
    require_unit(fields.get("w"), "w", "bandwidth")
    o_s = parse_time(fields["o"], "o") if fields.get("o") is not None else None
    w_Bps = parse_bandwidth(fields["w"], "w") if fields.get("w") is not None else None
    options: dict[str, Any] = {"_given": (o_s, w_Bps)}
    if "backward_prefetch" in fields:
        options["backward_prefetch"] = str(fields["backward_prefetch"])
    for key in ("limit_all_gathers", "overlap"):  # overlap: false gives the no-overlap bound
        if key in fields:
            options[key] = parse_bool(fields[key], key)
    points, model = fsdp_points(document, strategies, o_s, w_Bps, options)
    return {"kind": "fsdp", "stat": "median step", "calibration": model["source"], "model": {**model, "measured_file": str(path)},
            "points": points, "summary": summarize(points)}  # fmt: skip


def format_fsdp(report: dict[str, Any]) -> str:
    from sim.units import format_time

    model = report["model"]
    lines = [
        f"# fsdp comparison: {model.get('model')} model, {report['points'][0]['world_size'] if report['points'] else '?'} ranks, "
        f"measured {model['measured_file']}; step = max over ranks",
        f"# sim fsdp --comm ow replays the no-communication step (forward {format_time(model['baseline']['forward_s'])}, backward "
        f"{format_time(model['baseline']['backward_s'])}, optimizer {format_time(model['baseline']['optimizer_s'])}; median of "
        f"{model['baseline_rounds']} rounds); {report['calibration']}",
        f"# {'strategy':>14} {'measured':>10} {'spread [low, high]':>24} {'simulated':>10} {'error':>8} {'spread':>7}  within?  "
        f"(spread: {report['points'][0]['spread'] if report['points'] else '-'})",
    ]
    for point in report["points"]:
        spread = "[" + format_time(point["spread_low_s"]) + ", " + format_time(point["spread_high_s"]) + "]"
        lines.append(
            f"  {point['strategy']:>14} {format_time(point['measured_s']):>10} {spread:>24} {format_time(point['simulated_s']):>10} "
            f"{percent(point['relative_error']):>8} {'±' + format(point['relative_spread'], '.0%'):>7}  {'yes' if point['within_spread'] else 'NO'}"
        )
    summary = report["summary"]
    if summary["points"]:
        lines.append(
            f"# {summary['within_spread']}/{summary['points']} strategies within the measurement's spread; median |error| "
            f"{summary['median_abs_relative_error']:.1%}, max {summary['max_abs_relative_error']:.1%}; median spread ±{summary['median_relative_spread']:.0%}"
        )
        measured = [p["strategy"] for p in sorted(report["points"], key=lambda p: p["measured_s"])]
        simulated = [p["strategy"] for p in sorted(report["points"], key=lambda p: p["simulated_s"])]
        lines.append(f"# ranking, fastest first: measured {', '.join(measured)}; simulated {', '.join(simulated)}"
                     f"{' (same)' if measured == simulated else ''}")  # fmt: skip
    return "\n".join(lines)
