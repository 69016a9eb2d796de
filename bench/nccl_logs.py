"""Measured nccl-tests busbw against the DES (NCCL's pick on NCCL's data path) and NCCL's own
model, for every calibration log (real/data/nccl-tests, each with its source in its header).

    python bench/nccl_logs.py [--data DIR] [--sizes] [--json FILE] [--stride K] [--versions] [--leave-one-out [--record FILE]]

Per log: the preset it runs on, then per regime (< 1 MiB, 1-256 MiB, >= 256 MiB) the median
|busbw error| and the worst error of the DES and of NCCL's model; ``--sizes`` adds every size
(measured busbw, DES, model, NCCL's pick, and the spread between the log's out-of-place and
in-place times). "Measured" is the faster of those two columns (sim.collective.nccl_fit.read_log
says why). busbw error = predicted busbw / measured - 1 =
measured time / predicted time - 1. Logs whose preset does not exist are listed and skipped.
Every log is picked with the tuning of the NCCL release it names (sim.nccl.log.release_named:
"NCCL version 2.26.2+cuda12.8", nccl-tests' nccl-library=, a printed "# NCCL:" header; inferred
ones name none), else of the default 2.27, as `collsim hardware fit` and `collsim validate
nccl-tests` pick them.

``--versions`` adds, for each log that names its release, the same errors with the default 2.27's
tuning model beside its own release's (sim.nccl.versions), per regime: NCCL's model, and the DES
running the pick the default makes (rerun only at the sizes where that pick differs).

``--leave-one-out`` adds the honest figure: each log predicted by a fit that never saw it. Its
preset's constants are refitted on the other logs of the same preset (``collsim validate
nccl-tests``'s fit, real.validate_nccl; every other constant at its prior, never the shipped fit,
which saw this log); a preset with no other log is predicted from its priors (uncalibrated). Per
regime: the median and worst |busbw error| and how often the 80 % interval (real.validate_nccl
says how it is made) held the measurement. Then, over all logs, the held-out |ln error| of every
point by regime and log, the 80 % conformal bound the shipped interval rests on
(sim.hardware.uncertainty.conformal_half_width, each log weighing the same) with the
``LOO_HALF_WIDTH = ...`` line to paste into sim/hardware/uncertainty.py after a model change, and
that interval's coverage: on the points that set it, and nested (each log's bound from the other
logs only: the honest check). ``--record FILE`` writes that output with the date and the machine
(bench/results/nccl_logs_loo.md; tests/hardware/test_uncertainty_held_out.py recomputes the
shipped bound from its scores).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.collective.nccl_fit import CALIBRATION, REGIMES, compare, des_time, regime_stats  # noqa: E402
from sim.hardware.presets import list_presets  # noqa: E402
from sim.nccl.versions import DEFAULT as DEFAULT_VERSION  # noqa: E402


def _busbw(size: int, seconds: float, ranks: int) -> float:
    return size / seconds / 1e9 * 2 * (ranks - 1) / ranks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT / "real" / "data" / "nccl-tests"), help="folder of the logs")
    parser.add_argument("--sizes", action="store_true", help="print every size")
    parser.add_argument("--json", default=None, help="write every point to this file")
    parser.add_argument("--stride", type=int, default=1, help="every Kth size of each log (both tables; the fits are CPU-heavy)")
    parser.add_argument("--versions", action="store_true", help="also each log with the NCCL release its header names")
    parser.add_argument("--leave-one-out", action="store_true", help="also predict each log from a fit on the other logs of its preset")
    parser.add_argument("--record", default=None, help="with --leave-one-out: write its output, date and machine to this Markdown file")
    args = parser.parse_args()
    in_sample, points = table(args)
    if args.versions:
        versions(args, points)
    if args.leave_one_out:
        leave_one_out(args, in_sample)


def table(args: argparse.Namespace) -> tuple[list[str], list]:
    """Today's table: every log against the DES and NCCL's model with the shipped presets (fitted
    on these same logs: in-sample). Returns its "all logs" lines and its points."""
    from sim.hardware.presets import load_preset

    everything, started = [], time.perf_counter()
    print(f"{'log':58s} {'preset x nodes':20s} {'regime':11s} {'n':>3s}  {'DES median/worst':>18s}  {'NCCL model median/worst':>24s}")
    for name, (preset, nodes, proto, algo) in CALIBRATION.items():
        path = Path(args.data) / name
        if preset not in list_presets() or not path.exists():
            print(f"{name:58s} skipped: {'no preset ' + preset if path.exists() else 'no log file'}")
            continue
        points = compare(path, preset, nodes, proto, stride=args.stride, nccl_algo=algo)
        everything += points
        ranks = nodes * load_preset(preset).gpus_per_node
        for regime, n, des_median, des_worst, model_median, model_worst in regime_stats(points):
            print(f"{name[:58]:58s} {preset + ' x ' + str(nodes):20s} {regime:11s} {n:3d}  "
                  f"{des_median:7.1%} / {des_worst:+7.1%}  {model_median:11.1%} / {model_worst:+8.1%}")  # fmt: skip
        if args.sizes:
            for p in points:
                print(f"    {p.size_bytes:>12d} B  measured {_busbw(p.size_bytes, p.measured_s, ranks):8.2f}  "
                      f"DES {_busbw(p.size_bytes, p.des_s, ranks):8.2f} ({p.des_error:+6.1%})  "
                      f"model {_busbw(p.size_bytes, p.model_s, ranks):8.2f} ({p.model_error:+6.1%})  {p.pick:16s} spread {p.spread:5.1%}")  # fmt: skip
    summary = [f"  {regime:11s} {n:3d} points  DES median {des_median:6.1%} worst {des_worst:+7.1%}   "
               f"NCCL model median {model_median:6.1%} worst {model_worst:+7.1%}"
               for regime, n, des_median, des_worst, model_median, model_worst in regime_stats(everything)]  # fmt: skip
    print("\n".join(["all logs:", *summary]))
    beyond = [p for p in everything if abs(p.des_error) > 0.35]
    print(f"DES points beyond 35 %: {len(beyond)} of {len(everything)}")
    for p in beyond:
        print(f"  {p.log[:58]:58s} {p.size_bytes:>12d} B  DES {p.des_error:+6.1%}  model {p.model_error:+6.1%}  spread {p.spread:5.1%}")
    print(f"({time.perf_counter() - started:.1f} s; regimes: {', '.join(r[0] for r in REGIMES)})")
    if args.json:
        Path(args.json).write_text(json.dumps([p.__dict__ for p in everything], indent=1))
    return summary, everything


def log_version(path: Path) -> str | None:
    """The NCCL release a log names (sim.nccl.log.named_release), as its sim.nccl.versions record's
    name, if the model knows it; None where it names none (an inferred header names none) or one
    the model does not know."""
    from sim.collective.nccl_fit import log_release
    from sim.errors import CollsimError
    from sim.nccl.log import LogChecks, named_release

    found = named_release(path.read_text(errors="replace").splitlines())
    if found is None:
        return None
    try:
        return log_release(LogChecks(path.name, release=found[0], release_line=found[1])).version
    except CollsimError:
        return None


def versions(args: argparse.Namespace, points: list) -> None:
    """Per log naming its NCCL release: the model's and the DES's errors with that release (the
    table's) and with the default (2.27), per regime, interleaved."""
    from dataclasses import replace

    from sim.nccl.model import predict

    print(f"\nwith the default NCCL {DEFAULT_VERSION} instead of the release each log names:")
    for name, (preset, nodes, proto, algo) in CALIBRATION.items():
        path, mine = Path(args.data) / name, [p for p in points if p.log == name]
        version = log_version(path) if path.exists() else None
        if version is None or not mine:
            print(f"  {name[:58]:58s} {'names no NCCL release known to the model: default only' if mine else 'skipped'}")
            continue
        other, changed = [], 0
        for p in mine:
            pick = predict(preset, nodes, p.op, p.size_bytes, algo, proto, DEFAULT_VERSION)
            label, des = f"{pick.nccl_algorithm}/{pick.nccl_protocol}", p.des_s
            if label != p.pick:
                changed += 1
                des = des_time(preset, nodes, p.op, p.size_bytes, algo, proto, nccl_version=DEFAULT_VERSION)[0]
            other.append(replace(p, model_s=pick.time_s, des_s=des, pick=label))
        new, base = regime_stats(mine), regime_stats(other)
        print(f"  {name[:58]:58s} NCCL {version}: the default's pick differs at {changed} of {len(mine)} sizes")
        for (regime, n, dm, dw, mm, mw), (_, _, dm2, dw2, mm2, mw2) in zip(base, new):
            print(f"    {regime:11s} {n:3d}  model {DEFAULT_VERSION} {mm:6.1%} / {mw:+7.1%}   model {version} {mm2:6.1%} / {mw2:+7.1%}"
                  f"   DES {DEFAULT_VERSION} {dm:6.1%} / {dw:+7.1%}   DES {version} {dm2:6.1%} / {dw2:+7.1%}")  # fmt: skip


def leave_one_out(args: argparse.Namespace, in_sample: list[str]) -> None:
    """Each log predicted from a fit on the other logs of its preset (or the priors), per regime."""
    from real.validate_nccl import calibrate, predict_log, read_one, regime_rows

    logs = {name: read_one(Path(args.data) / name, nodes, proto, algo)
            for name, (preset, nodes, proto, algo) in CALIBRATION.items()
            if preset in list_presets() and (Path(args.data) / name).exists()}  # fmt: skip
    lines, everything, started = (
        [f"leave one log out (stride {args.stride}): each log predicted by a fit that never saw it"],
        [],
        time.perf_counter(),
    )
    for name, log in logs.items():
        preset = CALIBRATION[name][0]
        others = [other for key, other in logs.items() if key != name and CALIBRATION[key][0] == preset]
        begun = time.perf_counter()
        calibration = calibrate(others, preset, args.stride)
        points = predict_log(log, preset, calibration, "predicted", args.stride)
        everything += points
        basis = "fit on " + ", ".join(o.name for o in others) if others else "priors only (no other log of this preset: uncalibrated)"
        lines.append(f"{name} ({preset} x {log.nodes}): {basis}; {time.perf_counter() - begun:.0f} s")
        lines += [_loo_line(row) for row in regime_rows(points)]
    lines += _interval_lines(everything)
    lines.append(f"({time.perf_counter() - started:.0f} s; 80 % interval: real.validate_nccl.INTERVAL_METHOD)")
    print("\n".join(lines))
    if args.record:
        _record(Path(args.record), lines, in_sample, args)


def _interval_lines(everything: list) -> list[str]:
    """Over all logs: the errors, the held-out scores, the conformal bound (ready to paste), and
    the coverage of the shipped interval, the published spread and the nested bound."""
    from real.validate_nccl import regime_rows

    scores = held_out_scores(everything)
    lines = ["all logs:", *[_loo_line(row) for row in regime_rows(everything)]]
    lines.append("held-out |ln(measured / predicted)| per regime and log, rounded as the bound reads them:")
    lines += [
        f"  {regime:11s} {log}: {' '.join(f'{x:.4f}' for x in values)}" for regime, logs in scores.items() for log, values in logs.items()
    ]
    lines.append("the 80 % bound per regime (sim.hardware.uncertainty.METHOD; LOO_HALF_WIDTH holds it):")
    lines += _bound_lines(scores)
    lines.append("the same predictions with sim.hardware.uncertainty's interval for a preset not fitted on the cluster (x/÷ by regime):")
    lines += [_loo_line(row) for row in regime_rows(_with_shipped_interval(everything))]
    lines.append("... and with its published other-cluster spread alone (what it gives a preset without a log, another op or node count):")
    lines += [_loo_line(row) for row in regime_rows(_with_shipped_interval(everything, op_known=False))]
    lines.append(
        "... and with the bound itself held out (each log's interval from the other logs' conformal bound; inf: too few other logs):"
    )
    return lines + [_loo_line(row) for row in regime_rows(_with_spread_of_others(everything))]


def held_out_scores(points: list) -> dict[str, dict[str, list[float]]]:
    """Per regime, per log: the held-out points' |ln(measured / predicted)|, rounded to 4 places
    (what the record prints, so the bound recomputed from the record is the one printed)."""
    import math

    from sim.collective.nccl_fit import REGIMES

    scores: dict[str, dict[str, list[float]]] = {}
    for name, low, high in REGIMES:
        for p in points:
            if low <= p.size_bytes < high:
                scores.setdefault(name, {}).setdefault(p.log, []).append(round(abs(math.log(p.measured_s / p.predicted_s)), 4))
    return scores


def _bound_lines(scores: dict[str, dict[str, list[float]]]) -> list[str]:
    """Per regime: logs, points, the median and the conformal bound q with its factor exp(q); then
    LOO_HALF_WIDTH ready to paste into sim/hardware/uncertainty.py."""
    import math
    import statistics

    from sim.collective.nccl_fit import REGIMES
    from sim.hardware.uncertainty import conformal_half_width

    lines, bounds = [], {}
    for regime, logs in scores.items():
        flat, bound = [x for values in logs.values() for x in values], conformal_half_width(logs)
        bounds[regime] = bound
        lines.append(f"  {regime:11s} {len(logs)} logs {len(flat):3d} points  median |ln error| {statistics.median(flat):.4f}  "
                     f"80 % bound {bound:.4f}  factor x/÷ {math.exp(bound):.3f}")  # fmt: skip
    ends = {name: "math.inf" if high == float("inf") else f"2**{int(high).bit_length() - 1}" for name, _, high in REGIMES}
    pairs = ", ".join(
        f"({ends[regime]}, {bound:.4f})" if math.isfinite(bound) else f"({ends[regime]}, math.inf)" for regime, bound in bounds.items()
    )
    lines.append(f"paste into sim/hardware/uncertainty.py: LOO_HALF_WIDTH = ({pairs})")
    return lines


def _with_spread_of_others(points: list) -> list:
    """The points with the shipped interval's form (x/÷ exp(q), q the conformal bound of the
    regime) whose bound comes from the other logs' scores only: the interval's coverage judged on
    points that did not set it (q is inf, the interval unbounded, where the others are too few)."""
    import math
    from dataclasses import replace

    from sim.collective.nccl_fit import REGIMES
    from sim.hardware.uncertainty import conformal_half_width

    scores, out = held_out_scores(points), []
    for p in points:
        regime = next(name for name, low, high in REGIMES if low <= p.size_bytes < high)
        others = {log: values for log, values in scores[regime].items() if log != p.log}
        factor = math.exp(conformal_half_width(others))
        out.append(replace(p, low_s=p.predicted_s / factor, high_s=p.predicted_s * factor))
    return out


def _with_shipped_interval(points: list, op_known: bool = True) -> list:
    """The points with sim.hardware.uncertainty's 80 % interval around the same held-out prediction
    (the one every collective on a shipped preset prints), so its coverage is measured too;
    ``op_known`` False: the interval of a call whose op it is not told (the other-cluster spread)."""
    from dataclasses import replace
    from types import SimpleNamespace

    from sim.hardware.presets import load_preset
    from sim.hardware.uncertainty import interval

    out = []
    for p in points:
        preset = CALIBRATION[p.log][0]
        scenario = SimpleNamespace(
            hardware=preset, op=p.op if op_known else None, ranks=p.nodes * load_preset(preset).gpus_per_node, size_bytes=p.size_bytes
        )
        found = interval(scenario, p.predicted_s)
        out.append(replace(p, low_s=found.low_s, high_s=found.high_s))
    return out


def _loo_line(row: dict) -> str:
    return (f"  {row['regime']:11s} {row['points']:3d} points  median |err| {row['median_abs_error']:6.1%}  worst {row['worst_error']:+7.1%}"
            f"  80 % interval covered {row['covered']}/{row['points']} ({row['coverage']:.0%}), median x/÷ {row['median_width']:.2f}")  # fmt: skip


NOTES = "<!-- notes below this line are kept when the record is rewritten -->"


def _record(path: Path, lines: list[str], in_sample: list[str], args: argparse.Namespace) -> None:
    """The output as a Markdown record; a notes section below :data:`NOTES` in an existing record is kept."""
    import datetime
    import os
    import platform

    from real.validate_nccl import INTERVAL_METHOD
    from sim.hardware.uncertainty import METHOD

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
                 platform.processor() or "unknown") if Path("/proc/cpuinfo").exists() else platform.processor() or "unknown"  # fmt: skip
    command = "python bench/nccl_logs.py --leave-one-out --stride " + str(args.stride)
    header = [
        "# Leave one log out: how far the DES's predictions can be trusted",
        "",
        f"Recorded {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on {len(os.sched_getaffinity(0))} CPUs ({model}), shared with other jobs "
        f"(load average {os.getloadavg()[0]:.1f} at the end); "
        f"command `{command}` ({'every size' if args.stride == 1 else f'every {args.stride}th size'} of each log; --stride keeps the fits short).",
        "",
        f"Interval of each log's own table (real.validate_nccl, the fit's propagated uncertainty): {INTERVAL_METHOD}.",
        "",
        f"Shipped interval (sim.hardware.uncertainty, a preset at its own logs' op and node count): {METHOD}.",
        "",
        "```",
    ]
    beside = ["```", "", "Beside it, today's table (the shipped presets, whose fits saw these same logs: in-sample), all logs:", "", "```"]
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_text() if path.exists() else ""
    notes = old[old.index(NOTES) :] if NOTES in old else NOTES + "\n"
    path.write_text("\n".join(header + lines + beside + in_sample + ["```", "", notes]))


if __name__ == "__main__":
    main()
