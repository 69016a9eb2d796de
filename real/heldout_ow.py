"""Simulated vs measured held out: fit o and w on a part of a group's measurements (some sizes, or
some launches), simulate every size with them, and judge only the other part as predictions.

A split (:data:`SPLITS`) names the part fitted; the rest is predicted. ``none`` fits every point and
predicts nothing: its points are in-sample, never shown as predictions. Each predicted point has
an :data:`LEVEL` (80 %) interval (:data:`INTERVAL_METHOD`) and coverage is the share of predicted
points whose measured value lies inside it. A measured value with no spread (one published
number) has its spread and its "within spread" verdict as None ("n/a"), never "no".
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from real.validate_nccl import LEVEL, Z
from sim.collective.nccl_fit import NOISE
from sim.errors import CollsimError
from sim.hardware.uncertainty import MIN_RESIDUAL

__all__ = ["DEFAULT_SPLIT", "INTERVAL_METHOD", "LEVEL", "SPLITS", "Split", "compare_split", "interval", "split_rows", "splits_for"]

SPLITS = {
    "alternate": "fit on every other size (the smallest, the third, ...), predict the sizes between",
    "small": "fit on the smaller half of the sizes, predict the larger half (extrapolation)",
    "launch": "fit on every launch but the last, predict the last launch at every size",
    "none": "fit on every point, predict none (in-sample: nothing here is a prediction)",
}
DEFAULT_SPLIT = "alternate"
INTERVAL_METHOD = (
    f"{LEVEL:.0%} interval: simulated time x exp(+-{Z:.4f} sigma); sigma^2 = sum over o and w of the larger one-sided change "
    "of ln t when the constant moves one sd (sd from the fit's 95 % interval; one at a time, correlations ignored) + s^2, "
    f"s = rms relative residual of the fitted points, at least {MIN_RESIDUAL} ({NOISE} when the fit has no degrees of freedom)"
)


@dataclass(frozen=True)
class Split:
    """Which rows o and w are fitted on and which are predicted (``run_ids``: None for every launch)."""

    name: str
    fitted: list[dict[str, Any]]
    predicted: list[dict[str, Any]]
    fitted_run_ids: list[str] | None
    predicted_run_ids: list[str] | None

    @property
    def fitted_sizes(self) -> list[int]:
        return sorted({row["size_bytes"] for row in self.fitted})

    @property
    def predicted_sizes(self) -> list[int]:
        return sorted({row["size_bytes"] for row in self.predicted})


def splits_for(rows: list[dict[str, Any]]) -> list[str]:
    """The splits these rows allow: by size with 3 or more sizes, by launch with 2 or more launches
    (each measuring 2 or more sizes), and ``none``; the held-out ones first."""
    sizes = {row["size_bytes"] for row in rows}
    launches = {row.get("run_id") for row in rows}
    allowed = ["alternate", "small"] if len(sizes) >= 3 else []
    if len(launches) >= 2 and len({row["size_bytes"] for row in rows if row.get("run_id") != _last(rows)}) >= 2:
        allowed.append("launch")
    return allowed + ["none"]


def _last(rows: list[dict[str, Any]]) -> Any:
    return sorted({str(row.get("run_id")) for row in rows})[-1]


def split_rows(rows: list[dict[str, Any]], split: str) -> Split:
    """The rows fitted and the rows predicted under ``split``; a split the rows do not allow is refused."""
    allowed = splits_for(rows)
    if split not in allowed:
        raise CollsimError(
            f"split: {split!r} is not possible here; allowed: {', '.join(allowed)} ({'; '.join(f'{s}: {SPLITS[s]}' for s in allowed)})"
        )
    sizes = sorted({row["size_bytes"] for row in rows})
    if split == "launch":
        last = _last(rows)
        fitted = [row for row in rows if str(row.get("run_id")) != last]
        return Split(
            split, fitted, [row for row in rows if str(row.get("run_id")) == last], sorted({str(r["run_id"]) for r in fitted}), [last]
        )
    if split == "none":
        return Split(split, list(rows), [], None, None)
    kept = set(sizes[0::2]) if split == "alternate" else set(sizes[: max(2, len(sizes) // 2)])
    return Split(split, [r for r in rows if r["size_bytes"] in kept], [r for r in rows if r["size_bytes"] not in kept], None, None)


def _sd(interval: tuple[float, float], confidence: float) -> float | None:
    """One sd from a two-sided ``confidence`` interval (None where the fit gave none)."""
    low, high = interval
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return (high - low) / 2 / statistics.NormalDist().inv_cdf(0.5 + confidence / 2)


def interval(fit: Any, size_bytes: int, central_s: float) -> tuple[float, float]:
    """The :data:`LEVEL` interval of a prediction at ``size_bytes`` (:data:`INTERVAL_METHOD`)."""
    o, x = fit.o_s, 1 / fit.w_Bps
    x_interval = tuple(sorted(1 / w if w > 0 else math.inf for w in fit.w_ci_Bps))
    at = o + size_bytes * x
    variance = (max(fit.rms_relative_residual, MIN_RESIDUAL) if fit.points > 2 else NOISE) ** 2
    for sd, moved in ((_sd(fit.o_ci_s, fit.confidence), lambda d: o + d + size_bytes * x),
                      (_sd(x_interval, fit.confidence), lambda d: o + size_bytes * (x + d))):  # fmt: skip
        if not sd:
            continue
        sides = [abs(math.log(moved(sd) / at))] + [abs(math.log(at / moved(-sd)))] * (moved(-sd) > 0)
        variance += max(sides) ** 2
    sigma = math.sqrt(variance)
    return central_s * math.exp(-Z * sigma), central_s * math.exp(Z * sigma)


def _points(report: dict[str, Any], role: str, fit: Any) -> list[dict[str, Any]]:
    rows = []
    for p in report["points"]:
        spread = not p["spread"].startswith("none")  # one published value: no spread to judge against
        low, high = interval(fit, p["size_bytes"], p["simulated_s"]) if role == "predicted" else (None, None)
        rows.append({"size_bytes": p["size_bytes"], "role": role, "measured_s": p["measured_s"], "spread": p["spread"],
                     "measured_lo_s": p["spread_low_s"] if spread else None, "measured_hi_s": p["spread_high_s"] if spread else None,
                     "simulated_s": p["simulated_s"], "relative_error": p["relative_error"], "within": p["within_spread"] if spread else None,
                     "low_s": low, "high_s": high, "covered": None if low is None else low <= p["measured_s"] <= high})  # fmt: skip
    return rows


def compare_split(store: Any, group: dict[str, Any], rows: list[dict[str, Any]], stat: str, algorithm: str, split: str) -> dict[str, Any]:
    """o and w fitted on the split's fitted rows (:func:`real.fit.fit_ow`), the simulator run with them at
    every size (:func:`real.compare.compare_collective`), fitted points in-sample, predicted ones with
    their interval; the fit, the split and a summary with the coverage."""
    from real.compare import compare_collective
    from real.fit import fit_ow, link_bandwidth

    chosen = split_rows(rows, split)
    fit = fit_ow(chosen.fitted, stat, replicates=200)
    if not fit.identifiable:
        raise CollsimError(
            f"time does not grow with size over the fitted sizes: no bandwidth to predict with; choose another split than {split!r}"
        )
    op, ranks = group["op"], int(group["world_size"])
    fields = {"op": op, "algorithm": algorithm, "ranks": ranks, "overhead_s": fit.o_s, "latency_s": 0.0,
              "bandwidth_Bps": link_bandwidth(op, algorithm, ranks, fit.w_Bps)}  # fmt: skip
    extra = {"backend": group["backend"], "device": group.get("device"), "source": group.get("source") or "any"}
    points = []
    for role, sizes, run_ids in (
        ("fitted", chosen.fitted_sizes, chosen.fitted_run_ids),
        ("predicted", chosen.predicted_sizes, chosen.predicted_run_ids),
    ):
        if sizes:
            report = compare_collective(fields, {**extra, "sizes": [str(size) for size in sizes], "run_ids": run_ids}, store, stat)
            points += _points(report, role, fit)
    return {"split": chosen, "fit": fit, "rows": sorted(points, key=lambda p: (p["size_bytes"], p["role"])), "summary": summary(points)}


def summary(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Predicted points: how many, how many inside their interval, the coverage, the median and worst
    |error|, how many within the measured spread (of those with a spread); fitted points: how many and
    their rms error (in-sample, not a prediction)."""
    predicted = [p for p in points if p["role"] == "predicted"]
    fitted = [p for p in points if p["role"] == "fitted"]
    errors = [abs(p["relative_error"]) for p in predicted if p["relative_error"] is not None]
    covered = sum(1 for p in predicted if p["covered"])
    judged = [p for p in predicted if p["within"] is not None]
    return {
        "level": LEVEL, "interval": INTERVAL_METHOD, "predicted": len(predicted), "covered": covered,
        "coverage": covered / len(predicted) if predicted else None,
        "median_abs_error": statistics.median(errors) if errors else None, "max_abs_error": max(errors) if errors else None,
        "within_spread": sum(1 for p in judged if p["within"]), "spread_judged": len(judged),
        "fitted": len(fitted),
        "fitted_rms_error": math.sqrt(statistics.fmean(p["relative_error"] ** 2 for p in fitted)) if fitted else None,
    }  # fmt: skip
