"""The shipped model against published nccl-tests runs of clusters this project was never fitted on
(bench/heldout/nccl-tests, each log with its source, machine and preset in its header; issue 33).

    python bench/nccl_heldout.py [--data DIR] [--stride K] [--max-des-ranks R] [--sizes] [--log NAME ...] [--record FILE] [--json FILE]

Every stored log is predicted at every ``--stride``-th size exactly as a user would ask for it: the
default command ``collsim sim collective --hardware P --nodes N --op OP --size S`` (the DES running
NCCL's pick on the shipped, uncalibrated-for-this-cluster preset; the same calls the CLI makes) and
``--model nccl`` (NCCL's own tuning model, sim.nccl.model.predict). P and N come from the log's
header line ``# preset:      P --nodes N``; ``# restrict:    NCCL_ALGO=A NCCL_PROTO=B`` (or
``none``) for runs that forced them. Per log, per op and over all logs, per regime (< 1 MiB,
1-256 MiB, >= 256 MiB): the median and worst busbw error (predicted busbw / measured - 1 =
measured time / predicted time - 1; measured = the faster of the out-of-place and in-place
columns, as bench/nccl_logs.py) and how often the 80 % interval the CLI prints held the measurement.

Nothing here fits or changes a constant: it measures. The DES of many ranks is CPU-heavy (64 nodes
~20 s a point), so points with more than ``--max-des-ranks`` ranks (default 1024) are predicted by
NCCL's model only and counted as "DES not run"; ``--stride`` thins the sizes of every log.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.collective.nccl_fit import REGIMES, read_columns  # noqa: E402
from sim.errors import CollsimError  # noqa: E402

DATA = ROOT / "bench" / "heldout" / "nccl-tests"
_PRESET = re.compile(r"^# preset:\s+(\S+)\s+--nodes\s+(\d+)\s*$", re.M)
_RESTRICT = re.compile(r"^# restrict:\s+(.*)$", re.M)


@dataclass(frozen=True)
class Setup:
    """What a stored log ran on, from its header."""

    preset: str
    nodes: int
    nccl_algo: str | None = None
    nccl_proto: str | None = None


@dataclass(frozen=True)
class Point:
    log: str
    op: str
    nodes: int
    size_bytes: int
    measured_s: float
    des_s: float | None  # None: not run (over --max-des-ranks)
    model_s: float | None  # None: NCCL's model has no answer
    low_s: float | None  # the 80 % interval the CLI prints beside the DES time
    high_s: float | None

    @property
    def des_error(self) -> float | None:
        return None if self.des_s is None else self.measured_s / self.des_s - 1

    @property
    def model_error(self) -> float | None:
        return None if self.model_s is None else self.measured_s / self.model_s - 1

    @property
    def covered(self) -> bool | None:
        return None if self.low_s is None else self.low_s <= self.measured_s <= self.high_s


def read_setup(path: Path) -> Setup:
    """The preset, node count and NCCL_ALGO / NCCL_PROTO a stored log's header names."""
    text = path.read_text(errors="replace")
    found = _PRESET.search(text)
    if found is None:
        raise CollsimError(f"{path.name}: no '# preset:      NAME --nodes N' line in its header")
    restrict = _RESTRICT.search(text)
    words = dict(w.split("=", 1) for w in (restrict.group(1).split() if restrict else []) if "=" in w)
    return Setup(found.group(1), int(found.group(2)), words.get("NCCL_ALGO"), words.get("NCCL_PROTO"))


def des_point(setup: Setup, op: str, size: int) -> tuple[float, float | None, float | None]:
    """(DES time, 80 % interval low, high) of ``collsim sim collective --hardware P --nodes N --op OP
    --size S`` (sim/cli.py's collective command, the same calls)."""
    from sim.collective.collapsed import run as run_in_mode
    from sim.collective.collapsed import summarize
    from sim.collective.plan import resolve
    from sim.nccl.pick import apply_hardware
    from sim.scenario import CollectiveScenario, fill_only_algorithm

    data = {"hardware": setup.preset, "nodes": setup.nodes, "op": op, "size_bytes": size}
    apply_hardware(data, pick=True, nccl_algo=setup.nccl_algo, nccl_proto=setup.nccl_proto)
    fill_only_algorithm(data)
    scenario = CollectiveScenario.from_dict(data)
    plan = resolve(scenario)
    summary = summarize(run_in_mode(scenario, "full", plan), plan.preset)
    low, high = summary.get("time_interval_s") or (None, None)
    return summary["time_s"], low, high


def model_time(setup: Setup, op: str, size: int) -> float | None:
    """``--model nccl``'s time (None where it has no answer for the op)."""
    from sim.nccl.model import predict

    try:
        return predict(setup.preset, setup.nodes, op, size, setup.nccl_algo, setup.nccl_proto).time_s
    except CollsimError:
        return None


def predict_log(path: Path, stride: int = 1, max_des_ranks: int = 1024) -> list[Point]:
    """Measured, DES (with its interval) and NCCL-model times at every ``stride``-th size of one log."""
    from sim.hardware.presets import load_preset

    setup = read_setup(path)
    op, rows = read_columns(path)
    ranks = setup.nodes * load_preset(setup.preset).gpus_per_node
    points = []
    for size, out, inp in rows[::stride]:
        measured = min(out, inp) if inp else out
        des, low, high = des_point(setup, op, size) if ranks <= max_des_ranks else (None, None, None)
        points.append(Point(path.name, op, setup.nodes, size, measured, des, model_time(setup, op, size), low, high))
    return points


