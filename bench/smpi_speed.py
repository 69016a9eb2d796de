"""Ring all-reduce in SimGrid's SMPI beside collsim: the same scenario, whole processes, interleaved.

    python bench/smpi_speed.py                        # 64, 256, 1024 ranks, 1 MiB, 3 rounds
    python bench/smpi_speed.py --ranks 64 256 --rounds 5 --reduction sum

SMPI runs a real MPI program (``MPI_Allreduce`` with ``--cfg=smpi/allreduce:lr``, the logical
ring: reduce-scatter then all-gather, 2 p (p - 1) messages, as collsim's ``ring``) on a platform
equal to collsim's ``switch(p)``: one full-duplex private link per host (SPLITDUPLEX), latency
half the route's, no backbone, with SimGrid's pure max-min flow model (factors 1, no TCP gamma,
no cross traffic). collsim runs ``collsim sim collective --algorithm ring`` under ``--sharing fair``
(the default) and ``fifo``. Every row is the median wall time of whole processes (compilation of
the MPI program excluded), rounds interleaved so each ratio compares runs under the same load.

Needs SMPI (not part of CI; this script installs nothing)::

    apt-get install -y --no-install-recommends libsimgrid-dev    # Debian: SimGrid 3.32, smpicc and smpirun

The reduction is a no-op user ``MPI_Op`` by default (collsim's free reductions); ``--reduction
sum`` uses ``MPI_SUM`` on floats, which SMPI executes for real. Buffers are ``SMPI_SHARED_MALLOC``
with one mapping per buffer (1,024 ranks would exceed ``vm.max_map_count`` otherwise).
A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = r"""
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
static void noop(void *in, void *inout, int *len, MPI_Datatype *type) { (void)in; (void)inout; (void)len; (void)type; }
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long count = atol(argv[1]) / 4;
  int sum = argc > 2 && argv[2][0] == 's';
  float *in = SMPI_SHARED_MALLOC(count * 4), *out = SMPI_SHARED_MALLOC(count * 4);
  MPI_Op op;
  MPI_Op_create(noop, 1, &op);
  double start = MPI_Wtime();
  MPI_Allreduce(in, out, (int)count, MPI_FLOAT, sum ? MPI_SUM : op, MPI_COMM_WORLD);
  double end = MPI_Wtime();
  if (rank == 0) printf("simulated_s %.12g\n", end - start);
  SMPI_SHARED_FREE(in);
  SMPI_SHARED_FREE(out);
  MPI_Finalize();
  return 0;
}
"""

# SimGrid's flow model with its corrections off (docs/dev/simgrid-check.md, /work/shared/recipes/simgrid.md)
CONFIG = [
    "network/model:CM02", "network/latency-factor:1", "network/bandwidth-factor:1", "network/weight-S:0",
    "network/TCP-gamma:0", "network/crosstraffic:0", "smpi/wtime:0", "smpi/simulate-computation:no",
    "smpi/host-speed:1Ef", "surf/precision:1e-13", "smpi/allreduce:lr",
]  # fmt: skip


def platform_xml(ranks: int, latency_s: float, bandwidth_Bps: float) -> str:
    return (
        '<?xml version=\'1.0\'?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n<platform version="4.1">\n'
        f'  <cluster id="switch" prefix="h" suffix="" radical="0-{ranks - 1}" speed="1Gf" bw="{bandwidth_Bps:.6g}Bps" '
        f'lat="{latency_s / 2:.9g}s" sharing_policy="SPLITDUPLEX"/>\n</platform>\n'
    )


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    times = os.times()
    return times.children_user + times.children_system


def missing() -> str | None:
    for tool in ("smpicc", "smpirun"):
        if shutil.which(tool) is None:
            return tool
    return None


def build(directory: Path) -> Path:
    source = directory / "ring.c"
    source.write_text(PROGRAM)
    binary = directory / "ring"
    subprocess.run(["smpicc", "-O2", "-o", str(binary), str(source)], check=True, capture_output=True, text=True)
    return binary


def smpi_run(directory: Path, binary: Path, ranks: int, size: int, latency_s: float, bandwidth_Bps: float, reduction: str) -> dict:
    plat = directory / f"switch{ranks}.xml"
    plat.write_text(platform_xml(ranks, latency_s, bandwidth_Bps))
    hosts = directory / f"hosts{ranks}.txt"
    hosts.write_text("".join(f"h{i}\n" for i in range(ranks)))
    block = max(4096, -(-size // 4096) * 4096)  # one mapping per buffer
    config = [*CONFIG, f"smpi/shared-malloc-blocksize:{block}"]
    command = ["smpirun", "-np", str(ranks), "-platform", str(plat), "-hostfile", str(hosts)]
    command += [f"--cfg={item}" for item in config] + ["--log=root.thres:critical", str(binary), str(size), reduction]
    start, cpu = time.perf_counter(), children_cpu()
    out = subprocess.run(command, capture_output=True, text=True, cwd=directory)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    found = re.search(r"simulated_s (\S+)", out.stdout)
    if out.returncode or not found:
        raise SystemExit(f"smpirun failed ({out.returncode}): {out.stderr[-2000:]}")
    return {"wall_s": wall, "cpu_s": cpu, "time_s": float(found.group(1))}


def collsim_run(ranks: int, size: int, latency_s: float, bandwidth_Bps: float, sharing: str) -> dict:
    command = [sys.executable, "-c", "from sim.cli import main; main()", "sim", "collective", "--op", "all_reduce", "--algorithm", "ring"]
    command += [
        "--ranks",
        str(ranks),
        "--size",
        str(size),
        "--latency",
        f"{latency_s * 1e6:g}us",
        "--bandwidth",
        f"{bandwidth_Bps / 1e9:g}GB/s",
    ]
    command += ["--sharing", sharing, "--json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start, cpu = time.perf_counter(), children_cpu()
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=env, cwd=ROOT)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    found = re.search(r'"time_s":\s*([0-9.eE+-]+)', out.stdout)
    return {"wall_s": wall, "cpu_s": cpu, "time_s": float(found.group(1)) if found else float("nan")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--size", type=int, default=1 << 20, help="bytes per rank (default 1 MiB)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reduction", choices=["noop", "sum"], default="noop")
    parser.add_argument("--no-smpi", action="store_true", help="time collsim only")
    args = parser.parse_args(argv)
    latency_s, bandwidth_Bps = 5e-6, 25e9
    tool = None if args.no_smpi else missing()
    if tool:
        print(f"{tool} not found: install SMPI with\n    apt-get install -y --no-install-recommends libsimgrid-dev\n"
              "or run with --no-smpi to time collsim alone.", file=sys.stderr)  # fmt: skip
        return 2
    engines = ["collsim fair", "collsim fifo"] + ([] if args.no_smpi else [f"SMPI ({args.reduction})"])
    walls: dict[tuple[str, int], list[float]] = {}
    cpus: dict[tuple[str, int], list[float]] = {}
    times: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        binary = None if args.no_smpi else build(directory)
        for _ in range(args.rounds):
            for ranks in args.ranks:
                for engine in engines:
                    if engine.startswith("SMPI"):
                        run = smpi_run(directory, binary, ranks, args.size, latency_s, bandwidth_Bps, args.reduction)
                    else:
                        run = collsim_run(ranks, args.size, latency_s, bandwidth_Bps, engine.split()[1])
                    walls.setdefault((engine, ranks), []).append(run["wall_s"])
                    cpus.setdefault((engine, ranks), []).append(run["cpu_s"])
                    times[(engine, ranks)] = run["time_s"]
    print(f"# ring all-reduce {args.size:,} B, switch(p), 5 us, 25 GB/s; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{platform.node()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {args.rounds} interleaved rounds, whole processes")  # fmt: skip
    print(
        f"{'ranks':>6} {'engine':<14} {'wall median s (min..max)':>28} {'CPU median s':>13} {'simulated time':>16} {'SMPI / this (wall, CPU)':>24}"
    )
    for ranks in args.ranks:
        smpi = None if args.no_smpi else (walls[(engines[-1], ranks)], cpus[(engines[-1], ranks)])
        for engine in engines:
            values, cpu = walls[(engine, ranks)], cpus[(engine, ranks)]
            ratio = (
                f"{statistics.median(smpi[0]) / statistics.median(values):.1f}x, {statistics.median(smpi[1]) / statistics.median(cpu):.1f}x"
                if smpi
                else ""
            )
            print(f"{ranks:>6} {engine:<14} {statistics.median(values):>12.2f} ({min(values):.2f}..{max(values):.2f}) {statistics.median(cpu):>13.2f}"
                  f" {times[(engine, ranks)] * 1e3:>13.4f} ms {ratio:>24}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
