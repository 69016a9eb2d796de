"""Fair sharing on deep NCCL trees: progressive filling by scanning every resource each round
against the heap :func:`sim.network.flows._fill` uses for components of ``HEAP_FROM`` resources
and more, interleaved in one process, CPU time; the simulated times must be identical.

    python bench/deep_tree_speed.py [--rounds 3] [--cases dgx-h100:32:64MiB,hgx-h100-nvls:16:1GiB]

Prints per case the median [min-max] CPU seconds of each mode and whether the times agree.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sim.network.flows as flows  # noqa: E402
from sim.collective.pick import scenario_for_pick  # noqa: E402
from sim.collective.runner import run_collective  # noqa: E402
from sim.errors import CollsimError  # noqa: E402
from sim.units import parse_size  # noqa: E402

HEAP_FROM = flows.HEAP_FROM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default="dgx-h100:32:64MiB,hgx-h100-nvls:16:1GiB", help="PRESET:NODES:SIZE,...")
    args = parser.parse_args()
    cases = []
    for case in args.cases.split(","):  # all checked before the first run
        parts = case.split(":")
        if len(parts) != 3 or not parts[1].isdigit():
            parser.error(f"--cases: each case is PRESET:NODES:SIZE (e.g. dgx-h100:32:64MiB), got {case!r}")
        try:
            scenario, why = scenario_for_pick(parts[0], int(parts[1]), "all_reduce", parse_size(parts[2], "--cases"))
        except CollsimError as error:
            parser.error(f"--cases {case}: {error}")
        if scenario is None:
            parser.error(f"--cases {case}: {why}")
        cases.append((case, scenario))
    for case, scenario in cases:
        cpu: dict[str, list[float]] = {"scan": [], "heap": []}
        answers: dict[str, set[str]] = {"scan": set(), "heap": set()}
        for round_index in range(args.rounds):
            for mode in ("scan", "heap") if round_index % 2 == 0 else ("heap", "scan"):
                flows.HEAP_FROM = 10**9 if mode == "scan" else HEAP_FROM
                started = time.process_time()
                answers[mode].add(repr(run_collective(scenario).time_s))
                cpu[mode].append(time.process_time() - started)
        flows.HEAP_FROM = HEAP_FROM
        same = answers["scan"] == answers["heap"] and len(answers["scan"]) == 1
        shown = "  ".join(f"{mode} {statistics.median(v):.2f} s [{min(v):.2f}-{max(v):.2f}]" for mode, v in cpu.items())
        print(
            f"{case:28s} {scenario.algorithm:16s} {scenario.sharing}  {shown}  heap/scan {statistics.median(cpu['heap']) / statistics.median(cpu['scan']):.2f}  same times: {same}"
        )


if __name__ == "__main__":
    main()
