"""Bucket-size sweeps and the best bucket cap by simulation, beside the formula's optimum."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sim.errors import CollsimError
from sim.training import overhead as formula
from sim.training.ddp import Prepared, prepare, run_ddp
from sim.training.ddp_scenario import DDPScenario


def sweep_bucket_sizes(scenario: DDPScenario, sizes: Sequence[int], prepared: Prepared | None = None) -> list[dict[str, Any]]:
    """One summary per bucket cap (strategy ``bucketed``); the profile and comm cache are shared."""
    if not sizes:
        raise CollsimError("sweep_bucket_sizes: give at least one bucket size")
    _check_bucketed(scenario, "sweep_bucket_sizes")
    bucketed = scenario.replace(strategy="bucketed")
    prepared = prepared or prepare(bucketed)
    return [run_ddp(bucketed.replace(bucket_cap_bytes=int(size)), prepared).summary() for size in sizes]


def _check_bucketed(scenario: DDPScenario, what: str) -> None:
    if scenario.strategy != "bucketed":
        raise CollsimError(f"{what}: bucket sizes only apply to strategy bucketed, got {scenario.strategy}")


def _compact(summary: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "bucket_cap_bytes",
        "num_buckets",
        "largest_bucket_bytes",
        "step_time_s",
        "overhead_s",
        "exposed_comm_s",
        "formula_overhead_s",
        "formula_simple_overhead_s",
        "grad_bytes",
    )
    return {key: summary[key] for key in keys}


def _grid(low_nbytes: float, high_nbytes: float, points: int) -> list[int]:
    ratio = (high_nbytes / low_nbytes) ** (1.0 / max(1, points - 1))
    return sorted({max(1, int(round(low_nbytes * ratio**k))) for k in range(points)})


def _plateau(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose step time equals the fastest (to 1e-9 relative): caps on one plateau."""
    fastest = min(row["step_time_s"] for row in rows)
    return [row for row in rows if row["step_time_s"] <= fastest * (1 + 1e-9)]


def _best(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Fastest step; on a plateau the fewest all-reduce calls, then the largest cap."""
    return min(_plateau(rows), key=lambda row: (row["num_buckets"], -row["bucket_cap_bytes"]))


def optimize(scenario: DDPScenario, refine_rounds: int = 2, refine_points: int = 17) -> dict[str, Any]:
    """Best bucket cap by simulation (power-of-two sweep, then finer geometric grids around the
    best) beside the formula's ``b* = sqrt(s w o)`` and the exact closed form's optimum."""
    _check_bucketed(scenario, "optimize")
    bucketed = scenario.replace(strategy="bucketed")
    prepared = prepare(bucketed)
    s = prepared.grad_bytes
    smallest = min(param.nbytes for param in prepared.params)
    sizes = [2**k for k in range(max(0, smallest.bit_length() - 1), max(1, (2 * s).bit_length()))]
    rows = [_compact(row) for row in sweep_bucket_sizes(bucketed, sizes, prepared)]
    for _ in range(refine_rounds):
        best = _best(rows)["bucket_cap_bytes"]
        tried = {row["bucket_cap_bytes"] for row in rows}
        grid = [size for size in _grid(best / 2, best * 2, refine_points) if size not in tried]
        rows += [_compact(row) for row in sweep_bucket_sizes(bucketed, grid, prepared)] if grid else []
    rows.sort(key=lambda row: row["bucket_cap_bytes"])
    fits = {"fit": _fit(rows), "fit_exact": _fit(rows, prepared.backward.total_s)}
    return {**_optimum(bucketed, prepared, rows), **fits, "sweep": rows}


def _fit(rows: Sequence[dict[str, Any]], backward_time_s: float | None = None) -> dict[str, Any] | None:
    """o and w of the formula (textbook, or exact with T) fitted to the sweep; None when the
    sweep has too few distinct bucket counts."""
    try:
        return formula.fit_overhead(rows, backward_time_s=backward_time_s).to_dict()
    except CollsimError:
        return None


def _optimum(scenario: DDPScenario, prepared: Prepared, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    best, plateau = _best(rows), _plateau(rows)
    s, t_s = prepared.grad_bytes, prepared.backward.total_s
    o_s, w_Bps = prepared.comm.ow(s)
    best_run = run_ddp(scenario.replace(bucket_cap_bytes=best["bucket_cap_bytes"]), prepared).summary()
    if not math.isfinite(w_Bps):  # communication is free (one rank): the formula has no optimum
        b_formula = n_formula = b_exact = at_formula = None
    else:
        b_formula = formula.optimal_bucket_bytes(s, w_Bps, max(0.0, o_s))
        n_formula = formula.optimal_num_buckets(s, w_Bps, max(0.0, o_s))
        b_exact = s / formula.optimal_num_buckets_uniform(s, t_s, o_s, w_Bps, len(prepared.params))
        at_formula = run_ddp(scenario.replace(bucket_cap_bytes=max(1, int(round(b_formula)))), prepared) if b_formula >= 1 else None
    return {
        **best_run,
        "best_bucket_bytes_sim": best["bucket_cap_bytes"],
        "best_bucket_bytes_range": [min(r["bucket_cap_bytes"] for r in plateau), max(r["bucket_cap_bytes"] for r in plateau)],
        "best_step_time_s": best["step_time_s"],
        "best_overhead_s": best["overhead_s"],
        "best_bucket_bytes_formula": b_formula,
        "best_num_buckets_formula": n_formula,
        "best_bucket_bytes_closed_form": b_exact,
        "step_time_at_formula_s": at_formula.step_time_s if at_formula else None,
        "overhead_at_formula_s": at_formula.overhead_s if at_formula else None,
        "formula_inputs": {"s_bytes": s, "w_Bps": w_Bps, "o_s": o_s, "backward_time_s": t_s},
    }
