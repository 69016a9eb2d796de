"""Speed of one NCCL collective on a large preset: ``collsim sim collective --hardware dgx-a100
--nodes N --op all_reduce --size 80MB --algorithm nccl`` (NCCL picks Tree/LL128 from 16 nodes on)
at several node counts, the node counts interleaved, each figure the median of ``--runs`` fresh
processes, with wall and CPU seconds and the load average before and after
(bench/results/nccl_big_presets.md keeps the record).

    python bench/nccl_big_presets.py [--runs 3] [--nodes 8 16 32 64] [--mode full]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone


def command(nodes: int, mode: str) -> list[str]:
    return [sys.executable, "-m", "sim.cli", "sim", "collective", "--hardware", "dgx-a100", "--nodes", str(nodes),
            "--op", "all_reduce", "--size", "80MB", "--algorithm", "nccl", "--mode", mode]  # fmt: skip


def timed(nodes: int, mode: str) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its time line: full's 'simulated time', collapsed's 'time per call')."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command(nodes, mode), check=True, capture_output=True, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    line = next((text.strip() for text in done.stdout.splitlines() if "simulated time" in text or "time per call" in text), "")
    return wall, cpu, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--mode", choices=("full", "collapsed"), default="full")
    args = parser.parse_args()
    print(
        f"date {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()} {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    runs: dict[int, list[tuple[float, float, str]]] = {nodes: [] for nodes in args.nodes}
    for _ in range(args.runs):  # interleaved: each round runs every node count once
        for nodes in args.nodes:
            runs[nodes].append(timed(nodes, args.mode))
    for nodes, figures in runs.items():
        wall = statistics.median(f[0] for f in figures)
        cpu = statistics.median(f[1] for f in figures)
        print(f"{nodes:3d} nodes ({args.mode}): median wall {wall:.2f} s, CPU {cpu:.2f} s of {args.runs}; {figures[0][2]}")
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
