"""Speed of ``collsim sim train`` (issue 34 item 2): GPT-3 175B on 512 GPUs with 64
micro-batches (target <= 10 s) and ``--sweep`` over every layout on 512 GPUs (target <= 2 min).

Each figure is the median of ``--runs`` fresh processes (cold caches), with the date, the
machine and its load average, as docs/dev/ lists bench figures.

    python bench/train_step.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone

STEP = ["sim", "train", "--hardware", "dgx-a100", "--nodes", "64", "--model", "gpt3-175b", "--global-batch", "512",
        "--micro-batch", "1", "--tp", "8", "--pp", "8", "--dp", "8", "--schedule", "1f1b", "--recompute", "full"]  # fmt: skip
SWEEP = ["sim", "train", "--hardware", "dgx-a100", "--nodes", "64", "--model", "gpt3-175b", "--global-batch", "512",
         "--micro-batch", "1", "--recompute", "full", "--sweep"]  # fmt: skip


def timed(args: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sim.cli", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-sweep", action="store_true")
    args = parser.parse_args()
    print(
        f"date {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()} {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    step = [timed(STEP) for _ in range(args.runs)]
    print(f"GPT-3 175B, 512 GPUs, 64 micro-batches: median {statistics.median(step):.2f} s of {args.runs} (target <= 10 s)")
    if not args.skip_sweep:
        sweep = [timed(SWEEP) for _ in range(max(1, args.runs // 3))]
        print(f"--sweep, 512 GPUs: median {statistics.median(sweep):.1f} s (target <= 120 s)")
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