def _median_worst(errors: list[float]) -> str:
    if not errors:
        return f"{'n/a':>17s}"
    return f"{statistics.median(map(abs, errors)):6.1%} / {max(errors, key=abs):+7.1%}"


def stats_lines(label: str, points: list[Point]) -> list[str]:
    """Per regime: points, DES median/worst, model median/worst, interval coverage."""
    lines = []
    for regime, lo, hi in REGIMES:
        chosen = [p for p in points if lo <= p.size_bytes < hi]
        if not chosen:
            continue
        des = [p.des_error for p in chosen if p.des_error is not None]
        model = [p.model_error for p in chosen if p.model_error is not None]
        held = [p.covered for p in chosen if p.covered is not None]
        coverage = f"{sum(held):3d}/{len(held):<3d} ({sum(held) / len(held):4.0%})" if held else f"{'n/a':>14s}"
        skipped = len(chosen) - len(des)
        signed = f"{statistics.median(des):+7.1%}" if des else f"{'n/a':>7s}"
        lines.append(f"{label[:64]:64s} {regime:11s} {len(chosen):3d}  {_median_worst(des)}  {signed}  {_median_worst(model)}  {coverage}"
                     + (f"  (DES not run at {skipped})" if skipped else ""))  # fmt: skip
    return lines


HEAD = (
    f"{'log / op':64s} {'regime':11s} {'n':>3s}  {'DES median/worst':>17s}  {'signed':>7s}  {'model median/worst':>17s}  "
    f"{'80% covered':>14s}"
)  # signed: the DES's median busbw error with its sign (+: predicts faster than measured)


def report(points: list[Point], sizes: bool = False) -> list[str]:
    """The tables: per log, per op, all logs; with ``sizes`` every point."""
    out = ["per log:", HEAD]
    for name in dict.fromkeys(p.log for p in points):
        mine = [p for p in points if p.log == name]
        out += stats_lines(f"{name} (x{mine[0].nodes})", mine)
        if sizes:
            out += [f"    {p.size_bytes:>12d} B  measured {p.measured_s * 1e6:10.2f} us  DES {_err(p.des_error)}  model "
                    f"{_err(p.model_error)}  covered {'-' if p.covered is None else 'yes' if p.covered else 'no'}" for p in mine]  # fmt: skip
    out += ["", "per op:", HEAD]
    for op in dict.fromkeys(p.op for p in points):
        out += stats_lines(op, [p for p in points if p.op == op])
    out += ["", "per node count:", HEAD]
    for nodes in sorted({p.nodes for p in points}):
        out += stats_lines(f"{nodes} node(s)", [p for p in points if p.nodes == nodes])
    out += ["", "multi-node (2 nodes and more; GB200: trays):", HEAD, *stats_lines("multi-node", [p for p in points if p.nodes > 1])]
    out += ["", "all logs:", HEAD, *stats_lines("all", points)]
    return out


def _err(error: float | None) -> str:
    return f"{'n/a':>7s}" if error is None else f"{error:+7.1%}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA), help="folder of the held-out logs")
    parser.add_argument("--log", nargs="*", default=None, help="only these log file names")
    parser.add_argument("--stride", type=int, default=1, help="every Kth size of each log")
    parser.add_argument("--max-des-ranks", type=int, default=1024, help="above this many ranks only NCCL's model runs")
    parser.add_argument("--sizes", action="store_true", help="print every size")
    parser.add_argument("--record", default=None, help="write the output, date, machine and command to this Markdown file")
    parser.add_argument("--json", default=None, help="write every point (measured, DES, model, interval) to this file")
    args = parser.parse_args(argv)
    if args.stride < 1:
        raise SystemExit("--stride: give a whole number of 1 or more (every Kth size)")
    paths = sorted(Path(args.data).glob("*.txt"))
    if args.log:
        paths = [p for p in paths if p.name in args.log]
    started, points = time.perf_counter(), []
    spent = []
    for path in paths:
        begun = time.perf_counter()
        points += predict_log(path, args.stride, args.max_des_ranks)
        spent.append(f"{path.name} {time.perf_counter() - begun:.1f} s")
    lines = report(points, args.sizes)
    lines.append(f"({len(paths)} logs, {len(points)} points, {time.perf_counter() - started:.0f} s wall: {'; '.join(spent)})")
    print("\n".join(lines))
    if args.record:
        record(Path(args.record), lines, argv if argv is not None else sys.argv[1:])
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(p) for p in points], indent=1))


NOTES = "<!-- notes below this line are kept when the record is rewritten -->"


def record(path: Path, lines: list[str], argv: list[str], title: str = "Held-out check: the shipped model on published nccl-tests runs",
           script: str = "bench/nccl_heldout.py") -> None:  # fmt: skip
    """The output as a Markdown record: date, machine, load, command, the tree's commit; a notes
    section below :data:`NOTES` in an existing record is kept."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    head = [
        f"# {title} ({script})",
        "",
        f"- date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; tree at commit {_commit()}",
        f"- machine: {platform.node()}, {os.cpu_count()} CPUs ({_cpu()}), Python {platform.python_version()}; load average at the end {load}",
        f"- command: `python {script} {' '.join(argv)}`",
        "",
        "```",
    ]
    old = path.read_text() if path.exists() else ""
    notes = old[old.index(NOTES) :] if NOTES in old else NOTES + "\n"
    path.write_text("\n".join([*head, *lines, "```", "", notes]))


def _commit() -> str:
    import subprocess

    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def _cpu() -> str:
    try:
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
    except OSError:
        found = None
    return found.group(1).strip() if found else platform.processor() or "cpu unknown"


if __name__ == "__main__":
    main()
