"""Fit the model's constants to measurements: (o, w), (latency, bandwidth), DDP overhead, slowdown.

``t(n) = o + n / w`` (DESIGN §4) is fitted per (source, backend, device, op, world size) by
weighted least squares that minimises the **relative** error, sum(((o + n/w) - t) / t)^2, so
4 KiB calls weigh as much as 64 MiB ones. ``t`` is a chosen statistic of the per-iteration
times: ``mean`` by default (a training step sums many calls, so the mean is what adds up),
``median``, ``p10`` or ``min``.

Intervals (default 95%):

- ``bootstrap``: when rows carry their raw per-iteration times, each replicate resamples the
  iterations of every point (and, with several launches, the launches themselves), recomputes
  the statistic and refits; the interval is the percentile range of the replicates. It covers
  the measurement noise, not a wrong model: read ``rms_relative_residual`` for that.
- ``wls-t``: without raw times (imported or published tables), the usual least-squares
  standard errors with Student's t on m - 2 degrees of freedom.

Every constant is bounded to be non-negative (``scipy.optimize.lsq_linear``): a time cannot have
a negative overhead, latency or inverse bandwidth. A constant pinned at its bound is reported as 0;
a fit that explains nothing (DDP overhead with r2 < 0.5, fewer points than constants, a latency
from one world size) is reported as "not identifiable from these points" rather than printed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from sim.algorithms.registry import BackendChoice, algorithm_spec, backend_algorithms, backend_choice
from sim.calibration import calibrated_fields, load_calibration  # noqa: F401  (re-exported: real writes, sim reads)
from sim.collective.analytic import busbw_factor, with_forms
from sim.errors import CollsimError

STATS = {"mean": "time_s", "median": "median_s", "p10": "p10_s", "p90": "p90_s", "min": "min_s"}


def _statistic(values: np.ndarray, stat: str, axis: int = -1) -> np.ndarray:
    if stat == "mean":
        return values.mean(axis=axis)
    if stat == "median":
        return np.median(values, axis=axis)
    if stat == "min":
        return values.min(axis=axis)
    return np.percentile(values, {"p10": 10, "p90": 90}[stat], axis=axis)


@dataclass(frozen=True)
class OWFit:
    """t(n) = o + n / w with intervals; ``key`` names the group it was fitted on."""

    o_s: float
    w_Bps: float
    o_ci_s: tuple[float, float]
    w_ci_Bps: tuple[float, float]
    stat: str
    points: int
    sizes_bytes: tuple[int, ...]
    method: str
    confidence: float
    rms_relative_residual: float
    max_relative_residual: float
    key: dict[str, Any] = field(default_factory=dict)

    def predict(self, size_bytes: float) -> float:
        return self.o_s + size_bytes / self.w_Bps

    @property
    def identifiable(self) -> bool:
        """False when time does not grow with size here (w = inf: no bandwidth to fit)."""
        return math.isfinite(self.w_Bps)

    @property
    def busbw_Bps(self) -> float | None:
        """w times the all-reduce bus factor, where the op and world size are known."""
        op, p = self.key.get("op"), self.key.get("world_size")
        if not p:
            return None
        return self.w_Bps * busbw_factor(op or "all_reduce", int(p))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["o_ci_s"], data["w_ci_Bps"], data["sizes_bytes"] = list(self.o_ci_s), list(self.w_ci_Bps), list(self.sizes_bytes)
        data["busbw_Bps"] = self.busbw_Bps
        data["identifiable"] = self.identifiable
        return plain({**self.key, **{k: v for k, v in data.items() if k != "key"}})


def bounded_lstsq(design: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Least squares with every coefficient >= 0 (``scipy.optimize.lsq_linear``, BVLS).

    Columns are scaled to unit norm first (they mix seconds and bytes); all-zero columns get 0.
    """
    from scipy.optimize import lsq_linear

    norms = np.linalg.norm(design, axis=0)
    used = norms > 0
    coefficients = np.zeros(design.shape[1])
    if used.any():
        result = lsq_linear(design[:, used] / norms[used], target, bounds=(0.0, np.inf), method="bvls")
        coefficients[used] = result.x / norms[used]
    return coefficients


