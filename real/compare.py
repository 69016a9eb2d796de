"""Simulated against measured, point by point, with the measurement's own spread beside the error.

A comparison file is a scenario with a few extra keys::

    # collective: a CollectiveScenario (sim.scenario) plus
    op: all_reduce
    algorithm: ring
    ranks: 2
    sizes: 64KiB:64MiB:x4        # or size: 1MiB
    backend: gloo                # which measurements (default gloo); device: cpu
    bandwidth: 1GB/s             # model parameters as in any scenario, or leave them out and
    calibration: cal.yaml        #   take overhead/latency/bandwidth from a calibration file,
                                 #   or (no bandwidth, no calibration) fit o, w from the store now
    stat: mean                   # statistic compared (mean | median | p10 | min)
    source: measured             # which rows: measured (default), nccl-tests, published
    holdout: true                # fit o, w leaving each launch out in turn (out-of-sample)

    # FSDP / ZeRO: measured steps per strategy (collsim real fsdp --save FILE) against sim fsdp
    kind: fsdp
    measured: fsdp_rows.json     # the rows file, relative to the spec
    model: small                 # optional checks against the file
    ranks: 2
    strategies: [ddp, zero1, shard_grad_op, full_shard]   # default: every measured strategy
    o: 1ms                       # optional: override o and w (default: fitted to the all-reduces
    w: 1GB/s                     #   measured in the same launches)
    overlap: false               # optional: every collective blocks compute (the no-overlap bound)

    # DDP: a DDPScenario (sim.training.ddp) plus
    kind: ddp
    model: small                 # the built-in torch model measured by `collsim real ddp`
    configs: [naive, flat, overlap, bucketed:4MiB]   # default: every config in the store

The measured value is the statistic per launch, then the median over launches. Its spread is the
range over launches when there are two or more (the repeat spread that matters on a noisy host),
else the p10-p90 range of the iterations of the one launch. ``within`` says whether the simulated
value lies inside that range: an error smaller than the measurement's own spread cannot be told
apart from noise. With the constants fitted from the same measurements, the comparison is
in-sample and says so (``calibration: fitted in-sample``).
"""

from __future__ import annotations

import json
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from sim.errors import CollsimError
from sim.scenario import load_mapping
from sim.units import parse_size, parse_size_list

COMPARE_KEYS = ("sizes", "backend", "device", "source", "calibration", "stat", "holdout", "kind", "model", "configs", "run_ids")


def measured_point(rows: list[dict[str, Any]], stat: str = "mean") -> dict[str, Any]:
    """Statistic per launch, median over launches, and the spread to judge an error against."""
    from real.bench import percentile
    from real.fit import row_time

    per_launch = [value for value in (row_time(row, stat) for row in rows) if value is not None]
    if not per_launch:
        raise CollsimError(f"no {stat} values among {len(rows)} measured row(s)")
    value = statistics.median(per_launch)
    if len(per_launch) >= 2:
        low, high, kind = min(per_launch), max(per_launch), f"range over {len(per_launch)} launches"
    else:
        times = rows[0].get("times_s") or []
        if len(times) >= 2:
            low, high, kind = percentile(times, 10), percentile(times, 90), "p10-p90 of iterations (one launch)"
        elif rows[0].get("p10_s") is not None:
            low, high, kind = rows[0]["p10_s"], rows[0]["p90_s"], "p10-p90 of iterations (one launch)"
        else:
            low, high, kind = value, value, "none (one published value)"
    return {"measured_s": value, "spread_low_s": low, "spread_high_s": high, "spread": kind, "launches": len(per_launch)}


def judge(point: dict[str, Any], simulated_s: float) -> dict[str, Any]:
    """Add the simulated value, the relative error, the relative half-spread and the verdict."""
    measured = point["measured_s"]
    half_spread = (point["spread_high_s"] - point["spread_low_s"]) / 2 / measured if measured else 0.0
    within = point["spread_low_s"] <= simulated_s <= point["spread_high_s"]
    return {**point, "simulated_s": simulated_s, "relative_error": (simulated_s - measured) / measured if measured else None,
            "relative_spread": half_spread, "within_spread": within}  # fmt: skip


