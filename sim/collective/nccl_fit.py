"""Fit a preset's effective constants to nccl-tests logs, and compare the DES and NCCL's model
with them (``collsim hardware fit``, bench/nccl_logs.py).

Residuals are log(predicted time / measured time) of the DES running NCCL's pick at every size
of every log (the faster of nccl-tests' out-of-place and in-place columns: the same collective
timed twice, and interference only adds time; see :func:`read_log`); scipy's bounded least squares (trf) moves the
constants of :data:`sim.hardware.presets.CONSTANTS` within their bounds, regularised toward their
priors (:data:`sim.hardware.presets.PRIORS`), and only those the logs can tell (:func:`fit`); 95 %
intervals come from the Jacobian at the optimum (covariance s^2 (J^T J)^-1, s^2 the residual variance).

Each log's points are picked and planned with the tuning of the NCCL release it ran
(:func:`log_release`: the one the log names, else --nccl-version, else the default 2.27.7-1).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from sim.errors import CollsimError
from sim.nccl.log import LogChecks, not_a_log, results, unknown_op
from sim.nccl.versions import NcclVersion

# calibration logs (real/data/nccl-tests, each with its source in its header): file -> (preset, nodes, NCCL_PROTO, NCCL_ALGO the
# run had); see that folder's README. The A3 Mega run used TCPXO plugin v1.0.3, whose required
# profile is NCCL_PROTO=Simple, NCCL_ALGO=Ring,Tree, NCCL_BUFFSIZE=8 MiB and Google's tuner
# plugin (LL128 came with v1.0.8-1, Feb 2025: container-engine-accelerators gpudirect-tcpxo/README.md);
# the tuner ran Tree: 338 GB/s at 8 GiB is beyond any ring over its 8 x 25 GB/s NICs (<= 200 GB/s
# busbw), within the tree's 2 x 15/16 x 200, and 1-16 MiB follow the tree's 1 MiB-chunk fill. The GB200
# run's algorithm is not logged; it is Ring by its own numbers (docs/nccl-model.md, "What each log ran"): 183 us at 8 B is 2 x 127 NVLink LL hops, not
# NVLS/NVLSTree's ~50 us, and its 683 GB/s plateau is the ring graph's 16 x 45.1 GB/s x 0.95
# (NVLS's switch would give > 1000).
CALIBRATION = {
    "hgx-h100_2node_ib400_nccl2.26.2_allreduce_default.txt": ("hgx-h100-nvls", 2, None, None),
    "h100_1node_allreduce_nvls_nccl-tests290.txt": ("hgx-h100-nvls", 1, None, None),
    "gcp-a3mega_h100_2node_tcpxo_8x200g_allreduce.txt": ("gcp-a3-mega", 2, "Simple", "Tree"),
    "oci-bm.gpu4.8_a100-40g_2node_roce16x100g_allreduce.txt": ("oci-a100-roce", 2, None, None),
    "oci-bm.gpu.b4.8_a100-40g_2node_roce_nccl2.29.3_allreduce.txt": ("oci-a100-roce", 2, None, None),
    "oci-gb200-nvl72_32trays-128gpu_nccl2.29.2_allreduce.txt": ("gb200-nvl72", 32, None, "Ring"),
}
REGIMES = (("< 1 MiB", 0, 2**20), ("1-256 MiB", 2**20, 2**28), (">= 256 MiB", 2**28, float("inf")))


@dataclass(frozen=True)
class Point:
    log: str
    op: str
    size_bytes: int
    measured_s: float
    des_s: float
    model_s: float
    pick: str
    spread: float = 0.0  # |out-of-place - in-place| / measured_s: the log's own disagreement at this size

    @property
    def des_error(self) -> float:
        """busbw error: predicted busbw / measured - 1 = measured time / predicted time - 1."""
        return self.measured_s / self.des_s - 1

    @property
    def model_error(self) -> float:
        return self.measured_s / self.model_s - 1


def read_checked(path: str | Path, op: str | None = None) -> tuple[str, list[tuple[int, float, float | None]], LogChecks]:
    """(op, [(size, out-of-place time_s, in-place time_s or None)], what the reading saw) of an
    nccl-tests text log, checked as :mod:`sim.nccl.log` says (a failed run, a negative or
    NaN time refused; sizes with #wrong > 0 left out); real.nccl_tests reads every format into
    the results store with the same checks. The op is the one of the nccl-tests program the log
    names, else ``op``; a log that names none, read without ``op``, is refused (never taken for
    all_reduce: every binary prints the same columns)."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as error:
        raise CollsimError(f"LOG: cannot read {path}: {error.strerror}") from None
    checks = LogChecks(str(path))
    rows = [(r.size_bytes, r.out_of_place[0] * 1e-6, r.in_place[0] * 1e-6 if r.in_place else None)
            for r in results(text.splitlines(), checks)]  # fmt: skip
    if not rows and text.lstrip().startswith("{"):
        raise CollsimError(f"LOG {path} is JSON (nccl-tests -J?): hardware fit reads the text log nccl-tests prints on stdout")
    if not rows and not checks.wrong:
        raise not_a_log(str(path))
    if not rows:
        raise CollsimError(f"LOG {path}: every size has #wrong above 0 (nccl-tests found wrong results); nothing to fit")
    op = checks.op or op
    if op is None:
        raise unknown_op(f"LOG {path}")
    return op, [row for row in rows if row[1] > 0], checks


def read_columns(path: str | Path, op: str | None = None) -> tuple[str, list[tuple[int, float, float | None]]]:
    """(op, [(size, out-of-place time_s, in-place time_s or None)]) of an nccl-tests text log
    (:func:`read_checked` without what it saw)."""
    op, rows, _ = read_checked(path, op)
    return op, rows


def read_log(path: str | Path, op: str | None = None) -> tuple[str, list[tuple[int, float]]]:
    """(op, [(size, time_s)]): per size the faster of the out-of-place and in-place times (where
    the log has both). They time the same collective twice, 20 iterations each, and interference
    only adds time: the 2-node HGX H100 log has 8 B at 68.52 us out-of-place against 24.70 us
    in-place (16 B: 24.96 / 24.93 us) and 256 B at 94.40 against 25.90 us, spikes in one column
    that no cost model should follow (bench/nccl_logs.py prints both columns' spread)."""
    op, rows = read_columns(path, op)
    return op, measured_rows(rows)


def measured_rows(columns: list[tuple[int, float, float | None]]) -> list[tuple[int, float]]:
    """[(size, time_s)] of :func:`read_checked`'s columns: per size the faster column (:func:`read_log`)."""
    return [(size, _faster(out, inp)) for size, out, inp in columns]


def _faster(out: float, inp: float | None) -> float:
    """The measured time of a size: the faster of its two columns (:func:`read_log` says why)."""
    return min(out, inp) if inp else out


def des_time(hardware: str, nodes: int, op: str, size: int, nccl_algo=None, nccl_proto=None,
             nccl_version: str | None = None) -> tuple[float, str]:  # fmt: skip
    """(time of NCCL's pick in the DES, "Algo/Proto"; all_to_all / send_recv: the DES algorithm's name,
    nccl_p2p, no tuner pick); ``nccl_version``: the release whose tuning picks (sim.nccl.versions; None: 2.27)."""
    from sim.collective.pick import scenario_for_pick
    from sim.collective.runner import run_collective
    from sim.nccl.path import PAIR_OF

    scenario, why = scenario_for_pick(hardware, nodes, op, size, nccl_algo, nccl_proto, nccl_version=nccl_version)
    if scenario is None:
        raise CollsimError(why)
    pair = PAIR_OF.get(scenario.algorithm)
    return run_collective(scenario).time_s, "/".join(pair) if pair else scenario.algorithm


def compare(path: str | Path, hardware: str, nodes: int, nccl_proto: str | None = None, stride: int = 1,
            nccl_algo: str | None = None, nccl_version: str | None = None) -> list[Point]:  # fmt: skip
    """Measured, DES and NCCL-model times at every ``stride``-th size of one log (NCCL_PROTO /
    NCCL_ALGO as the run had them), picked with the tuning of the release the log names, else of
    ``nccl_version``, else of the default (:func:`log_release`)."""
    from sim.nccl.model import predict

    op, rows, checks = read_checked(path)
    version = log_release(checks, nccl_version).version
    points = []
    for size, out, inp in rows[::stride]:
        measured = _faster(out, inp)
        des, pick = des_time(hardware, nodes, op, size, nccl_algo, nccl_proto, nccl_version=version)
        model = predict(hardware, nodes, op, size, nccl_algo, nccl_proto, version).time_s
        points.append(Point(Path(path).name, op, size, measured, des, model, pick, abs(out - inp) / measured if inp else 0.0))
    return points


def regime_stats(points: list[Point]) -> list[tuple[str, int, float, float, float, float]]:
    """Per regime: (name, points, DES median |err|, DES worst err, model median |err|, model worst err)."""
    out = []
    for name, lo, hi in REGIMES:
        chosen = [p for p in points if lo <= p.size_bytes < hi]
        if not chosen:
            continue
        des, model = [p.des_error for p in chosen], [p.model_error for p in chosen]
        out.append((name, len(chosen), statistics.median(map(abs, des)), max(des, key=abs),
                    statistics.median(map(abs, model)), max(model, key=abs)))  # fmt: skip
    return out


NOISE = 0.1  # the scale of a log time ratio the fit calls noise (soft_l1's f_scale): a prior's sd is weighed against it
HELD_ABOVE = 0.9  # a constant whose posterior sd is above this fraction of its prior's is held at the prior
DELTA = 1e-3  # relative step of the finite differences (diff_step)


def fit(logs: list[tuple], hardware: str, names: list[str], stride: int = 1) -> dict:
    """Least squares of ``names`` (constants) on ``logs`` ([(path or a log already read, nodes,
    NCCL_PROTO or None[, NCCL_ALGO or None[, --nccl-version or None]])]; a log already read (a
    :class:`LogRun`, real.validate_nccl.Log) gives its rows and release and is not read again; each
    log picked with its release's tuning: :func:`log_release`) regularised toward each constant's prior (:data:`sim.hardware.presets.PRIORS`),
    robust (soft L1 on log time ratios, scale :data:`NOISE`: a noisy point cannot pull it), every
    log weighing the same whatever its number of sizes.

    Only what the logs can tell is fitted: first, at the priors, each constant's uncertainty from
    the data alone is compared with its prior's; one the logs know less well than the prior (NVLink
    on a NIC-bound two-node run, LL latency with no small sizes) is held at its prior and said so.
    A fitted value at a bound is flagged and not kept. The result says, per constant, its prior,
    the posterior with a 95 % interval, which logs moved it, and each log's residual."""
    from sim.hardware.presets import CONSTANTS

    unknown = [name for name in names if name not in CONSTANTS]
    if unknown:
        raise CollsimError(f"--fit: unknown constant(s) {', '.join(unknown)}; allowed: {', '.join(CONSTANTS)}")
    data, scale = _fit_data(logs, stride)
    if len(data) <= len(names):
        raise CollsimError(f"hardware fit: {len(data)} points for {len(names)} constants; give more logs or sizes")
    priors = {name: _prior(name, hardware) for name in names}
    told, held = _identified(hardware, data, scale, names, priors)
    fitted, jac, fun = _solve(hardware, data, scale, told, priors) if told else ({}, None, None)
    return _report(data, scale, names, priors, told, held, fitted, jac, fun, hardware)


def _fit_data(logs: list[tuple], stride: int) -> tuple[list[tuple], list[float]]:
    """Every chosen point (log, nodes, op, size, measured, proto, algo, release) and its weight factor."""
    data, weights = [], []
    if stride < 1:
        raise CollsimError(f"--stride: must be >= 1 (use every Nth size of each log), got {stride}")
    for source, nodes, proto, *more in logs:
        algo, given = (*more, None, None)[:2]
        path, op, rows, version = _fit_rows(source, given)
        chosen = rows[::stride]
        data += [(Path(path).name, nodes, op, size, measured, proto, algo, version) for size, measured in chosen]
        weights += [1.0 / len(chosen)] * len(chosen)
    # every log weighs the same (a 6-size run is not drowned by a 32-size one): residual x sqrt(w / mean w)
    return data, [math.sqrt(w * len(weights) / sum(weights)) for w in weights]


def _fit_rows(source, given: str | None) -> tuple[str | Path, str, list[tuple[int, float]], str]:
    """(path, op, measured rows, release) of one log of :func:`fit`: a path is read here; a log
    already read (path, op, rows, release: :class:`LogRun`) gives its own (``given``, where set, is
    the release that reading decided)."""
    if isinstance(source, str | Path):
        op, columns, checks = read_checked(source)
        return source, op, measured_rows(columns), log_release(checks, given).version
    release = given or (source.release or default_release()).version
    return source.path, source.op, list(source.rows), release


def _prior(name: str, hardware: str | None = None) -> dict:
    """A constant's prior on ``hardware`` (:func:`sim.hardware.presets.prior`: base_latency_us
    from the preset's transport): its centre, the sd (log or absolute), in the constant's units too."""
    from sim.hardware.presets import CONSTANTS, load_preset, prior

    _, lower, upper, _ = CONSTANTS[name]
    default, kind, sd, basis = prior(name, load_preset(hardware) if hardware else None)
    raw_sd = sd * default if kind == "log" else sd
    return {"value": default, "kind": kind, "sd": sd, "sd_value": raw_sd, "bounds": (lower, upper), "basis": basis}


def _data_residuals(hardware: str, data: list[tuple], scale: list[float], values: dict[str, float]) -> list[float]:
    from sim.hardware.presets import TRIAL

    TRIAL[hardware] = dict(values)
    try:
        return [k * math.log(des_time(hardware, nodes, op, size, algo, proto, nccl_version=version)[0] / measured)
                for k, (_, nodes, op, size, measured, proto, algo, version) in zip(scale, data)]  # fmt: skip
    finally:
        TRIAL.pop(hardware, None)


def _jacobian(hardware: str, data, scale, names: list[str], at: dict[str, float]) -> list[list[float]]:
    """d(data residual)/d(constant) by forward differences at ``at`` (columns in ``names`` order)."""
    base = _data_residuals(hardware, data, scale, at)
    columns = []
    for name in names:
        step = DELTA * max(abs(at[name]), 1.0 if name == "base_latency_us" else 0.01)
        moved = _data_residuals(hardware, data, scale, {**at, name: at[name] + step})
        columns.append([(m - b) / step for m, b in zip(moved, base)])
    return [list(row) for row in zip(*columns)]


def _identified(hardware: str, data, scale, names: list[str], priors: dict) -> tuple[list[str], dict]:
    """(constants the logs can tell, {held constant: why}). At the priors, the posterior precision
    is the data's (J^T J / NOISE^2, correlations included) plus the priors'; a constant whose
    posterior sd stays above :data:`HELD_ABOVE` of its prior's (the logs narrow it by less than
    that) is held at the prior."""
    import numpy as np

    at = {name: priors[name]["value"] for name in names}
    jac = np.array(_jacobian(hardware, data, scale, names, at))
    prior_sd = np.array([priors[name]["sd_value"] for name in names])
    cov = np.linalg.inv(jac.T @ jac / NOISE**2 + np.diag(1 / prior_sd**2))
    told, held = [], {}
    for index, name in enumerate(names):
        posterior_sd = math.sqrt(max(cov[index, index], 0.0))
        if posterior_sd > HELD_ABOVE * prior_sd[index]:
            held[name] = {"value": priors[name]["value"], "prior_sd": round(float(prior_sd[index]), 6), "posterior_sd": round(posterior_sd, 6),
                          "why": f"the logs cannot tell it (they narrow its prior's sd by less than {1 - HELD_ABOVE:.0%}); kept at its prior"}  # fmt: skip
        else:
            told.append(name)
    return told, held


def _prior_residual(name: str, value: float, prior: dict) -> float:
    """The prior as one more residual, in the units of the data's (a deviation of one sd = NOISE)."""
    if prior["kind"] == "log":
        return NOISE * math.log(max(value, 1e-12) / prior["value"]) / prior["sd"]
    return NOISE * (value - prior["value"]) / prior["sd"]


def _solve(hardware: str, data, scale, names: list[str], priors: dict):
    """The regularised robust least squares of the told constants: (values, jacobian, residuals)."""
    from scipy.optimize import least_squares

    lower = [priors[n]["bounds"][0] for n in names]
    upper = [priors[n]["bounds"][1] for n in names]
    x0 = [min(max(priors[n]["value"], lo + 1e-6), hi - 1e-6) for n, lo, hi in zip(names, lower, upper)]
    # the held constants stay at their priors while the told ones move (not at the preset's old fit)
    held = {n: prior["value"] for n, prior in priors.items() if n not in names}

    def residuals(x) -> list[float]:
        values = dict(zip(names, map(float, x)))
        return _data_residuals(hardware, data, scale, {**held, **values}) + [_prior_residual(n, values[n], priors[n]) for n in names]

    result = least_squares(residuals, x0, bounds=(lower, upper), method="trf", loss="soft_l1", f_scale=NOISE,
                           diff_step=DELTA, x_scale="jac", max_nfev=40)  # fmt: skip
    return dict(zip(names, map(float, result.x))), result.jac, result.fun


def _report(data, scale, names, priors, told, held, fitted, jac, fun, hardware) -> dict:
    """The fit's answer: kept constants (posterior, 95 % interval, prior, logs that moved it), held
    and flagged ones, and each log's residual (rms of log time ratios)."""
    import numpy as np

    constants, flagged, moved = {}, {}, {}
    if fitted:
        count = len(data)
        s2 = float(np.sum(fun[:count] ** 2)) / max(count - len(told), 1)
        cov = np.linalg.pinv(jac.T @ jac) * max(
            s2, NOISE**2
        )  # the residuals' own spread, never below the noise the priors are weighed against
        logs = sorted({row[0] for row in data})
        for index, name in enumerate(told):
            value, half = fitted[name], 1.96 * math.sqrt(max(cov[index, index], 0.0))
            lower, upper = priors[name]["bounds"]
            information = {log: float(sum(jac[r, index] ** 2 for r in range(count) if data[r][0] == log)) for log in logs}
            total = sum(information.values()) or 1.0
            moved[name] = [log for log in logs if information[log] / total >= 0.1]
            entry = {"value": round(value, 6), "interval": [round(max(value - half, lower), 6), round(min(value + half, upper), 6)],
                     "prior": {"value": priors[name]["value"], "sd": round(priors[name]["sd_value"], 6)}, "moved_by": moved[name]}  # fmt: skip
            if min(value - lower, upper - value) <= 1e-3 * (upper - lower):
                flagged[name] = {**entry, "why": f"at its bound [{lower}, {upper}]: the model cannot reach the logs there; not kept"}
            else:
                constants[name] = entry
    values = {**{n: priors[n]["value"] for n in names}, **{n: e["value"] for n, e in constants.items()}}
    final = np.array(_data_residuals(hardware, data, [1.0] * len(data), values))
    residuals = {log: round(float(np.sqrt(np.mean([final[r] ** 2 for r in range(len(data)) if data[r][0] == log]))), 4)
                 for log in sorted({row[0] for row in data})}  # fmt: skip
    return {"constants": constants, "held_at_prior": held, "flagged": flagged, "points": len(data), "residuals": residuals,
            "rms_log_error": round(float(np.sqrt(np.mean(final**2))), 4)}  # fmt: skip


def log_nodes(checks: LogChecks, hardware: str, gpus_per_node: int, given: int | None = None) -> int:
    """Nodes of a log (``checks`` from :func:`read_checked`): its ranks by the "#  Rank" lines over
    ``gpus_per_node``; ``given`` (--nodes) must agree with them where the log lists them."""
    ranks = checks.rank_count
    each = f"{hardware} nodes of {gpus_per_node} GPUs"
    if given is not None:
        if given < 1:
            raise CollsimError(f"--nodes: must be >= 1, got {given}")
        if ranks is not None and given * gpus_per_node != ranks:
            fix = (
                f"give --nodes {ranks // gpus_per_node} or leave it out"
                if ranks % gpus_per_node == 0
                else f"that is not a whole number of {each}"
            )
            raise CollsimError(
                f"--nodes: {given} x {gpus_per_node} GPUs = {given * gpus_per_node} ranks, but {checks.name}'s '#  Rank' lines list {ranks} ranks; {fix}"
            )
        return given
    if ranks is None:
        raise CollsimError(f"--nodes: {checks.name} lists no '#  Rank' lines to count its ranks; give --nodes (its {each})")
    if ranks % gpus_per_node:
        raise CollsimError(
            f"--nodes: {checks.name} lists {ranks} ranks, not a whole number of {each}; a preset's nodes are whole: fit a log that ran on whole nodes"
        )
    return ranks // gpus_per_node


@dataclass(frozen=True)
class LogRelease:
    """The NCCL release whose tuning picks and plans a log's points: the record's name and tag
    (sim.nccl.versions), where it came from ("log", "flag": --nccl-version, "default") and what the
    log printed (None where it names none)."""

    version: str
    tag: str
    source: str
    named: str | None = None

    @property
    def note(self) -> str:
        """One line for a report: the release and where it came from."""
        if self.source == "default":
            return f"NCCL release: not named in the log; default {self.tag[1:]} assumed"
        if self.source == "flag":
            named = f" (the log names {self.named}, a release the model has no tables of)" if self.named else ""
            return f"NCCL release: {self.version} from --nccl-version{named}; {self.tag}'s tuning"
        return f"NCCL release: {self.named}, named in the log; {self.tag}'s tuning"

    def to_dict(self) -> dict:
        return {"version": self.version, "tag": self.tag, "source": self.source, "named": self.named, "note": self.note}


def log_release(checks: LogChecks, given: str | None = None) -> LogRelease:
    """The release of a log (``checks`` from :func:`read_checked`): the one it names, else
    ``given`` (--nccl-version), else the default. A named release that differs from ``given`` is
    refused, naming both (never silently overridden); a named release the model has no tables of
    is refused, naming the known ones, unless ``given`` says which known release to use for it."""
    flag = _given_release(given) if given else None
    if checks.release is None:
        return LogRelease(flag.name, flag.tag, "flag") if flag else default_release()
    where = f"{checks.name} line {checks.release_line}"
    record = _known_release(checks.release)
    if record is None and flag is None:
        raise _unknown_release(where, checks.release)
    if record is None:
        return LogRelease(flag.name, flag.tag, "flag", checks.release)
    if flag is not None and flag != record:
        raise CollsimError(
            f"--nccl-version: {where} names NCCL {checks.release}, but --nccl-version gives {given} for it; a log is predicted "
            f"with the release it ran: give {record.name} in its place, or leave that place empty (comma list, one per log)"
        )
    return LogRelease(record.name, record.tag, "log", checks.release)


def default_release() -> LogRelease:
    """The release assumed for a log that names none, with no --nccl-version: the default (2.27.7-1)."""
    from sim.nccl.versions import nccl_version

    record = nccl_version(None)
    return LogRelease(record.name, record.tag, "default")


def _known_release(name: str) -> NcclVersion | None:
    from sim.nccl.versions import nccl_version

    try:
        return nccl_version(name)
    except CollsimError:
        return None


def _given_release(given: str) -> NcclVersion:
    """--nccl-version's record, or one message naming the known releases."""
    from sim.nccl.versions import nccl_version

    try:
        return nccl_version(given)
    except CollsimError as error:
        raise CollsimError("--nccl-version: " + str(error).removeprefix("nccl_version: ")) from None


def _unknown_release(where: str, named: str) -> CollsimError:
    from sim.nccl.versions import known_versions

    return CollsimError(
        f"{where} names NCCL {named}, a release whose tuning tables the model does not have; known: {', '.join(known_versions())} "
        f"(sim.nccl.versions); give --nccl-version with one of them for this log to predict it with that release's tuning"
    )


def given_releases(spec: str | None, count: int) -> list[str | None]:
    """--nccl-version as one entry per log: one release for all, or a comma list, one per log
    (an empty place: that log's own or the default)."""
    if spec is None or not spec.strip():
        return [None] * count
    parts = [part.strip() or None for part in spec.split(",")]
    if len(parts) == 1:
        parts *= count
    if len(parts) != count:
        raise CollsimError(f"--nccl-version: give one release for every log or one per log ({count}, comma list), got {spec!r}")
    for part in parts:
        if part:
            _given_release(part)
    return parts


@dataclass(frozen=True)
class LogRun:
    """One log as the fit and the validation read it: its op, nodes, NCCL release and measured
    rows ([(size, time_s)], the faster column: :func:`measured_rows`), read once."""

    path: str
    op: str
    nodes: int
    release: LogRelease
    rows: tuple[tuple[int, float], ...]

    @property
    def name(self) -> str:
        return Path(self.path).name


def log_runs(logs, preset, nodes: str | None, nccl_version: str | None = None, warn=None) -> list[LogRun]:
    """Each log read and checked (``warn`` gets its warnings), with its op, its nodes (``nodes``:
    --nodes, a comma list, one per log, checked against the log's "#  Rank" lines, else counted
    from them) and its release (:func:`log_release`, ``nccl_version``: --nccl-version). `collsim
    hardware fit` and `collsim validate nccl-tests` both read their logs here, once (the fit takes the runs)."""
    given: list[int | None] = [None] * len(logs)
    if nodes:
        try:
            given = [int(part) for part in nodes.split(",")]
        except ValueError:
            raise CollsimError(f"--nodes: expected whole numbers, one per log (comma list), got {nodes!r}") from None
        if len(given) != len(logs):
            raise CollsimError(f"--nodes: give one count per log ({len(logs)}), got {nodes!r}")
    releases = given_releases(nccl_version, len(logs))
    runs = []
    for path, count, release in zip(logs, given, releases):
        op, columns, checks = read_checked(path)
        for warning in checks.warnings() if warn else ():
            warn(warning)
        nodes_of = log_nodes(checks, preset.name, preset.gpus_per_node, count)
        runs.append(LogRun(str(path), op, nodes_of, log_release(checks, release), tuple(measured_rows(columns))))
    return runs


def fitted_block(result: dict, runs: list[LogRun], nccl_proto: str | None, nccl_algo: str | None = None) -> dict:
    """The ``fitted:`` block of a preset: provenance (logs, their NCCL releases, date, command) and the constants."""
    import datetime

    return {
        # op and nodes: what sim.hardware.uncertainty.fitted_runs judges a prediction's configuration against
        "logs": [f"{run.name} ({run.op}, {run.nodes} node{'s' if run.nodes > 1 else ''})" for run in runs],
        "nccl_releases": {run.name: {"version": run.release.version, "source": run.release.source} for run in runs},
        "date": datetime.date.today().isoformat(),
        "method": "collsim hardware fit: scipy least_squares (trf, soft_l1 on log time ratios, every log weighing the same; per size the faster of the out-of-place and in-place columns; each log picked with its NCCL release's tuning) regularised toward each constant's prior (sim.hardware.presets.PRIORS); constants the logs cannot tell held at their prior; 95 % intervals from the Jacobian",
        "nccl_proto": nccl_proto,
        **({"nccl_algo": nccl_algo} if nccl_algo else {}),
        "points": result["points"],
        "rms_log_error": result["rms_log_error"],
        "residuals": result.get("residuals", {}),
        "constants": result["constants"],
        **({"held_at_prior": result["held_at_prior"]} if result.get("held_at_prior") else {}),
        **({"flagged": result["flagged"]} if result.get("flagged") else {}),
    }
