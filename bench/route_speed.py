"""Routes of NCCL's topologies: CPU seconds to build a preset's topology for a run (its routes
are searched, not climbed: GPUs reach both their node's switch and their NIC), beside the same
from another checkout, in fresh processes, rounds interleaved.

    python bench/route_speed.py [--rounds 3] [--cases dgx-h100:64,gcp-a3-mega:64] [--against DIR]

Prints per case and checkout the median [min-max] CPU seconds of ``sim.nccl.topo.topology``
(NCCL's pick of all_reduce at 64 MiB) and a digest of 4,000 of its routes, which must agree.
A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import hashlib, json, sys, time
try:  # sim.nccl since 2026-11-28; older checkouts keep NCCL's modules in sim.hardware
    from sim.collective.pick import scenario_for_pick
    from sim.nccl.topo import topology
except ImportError:
    from sim.hardware.nccl_des import scenario_for_pick
    from sim.hardware.nccl_topo import topology
preset, nodes = sys.argv[1], int(sys.argv[2])
scenario, why = scenario_for_pick(preset, nodes, "all_reduce", 64 << 20)
if scenario is None:
    sys.exit(f"{preset}:{nodes}: {why}")
started = time.process_time()
built = topology(scenario)
cpu = time.process_time() - started
ranks = built.ranks  # 4,000 pairs spread over the ranks: the channels' own and others (searched from their destination)
routes = [built.path(i * 7 % ranks, i * 13 % ranks) for i in range(4000)]
print(json.dumps({"cpu_s": cpu, "routes": hashlib.sha256(repr(routes).encode()).hexdigest()[:12]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default="dgx-h100:64,gcp-a3-mega:64", help="PRESET:NODES,...")
    parser.add_argument("--against", default=None, help="another checkout (e.g. main's worktree), timed in the same rounds")
    args = parser.parse_args()
    cases = []
    for case in args.cases.split(","):
        preset, _, nodes = case.partition(":")
        if not nodes.isdigit() or int(nodes) < 1:
            parser.error(f"--cases: each case is PRESET:NODES (e.g. dgx-h100:64), got {case!r}")
        cases.append((preset, nodes))
    trees = {"this": ROOT} | ({"against": Path(args.against).resolve()} if args.against else {})
    for tree in trees.values():
        if not any((tree / "sim" / where).is_file() for where in ("nccl/topo.py", "hardware/nccl_topo.py")):
            parser.error(f"--against: {tree} is not a collsim checkout")
    for preset, nodes in cases:
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        digests: dict[str, set[str]] = {name: set() for name in trees}
        for round_index in range(args.rounds):
            order = list(trees) if round_index % 2 == 0 else list(reversed(trees))
            for name in order:
                done = subprocess.run([sys.executable, "-c", CHILD, preset, nodes], cwd=trees[name], capture_output=True, text=True)
                if done.returncode:
                    sys.exit(f"route_speed: {preset}:{nodes} in {trees[name]}: {done.stderr.strip().splitlines()[-1]}")
                row = json.loads(done.stdout)
                cpu[name].append(row["cpu_s"])
                digests[name].add(row["routes"])
        shown = "  ".join(f"{name} {statistics.median(v):.2f} s [{min(v):.2f}-{max(v):.2f}]" for name, v in cpu.items())
        same = len(set().union(*digests.values())) == 1
        print(f"{preset}:{nodes:<4} {shown}  same routes: {same}")


if __name__ == "__main__":
    main()
