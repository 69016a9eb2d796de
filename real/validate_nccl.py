"""``collsim validate nccl-tests LOG...``: fit a preset's constants on some of the user's nccl-tests
logs, predict the others, and say how far the predictions can be trusted (issue 33).

The held-out split is by log: by default the logs of the smallest node count of each op are fitted
(:func:`choose_fit_on`), the rest predicted; ``--fit-on`` names the fitted logs. The fit is
:func:`sim.collective.nccl_fit.fit` (regularised toward :data:`sim.hardware.presets.PRIORS`, constants
the fitted logs cannot tell held at their prior). Every constant the DES reads on the preset is pinned:
a fitted value, or its prior (never the preset's shipped fit, which may have seen the predicted logs).

The interval of a prediction (:data:`LEVEL`, 80 %): the DES time t times exp(+-z sigma), z = 1.2816,
sigma^2 = sum over the constants of max(|ln t(c + sd) / t|, |ln t / t(c - sd)|)^2 (one at a time: each kept
constant at its posterior sd, from its 95 % interval; each held one at its prior's sd; correlations
ignored; ends clipped to the constant's bounds) + s^2, s the rms log residual of the fitted logs, never
below :data:`sim.hardware.uncertainty.MIN_RESIDUAL` (5 %, the spread of nccl-tests' two timings of a
size), or :data:`sim.collective.nccl_fit.NOISE` (10 %) when nothing was fitted. That is the fit's own uncertainty; it
has no term for the model's structural error at a configuration (op, node count) that none of the fitted logs ran.
There the half-width z sigma is floored by :func:`sim.hardware.uncertainty.unseen_half_width`: max(z sigma,
LOO_HALF_WIDTH at that size), the 80 % bound of leave-one-log-out errors, a fit predicting a log it never saw
(the published other-cluster spread where too few logs give a bound). A predicted log whose op and node count a
fitted log ran keeps z sigma. Coverage is the share of predicted points whose measured time lies inside.

Each log's points, fitted or predicted, are picked and planned with the tuning of the NCCL release it ran
(:func:`sim.collective.nccl_fit.log_release`: the one it names, else --nccl-version, else the default 2.27.7-1).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sim.collective import nccl_fit
from sim.collective.nccl_fit import NOISE, REGIMES, LogRelease, default_release, fit, log_release, log_runs, measured_rows, read_checked
from sim.errors import CollsimError
from sim.hardware.uncertainty import MIN_RESIDUAL, unseen_half_width
from sim.nccl.log import PROGRAMS

LEVEL = 0.8
Z = statistics.NormalDist().inv_cdf(0.5 + LEVEL / 2)  # 1.2816: half an 80 % interval in sds
SHIPPED = Path(__file__).parent / "data" / "nccl-tests"  # the published logs (source, machine, licence in each header)
# the nccl-tests programs fitted and predicted (all_to_all: NCCL's p2p path in the DES, sim.collective.pick)
DES_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce")
NETWORK_ONLY = ("inter_efficiency", "base_latency_us")  # constants a one-node log cannot move
LATENCY_ONLY = ("latency_scale", "ll128_latency_scale", "nvls_latency_scale", "base_latency_us")  # ... nor a log of sizes >= 1 MiB only
INTERVAL_METHOD = (
    f"{LEVEL:.0%} interval: DES time x exp(+-{Z:.4f} sigma); sigma^2 = sum over constants of max(|ln t(c+sd)/t|, |ln t/t(c-sd)|)^2 "
    "(one constant at a time: kept constants at their posterior sd from the fit's 95 % interval, held ones at their prior's sd; "
    "correlations ignored; ends clipped to bounds) + s^2, s = rms log residual of the fitted logs, at least 0.05 (0.1 when nothing was fitted); "
    "at an (op, node count) no fitted log ran, the half-width is at least the leave-one-log-out 80 % bound at that size "
    "(sim.hardware.uncertainty.LOO_HALF_WIDTH; the published other-cluster spread where it is inf): max, not a sum"
)


@dataclass(frozen=True)
class Log:
    """One nccl-tests log: its sizes and measured times (the faster column, as the fit reads them)
    and the NCCL release whose tuning picks its points."""

    path: Path
    op: str
    nodes: int
    rows: tuple[tuple[int, float], ...]
    nccl_proto: str | None = None
    nccl_algo: str | None = None
    release: LogRelease | None = None  # None: the default release's tuning

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def nccl_version(self) -> str | None:
        return self.release.version if self.release else None


@dataclass(frozen=True)
class Calibration:
    """What predictions use: a value and a one-sd (low, high) for every constant the DES reads."""

    values: dict[str, float]
    spreads: dict[str, tuple[float, float]]
    residual_spread: float
    result: dict | None = None  # sim.collective.nccl_fit.fit's answer; None when nothing was fitted
    fit_stride: int = 1
    fitted_on: tuple[str, ...] = field(default_factory=tuple)
    fitted_runs: frozenset[tuple[str, int]] = frozenset()  # (op, nodes) of each fitted log; empty: nothing fitted


@dataclass(frozen=True)
class Point:
    """A measured size against the DES: ``role`` is "fitted" (in-sample) or "predicted" (held out)."""

    log: str
    op: str
    nodes: int
    size_bytes: int
    measured_s: float
    predicted_s: float
    low_s: float | None
    high_s: float | None
    role: str

    @property
    def error(self) -> float:
        """busbw error: predicted busbw / measured - 1 = measured time / predicted time - 1."""
        return self.measured_s / self.predicted_s - 1

    @property
    def covered(self) -> bool | None:
        if self.low_s is None or self.high_s is None:
            return None
        return self.low_s <= self.measured_s <= self.high_s

    def to_dict(self) -> dict:
        return {**self.__dict__, "error": self.error, "covered": self.covered}


# ----------------------------------------------------------------------------- input


def read_logs(paths: Sequence[str | Path], hardware: str, nodes: str | None = None, nccl_proto: str | None = None,
              nccl_algo: str | None = None, nccl_version: str | None = None) -> list[Log]:  # fmt: skip
    """Every log read and checked before any simulation: the preset exists, each file is nccl-tests
    output, each node count fits the preset, each NCCL release is known. ``nodes``: a comma list, one
    per log (default: each log's rank count over the preset's GPUs a node); ``nccl_version``: the
    release of logs that name none, one for all or a comma list (sim.collective.nccl_fit.log_release)."""
    from sim.hardware.presets import load_preset

    if not paths:
        raise CollsimError(
            "LOG: give one or more nccl-tests logs (e.g. real/data/nccl-tests/*.txt); the fit uses some, the rest are predicted"
        )
    preset = load_preset(hardware)
    if preset.name != hardware:  # the fit pins constants by preset name (sim.hardware.presets.TRIAL)
        raise CollsimError(
            f"--hardware: give a shipped preset's name (collsim hardware list), got {hardware!r}; a preset file cannot be fitted here yet"
        )
    logs = []
    for run in log_runs(paths, preset, nodes, nccl_version):  # as collsim hardware fit reads them: once
        preset.check_nodes(run.nodes)
        _check_op(run.path, run.op)
        logs.append(_log(Path(run.path), run.op, run.nodes, run.rows, nccl_proto, nccl_algo, run.release))
    names = [log.name for log in logs]
    if len(set(names)) < len(names):
        raise CollsimError(
            f"LOG: the same file name twice ({', '.join(sorted({n for n in names if names.count(n) > 1}))}); give each log once"
        )
    return logs


def read_one(path: str | Path, nodes: int, nccl_proto: str | None = None, nccl_algo: str | None = None,
             release: LogRelease | None = None) -> Log:  # fmt: skip
    """One log of ``nodes`` nodes, run with these NCCL_PROTO / NCCL_ALGO (None: NCCL's own choice)
    and this NCCL release (None: the one the log names, else the default)."""
    op, columns, checks = read_checked(path)  # one reading: the rows and the release the log names
    _check_op(path, op)
    return _log(Path(path), op, nodes, tuple(measured_rows(columns)), nccl_proto, nccl_algo, release or log_release(checks))


def _check_op(path: str | Path, op: str) -> None:
    """Refuse an op the DES does not predict (sendrecv, gather, ...): said here, before any fit."""
    if op not in DES_OPS:
        program = next(name for name, its_op in PROGRAMS.items() if its_op == op)
        raise CollsimError(f"LOG: {path} is {program} output; validate nccl-tests predicts {', '.join(DES_OPS)} logs")


def _log(path: Path, op: str, nodes: int, rows: tuple, nccl_proto: str | None, nccl_algo: str | None, release: LogRelease) -> Log:
    if op == "all_to_all":  # grouped ncclSend/ncclRecv: no tuner pick to restrict (NCCL v2.27.7-1 src/enqueue.cc:802-836 chooses
        nccl_proto = nccl_algo = None  # LL or Simple per size by NCCL_P2P_LL_THRESHOLD), so a run of every op under one env still reads
    return Log(path, op, nodes, rows, nccl_proto, nccl_algo, release)


def choose_fit_on(logs: list[Log], spec: str | None = None) -> tuple[list[Log], list[Log]]:
    """(logs to fit on, logs to predict). ``spec``: comma list of ``nodes=N`` and log file names;
    default: the logs of the smallest node count of each op. Refuses a split with nothing on
    either side: with nothing held out it would not be a validation."""
    if len(logs) < 2:
        raise CollsimError(
            "nothing to hold out: one log cannot validate a fit (it would be judged on the sizes it was fitted to); "
            "give two or more logs of the cluster (e.g. 1 and 2 nodes), or use 'collsim hardware fit' for an in-sample fit"
        )
    chosen = _named(logs, spec) if spec else [log for log in logs if log.nodes == min(o.nodes for o in logs if o.op == log.op)]
    held = [log for log in logs if log not in chosen]
    if not held:
        why = f"--fit-on {spec!r} names every log" if spec else "every log has the smallest node count of its op"
        raise CollsimError(
            f"nothing held out: {why}; give --fit-on naming the logs to fit on (nodes=N or file names), the others are predicted"
        )
    return chosen, held


def not_predicted(fit_logs: list[Log], held: list[Log]) -> list[dict]:
    """The ops every log of which is fitted, so nothing of them is predicted (the default split does
    that to an op with one log): op, logs, nodes, and the line the report prints for each."""
    found = []
    for op in dict.fromkeys(log.op for log in fit_logs if log.op not in {o.op for o in held}):
        mine = [log for log in fit_logs if log.op == op]
        counts = sorted({log.nodes for log in mine})
        where = f"{', '.join(map(str, counts))} node{'s' if counts != [1] else ''}"
        what = "one log" if len(mine) == 1 else f"{len(mine)} logs"
        others = ",".join(log.name for log in fit_logs if log.op != op)
        line = (f"{op}: {what} ({where}), fitted; nothing of it is predicted; --fit-on {others} to hold it out"
                if others else f"{op}: {what} ({where}), fitted; nothing of it is predicted")  # fmt: skip
        found.append({"op": op, "logs": [log.name for log in mine], "nodes": counts, "note": line})
    return found


def _named(logs: list[Log], spec: str) -> list[Log]:
    chosen: list[Log] = []
    for item in (part.strip() for part in spec.split(",")):
        if item.startswith("nodes="):
            members = [log for log in logs if item[6:].strip().isdigit() and log.nodes == int(item[6:])]
        else:
            members = [log for log in logs if item in (log.name, str(log.path))]
        if not members:
            raise CollsimError(
                f"--fit-on: {item!r} names none of the logs; give nodes=N ({', '.join(sorted({str(log.nodes) for log in logs}))}) "
                f"or a log's file name ({', '.join(log.name for log in logs)}), comma-separated"
            )
        chosen += [log for log in members if log not in chosen]
    return chosen


# ----------------------------------------------------------------------------- fit


def relevant_constants(hardware: str) -> list[str]:
    """The constants the DES can read on this preset (the NVLS ones only where it has NVLS)."""
    from sim.hardware.presets import CONSTANTS, load_preset

    nccl = load_preset(hardware).nccl
    return [name for name in CONSTANTS if not name.startswith("nvls_") or (nccl is not None and nccl.nvls)]


def prior_spread(name: str, value: float, hardware: str | None = None) -> tuple[float, float]:
    """A constant one prior sd (its prior on ``hardware``) either side of ``value``, clipped to its bounds."""
    from sim.hardware.presets import CONSTANTS, load_preset, prior

    _, lower, upper, _ = CONSTANTS[name]
    _, kind, sd, _ = prior(name, load_preset(hardware) if hardware else None)
    low, high = (value * math.exp(-sd), value * math.exp(sd)) if kind == "log" else (value - sd, value + sd)
    return max(low, lower), min(high, upper)


def priors_only(hardware: str) -> Calibration:
    """No log to fit on: every constant at its prior, each with its prior's spread (uncalibrated)."""
    from sim.hardware.presets import load_preset, prior

    values = {name: prior(name, load_preset(hardware))[0] for name in relevant_constants(hardware)}
    return Calibration(values, {name: prior_spread(name, value, hardware) for name, value in values.items()}, NOISE)


def calibrate(fit_logs: list[Log], hardware: str, stride: int = 1) -> Calibration:
    """Fit the relevant constants on ``fit_logs`` (the network ones only if a fitted log crosses
    nodes, the latency ones only if one has sizes below 1 MiB; the others stay at their priors, as
    the fit would hold them); the stride is lowered where the fitted logs would have too few sizes
    for the constants."""
    if not fit_logs:
        return priors_only(hardware)
    crosses = max(log.nodes for log in fit_logs) > 1
    small = any(size < 2**20 for log in fit_logs for size, _ in log.rows)
    names = [n for n in relevant_constants(hardware) if (crosses or n not in NETWORK_ONLY) and (small or n not in LATENCY_ONLY)]
    fit_stride = max(stride, 1)
    while fit_stride > 1 and sum(len(log.rows[::fit_stride]) for log in fit_logs) <= len(names):
        fit_stride -= 1
    if sum(len(log.rows) for log in fit_logs) <= len(names):
        raise CollsimError(
            f"--fit-on: the fitted logs have {sum(len(log.rows) for log in fit_logs)} sizes for {len(names)} constants; fit on more logs"
        )
    # each log with its rows and release, as read_logs read it: not read again
    result = fit([(log, log.nodes, log.nccl_proto, log.nccl_algo) for log in fit_logs], hardware, names, fit_stride)
    runs = frozenset((log.op, log.nodes) for log in fit_logs)
    return from_fit(result, hardware, fit_stride, tuple(log.name for log in fit_logs), runs)


def from_fit(result: dict, hardware: str, fit_stride: int = 1, fitted_on: tuple[str, ...] = (),
             fitted_runs: frozenset[tuple[str, int]] = frozenset()) -> Calibration:  # fmt: skip
    """A calibration from a fit's answer: kept constants at their posterior (sd from the 95 %
    interval's wider side), every other constant at its prior with the prior's spread."""
    from sim.hardware.presets import CONSTANTS, load_preset, prior

    values, spreads = {}, {}
    for name in relevant_constants(hardware):
        entry = result["constants"].get(name)
        if entry is None:
            values[name] = prior(name, load_preset(hardware))[0]
            spreads[name] = prior_spread(name, values[name], hardware)
            continue
        value, (low, high) = float(entry["value"]), entry["interval"]
        sd = max(value - low, high - value) / 1.96
        _, lower, upper, _ = CONSTANTS[name]
        values[name], spreads[name] = value, (max(value - sd, lower), min(value + sd, upper))
    return Calibration(values, spreads, max(float(result["rms_log_error"]), MIN_RESIDUAL), result, fit_stride, fitted_on, fitted_runs)


# ----------------------------------------------------------------------------- predict


def time_with(hardware: str, nodes: int, op: str, size: int, values: dict[str, float], nccl_algo: str | None = None,
              nccl_proto: str | None = None, nccl_version: str | None = None) -> float:  # fmt: skip
    """The DES time of NCCL's pick (with ``nccl_version``'s tuning) with these constants (and no other) in force."""
    from sim.hardware.presets import TRIAL

    TRIAL[hardware] = dict(values)
    try:
        # one DES, the fit's (tests replace it)
        return nccl_fit.des_time(hardware, nodes, op, size, nccl_algo, nccl_proto, nccl_version=nccl_version)[0]
    finally:
        TRIAL.pop(hardware, None)


def log_time(hardware: str, log: Log, size: int, values: dict[str, float]) -> float:
    """:func:`time_with` at one size of ``log``: its op, nodes, NCCL_ALGO / NCCL_PROTO and release."""
    return time_with(hardware, log.nodes, log.op, size, values, log.nccl_algo, log.nccl_proto, log.nccl_version)


def check_runs(logs: list[Log], hardware: str) -> None:
    """One DES per log at its first size, at the priors: a bad NCCL_ALGO / NCCL_PROTO or an op the
    preset cannot run is refused before the work."""
    values = priors_only(hardware).values
    for log in logs:
        log_time(hardware, log, log.rows[0][0], values)


def log_sigma(hardware: str, log: Log, size: int, calibration: Calibration, central: float) -> float:
    """sigma of ln(time) at one size: the constants' spread through the DES, one at a time, and
    the fitted logs' residual spread (module docstring)."""
    variance = calibration.residual_spread**2
    for name, (low, high) in calibration.spreads.items():
        at = calibration.values[name]
        up = log_time(hardware, log, size, {**calibration.values, name: high})
        if up == central and high != at:  # the DES does not read this constant here
            continue
        down = log_time(hardware, log, size, {**calibration.values, name: low})
        # the larger one-sided change: a constant clipped at a bound (base_latency_us at 0) moves one way only
        variance += max(abs(math.log(up / central)), abs(math.log(central / down))) ** 2
    return math.sqrt(variance)


def predict_log(log: Log, hardware: str, calibration: Calibration, role: str = "predicted", stride: int = 1,
                progress: Callable[[str], None] | None = None) -> list[Point]:  # fmt: skip
    """Every ``stride``-th size of a log against the DES; predicted ones with their interval (floored
    where no fitted log ran the log's op and node count: module docstring)."""
    points = []
    for size, measured in log.rows[:: max(stride, 1)]:
        central = log_time(hardware, log, size, calibration.values)
        low = high = None
        if role == "predicted":
            half = Z * log_sigma(hardware, log, size, calibration, central)
            if (log.op, log.nodes) not in calibration.fitted_runs:
                half = unseen_half_width(half, size)[0]
            low, high = central * math.exp(-half), central * math.exp(half)
        points.append(Point(log.name, log.op, log.nodes, size, measured, central, low, high, role))
        if progress:
            progress(f"{log.name}: {size} B")
    return points


def regime_rows(points: list[Point]) -> list[dict]:
    """Per regime (< 1 MiB, 1-256 MiB, >= 256 MiB) with points: count, median |error|, worst
    error, and (where the points have intervals) how many the interval covered and its median
    width as a factor (x/÷ F: high / predicted): coverage bought with a wide interval shows there."""
    rows = []
    for name, low, high in REGIMES:
        chosen = [p for p in points if low <= p.size_bytes < high]
        if not chosen:
            continue
        errors = [p.error for p in chosen]
        judged = [p for p in chosen if p.covered is not None]
        rows.append({"regime": name, "points": len(chosen), "median_abs_error": statistics.median(map(abs, errors)),
                     "worst_error": max(errors, key=abs), "covered": sum(p.covered for p in judged) if judged else None,
                     "coverage": sum(p.covered for p in judged) / len(judged) if judged else None,
                     "median_width": statistics.median(p.high_s / p.predicted_s for p in judged) if judged else None})  # fmt: skip
    return rows


def validate(logs: list[Log], hardware: str, fit_on: str | None = None, stride: int = 1,
             progress: Callable[[str], None] | None = None) -> dict:  # fmt: skip
    """The held-out validation as a plain document (summary.json): split, fit, points, regimes."""
    fit_logs, held = choose_fit_on(logs, fit_on)
    if progress:
        progress(f"fitting on {', '.join(log.name for log in fit_logs)}")
    calibration = calibrate(fit_logs, hardware, stride)
    points = [p for log in fit_logs for p in predict_log(log, hardware, calibration, "fitted", calibration.fit_stride, progress)]
    points += [p for log in held for p in predict_log(log, hardware, calibration, "predicted", stride, progress)]
    return document(logs, fit_logs, hardware, calibration, points, stride)


def document(logs: list[Log], fit_logs: list[Log], hardware: str, calibration: Calibration, points: list[Point], stride: int) -> dict:
    def described(log: Log) -> dict:
        return {
            "log": log.name,
            "op": log.op,
            "nodes": log.nodes,
            "sizes": len(log.rows),
            "nccl_proto": log.nccl_proto,
            "nccl_algo": log.nccl_algo,
            "nccl_release": (log.release or default_release()).to_dict(),
        }

    from sim.hardware.presets import load_preset

    result = calibration.result or {}
    return {
        "hardware": hardware,
        "gpus_per_node": load_preset(hardware).gpus_per_node,
        "split": {"fitted": [described(log) for log in fit_logs], "predicted": [described(log) for log in logs if log not in fit_logs]},
        "not_predicted": not_predicted(fit_logs, [log for log in logs if log not in fit_logs]),
        "stride": stride, "fit_stride": calibration.fit_stride,
        "interval": {"level": LEVEL, "z": Z, "method": INTERVAL_METHOD, "residual_spread": calibration.residual_spread},
        "constants": {name: {"value": value, "sd_range": list(calibration.spreads[name])} for name, value in calibration.values.items()},
        "fit": {key: result.get(key) for key in ("constants", "held_at_prior", "flagged", "residuals", "rms_log_error", "points")},
        "regimes": {role: regime_rows([p for p in points if p.role == role]) for role in ("predicted", "fitted")},
        "points": [p.to_dict() for p in points],
    }  # fmt: skip


__all__ = ["LEVEL", "Z", "INTERVAL_METHOD", "SHIPPED", "Log", "Calibration", "Point", "read_logs", "read_one", "choose_fit_on", "not_predicted", "relevant_constants", "prior_spread",
           "priors_only", "calibrate", "from_fit", "time_with", "log_time", "check_runs", "log_sigma", "predict_log", "regime_rows", "validate", "document"]  # fmt: skip
