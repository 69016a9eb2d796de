"""How far to trust a time predicted on a hardware preset: an 80 % interval beside every one.

The model is exact as a model; what it does not know is how a real cluster of that kind spreads
around it. Two cases, each with its basis in words (``Interval.basis``):

- **a shipped preset** (fitted, if at all, on one published cluster of its kind, never yours),
  per size regime:

  - where the preset was fitted on calibration logs of its own (its ``fitted:`` block, not
    ``taken_from``), the op is one those logs ran (all_reduce) and the node count one they ran:
    :data:`LOO_HALF_WIDTH`, the 80 % conformal bound on the leave-one-log-out errors (each
    calibration log predicted by a fit that never saw it, ``python bench/nccl_logs.py
    --leave-one-out``), :data:`METHOD` and :func:`conformal_half_width` say how: the situation of
    a user's cluster of that kind at that scale;
  - elsewhere (a preset with no log of its own, another op, another node count): the spread of
    published nccl-tests runs of clusters this project was never fitted on. Issue 33 measured it
    on 115 points (H100 clusters of 2-128 nodes, H200, B200, GB200 NVL72, A100 RoCE): median
    |busbw error| 61 % below 1 MiB, 18 % from 1 to 256 MiB, 10 % from 256 MiB: taken as
    log-normal (1.28 / 0.674 = 1.9 times the median |log error|), x/÷ 2.47, 1.37 and 1.20 (one
    node included: the published points do not tell one node apart, so its interval is not
    narrowed on a guess). Only those medians are published, not the points, so no conformal
    bound can be taken of them. Never narrower than :data:`LOO_HALF_WIDTH` (x/÷ 1.44 and 1.26
    from 1 MiB): a preset with no log of the configuration knows less than a fit predicting a log
    it never saw, which is what that bound measures (and what a calibrated preset gets at a
    configuration its fit did not run, :func:`unseen_half_width`).
- **calibrated** (your own preset file, written by ``collsim hardware fit -o`` on your cluster's
  logs, with its own ``fitted:`` block): the fit's residual spread
  (``rms_log_error``, never taken below 5 %, the spread of nccl-tests' own two timings of a size),
  1.28 sigma for 80 %, at a configuration (op, node count) one of the fitted logs ran (each
  ``logs`` entry names them: ``FILE (all_reduce, 2 nodes)``). Elsewhere (another op, another
  node count, an entry that does not name its op, a training step's mix of ops) the residual
  spread says nothing about the model's structural error there, so :func:`unseen_half_width`
  floors the half-width: max(the fit's own, :data:`LOO_HALF_WIDTH` at that size), the bound of
  exactly that situation, a fit on some logs predicting a log it never saw (max, not a sum: those
  held-out scores already hold the fit's own uncertainty); where that bound is inf (too few
  logs), the published spread below. ``collsim validate nccl-tests`` floors its predictions by the
  same function (real.validate_nccl).

Why a conformal bound and not a normal one: the held-out errors are heavy-tailed (a log off by
+63 % beside logs off by 2 %) and come in six logs of 1 to 17 points each, whose points are not
independent (one cluster, one fit); 1.28 sigma with sigma from the median |log error| assumes a
normal and counts points, and covered 78, 67 and 67 % of points that did not set it. The
hierarchical split-conformal quantile (Lee, Barber and Willett, "Distribution-free inference with
hierarchical data", 2023, arXiv:2306.06342, section 3; the finite-sample correction of Vovk et
al. 2005) makes the log the unit and assumes nothing about the errors' shape: if a user's cluster
is one more log exchangeable with the calibration logs, a point of it lies inside with
probability at least 80 %. Proof in three lines: add the new log as log K+1 with its own points;
the quantile q* of the K+1 logs' equally weighted scores leaves at most 20 % of that mixture's
weight above it, and the logs being exchangeable, a random point of log K+1 lies above q* with
probability at most 20 %; putting log K+1's weight at +inf (its points are not known) can only
raise the quantile. Its price: with K logs the bound needs ``LEVEL x (K+1) <= K`` (four logs at
80 %), and with exactly four it is the largest error seen.

Coverage (how often the interval holds the measurement) is measured by
``python bench/nccl_logs.py --leave-one-out`` on the calibration logs (bench/results/), with the
bound itself held out too (each log's interval from the other logs' bound).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

__all__ = ["LEVEL", "LOO_HALF_WIDTH", "METHOD", "Interval", "bucket_cap_range", "conformal_half_width", "fitted_runs", "interval",
           "interval_fields", "spread", "unseen_half_width"]  # fmt: skip

LEVEL = 0.8
Z80 = 1.2816  # the standard normal's 90th percentile: 80 % lie within +-Z80 sigma
HELD_OUT_MEDIAN = ((2**20, 0.61), (2**28, 0.18), (math.inf, 0.10))  # size below, median |busbw error| (issue 33)
# size below, the 80 % bound on |ln(measured / predicted)| of the leave-one-log-out points: conformal_half_width of the
# scores in bench/results/nccl_logs_loo.md, printed there ready to paste (tests/hardware/test_uncertainty_held_out.py)
LOO_HALF_WIDTH = ((2**20, 0.4878), (2**28, 0.3614), (math.inf, 0.2310))
METHOD = (
    "x/÷ exp(q), q the split-conformal quantile of |ln(measured / predicted)| over the leave-one-log-out points of a size regime, "
    "each of the K logs weighted 1/(K+1) shared among its points and the new cluster's point counted at +inf with the last 1/(K+1) "
    "(hierarchical conformal prediction, Lee, Barber and Willett 2023): at least 80 % coverage of a new cluster's point "
    "whatever the errors' distribution, if the logs are exchangeable"
)
LOO_OPS = ("all_reduce",)  # the ops the calibration logs ran
MIN_RESIDUAL = 0.05
_RUN = re.compile(r"\((?:([a-z_]+), )?(\d+) nodes?\)")  # a fitted block's logs entry: "FILE (all_reduce, 2 nodes)" or "FILE (2 nodes)"


@dataclass(frozen=True)
class Interval:
    """``low_s``..``high_s`` holds the real time with probability ``level`` (as far as ``basis`` says)."""

    low_s: float
    high_s: float
    level: float
    basis: str


def interval(scenario: Any, time_s: float | None, preset: Any = None) -> Interval | None:
    """The 80 % interval of a collective's time on its hardware preset; None without a preset
    (links typed by hand: the model is exact for them, and no measured spread says more)."""
    if not time_s or time_s <= 0:
        return None
    found = spread(getattr(scenario, "hardware", None), scenario.ranks, scenario.size_bytes, getattr(scenario, "op", None), preset)
    if found is None:
        return None
    factor, basis = found
    return Interval(time_s / factor, time_s * factor, LEVEL, basis)


def spread(hardware: str | None, ranks: int, size_bytes: int, op: str | None = None, preset: Any = None) -> tuple[float, str] | None:
    """(factor, basis): a collective ``op`` of ``size_bytes`` on ``ranks`` ranks of ``hardware``
    takes between time / factor and time x factor with 80 % probability; None without a preset.
    ``op`` None (a mix of ops, as a training step): the published other-cluster spread. ``preset``: loaded already."""
    if not hardware:
        return None
    from sim.hardware.presets import load_preset

    preset = preset or load_preset(hardware)
    nodes = max(1, ranks // max(preset.gpus_per_node, 1))
    fitted = preset.fitted or {}
    own_file = str(hardware).lower().endswith((".yaml", ".yml"))
    held = None if own_file or op not in LOO_OPS or nodes not in _own_log_nodes(fitted) else _held_out(size_bytes, preset.name, nodes)
    if own_file and fitted.get("constants") and not fitted.get("taken_from"):
        half, basis = _calibrated(fitted, op, nodes, size_bytes)
    else:
        half, basis = held or _uncalibrated(size_bytes)
    return math.exp(half), basis


def _own_log_nodes(fitted: dict) -> set[int]:
    """The node counts of the calibration logs a shipped preset was fitted on itself (none where
    its constants were taken from another preset)."""
    if fitted.get("taken_from"):
        return set()
    return {nodes for _, nodes in fitted_runs(fitted)}


def fitted_runs(fitted: Mapping[str, Any]) -> set[tuple[str | None, int]]:
    """The (op, node count) of each log a ``fitted:`` block names (``FILE (all_reduce, 2 nodes)``);
    op None where the entry does not say (written before ``collsim hardware fit`` recorded it)."""
    return {(op or None, int(nodes)) for log in fitted.get("logs", []) for op, nodes in _RUN.findall(str(log))}


def unseen_half_width(own_half: float, size_bytes: int) -> tuple[float, str]:
    """(half-width in ln time, why) of a calibrated prediction at a configuration (op, node count)
    none of the fitted logs ran: max(``own_half``, :data:`LOO_HALF_WIDTH` at this size), the 80 %
    bound of a fit predicting a log it never saw (it holds the fit's own uncertainty already, so
    the larger is taken, not a sum); where that bound is inf (too few logs), the published spread
    of other clusters (:func:`_uncalibrated`). The one rule for both this module and
    real.validate_nccl."""
    floor = next(bound for below, bound in LOO_HALF_WIDTH if size_bytes < below)
    what = "the leave-one-log-out bound at this size (a fit predicting a log it never saw)"
    if not math.isfinite(floor):
        floor, what = _uncalibrated(size_bytes)[0], "the published spread of other clusters at this size (too few logs for a bound)"
    return max(own_half, floor), f"at least {what}, x/÷ {math.exp(floor):.2f}"


def conformal_half_width(scores_by_log: Mapping[str, Sequence[float]], level: float = LEVEL) -> float:
    """The hierarchical split-conformal bound q on held-out scores (|ln error|) grouped by log: the
    smallest score at which the logs' empirical CDFs, each log weighing the same, sum to at least
    ``level`` x (K+1) for K logs with points (module docstring: the new log's share sits at +inf);
    math.inf where that exceeds K (fewer than four logs at 80 %). Exact fractions: with four logs
    the bound sits exactly on the total weight, where a float sum can fall short."""
    groups = [list(scores) for scores in scores_by_log.values() if len(scores)]
    need = Fraction(level).limit_denominator(10**6) * (len(groups) + 1)
    total = Fraction(0)
    for score, weight in sorted((score, Fraction(1, len(group))) for group in groups for score in group):
        total += weight
        if total >= need:
            return score
    return math.inf


def _held_out(size_bytes: int, name: str, nodes: int) -> tuple[float, str] | None:
    half = next(bound for below, bound in LOO_HALF_WIDTH if size_bytes < below)
    if not math.isfinite(half):  # too few logs at this size for an 80 % bound: the wider published spread stands
        return None
    return half, (
        f"not calibrated on your cluster: {name}'s calibration logs, each predicted by a fit that never saw it, bound the model's "
        f"error at this size on {nodes} node(s) to x/÷ {math.exp(half):.2f} for 80 % of a new cluster's points (conformal, each log "
        "weighted the same); `collsim hardware fit -o` on your logs narrows it"
    )


def _uncalibrated(size_bytes: int) -> tuple[float, str]:
    """The published spread of other clusters, never narrower than :data:`LOO_HALF_WIDTH` where that is finite:
    a preset fitted on no log of this configuration knows less than a fit predicting a log it never saw."""
    median = next(error for below, error in HELD_OUT_MEDIAN if size_bytes < below)
    half = Z80 / 0.6745 * math.log(1 + median)
    bound = next(bound for below, bound in LOO_HALF_WIDTH if size_bytes < below)
    floor = ""
    if math.isfinite(bound) and bound > half:
        half, floor = bound, f", held to at least the calibration logs' leave-one-log-out bound (x/÷ {math.exp(bound):.2f})"
    return half, (
        f"not calibrated on your cluster: published runs of other clusters spread around the model by {median:.0%} (median) "
        f"at this size{floor}; `collsim hardware fit -o` on your logs narrows it"
    )


def _calibrated(fitted: dict, op: str | None, nodes: int, size_bytes: int) -> tuple[float, str]:
    residual = max(float(fitted.get("rms_log_error") or 0.0), MIN_RESIDUAL)
    half = Z80 * residual
    basis = f"calibrated on {', '.join(fitted.get('logs', []))}: the fit's residual spread ({residual:.1%})"
    if (op, nodes) not in fitted_runs(fitted):
        half, floor = unseen_half_width(half, size_bytes)
        basis += f"; {op or 'a mix of ops'} on {nodes} node(s) is a configuration none of the fitted logs ran: {floor}"
    return half, basis


def interval_fields(scenario: Any, time_s: float | None, busbw_factor: float, preset: Any = None) -> dict[str, Any]:
    """The summary keys of the interval: ``time_interval_s``, ``busbw_interval_GBps``,
    ``interval_level``, ``interval_basis`` (None where there is no interval)."""
    found = interval(scenario, time_s, preset)
    if found is None:
        basis = "no hardware preset: the time is exact for the links given; no measured spread to draw on"
        return {"time_interval_s": None, "busbw_interval_GBps": None, "interval_level": None, "interval_basis": basis}
    size = scenario.size_bytes
    busbw = [size / found.high_s * busbw_factor / 1e9, size / found.low_s * busbw_factor / 1e9] if size and busbw_factor else None
    return {"time_interval_s": [found.low_s, found.high_s], "busbw_interval_GBps": busbw, "interval_level": found.level,
            "interval_basis": found.basis}  # fmt: skip


def bucket_cap_range(hardware: str | None, cap_bytes: float) -> tuple[float, float, str] | None:
    """The 80 % range of a best bucket cap on a shipped preset: b* = sqrt(s w o) moves as
    sqrt(o w), with o (a call's fixed cost) as uncertain as a small call (< 1 MiB) and w as a
    bucket-sized one (1-256 MiB) on other clusters; None without a preset."""
    if not hardware:
        return None
    o_half = Z80 / 0.6745 * math.log(1 + HELD_OUT_MEDIAN[0][1])
    w_half = Z80 / 0.6745 * math.log(1 + HELD_OUT_MEDIAN[1][1])
    factor = math.exp((o_half + w_half) / 2)
    basis = (f"80 %: b* scales as sqrt(o w); o as uncertain as a small call (x/÷ {math.exp(o_half):.2f}), "
             f"w as a bucket-sized one (x/÷ {math.exp(w_half):.2f}) on clusters this preset was not fitted on")  # fmt: skip
    return cap_bytes / factor, cap_bytes * factor, basis
