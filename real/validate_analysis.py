"""``collsim validate``'s analysis: measured points, held-out predictions, link models, noise,
the DDP and FSDP analyses and the targets (:mod:`real.validate` measures and writes).

Each function is plain, so tests feed it synthetic rows: ``analyse`` takes the measured rows
and returns the summary that :func:`real.validate.write_outputs` writes. The held-out rules and
the meaning of ``error`` and ``within_spread`` are in :mod:`real.validate`'s docstring.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from sim.algorithms.registry import backend_algorithms, backend_choice
from sim.collective.analytic import closed_form
from sim.errors import CollsimError

STAT = "median"
MiB = 1 << 20
# What each backend runs per op: backend -> op -> (op, algorithm), from the algorithms' records
# (``runs``, beside each @register; sources in docs/real.md); their closed forms model the time.
BACKEND_ALGORITHMS = backend_algorithms()
NCCL_CHUNK_BYTES = backend_choice("nccl", "broadcast").run.chunk_bytes  # pipelined-chain chunk for NCCL broadcast (its record's)
HELD_OUT = ("size", "launch", "world_size")


# ----------------------------------------------------------------------------- points


def _median_time(row: dict[str, Any]) -> float:
    times = row.get("times_s")
    return float(np.median(times)) if times else float(row["median_s"])


def points(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Per (op, world size, size): launch medians (by run), measured value, spread over launches."""
    by_point: dict[tuple[str, int, int], dict[str, float]] = defaultdict(dict)
    for row in rows:
        if row.get("size_bytes"):
            by_point[(row["op"], int(row["world_size"]), int(row["size_bytes"]))][row.get("run_id") or "run"] = _median_time(row)
    table = {}
    for key, per_launch in sorted(by_point.items()):
        values = list(per_launch.values())
        table[key] = {
            "per_launch": per_launch,
            "measured_s": statistics.median(values),
            "spread_low_s": min(values),
            "spread_high_s": max(values),
        }
    return table


def _row(
    op: str, world_size: int, size: int, point: dict[str, Any], predicted: float, held_out: str, error: float | None = None
) -> dict[str, Any]:
    measured = point["measured_s"]
    return {
        "op": op, "world_size": world_size, "size_bytes": size, "measured_s": measured, "spread_low_s": point["spread_low_s"],
        "spread_high_s": point["spread_high_s"], "predicted_s": predicted,
        "error": error if error is not None else (predicted - measured) / measured, "within_spread": point["spread_low_s"] <= predicted <= point["spread_high_s"],
        "held_out": held_out,
    }  # fmt: skip


def _fit(rows: list[dict[str, Any]], replicates: int = 0) -> Any:
    from real.fit import fit_ow

    return fit_ow(rows, STAT, replicates=replicates)