def solve_ow(sizes: np.ndarray, times: np.ndarray) -> tuple[float, float]:
    """Least squares for (o >= 0, x = 1/w >= 0) minimising relative error; returns (o, x)."""
    design = np.column_stack([1.0 / times, sizes / times])
    o, x = bounded_lstsq(design, np.ones_like(times))
    return float(o), float(x)


def _points(rows: list[dict[str, Any]], stat: str) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    if stat not in STATS:
        raise CollsimError(f"--stat: unknown {stat!r}; allowed: {', '.join(STATS)}")
    used = [row for row in rows if row.get("size_bytes") and row_time(row, stat) is not None]
    if len({row["size_bytes"] for row in used}) < 2:
        raise CollsimError(f"fit: need measurements at 2 or more sizes > 0 with a {stat} time, got {len(used)} point(s)")
    sizes = np.array([row["size_bytes"] for row in used], dtype=float)
    times = np.array([row_time(row, stat) for row in used], dtype=float)
    return sizes, times, used


def row_time(row: dict[str, Any], stat: str) -> float | None:
    """A measured row's time as the statistic ``stat`` (from its raw iteration times when it has
    them, else from its summary column); None when the row lacks that statistic."""
    times = row.get("times_s")
    if times:
        return float(_statistic(np.asarray(times, dtype=float), stat))
    value = row.get(STATS[stat])
    return None if value is None else float(value)


def _residuals(o: float, x: float, sizes: np.ndarray, times: np.ndarray) -> np.ndarray:
    return (o + sizes * x - times) / times


def fit_ow(rows: Iterable[dict[str, Any]], stat: str = "mean", confidence: float = 0.95, replicates: int = 400, seed: int = 0,
           key: dict[str, Any] | None = None) -> OWFit:  # fmt: skip
    """Fit ``t = o + n/w`` to benchmark rows of one (backend, op, world size); see the module doc.

    Args:
        rows: dicts with ``size_bytes`` and either ``times_s`` (raw per-iteration times) or the
            statistic's column (``time_s`` for mean, ``median_s``, ``p10_s``...).
        stat: mean | median | p10 | p90 | min.
        confidence: interval level.
        replicates: bootstrap replicates (raw times present); 0 gives the point estimate only.
    """
    rows = list(rows)
    sizes, times, used = _points(rows, stat)
    o, x = solve_ow(sizes, times)
    residuals = _residuals(o, x, sizes, times)
    if replicates <= 0:  # point estimate only
        o_ci, x_ci, method = (math.nan, math.nan), (math.nan, math.nan), "none"
    elif all(len(row.get("times_s") or []) >= 2 for row in used):
        o_ci, x_ci = _bootstrap(used, stat, confidence, replicates, seed)
        method = "bootstrap"
    else:
        o_ci, x_ci = _wls_interval(sizes, times, o, x, confidence)
        method = "wls-t"
    w_ci = (
        tuple(sorted((1 / x_ci[1] if x_ci[1] > 0 else math.inf, 1 / x_ci[0] if x_ci[0] > 0 else math.inf)))
        if x_ci[0] == x_ci[0]
        else (math.nan, math.nan)
    )
    return OWFit(
        o_s=o,
        w_Bps=1 / x if x > 0 else math.inf,
        o_ci_s=o_ci,
        w_ci_Bps=w_ci,
        stat=stat,
        points=len(used),
        sizes_bytes=tuple(sorted({int(size) for size in sizes})),
        method=method,
        confidence=confidence,
        rms_relative_residual=float(np.sqrt(np.mean(residuals**2))),
        max_relative_residual=float(np.max(np.abs(residuals))),
        key=dict(key or {}),
    )


