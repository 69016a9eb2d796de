"""Sweep throughput: grid points per second with 1 and 2 local worker processes.

    python bench/sweep_throughput.py [--repeats 3] [--workers 1 2]

A 48-point collective grid (4 algorithms x 4 rank counts x 3 sizes, full per-message mode) runs
into a fresh SQLite file each time; runs alternate between worker counts so that both see the
same background load. Prints medians and min..max. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sim.sweep import Grid, run_sweep

GRID = Grid(
    name="bench",
    kind="collective",
    mode="full",
    base={"op": "all_reduce", "bandwidth": "25GB/s", "latency": "5us", "reduce_bandwidth": "100GB/s"},
    axes={
        "algorithm": ["ring", "recursive_doubling", "rabenseifner", "double_binary_tree"],
        "ranks": [16, 32, 64, 128],
        "size": ["64KiB", "4MiB", "64MiB"],
    },
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    walls: dict[int, list[float]] = {w: [] for w in args.workers}
    for _ in range(args.repeats):
        for workers in args.workers:
            with tempfile.TemporaryDirectory() as folder:
                start = time.perf_counter()
                counts = run_sweep(GRID, Path(folder) / "bench.sqlite", workers=workers)
                walls[workers].append(time.perf_counter() - start)
                assert counts["ok"] == GRID.size, counts
    print(f"# sweep throughput, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {GRID.size} points, {args.repeats} runs each")
    print(f"{'workers':>8} {'wall s, median (min..max)':>28} {'points/s':>10} {'speed-up':>9}")
    base = statistics.median(walls[args.workers[0]])
    for workers, values in walls.items():
        median = statistics.median(values)
        print(f"{workers:>8} {median:>12.2f} ({min(values):.2f}..{max(values):.2f}) {GRID.size / median:>14.1f} {base / median:>8.2f}x")


if __name__ == "__main__":
    main()
