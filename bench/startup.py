"""Start-up time of the ``collsim`` command line (issue 10, item 19).

Runs each command N times, interleaved (A B A B ...) so that a slow moment of a shared machine
hits every command alike, and prints per command the median wall time, the spread (min, p10,
p90, max) and N. hyperfine does the same; it is not installed here.

    python bench/startup.py                 # 15 rounds
    python bench/startup.py --rounds 30 --json
    git archive fb6c183 | tar -x -C /tmp/before && python bench/startup.py --root /tmp/before --root .

Each run is a fresh ``python -m sim.cli ...`` process (the ``collsim`` script does the same
work plus the console-script shim). Besides the wall time it prints the heavy modules each
command imported (``-X importtime`` is not used: it slows the run it measures).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {
    "collsim --help": ["--help"],
    "collsim sim collective ... --json": [
        "sim",
        "collective",
        "--op",
        "all_reduce",
        "--algorithm",
        "ring",
        "--ranks",
        "8",
        "--size",
        "1MiB",
        "--latency",
        "5us",
        "--bandwidth",
        "25GB/s",
        "--json",
    ],  # fmt: skip
}
HEAVY = ("networkx", "pandas", "yaml", "numpy", "scipy", "simpy", "torch", "dash", "plotly", "tqdm")
PROBE = "import runpy, sys, json; sys.argv = ['collsim'] + json.loads(sys.argv[1]); {body}"


ROOT = str(Path(__file__).resolve().parent.parent)


def run_once(args: list[str], root: str = ROOT) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sim.cli", *args], check=True, capture_output=True, cwd=root)
    return time.perf_counter() - started


def heavy_modules(args: list[str], root: str = ROOT) -> list[str]:
    """Which of HEAVY the command imports (one extra run, not timed)."""
    body = (
        "import atexit\n"
        f"atexit.register(lambda: print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))), file=sys.stderr))\n"
        "runpy.run_module('sim.cli', run_name='__main__')"
    )
    out = subprocess.run([sys.executable, "-c", PROBE.format(body=body), json.dumps(args)], capture_output=True, text=True, cwd=root)
    return json.loads(out.stderr.strip().splitlines()[-1]) if out.stderr.strip() else []


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--root", action="append", default=None,
        help="a checkout to measure (repeatable: e.g. an older commit unpacked by git archive; runs interleave)",
    )  # fmt: skip
    options = parser.parse_args()
    roots = options.root or [ROOT]
    cases = [(root, name) for root in roots for name in COMMANDS]
    times: dict[tuple[str, str], list[float]] = {case: [] for case in cases}
    for root, name in cases:
        run_once(COMMANDS[name], root)  # warm the file cache once
    for _ in range(options.rounds):
        for root, name in cases:
            times[(root, name)].append(run_once(COMMANDS[name], root))
    rows = []
    for (root, name), values in times.items():
        rows.append({
            "root": root, "command": name, "n": len(values), "median_s": statistics.median(values),
            "min_s": min(values), "p10_s": quantile(values, 0.1), "p90_s": quantile(values, 0.9),
            "max_s": max(values), "imports": heavy_modules(COMMANDS[name], root),
        })  # fmt: skip
    if options.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        where = f"[{row['root']}] " if len(roots) > 1 else ""
        print(
            f"{where}{row['command']:<36} median {row['median_s'] * 1e3:6.0f} ms  "
            f"[min {row['min_s'] * 1e3:.0f}, p10 {row['p10_s'] * 1e3:.0f}, p90 {row['p90_s'] * 1e3:.0f}, max {row['max_s'] * 1e3:.0f}] "
            f"n={row['n']}  imports: {', '.join(row['imports']) or '-'}"
        )


if __name__ == "__main__":
    main()