def held_out_by_size(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One (op, world size): fit o, w on every other size, predict the sizes left out (both halves)."""
    table = points(rows)
    sizes = sorted({size for (_, _, size) in table})
    if len(sizes) < 4:
        return []
    halves = (sizes[0::2], sizes[1::2])
    result = []
    for fitted, predicted in (halves, halves[::-1]):
        fit = _fit([row for row in rows if row["size_bytes"] in fitted])
        for (op, world_size, size), point in table.items():
            if size in predicted:
                result.append(_row(op, world_size, size, point, fit.predict(size), "size"))
    return sorted(result, key=lambda row: row["size_bytes"])


def held_out_by_launch(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One (op, world size): for each launch, fit o, w on the other launches and predict its points.

    A row's ``predicted_s`` is the median of the per-launch predictions and ``error`` the median of
    (prediction - that launch's value) / that launch's value.
    """
    table = points(rows)
    launches = sorted({row.get("run_id") for row in rows})
    if len(launches) < 2:
        return []
    fits = {}
    for launch in launches:  # a launch cut short by Ctrl-C may leave the others with too few sizes
        others = [row for row in rows if row.get("run_id") != launch]
        if len({row["size_bytes"] for row in others}) >= 2:
            fits[launch] = _fit(others)
    result = []
    for (op, world_size, size), point in table.items():
        predictions = {launch: fits[launch].predict(size) for launch in point["per_launch"] if launch in fits}
        if not predictions:
            continue
        errors = [(predictions[launch] - value) / value for launch, value in point["per_launch"].items() if launch in predictions]
        result.append(_row(op, world_size, size, point, statistics.median(predictions.values()), "launch", statistics.median(errors)))
    return result


# ----------------------------------------------------------------------------- link model


def link_columns(backend: str, op: str, world_size: int, size_bytes: int) -> np.ndarray:
    """(1, d/da, d/db, d/dg) of the backend's algorithm time: closed forms are linear in a, b, g.
    The algorithm and its chunks are the record's (``backend_choice``, as real.fit reads them)."""
    choice = backend_choice(backend, op)
    if choice is None:
        known = ", ".join(BACKEND_ALGORITHMS.get(backend, {})) or "none"
        raise CollsimError(f"no record says what {backend} runs for {op}; known: {known}")
    form_op, algorithm, chunks = choice.spec.op, choice.spec.name, choice.chunks(size_bytes)

    def form(a: float, b: float, g: float) -> float:
        value = closed_form(form_op, algorithm, world_size, size_bytes, a, b, g, chunks)
        if value is None:
            raise CollsimError(f"no closed form for {form_op}/{algorithm} at p={world_size} (power-of-two only?)")
        return value

    return np.array([1.0, form(1, 0, 0), form(0, 1, 0), form(0, 0, 1)])


LINK_NAMES = ("o_call_s", "latency_s", "inverse_bandwidth_s_per_B", "inverse_reduce_bandwidth_s_per_B")


def fit_link_model(rows: list[dict[str, Any]], backend: str) -> dict[str, Any]:
    """Per-call o, latency a, 1/B and 1/gamma (all >= 0) for one op over its world sizes.

    Relative least squares on the point medians. Columns that the points cannot separate (a from
    o with one world size; g from b for ring, whose terms are both proportional to n) are dropped,
    i.e. fixed at 0, and listed in ``not_identifiable``.
    """
    from real.fit import bounded_lstsq

    table = points(rows)
    op = next(iter(table))[0]
    design = np.array([link_columns(backend, op, p, size) for (_, p, size) in table])
    times = np.array([point["measured_s"] for point in table.values()])
    scaled = design / times[:, None]
    kept: list[int] = []
    for column in (0, 2, 1, 3):  # o, b first: they are always there
        trial = kept + [column]
        if np.linalg.norm(scaled[:, column]) > 0 and np.linalg.matrix_rank(
            scaled[:, trial] / np.linalg.norm(scaled[:, trial], axis=0), tol=1e-8
        ) == len(trial):
            kept = trial
    coefficients = np.zeros(4)
    coefficients[kept] = bounded_lstsq(scaled[:, kept], np.ones_like(times))
    residuals = scaled @ coefficients - 1.0
    world_sizes = sorted({p for (_, p, _) in table})
    return {"op": op, "backend": backend, "algorithm": backend_choice(backend, op).model, "world_sizes": world_sizes,
            **{name: float(value) for name, value in zip(LINK_NAMES, coefficients)},
            "not_identifiable": [LINK_NAMES[i] for i in range(4) if i not in kept],
            "rms_relative_residual": float(np.sqrt(np.mean(residuals**2))), "in_sample": True}  # fmt: skip


def predict_link(model: dict[str, Any], world_size: int, size_bytes: int) -> float:
    coefficients = np.array([model[name] for name in LINK_NAMES])
    return float(link_columns(model["backend"], model["op"], world_size, size_bytes) @ coefficients)


def held_out_by_world_size(rows: list[dict[str, Any]], backend: str) -> list[dict[str, Any]]:
    """One op: fit the link model on the smallest world size, predict every larger one."""
    world_sizes = sorted({int(row["world_size"]) for row in rows})
    if len(world_sizes) < 2:
        return []
    model = fit_link_model([row for row in rows if row["world_size"] == world_sizes[0]], backend)
    table = points(row for row in rows if row["world_size"] != world_sizes[0])
    return [_row(op, p, size, point, predict_link(model, p, size), "world_size") for (op, p, size), point in table.items()]


# ----------------------------------------------------------------------------- noise


def noise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Stall rate (calls > 3x their point's median) and launch-to-launch spread (relative range)."""
    calls = stalls = 0
    for row in rows:
        times = np.asarray(row.get("times_s") or [], dtype=float)
        if times.size:
            calls += times.size
            stalls += int(np.sum(times > 3 * np.median(times)))
    spreads = [(p["spread_high_s"] - p["spread_low_s"]) / p["measured_s"] for p in points(rows).values() if len(p["per_launch"]) >= 2]
    large = [
        (p["spread_high_s"] - p["spread_low_s"]) / p["measured_s"]
        for (_, _, n), p in points(rows).items()
        if n >= MiB and len(p["per_launch"]) >= 2
    ]
    return {
        "calls": calls, "stall_rate": stalls / calls if calls else None,
        "median_launch_spread": statistics.median(spreads) if spreads else None,
        "median_launch_spread_at_1MiB_up": statistics.median(large) if large else None,
    }  # fmt: skip


def resolution_sentence(summary_noise: dict[str, Any], host: dict[str, Any]) -> str:
    large = summary_noise.get("median_launch_spread_at_1MiB_up")
    spread = large if large is not None else summary_noise.get("median_launch_spread")
    where = ">= 1 MiB" if large is not None else "all sizes"
    stall = summary_noise.get("stall_rate")
    if spread is None:
        return "One launch only: launch-to-launch spread unknown, so no error can be told apart from noise."
    return (
        f"On {host.get('host', 'this host')} ({host.get('cpu_count', '?')} cores) repeated launches of the same point differ by "
        f"{spread:.0%} (median range over launches, {where}) and {stall or 0:.1%} of calls stall (> 3x their median): "
        f"model errors smaller than about {spread / 2:.0%} cannot be resolved here, larger ones can."
    )


# ----------------------------------------------------------------------------- DDP


def ddp_analysis(steps: list[dict[str, Any]], profiles: list[dict[str, Any]], bench_ow: tuple[float, float] | None) -> dict[str, Any]:
    """Overhead per cap (measured), the formula fit, its optimum, the simulator's best cap and step times."""
    from real.fit import compute_slowdown, fit_bucket_overhead

    if not steps:
        return {}
    per_config = _per_config(steps)
    bucketed = sorted((row for row in per_config.values() if row["strategy"] == "bucketed"), key=lambda row: row["bucket_bytes"])
    formula = fit_bucket_overhead(steps) or {}
    total = float(next(iter(per_config.values()))["grad_bytes"] or 0)
    simulated = _simulate_configs(per_config, profiles, bench_ow) if bench_ow and profiles else {}
    for config, row in per_config.items():
        row["simulated_step_s"] = simulated.get(config)
    best_measured = min(bucketed, key=lambda row: row["overhead_s"])["bucket_bytes"] if bucketed else None
    sim_bucketed = [row for row in bucketed if row.get("simulated_step_s") is not None]
    best_sim = min(sim_bucketed, key=lambda row: row["simulated_step_s"])["bucket_bytes"] if sim_bucketed else None
    slowdown = {row["config"]: row for row in compute_slowdown(steps)}
    best_formula = formula.get("optimal_bucket_bytes")
    bench_formula = math.sqrt(total * bench_ow[1] * bench_ow[0]) if bench_ow and bench_ow[0] > 0 and math.isfinite(bench_ow[1]) else None
    return {
        "bucket_bytes": [row["bucket_bytes"] for row in bucketed], "overhead_s": [row["overhead_s"] for row in bucketed],
        "fitted_o_s": formula.get("o_s") if formula.get("identifiable") else None,
        "fitted_w_Bps": formula.get("w_Bps") if formula.get("identifiable") else None,
        "best_measured_bytes": best_measured, "best_formula_bytes": best_formula, "best_sim_bytes": best_sim,
        "extra": {"configs": list(per_config.values()), "formula": formula, "bench_o_s": bench_ow[0] if bench_ow else None,
                  "bench_w_Bps": bench_ow[1] if bench_ow else None, "best_formula_bytes_from_bench": bench_formula, "grad_bytes": total,
                  "backward_slowdown": slowdown, "grid_steps_best_measured_vs_sim": _grid_steps([r["bucket_bytes"] for r in bucketed], best_measured, best_sim)},
    }  # fmt: skip


def _grid_steps(grid: list[int], first: int | None, second: int | None) -> int | None:
    if first is None or second is None:
        return None
    return abs(grid.index(first) - grid.index(second))


def _per_config(steps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    from real.compare import ddp_measured

    by_config: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for step in steps:
        if step["config"] != "none":
            by_config[step["config"]].append(step)
    table = {}
    for config, members in by_config.items():
        step = ddp_measured(members, "step_s")
        overhead = ddp_measured(members, "overhead_s")
        table[config] = {
            "config": config, "strategy": members[0]["strategy"], "bucket_bytes": members[0]["bucket_bytes"], "num_buckets": members[0]["comm_calls"],
            "grad_bytes": members[0]["comm_bytes"], "step_s": step["measured_s"], "step_low_s": step["spread_low_s"], "step_high_s": step["spread_high_s"],
            "overhead_s": overhead["measured_s"], "overhead_low_s": overhead["spread_low_s"], "overhead_high_s": overhead["spread_high_s"],
            "rounds": len(members),
        }  # fmt: skip
    return table


def _simulate_configs(
    per_config: dict[str, dict[str, Any]], profiles: list[dict[str, Any]], bench_ow: tuple[float, float]
) -> dict[str, float]:
    """sim.training.ddp step time per config, replaying the measured no-communication profile with bench (o, w)."""
    import tempfile

    from sim.training.ddp import DDPScenario, run_ddp

    baseline = [row for row in profiles if row["config"] == "none"]
    if not baseline:
        return {}
    profile = baseline[-1]["profile"]
    o_s, w_Bps = bench_ow
    result = {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "profile.json"
        path.write_text(json.dumps(profile))
        for config, row in per_config.items():
            data = {"profile_file": str(path), "strategy": row["strategy"], "ranks": int(profile.get("world_size") or 2), "comm": "ow",
                    "o_s": o_s, "w_Bps": w_Bps}  # fmt: skip
            if row["strategy"] == "bucketed":
                data.update(bucket_cap_bytes=row["bucket_bytes"], first_bucket_bytes=None)
            result[config] = run_ddp(DDPScenario.from_dict(data)).summary()["step_time_s"]
    return result


# ----------------------------------------------------------------------------- analyse


def analyse(collectives: list[dict[str, Any]], ddp_steps: list[dict[str, Any]], profiles: list[dict[str, Any]], backend: str,
            meta: dict[str, Any] | None = None, replicates: int = 200, fsdp: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Everything the report and summary.json hold, from measured rows (pure: no torch, no store)."""
    from real.fit import fit_ow

    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in collectives:
        if row.get("size_bytes"):
            groups[(row["op"], int(row["world_size"]))].append(row)
    rows, fits, owfits = [], [], []
    for (op, world_size), members in sorted(groups.items()):
        rows += held_out_by_size(members) + held_out_by_launch(members)
        if len({row["size_bytes"] for row in members}) >= 2:
            fit = fit_ow(members, STAT, replicates=replicates, key={"source": "measured", "backend": backend, "device": members[0].get("device", "cpu"), "op": op, "world_size": world_size})  # fmt: skip
            owfits.append(fit)
            fits.append(_fit_row(op, world_size, fit))
    by_op: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in collectives:
        if row.get("size_bytes"):
            by_op[row["op"]].append(row)
    rows += [row for op in sorted(by_op) for row in held_out_by_world_size(by_op[op], backend)]
    links = [fit_link_model(members, backend) for op, members in sorted(by_op.items())]
    smallest = min((p for (_, p) in groups), default=None)
    bench = next((fit for fit in owfits if fit.key["op"] == "all_reduce" and fit.key["world_size"] == smallest), None)
    ddp = ddp_analysis(
        [s for s in ddp_steps if s.get("world_size") in (None, smallest)], profiles, (bench.o_s, bench.w_Bps) if bench else None
    )
    summary = {"collectives": rows, "fits": fits, "ddp": ddp, "noise": noise(collectives), "link_models": links, "meta": meta or {}}
    summary["noise"]["sentence"] = resolution_sentence(summary["noise"], meta or {})
    summary["targets"] = targets(summary)
    summary["_owfits"] = owfits
    summary["fsdp"], summary["fsdp_detail"] = fsdp_analysis(fsdp)
    summary["_fsdp_document"] = fsdp
    return summary


def fsdp_analysis(document: dict[str, Any] | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows {strategy, measured_s, spread, predicted_s, error, within_spread} of the FSDP launches
    (``real.compare_fsdp.fsdp_points``: sim fsdp replaying the measured no-communication step with (o, w)
    from the all-reduces of the same launches, so every prediction is out of sample), and the detail
    (o, w, the replayed phases, the spread's kind, rankings). No FSDP data: ([], {})."""
    from real.compare_fsdp import fsdp_points

    if not document:
        return [], {}
    try:
        points, model = fsdp_points(document)
    except CollsimError as error:  # e.g. interrupted before a baseline round: say so, keep the rest
        return [], {"error": str(error)}
    rows = [{"strategy": p["strategy"], "measured_s": p["measured_s"], "spread_low_s": p["spread_low_s"], "spread_high_s": p["spread_high_s"],
             "predicted_s": p["simulated_s"], "error": p["relative_error"], "within_spread": p["within_spread"]} for p in points]  # fmt: skip
    detail = {**model, "spread": points[0]["spread"] if points else None, "world_size": document.get("world_size"),
              "seconds": (document.get("meta") or {}).get("seconds"),
              "ranking_measured": [r["strategy"] for r in sorted(rows, key=lambda r: r["measured_s"])],
              "ranking_simulated": [r["strategy"] for r in sorted(rows, key=lambda r: r["predicted_s"])]}  # fmt: skip
    return rows, detail


def _fit_row(op: str, world_size: int, fit: Any) -> dict[str, Any]:
    return {"op": op, "world_size": world_size, "o_s": fit.o_s, "o_low_s": fit.o_ci_s[0], "o_high_s": fit.o_ci_s[1], "w_Bps": fit.w_Bps,
            "w_low_Bps": fit.w_ci_Bps[0], "w_high_Bps": fit.w_ci_Bps[1]}  # fmt: skip


def targets(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 12's targets, each with the figure it is judged on and whether it was met (None: not measured)."""
    rows = summary["collectives"]
    large = [abs(row["error"]) for row in rows if row["size_bytes"] >= MiB and row["held_out"] in ("size", "launch")]
    spread = summary["noise"].get("median_launch_spread_at_1MiB_up")
    error = statistics.median(large) if large else None
    ddp = summary["ddp"] or {}
    extra = ddp.get("extra", {})
    configs = [
        row for row in extra.get("configs", []) if row["strategy"] != "bucketed" or row["bucket_bytes"] == ddp.get("best_measured_bytes")
    ]
    ranking_measured = [row["config"] for row in sorted(configs, key=lambda row: row["step_s"])]
    ranking_sim = [row["config"] for row in sorted(configs, key=lambda row: row.get("simulated_step_s") or math.inf)]
    steps = extra.get("grid_steps_best_measured_vs_sim")
    return [
        {"target": "every prediction held out", "value": {"predictions": len(rows), "in_sample": sum(1 for row in rows if row["held_out"] not in HELD_OUT)},
         "met": all(row["held_out"] in HELD_OUT for row in rows) if rows else None},
        {"target": "median |error| at >= 1 MiB <= median launch spread", "value": {"median_abs_error": error, "median_launch_spread": spread},
         "met": None if error is None or spread is None else error <= spread},
        {"target": "strategy ranking measured = simulated", "value": {"measured": ranking_measured, "simulated": ranking_sim},
         "met": None if not configs or any(row.get("simulated_step_s") is None for row in configs) else ranking_measured == ranking_sim},
        {"target": "best cap measured vs simulated within one grid step", "value": {"measured": ddp.get("best_measured_bytes"), "simulated": ddp.get("best_sim_bytes"), "grid_steps": steps},
         "met": None if steps is None else steps <= 1},
    ]  # fmt: skip


__all__ = ["BACKEND_ALGORITHMS", "HELD_OUT", "MiB", "NCCL_CHUNK_BYTES", "STAT", "analyse", "ddp_analysis", "fit_link_model", "fsdp_analysis",
           "held_out_by_launch", "held_out_by_size", "held_out_by_world_size", "link_columns", "noise", "points", "predict_link",
           "resolution_sentence", "targets"]  # fmt: skip
