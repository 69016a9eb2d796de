"""The DDP overhead formula, its optimum, and fitting its constants (numpy only, no scipy).

Uniform buckets: ``s`` gradient bytes in ``n_b`` equal buckets, backward time ``T``; a bucket's
gradients take ``c = T / n_b`` to compute and its all-reduce takes ``d = o + s / (n_b w)``.
Bucket ``j`` (1-based) is ready at ``j c`` and the comm stream is serial, so::

    overhead(n_b) = comm end - backward end = max(d, n_b (d - c) + c)

Two special cases, two assumptions about backward:

- backward as fast as the wire, ``c = s / (n_b w)`` (``T = s / w``): ``d - c = o``, so every
  bucket's ``o`` queues behind the one before and all ``n_b`` of them show after backward:
  ``n_b o + s / (n_b w)`` (:func:`overhead_simple`), minimised at ``n_b* = sqrt(s / (w o))``,
  bucket ``b* = sqrt(s w o)``;
- backward slow enough that each bucket's all-reduce ends before the next bucket is ready,
  ``c >= d``, i.e. ``T >= n_b o + s / w`` (:func:`hiding_backward_s`): only the last bucket's
  all-reduce shows, ``o`` once per step: ``o + s / (n_b w)`` (:func:`overhead_last_bucket`,
  the course notes' T), which falls as buckets shrink, with no interior optimum.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim.errors import CollsimError


def _check_positive(**values: float) -> None:
    for name, value in values.items():
        if not (value > 0 and math.isfinite(value)):
            raise CollsimError(f"{name}: must be positive and finite, got {value!r}")


def overhead_uniform(total_nbytes: float, num_buckets: int, backward_time_s: float, o_s: float, w_Bps: float) -> float:
    """Comm end minus backward end for ``num_buckets`` equal buckets (the exact closed form)."""
    _check_positive(num_buckets=num_buckets, w=w_Bps)
    compute_s = backward_time_s / num_buckets
    comm_s = o_s + total_nbytes / (num_buckets * w_Bps)
    return max(comm_s, num_buckets * (comm_s - compute_s) + compute_s)


def overhead_simple(total_nbytes: float, num_buckets: float, o_s: float, w_Bps: float) -> float:
    """The textbook special case ``n_b o + s / (n_b w)`` (assumes c = s / (n_b w))."""
    _check_positive(num_buckets=num_buckets, w=w_Bps)
    return num_buckets * o_s + total_nbytes / (num_buckets * w_Bps)


def overhead_last_bucket(total_nbytes: float, num_buckets: float, o_s: float, w_Bps: float) -> float:
    """``o + s / (n_b w)``: only the last bucket's all-reduce shows (the course notes' T), exact
    when backward takes at least :func:`hiding_backward_s`."""
    _check_positive(num_buckets=num_buckets, w=w_Bps)
    return o_s + total_nbytes / (num_buckets * w_Bps)


def hiding_backward_s(total_nbytes: float, num_buckets: float, o_s: float, w_Bps: float) -> float:
    """``n_b o + s / w``: the least backward time at which each of ``num_buckets`` equal buckets'
    all-reduces ends before the next bucket is ready (``T / n_b >= o + s / (n_b w)``), so that
    :func:`overhead_uniform` is :func:`overhead_last_bucket`."""
    _check_positive(num_buckets=num_buckets, w=w_Bps)
    return num_buckets * o_s + total_nbytes / w_Bps


def optimal_bucket_bytes(s: float, w: float, o: float) -> float:
    """``b* = sqrt(s w o)``: bucket bytes minimising ``n_b o + s / (n_b w)``."""
    _check_positive(s=s, w=w)
    if o < 0:
        raise CollsimError(f"o: must be >= 0, got {o!r}")
    return math.sqrt(s * w * o)


def optimal_num_buckets(s: float, w: float, o: float) -> float:
    """``n_b* = sqrt(s / (w o))`` (infinite when o = 0: more buckets always help then)."""
    _check_positive(s=s, w=w)
    return math.inf if o <= 0 else math.sqrt(s / (w * o))


def optimal_num_buckets_uniform(s: float, backward_time_s: float, o: float, w: float, max_buckets: int) -> int:
    """The whole number of equal buckets in 1..max_buckets minimising the exact closed form."""
    counts = range(1, max(1, max_buckets) + 1)
    return min(counts, key=lambda n: (overhead_uniform(s, n, backward_time_s, o, w), n))


def fit_ow(sizes_nbytes: Sequence[float], times_s: Sequence[float]) -> tuple[float, float]:
    """Least-squares ``t(n) = o + n / w`` through (size, time) points: returns (o_s, w_Bps)."""
    sizes = np.asarray(sizes_nbytes, dtype=float)
    times = np.asarray(times_s, dtype=float)
    if len(sizes) < 2 or np.ptp(sizes) == 0:
        raise CollsimError("fit: need at least two different message sizes to fit o and w")
    design = np.column_stack([np.ones_like(sizes), sizes])
    (o_s, inverse_w), *_ = np.linalg.lstsq(design, times, rcond=None)
    return float(o_s), float(1.0 / inverse_w) if inverse_w > 0 else math.inf


# Two-sided 95% Student-t quantiles by degrees of freedom (normal beyond 120).
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
         11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
         21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
         40: 2.021, 60: 2.000, 120: 1.980}  # fmt: skip


def t_quantile_975(dof: int) -> float:
    """The 97.5% quantile of Student's t (for 95% intervals); conservative between table rows."""
    if dof < 1:
        return math.inf
    eligible = [key for key in _T975 if key <= dof]
    return _T975[max(eligible)] if dof <= 120 else 1.960