def split_mapping(data: dict[str, Any], base: Path | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(scenario fields, comparison keys) of a comparison mapping."""
    data = dict(data)
    if data.get("kind") == "fsdp":  # its own keys (FSDP_SPEC_KEYS), checked by compare_fsdp
        return data, {"kind": "fsdp", "base": base}
    extra = {key: data.pop(key) for key in COMPARE_KEYS if key in data}
    _check_keys(data, extra.get("kind"))
    if base is not None and "calibration" in extra and not Path(str(extra["calibration"])).is_absolute():
        extra["calibration"] = str(base / str(extra["calibration"]))
    return data, extra


def _check_keys(fields: dict[str, Any], kind: Any) -> None:
    """A misspelt key (``rank: 2``) is an error naming the nearest valid one, not a run with 0 ranks."""
    import dataclasses

    from sim.scenario import CollectiveScenario, unknown_key

    if kind == "ddp":
        from sim.training.ddp import DDPScenario as cls
    else:
        cls = CollectiveScenario
    names = {f.name for f in dataclasses.fields(cls)} | set(cls.ALIASES)
    for key in fields:
        if key not in names:
            raise unknown_key(key, names | set(COMPARE_KEYS), "compare spec", "key")


def split_file(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(scenario fields, comparison keys) of a comparison file."""
    return split_mapping(load_mapping(path, "compare spec"), Path(path).parent)


def compare_file(
    path: str, store: Any, calibration_path: str | None = None, stat: str | None = None, holdout: bool | None = None
) -> dict[str, Any]:
    """Compare the scenario in ``path`` with measurements in ``store``; returns a report dict."""
    fields, extra = split_file(path)
    return compare_fields(fields, extra, store, calibration_path, stat, holdout)


def compare_fields(
    fields: dict[str, Any], extra: dict[str, Any], store: Any, calibration_path: str | None, stat: str | None, holdout: bool | None
) -> dict[str, Any]:
    if extra.get("kind") == "fsdp":
        if calibration_path or holdout or stat:
            raise CollsimError(
                "--calibration, --holdout and --stat do not apply to kind: fsdp (median steps; give o and w in the spec to override the fit)"
            )
        from real.compare_fsdp import compare_fsdp

        return compare_fsdp(fields, extra.get("base"))
    if calibration_path:
        extra["calibration"] = calibration_path
    if holdout is not None:
        extra["holdout"] = holdout
    if extra.get("kind") == "ddp":
        return compare_ddp(fields, extra, store)
    return compare_collective(fields, extra, store, stat or extra.get("stat", "mean"))


# ----------------------------------------------------------------------------- collectives


def scenario_sizes(fields: dict[str, Any], extra: dict[str, Any]) -> list[int]:
    if "sizes" in extra:
        value = extra["sizes"]
        return parse_size_list(",".join(str(v) for v in value) if isinstance(value, list) else str(value), "sizes")
    if "size" in fields or "size_bytes" in fields:
        return [parse_size(fields.get("size", fields.get("size_bytes")), "size")]
    raise CollsimError("comparison file: give 'sizes' (e.g. 64KiB:64MiB:x4) or 'size'")


def _model_fields(
    fields: dict[str, Any], extra: dict[str, Any], rows: list[dict[str, Any]], stat: str, backend: str, device: str | None
) -> tuple[dict[str, Any], str]:
    """Overhead/latency/bandwidth: given in the file, from a calibration file, or fitted now."""
    from real.fit import calibrated_fields, fit_ow, link_bandwidth, load_calibration

    op, ranks = fields["op"], int(fields["ranks"])
    if any(key in fields for key in ("bandwidth", "bandwidth_Bps")):
        return {}, "from the scenario file"
    if extra.get("calibration"):
        values = calibrated_fields(load_calibration(extra["calibration"]), op, ranks, backend, device)
        algorithm = values.pop("algorithm")
        if fields.get("algorithm", algorithm) != algorithm:
            raise CollsimError(f"calibration was fitted for {op}/{algorithm}; the scenario asks for {fields['algorithm']}")
        return {**values, "algorithm": algorithm}, f"calibration file {extra['calibration']}"
    fit = fit_ow(rows, stat, replicates=0)
    algorithm = fields.get("algorithm") or "ring"
    return {
        "overhead_s": fit.o_s,
        "latency_s": 0.0,
        "bandwidth_Bps": link_bandwidth(op, algorithm, ranks, fit.w_Bps),
        "algorithm": algorithm,
    }, "fitted in-sample (o, w from these measurements)"


def _measured_rows(store: Any, fields: dict[str, Any], extra: dict[str, Any]) -> list[dict[str, Any]]:
    backend, device, source = extra.get("backend", "gloo"), extra.get("device"), extra.get("source", "measured")
    op, ranks = fields.get("op"), int(fields.get("ranks", 0))
    rows = store.collectives(
        op=op, backend=backend, world_size=ranks, device=device, source=None if source == "any" else source, run_id=extra.get("run_ids")
    )
    rows = [row for row in rows if row.get("run_status", "ok") != "running"]
    if not rows:
        raise CollsimError(
            f"no measurements of {op} on {backend} with {ranks} ranks in the store (source: {source}); "
            f"run: collsim real bench --backend {backend} --ranks {ranks} --ops {op} --sizes ..."
        )
    return rows


def _simulate(fields: dict[str, Any], model: dict[str, Any], size: int) -> float:
    from sim.collective.runner import run_collective
    from sim.scenario import CollectiveScenario

    base = {key: value for key, value in fields.items() if key not in ("size", "size_bytes")}
    return run_collective(CollectiveScenario.from_dict({**base, **model, "size_bytes": size})).time_s


def _holdout_simulations(fields: dict[str, Any], rows: list[dict[str, Any]], stat: str, sizes: list[int]) -> dict[int, float]:
    """Per size, the median over launches L of the simulation with (o, w) fitted without L."""
    from real.fit import fit_ow, link_bandwidth

    op, ranks, algorithm = fields["op"], int(fields["ranks"]), fields.get("algorithm") or "ring"
    launches = sorted({row["run_id"] for row in rows})
    if len(launches) < 3:
        raise CollsimError(f"holdout needs 3 or more launches in the store (found {len(launches)}); measure with --launches 3")
    simulated: dict[int, list[float]] = defaultdict(list)
    for launch in launches:
        fit = fit_ow([row for row in rows if row["run_id"] != launch], stat, replicates=0)
        model = {
            "overhead_s": fit.o_s,
            "latency_s": 0.0,
            "bandwidth_Bps": link_bandwidth(op, algorithm, ranks, fit.w_Bps),
            "algorithm": algorithm,
        }
        for size in sizes:
            simulated[size].append(_simulate(fields, model, size))
    return {size: statistics.median(values) for size, values in simulated.items()}


def compare_collective(fields: dict[str, Any], extra: dict[str, Any], store: Any, stat: str = "mean") -> dict[str, Any]:
    """Per size: measured (statistic per launch, median over launches) against simulated."""
    from real.bench import effective_size

    op, ranks = fields.get("op"), int(fields.get("ranks", 0))
    rows = _measured_rows(store, fields, extra)
    by_size: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_size[row["size_bytes"]].append(row)
    sizes = [effective_size(op, size, ranks, int(fields.get("element_bytes", 4))) for size in scenario_sizes(fields, extra)]
    missing = [size for size in sizes if size not in by_size]
    if missing:
        raise CollsimError(
            f"no measurement of {op} at {', '.join(map(str, missing))} bytes; measured sizes: {', '.join(str(s) for s in sorted(by_size))}"
        )
    if extra.get("holdout") and not any(key in fields for key in ("bandwidth", "bandwidth_Bps")) and not extra.get("calibration"):
        simulated = _holdout_simulations(fields, rows, stat, sizes)
        model, source = {}, "fitted leaving each launch out in turn (out-of-sample); simulated = median over held-out fits"
    else:
        model, source = _model_fields(fields, extra, rows, stat, extra.get("backend", "gloo"), extra.get("device"))
        simulated = {size: _simulate(fields, model, size) for size in sizes}
    points = [
        {"op": op, "world_size": ranks, "backend": extra.get("backend", "gloo"), "size_bytes": size, "algorithm": fields.get("algorithm") or model.get("algorithm", "ring"),
         **judge(measured_point(by_size[size], stat), simulated[size])}
        for size in sizes
    ]  # fmt: skip
    return {"kind": "collective", "stat": stat, "calibration": source, "model": model, "points": points, "summary": summarize(points)}


def summarize(points: list[dict[str, Any]]) -> dict[str, Any]:
    errors = [abs(point["relative_error"]) for point in points if point["relative_error"] is not None]
    return {
        "points": len(points),
        "within_spread": sum(1 for point in points if point["within_spread"]),
        "median_abs_relative_error": statistics.median(errors) if errors else None,
        "max_abs_relative_error": max(errors) if errors else None,
        "median_relative_spread": statistics.median(point["relative_spread"] for point in points) if points else None,
    }


# ----------------------------------------------------------------------------- DDP


def compare_ddp(fields: dict[str, Any], extra: dict[str, Any], store: Any) -> dict[str, Any]:
    """Measured DDP steps (per config) against ``sim.training.ddp`` replaying the measured no-communication
    profile, with (o, w) from the file, a calibration, or fitted from the store's all-reduces.

    Two quantities are judged: the step time, and the paired overhead (step minus the
    no-communication step of the same round), which cancels the host's slow drifts. The
    simulation is also run with the measured backward slowdown of each config (``slowdown``).
    """
    from real.fit import compute_slowdown

    model = extra.get("model", "small")
    steps = store.ddp_steps(model=model, run_id=extra.get("run_ids"))
    if not steps:
        raise CollsimError(f"no DDP measurements of model {model!r} in the store; run: collsim real ddp --model {model}")
    profiles = [
        row for row in store.ddp_profiles(model=model, config="none") if not extra.get("run_ids") or row["run_id"] in extra["run_ids"]
    ]
    if not profiles:
        raise CollsimError(f"no measured compute profile (config 'none') for model {model!r} in the store")
    profile = profiles[-1]["profile"]
    measured_configs = sorted({step["config"] for step in steps if step["config"] != "none"})
    wanted = extra.get("configs") or measured_configs
    unknown = [config for config in wanted if config not in measured_configs]
    if unknown:
        raise CollsimError(f"no measured steps for config(s) {', '.join(unknown)}; measured: {', '.join(measured_configs)}")
    ranks = int(profile.get("world_size") or fields.get("ranks", 2))
    o_s, w_Bps, source = _ddp_comm(fields, extra, store, profile.get("backend", "gloo"), ranks)
    # torch's DDP synchronises inside backward: its backward slowdown is not a compute slowdown
    torch_ddp = {step["config"] for step in steps if step["strategy"] == "torch"}
    slowdowns = {row["config"]: row["median"] for row in compute_slowdown(steps) if row["config"] not in torch_ddp}
    compute_s = profile["forward_s"] + profile["backward_s"] + profile["optimizer_s"]
    points = []
    with tempfile.TemporaryDirectory() as folder:
        profile_path = Path(folder) / "profile.json"
        profile_path.write_text(json.dumps(profile))
        for config in wanted:
            members = [step for step in steps if step["config"] == config]
            base = {key: value for key, value in fields.items() if key not in ("kind", "ranks")}
            data = {
                **base,
                "profile_file": str(profile_path),
                "strategy": members[0]["strategy"],
                "ranks": ranks,
                "comm": "ow",
                "o_s": o_s,
                "w_Bps": w_Bps,
            }
            if members[0]["strategy"] == "bucketed":
                data.update(bucket_cap_bytes=members[0]["bucket_bytes"], first_bucket_bytes=None)
            hooked = _torch_ddp(store, model, config, extra.get("run_ids")) if members[0]["strategy"] == "torch" else None
            if hooked:
                data.update(hooked["fields"])
            plain = _simulated_step(data)
            slowed = _simulated_step({**data, "slowdown": max(1.0, slowdowns.get(config, 1.0))})
            free = _simulated_step({**data, "o_s": 0.0, "w_Bps": 1e30})  # the same step with free communication
            overhead = judge(ddp_measured(members, "overhead_s"), plain - free)
            points.append({
                "config": config, "strategy": members[0]["strategy"], "bucket_bytes": members[0]["bucket_bytes"], "world_size": ranks,
                **judge(ddp_measured(members, "step_s"), plain), "simulated_with_slowdown_s": slowed, "measured_slowdown": slowdowns.get(config),
                "overhead": overhead, **({"comm_hook": hooked["comm_hook"], "bytes": _bytes_sent(data, hooked)} if hooked else {}),
            })  # fmt: skip
    report_model = {"o_s": o_s, "w_Bps": w_Bps, "profile_run": profiles[-1]["run_id"], "compute_s": compute_s}
    return {"kind": "ddp", "stat": "median step", "calibration": source, "model": report_model, "points": points, "summary": summarize(points),
            "overhead_summary": summarize([point["overhead"] for point in points])}  # fmt: skip


def _torch_ddp(store: Any, model: str, config: str, run_ids: Any) -> dict[str, Any]:
    """A torch-DDP config's measured hook and buckets, and the DDPScenario fields that simulate
    the same: torch's buckets (an explicit cap is also the first bucket's, rebuilt in gradient-ready
    order), the same hook at the recorded iteration."""
    from sim.training.hooks import DEFAULT_START_POWERSGD_ITER

    rows = [row for row in store.ddp_profiles(model=model, config=config) if not run_ids or row["run_id"] in run_ids]
    if not rows or "comm_hook" not in rows[-1]["profile"]:
        raise CollsimError(
            f"no measured profile with the comm hook of config {config!r} (model {model!r}); measure it again with collsim real ddp"
        )
    profile = rows[-1]["profile"]
    hook = profile["comm_hook"]
    fields = {
        "strategy": "bucketed", "bucket_cap_bytes": profile["bucket_cap_bytes"], "first_bucket_bytes": None, "rebuild": True,
        "comm_hook": hook["name"], "powersgd_rank": hook.get("powersgd_rank"),
        "powersgd_warmup": hook.get("start_iter", DEFAULT_START_POWERSGD_ITER), "iteration": profile["iteration"],
    }  # fmt: skip
    return {"fields": fields, "comm_hook": hook, "measured": [bucket["all_reduce_bytes"] for bucket in profile["buckets"]]}


def _bytes_sent(data: dict[str, Any], hooked: dict[str, Any]) -> dict[str, Any]:
    """Bytes of each all-reduce, bucket by bucket: measured (rank 0, one round) and simulated."""
    from sim.training.ddp import DDPScenario, plan_calls, prepare

    scenario = DDPScenario.from_dict(data)
    simulated = [[part.nbytes for part in call.parts] for call in plan_calls(scenario, prepare(scenario))]
    return {"measured": hooked["measured"], "simulated": simulated, "equal": simulated == hooked["measured"]}


def _simulated_step(data: dict[str, Any]) -> float:
    from sim.training.ddp import DDPScenario, run_ddp

    return run_ddp(DDPScenario.from_dict(data)).summary()["step_time_s"]


def ddp_measured(members: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Median of ``key`` per launch, median over launches; spread over launches, else p10-p90 of rounds."""
    from real.bench import percentile

    by_run: dict[str, list[float]] = defaultdict(list)
    for member in members:
        by_run[member["run_id"]].append(member[key])
    medians = [statistics.median(values) for values in by_run.values()]
    if len(medians) >= 2:
        return {
            "measured_s": statistics.median(medians),
            "spread_low_s": min(medians),
            "spread_high_s": max(medians),
            "spread": f"range over {len(medians)} launches",
            "launches": len(medians),
        }
    values = next(iter(by_run.values()))
    return {
        "measured_s": statistics.median(values),
        "spread_low_s": percentile(values, 10),
        "spread_high_s": percentile(values, 90),
        "spread": "p10-p90 of rounds (one launch)",
        "launches": 1,
    }


def _ddp_comm(fields: dict[str, Any], extra: dict[str, Any], store: Any, backend: str, ranks: int) -> tuple[float, float, str]:
    from real.fit import fit_ow, load_calibration

    if "w_Bps" in fields or "w" in fields:
        from sim.units import parse_bandwidth, parse_time, require_unit

        require_unit(fields.get("o"), "o", "time")  # typed short keys need units (issue 10 item 11)
        require_unit(fields.get("w"), "w", "bandwidth")
        return (
            parse_time(fields.pop("o_s", fields.pop("o", 0))),
            parse_bandwidth(fields.pop("w_Bps", fields.pop("w", None))),
            "from the scenario file",
        )
    if extra.get("calibration"):
        for entry in load_calibration(extra["calibration"]).get("collectives", []):
            if entry.get("op") == "all_reduce" and entry.get("world_size") == ranks and entry.get("backend") == backend:
                return entry["o_s"], entry["w_Bps"], f"calibration file {extra['calibration']}"
        raise CollsimError(f"calibration has no all_reduce entry for {backend} with {ranks} ranks")
    source = extra.get("source", "measured")
    rows = store.collectives(op="all_reduce", backend=backend, world_size=ranks, source=None if source == "any" else source)
    if not rows:
        raise CollsimError(
            f"no all_reduce measurements for {backend} with {ranks} ranks to fit o and w; run collsim real bench first or give a calibration"
        )
    fit = fit_ow(rows, "mean")
    return (
        fit.o_s,
        fit.w_Bps,
        f"o, w fitted from the store's {source} all_reduce rows (mean): o = {fit.o_s * 1e6:.0f} us, w = {fit.w_Bps / 1e9:.3f} GB/s",
    )


def format_report(report: dict[str, Any]) -> str:
    """The error table a person reads."""
    from sim.units import format_size, format_time

    if report["kind"] == "fsdp":
        from real.compare_fsdp import format_fsdp

        return format_fsdp(report)

    head = "config" if report["kind"] == "ddp" else "size"
    lines = [
        f"# {report['kind']} comparison, statistic: {report['stat']}; model constants: {report['calibration']}",
        f"# {head:>16} {'measured':>10} {'spread [low, high]':>24} {'simulated':>10} {'error':>8} {'spread':>7}  within?  (spread: {report['points'][0]['spread'] if report['points'] else '-'})",
    ]
    for point in report["points"]:
        label = point["config"] if report["kind"] == "ddp" else format_size(point["size_bytes"])
        spread = "[" + format_time(point["spread_low_s"]) + ", " + format_time(point["spread_high_s"]) + "]"
        lines.append(
            f"  {label:>16} {format_time(point['measured_s']):>10} {spread:>24} {format_time(point['simulated_s']):>10} "
            f"{percent(point['relative_error']):>8} {'±' + format(point['relative_spread'], '.0%'):>7}  {'yes' if point['within_spread'] else 'NO'}"
        )
    if report["kind"] == "ddp":
        lines.append(
            "# paired overhead = step - no-communication step of the same round (drift cancels); simulated = sim step - sim step with free communication"
        )
        for point in report["points"]:
            over = point["overhead"]
            spread = "[" + format_time(over["spread_low_s"]) + ", " + format_time(over["spread_high_s"]) + "]"
            lines.append(
                f"  {point['config'] + ' ovh':>16} {format_time(over['measured_s']):>10} {spread:>24} {format_time(over['simulated_s']):>10} "
                f"{percent(over['relative_error']):>8} {'±' + format(over['relative_spread'], '.0%'):>7}  {'yes' if over['within_spread'] else 'NO'}"
            )
        lines += [_bytes_line(point) for point in report["points"] if "bytes" in point]
        lines.append(
            "# with the measured backward slowdown per config: "
            + ", ".join(
                f"{point['config']} {format_time(point['simulated_with_slowdown_s'])} "
                + ("(n/a: torch syncs inside backward)" if point.get("comm_hook") else f"({(point['measured_slowdown'] or 1):.2f}x)")
                for point in report["points"]
            )
        )
    summary = report["summary"]
    if report["kind"] == "ddp" and report["overhead_summary"]["points"]:
        over = report["overhead_summary"]
        lines.append(
            f"# paired overhead: {over['within_spread']}/{over['points']} within the spread; median |error| {over['median_abs_relative_error']:.1%}, "
            f"max {over['max_abs_relative_error']:.1%}"
        )
    if summary["points"]:
        lines.append(
            f"# {summary['within_spread']}/{summary['points']} points within the measurement's spread; median |error| {summary['median_abs_relative_error']:.1%}, "
            f"max {summary['max_abs_relative_error']:.1%}; median spread ±{summary['median_relative_spread']:.0%}"
        )
    return "\n".join(lines)


def _bytes_line(point: dict[str, Any]) -> str:
    """The bytes a torch-DDP config's hook sent per bucket, measured beside simulated."""
    sent = point["bytes"]

    def buckets(values: list[list[int]]) -> str:
        return " | ".join(" + ".join(str(nbytes) for nbytes in bucket) for bucket in values)

    verdict = "equal" if sent["equal"] else f"DIFFER: simulated {buckets(sent['simulated'])}"
    return f"# bytes per all-reduce, by bucket, {point['config']} (hook {point['comm_hook']['name']}): measured {buckets(sent['measured'])}; {verdict}"


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1%}"