def _bootstrap(
    rows: list[dict[str, Any]], stat: str, confidence: float, replicates: int, seed: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Percentile intervals for (o, x): resample launches, then iterations within each point."""
    rng = np.random.default_rng(seed)
    by_run: dict[Any, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_run[row.get("run_id")].append(index)
    runs = list(by_run.values())
    samples = [np.asarray(row["times_s"], dtype=float) for row in rows]
    sizes = np.array([row["size_bytes"] for row in rows], dtype=float)
    estimates = []
    for _ in range(replicates):
        chosen = [runs[i] for i in rng.integers(0, len(runs), len(runs))] if len(runs) > 1 else runs
        indices = [index for run in chosen for index in run]
        times = np.array([_statistic(rng.choice(samples[i], samples[i].size), stat) for i in indices])
        if len(set(sizes[indices])) < 2:
            continue
        estimates.append(solve_ow(sizes[indices], times))
    values = np.array(estimates)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail], axis=0)
    return (float(low[0]), float(high[0])), (float(low[1]), float(high[1]))


def _t_quantile(confidence: float, dof: int) -> float:
    try:
        from scipy.stats import t

        return float(t.ppf(0.5 + confidence / 2, dof))
    except ImportError:  # normal approximation
        from statistics import NormalDist

        return NormalDist().inv_cdf(0.5 + confidence / 2)


def _wls_interval(
    sizes: np.ndarray, times: np.ndarray, o: float, x: float, confidence: float
) -> tuple[tuple[float, float], tuple[float, float]]:
    dof = len(times) - 2
    if dof < 1:
        return (math.nan, math.nan), (math.nan, math.nan)
    design = np.column_stack([1.0 / times, sizes / times])
    residuals = 1.0 - design @ np.array([o, x])
    covariance = float(residuals @ residuals) / dof * np.linalg.inv(design.T @ design)
    half = _t_quantile(confidence, dof) * np.sqrt(np.diag(covariance))
    return (max(0.0, o - half[0]), o + half[0]), (max(0.0, x - half[1]), x + half[1])


GROUP_KEYS = ("source", "backend", "device", "op", "world_size")


def group_rows(rows: Iterable[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    """Rows by (source, backend, device, op, world size); barrier (size 0) is left out."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row.get("size_bytes"):
            groups[tuple(row.get(key) for key in GROUP_KEYS)].append(row)
    return dict(sorted(groups.items(), key=lambda item: tuple(str(part) for part in item[0])))


def fit_groups(rows: Iterable[dict[str, Any]], stat: str = "mean", confidence: float = 0.95, replicates: int = 400) -> list[OWFit]:
    """One ``fit_ow`` per group with two or more sizes."""
    fits = []
    for key, members in group_rows(rows).items():
        if len({row["size_bytes"] for row in members}) >= 2:
            fits.append(fit_ow(members, stat, confidence, replicates, key=dict(zip(GROUP_KEYS, key))))
    return fits


def fit_ow_piecewise(rows: Iterable[dict[str, Any]], stat: str = "mean", replicates: int = 200) -> dict[str, Any] | None:
    """Two (o, w) pieces split at the size that minimises the total relative squared error.

    Each piece needs 3 or more sizes (a 2-point piece fits exactly and says nothing), so this
    returns None with fewer than 6 sizes. ``improvement`` is the one-piece cost over the
    two-piece cost (>1 means the split explains the data better).
    """
    rows = list(rows)
    sizes, times, used = _points(rows, stat)
    distinct = sorted(set(sizes))
    if len(distinct) < 6:
        return None
    best = None
    for split in distinct[3:-2]:
        low, high = sizes < split, sizes >= split
        cost = sum(float(np.sum(_residuals(*solve_ow(sizes[part], times[part]), sizes[part], times[part]) ** 2)) for part in (low, high))
        if best is None or cost < best[0]:
            best = (cost, split)
    one_piece = float(np.sum(_residuals(*solve_ow(sizes, times), sizes, times) ** 2))
    cost, split = best
    below = fit_ow([row for row in used if row["size_bytes"] < split], stat, replicates=replicates)
    above = fit_ow([row for row in used if row["size_bytes"] >= split], stat, replicates=replicates)
    return {
        "breakpoint_bytes": int(split),
        "below": below.to_dict(),
        "above": above.to_dict(),
        "improvement": one_piece / cost if cost > 0 else math.inf,
    }


# ----------------------------------------------------------------------------- (a, B) per algorithm


def algorithm_terms(op: str, algorithm: str, world_size: int) -> tuple[float, float] | None:
    """(latency terms L(p), bandwidth factor F(p)) of an algorithm, read off the closed form in
    its record (``AlgorithmSpec.terms``): o_p = o_call + L(p) a and w_p = B / F(p). None where
    the algorithm has no closed form."""
    spec = algorithm_spec(op, algorithm)
    return spec.terms(world_size) if spec else None


# (op, algorithm) of every algorithm with (o, w) <-> (a, B) terms: those with a closed form
ALGORITHM_TERMS = tuple((spec.op, spec.name) for spec in with_forms())


def _with_terms(op: str) -> str:
    return ", ".join(name for o, name in ALGORITHM_TERMS if o == op) or "none"


# rows that name no backend (or one no record names) are fitted as if gloo ran them; the results say so
ASSUMED_BACKEND = "gloo"


def fitted_model(backend: str | None, op: str) -> tuple[BackendChoice | None, str]:
    """What the fit assumes ran: the record of what ``backend`` runs for ``op``
    (:func:`sim.algorithms.registry.backend_choice`, the answer real.validate and the gloo
    preset read) and the backend whose record it is (:data:`ASSUMED_BACKEND` where the rows
    name none). See :class:`sim.algorithms.registry.BackendChoice` for what the measured size
    means there: gloo's reduce_scatter is fitted as the all-reduce of the input it runs."""
    known = backend in backend_algorithms()
    return backend_choice(backend if known else ASSUMED_BACKEND, op), backend if known else ASSUMED_BACKEND


def link_bandwidth(op: str, algorithm: str, world_size: int, w_Bps: float) -> float:
    """The link bandwidth B that gives algorithm bandwidth ``w`` on ``switch(p)``."""
    terms = algorithm_terms(op, algorithm, world_size)
    if terms is None:
        raise CollsimError(f"algorithm: {op}/{algorithm} has no closed form, so no link bandwidth; use one of {_with_terms(op)}")
    return w_Bps * terms[1]


def alpha_beta_model(backend: str | None, op: str, algorithm: str | None = None) -> dict[str, Any] | None:
    """The closed form an (a, B) fit of ``op`` reads: ``algorithm`` for ``op`` where given, else the
    record of what the backend runs (:func:`fitted_model`). ``algorithm`` is what the simulator
    runs for ``op`` with the result, ``model`` the record ("op/algorithm"), ``model_backend`` whose
    record it is, ``line`` p -> (L, F); None where there is no closed form."""
    if algorithm is not None:
        spec = algorithm_spec(op, algorithm)
        if spec is None or spec.closed_form is None:
            return None
        return {"algorithm": algorithm, "model": f"{op}/{algorithm}", "model_backend": backend, "line": spec.terms}
    choice, model_backend = fitted_model(backend, op)
    if choice is None or choice.spec.closed_form is None or choice.simulated_algorithm is None:
        return None
    return {"algorithm": choice.simulated_algorithm, "model": choice.model, "model_backend": model_backend, "line": choice.line}


def fit_alpha_beta(fits: list[OWFit], algorithm: str | None = None) -> list[dict[str, Any]]:
    """(call overhead, latency a, bandwidth B) per (source, backend, device, op) across world sizes.

    For each p: ``o_p = o_call + L(p) a`` and ``w_p = B / F(p)`` (ring all-reduce: L = 2(p-1),
    F = 2(p-1)/p), L and F from the record of what the backend runs (:func:`alpha_beta_model`;
    gloo's reduce_scatter: all_reduce/ring). B is the mean of the per-p values (their spread is
    reported); a and o_call come from a straight-line fit of o_p on L(p), so they need two or
    more world sizes (else a = 0).
    """
    grouped: dict[tuple, list[OWFit]] = defaultdict(list)
    for fit in fits:
        grouped[tuple(fit.key.get(k) for k in ("source", "backend", "device", "op"))].append(fit)
    results = []
    for (source, backend, device, op), members in grouped.items():
        model = alpha_beta_model(backend, op, algorithm)
        if model is None:
            continue
        ps = np.array([fit.key["world_size"] for fit in members], dtype=float)
        terms = [model["line"](int(p)) for p in ps]
        bandwidths = np.array([fit.w_Bps * factor for fit, (_, factor) in zip(members, terms)])
        overheads = np.array([fit.o_s for fit in members])
        identifiable = len(set(ps)) >= 2
        if identifiable:  # o_p = o_call + L(p) a with o_call, a >= 0
            latency, call = bounded_lstsq(np.column_stack([[steps for steps, _ in terms], np.ones_like(ps)]), overheads)
        else:  # one world size cannot separate a from o_call: a is reported as not identifiable
            latency, call = 0.0, float(max(0.0, overheads.mean()))
        results.append({
            "source": source, "backend": backend, "device": device, "op": op, "algorithm": model["algorithm"], "model": model["model"],
            "model_backend": model["model_backend"], "world_sizes": sorted(int(p) for p in ps),
            "call_overhead_s": float(call), "latency_s": float(latency), "bandwidth_Bps": float(bandwidths.mean()),
            "bandwidth_per_world_size_Bps": {int(p): float(b) for p, b in zip(ps, bandwidths)}, "latency_identifiable": identifiable,
        })  # fmt: skip
    return results


# ----------------------------------------------------------------------------- DDP


def compute_slowdown(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Backward time with communication running beside it over the no-comm backward of the same
    round, per config: median and p10/p90 over rounds (1.0 = no slowdown)."""
    by_config: dict[str, list[float]] = defaultdict(list)
    for step in steps:
        if step.get("baseline_backward_s") and step.get("backward_s"):
            by_config[step["config"]].append(step["backward_s"] / step["baseline_backward_s"])
    from real.bench import percentile

    return [
        {
            "config": config,
            "median": float(np.median(ratios)),
            "p10": percentile(ratios, 10),
            "p90": percentile(ratios, 90),
            "rounds": len(ratios),
        }
        for config, ratios in sorted(by_config.items())
    ]


def fit_bucket_overhead(steps: list[dict[str, Any]], replicates: int = 400, seed: int = 0) -> dict[str, Any] | None:
    """Fit ``overhead(n_b) = n_b o + s / (n_b w)`` (sim.training.overhead) to the bucketed steps' measured
    overhead (step minus the paired no-comm step, median per config) against their bucket count.

    o and 1/w are bounded to be >= 0 (``bounded_lstsq``); 95% intervals come from a bootstrap over
    each config's rounds. ``identifiable`` is False (and no optimum is given) when the formula
    explains less than half the variance (r2 < 0.5) or there are fewer than 3 bucket counts.
    None with fewer than 3 bucket sizes.
    """
    points: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for step in steps:
        if step.get("strategy") == "bucketed" and step.get("overhead_s") is not None and step.get("comm_calls"):
            points[step["config"]].append(step)
    if len(points) < 3:
        return None
    table = [
        {"config": config, "bucket_bytes": members[0]["bucket_bytes"], "num_buckets": members[0]["comm_calls"], "grad_bytes": members[0]["comm_bytes"],
         "overhead_s": float(np.median([m["overhead_s"] for m in members])), "rounds": len(members)}
        for config, members in sorted(points.items())
    ]  # fmt: skip
    total = float(table[0]["grad_bytes"])
    counts = np.array([row["num_buckets"] for row in table], dtype=float)
    samples = [np.array([m["overhead_s"] for m in points[row["config"]]], dtype=float) for row in table]
    fitted = fit_overhead_bounded(counts, np.array([row["overhead_s"] for row in table]), total)
    rng = np.random.default_rng(seed)
    replicas = [
        fit_overhead_bounded(counts, np.array([np.median(rng.choice(s, s.size)) for s in samples]), total) for _ in range(replicates)
    ]
    o_low, o_high = np.percentile([r["o_s"] for r in replicas], [2.5, 97.5])
    x_values = [1 / r["w_Bps"] if r["w_Bps"] > 0 else math.inf for r in replicas]
    x_low, x_high = np.percentile(x_values, [2.5, 97.5])
    w_interval = [1 / x_high if x_high > 0 else math.inf, 1 / x_low if x_low > 0 else math.inf]
    identifiable = len(set(counts)) >= 3 and fitted["r2"] >= 0.5
    result = {**fitted, "intervals": {"o": [float(o_low), float(o_high)], "w": w_interval}, "points": table, "identifiable": identifiable}
    if identifiable and fitted["o_s"] > 0 and math.isfinite(fitted["w_Bps"]):
        from sim.training.overhead import optimal_bucket_bytes, optimal_num_buckets

        result["optimal_buckets"] = optimal_num_buckets(total, fitted["w_Bps"], fitted["o_s"])
        result["optimal_bucket_bytes"] = optimal_bucket_bytes(total, fitted["w_Bps"], fitted["o_s"])
    return result


def fit_overhead_bounded(num_buckets: np.ndarray, overheads_s: np.ndarray, total_bytes: float) -> dict[str, Any]:
    """``overhead = n_b o + (s / n_b) x`` with o, x = 1/w >= 0: o_s, w_Bps, r2, rmse_s."""
    design = np.column_stack([num_buckets, total_bytes / num_buckets])
    o, x = bounded_lstsq(design, overheads_s)
    residuals = design @ np.array([o, x]) - overheads_s
    spread = float(np.sum((overheads_s - overheads_s.mean()) ** 2))
    r2 = 1.0 - float(residuals @ residuals) / spread if spread > 0 else 0.0
    return {
        "o_s": float(o),
        "w_Bps": 1 / x if x > 0 else math.inf,
        "r2": r2,
        "rmse_s": float(np.sqrt(np.mean(residuals**2))),
        "points_used": len(overheads_s),
    }


# ----------------------------------------------------------------------------- calibration file


def calibration(
    fits: list[OWFit], alpha_beta: list[dict[str, Any]], ddp: dict[str, Any] | None = None, source: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The calibration document ``collsim sim ... --calibration FILE`` reads (see docs/real.md)."""
    from real.bench import now_utc

    entries = []
    for fit in fits:
        entry = fit.to_dict()
        scenario = fitted_scenario(fit)
        if scenario:
            entry["scenario"] = scenario
        entries.append(entry)
    return {"kind": "collsim-calibration", "version": 1, "created_at": now_utc(), "source": source or {}, "collectives": entries,
            "alpha_beta": alpha_beta, "ddp": ddp or {}}  # fmt: skip


def fitted_scenario(fit: OWFit) -> dict[str, Any] | None:
    """The scenario whose run reproduces a fit's o + n/w: on switch(p) with a = 0, the record of
    what the backend ran (:func:`fitted_model`; gloo's reduce_scatter: an all-reduce of the input)
    at the link bandwidth B = w F. Exactly o + n/w for an unchunked record; a chunked one (NCCL's
    broadcast) gets the chunks of the largest size fitted and follows o + n/w at large sizes."""
    op, p = fit.key.get("op"), fit.key.get("world_size")
    choice, _ = fitted_model(fit.key.get("backend"), str(op))
    bandwidth = choice.link_bandwidth(int(p), fit.w_Bps) if choice and p and math.isfinite(fit.w_Bps) else None
    if bandwidth is None:
        return None
    chunks = choice.chunks(max(fit.sizes_bytes))
    return {"op": choice.spec.op, "algorithm": choice.spec.name, "ranks": int(p), "topology": "switch", "overhead_s": fit.o_s,
            "latency_s": 0.0, "bandwidth_Bps": bandwidth, **({"chunks": chunks} if chunks > 1 else {})}  # fmt: skip


def plain(value: Any) -> Any:
    """JSON/YAML-safe copy: numpy scalars to Python, tuples to lists, inf/nan to None."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def calibration_text(document: dict[str, Any], path: str) -> str:
    """A calibration document as the file ``path`` holds it: YAML for .yaml/.yml, else JSON."""
    import json

    import yaml

    document = plain(document)
    return yaml.safe_dump(document, sort_keys=False) if str(path).endswith((".yaml", ".yml")) else json.dumps(document, indent=2)


def write_calibration(document: dict[str, Any], path: str) -> None:
    with open(path, "w") as handle:
        handle.write(calibration_text(document, path))