@dataclass(frozen=True)
class OverheadFit:
    """``overhead = n_b o + s / (n_b w)`` fitted to points, with 95% intervals."""

    o: float  # seconds per call
    w: float  # bytes per second (inf when the fitted 1/w <= 0)
    intervals: dict[str, tuple[float, float]]  # "o", "w": 95% confidence intervals
    r2: float  # fraction of the overhead's variance the formula explains
    rmse_s: float
    points: int
    residuals_s: tuple[float, ...] = field(repr=False, default=())

    def predict(self, num_buckets: float, total_nbytes: float) -> float:
        return num_buckets * self.o + total_nbytes / (num_buckets * self.w)

    def to_dict(self) -> dict[str, Any]:
        return {
            "o_s": self.o,
            "w_Bps": self.w,
            "intervals": {k: list(v) for k, v in self.intervals.items()},
            "r2": self.r2,
            "rmse_s": self.rmse_s,
            "points": self.points,
        }


def _regressors(points: Iterable[Any], total_nbytes: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n_b, s / n_b, overhead) columns from summary mappings or (bucket_bytes, overhead_s) pairs."""
    counts, sizes, overheads = [], [], []
    for point in points:
        if isinstance(point, Mapping):
            count, total, overhead = float(point["num_buckets"]), float(point["grad_bytes"]), float(point["overhead_s"])
        else:
            if total_nbytes is None:
                raise CollsimError("fit: (bucket_bytes, overhead_s) pairs need total_nbytes (the model's gradient bytes)")
            bucket_nbytes, overhead = float(point[0]), float(point[1])
            _check_positive(bucket_bytes=bucket_nbytes)
            count, total = max(1.0, total_nbytes / bucket_nbytes), float(total_nbytes)
        counts.append(count)
        sizes.append(total / count)
        overheads.append(overhead)
    return np.array(counts), np.array(sizes), np.array(overheads)


def _solve(design: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Least squares with the coefficients' covariance; returns (coefficients, stderr, dof)."""
    if len(target) < 3 or np.linalg.matrix_rank(design) < 2:
        raise CollsimError("fit: need at least three points with different bucket counts to fit o and w with uncertainty")
    scale = np.linalg.norm(design, axis=0)  # columns differ by ~1e10 (counts vs bytes)
    scaled = design / scale
    coefficients, *_ = np.linalg.lstsq(scaled, target, rcond=None)
    residuals = target - scaled @ coefficients
    dof = len(target) - 2
    covariance = float(residuals @ residuals) / dof * np.linalg.inv(scaled.T @ scaled)
    return coefficients / scale, np.sqrt(np.maximum(np.diag(covariance), 0.0)) / scale, dof


def _exact_system(
    counts: np.ndarray, sizes: np.ndarray, overheads: np.ndarray, backward_time_s: float, o: float, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """The closed form is linear in (o, 1/w) once each point's regime is known:
    d >= c: overhead + T - T/n_b = n_b o + s/w;  d < c: overhead = o + (s/n_b)/w."""
    totals = counts * sizes
    comm_bound = o + beta * sizes >= backward_time_s / counts
    design = np.where(comm_bound[:, None], np.column_stack([counts, totals]), np.column_stack([np.ones_like(counts), sizes]))
    target = np.where(comm_bound, overheads + backward_time_s - backward_time_s / counts, overheads)
    return design, target


def _fit_coefficients(
    counts: np.ndarray, sizes: np.ndarray, overheads: np.ndarray, backward_time_s: float | None
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """(o, 1/w), their standard errors, dof and the predicted overheads."""
    design = np.column_stack([counts, sizes])
    coefficients, stderr, dof = _solve(design, overheads)
    if backward_time_s is None:
        return coefficients, stderr, dof, design @ coefficients
    for _ in range(50):  # alternate regime assignment and least squares until the regimes settle
        system = _exact_system(counts, sizes, overheads, backward_time_s, *coefficients)
        updated, stderr, dof = _solve(*system)
        settled = np.allclose(updated, coefficients, rtol=1e-12, atol=0.0)
        coefficients = updated
        if settled:
            break
    predicted = np.array(
        [
            overhead_uniform(n * b, n, backward_time_s, coefficients[0], 1.0 / coefficients[1]) if coefficients[1] > 0 else np.nan
            for n, b in zip(counts, sizes)
        ]
    )
    return coefficients, stderr, dof, predicted


def fit_overhead(points: Iterable[Any], total_nbytes: float | None = None, backward_time_s: float | None = None) -> OverheadFit:
    """Fit o and w of the overhead formula by least squares.

    Points are sweep summaries (mappings with ``num_buckets``, ``grad_bytes``, ``overhead_s``),
    measured or simulated, or ``(bucket_bytes, overhead_s)`` pairs with ``total_nbytes`` given
    (then ``n_b = s / b`` as the formula assumes). Without ``backward_time_s`` the model is the
    textbook ``n_b o + s / (n_b w)``; with it, the exact ``max(d, n_b (d - c) + c)``. Intervals
    come from the covariance and Student's t; ``w``'s is the inverse of ``1/w``'s (inf where
    that reaches 0). ``r2`` below 0 means the formula explains the points worse than their mean.
    """
    counts, sizes, overheads = _regressors(points, total_nbytes)
    coefficients, stderr, dof, predicted = _fit_coefficients(counts, sizes, overheads, backward_time_s)
    residuals = overheads - predicted
    quantile = t_quantile_975(dof)
    o, beta = float(coefficients[0]), float(coefficients[1])
    beta_low, beta_high = beta - quantile * stderr[1], beta + quantile * stderr[1]
    spread = float(((overheads - overheads.mean()) ** 2).sum())
    squared = float(np.nansum(residuals**2))
    return OverheadFit(
        o=o,
        w=1.0 / beta if beta > 0 else math.inf,
        intervals={
            "o": (o - quantile * stderr[0], o + quantile * stderr[0]),
            "w": (1.0 / beta_high if beta_high > 0 else math.inf, 1.0 / beta_low if beta_low > 0 else math.inf),
        },
        r2=1.0 - squared / spread if spread > 0 else 1.0,
        rmse_s=math.sqrt(squared / len(overheads)),
        points=len(overheads),
        residuals_s=tuple(float(r) for r in residuals),
    )
