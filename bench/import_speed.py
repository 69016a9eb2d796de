"""Wall time, CPU time and peak memory of ``collsim real import`` on a generated nccl-tests log.

    python bench/import_speed.py [--mb 50] [--keep DIR]

The log is an all_reduce_perf run of 16 ranks with a size every KiB (``-b 1K -i 1K``), its header
and closing lines as nccl-tests prints them, grown to ``--mb`` megabytes (50 MB: 427,000 sizes).
The import runs in a fresh process (the command a user types) into a fresh store.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HEADER = """# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 17179869184 step: 1024(bytes) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
{ranks}
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""


def write_log(path: Path, megabytes: float) -> int:
    """A generated log of about ``megabytes`` MB; returns its number of sizes."""
    ranks = "\n".join(
        f"#  Rank {r:2d} Group  0 Pid  {1000 + r} on node{r // 8:02d} device  {r % 8} [0x{r:02x}] NVIDIA H100 80GB HBM3" for r in range(16)
    )
    target, written, size, count = megabytes * 1e6, 0, 1024, 0
    with open(path, "w") as handle:
        written += handle.write(HEADER.format(ranks=ranks))
        while written < target:
            time_us = 10 + size / 200e3
            algbw = size / time_us / 1e3
            half = f"{time_us:7.2f}  {algbw:6.2f}  {algbw * 1.875:6.2f}      0"
            written += handle.write(f"{size:12d}  {size // 4:12d}     float     sum      -1  {half}  {half}\n")
            size, count = size + 1024, count + 1
        handle.write("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 139.56\n#\n")
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the generated log, MB")
    parser.add_argument("--keep", default=None, help="folder for the log and the store (default: a temporary one)")
    args = parser.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="collsim-import-"))
    folder.mkdir(parents=True, exist_ok=True)
    log, db = folder / "all_reduce_perf.log", folder / "results.sqlite"
    db.unlink(missing_ok=True)
    sizes = write_log(log, args.mb)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "sim.cli", "real", "import", str(log), "--db", str(db)], cwd=ROOT, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(done.stderr)
    print(done.stdout.strip())
    print(f"{log.stat().st_size / 1e6:.1f} MB, {sizes} sizes: wall {wall:.2f} s, CPU {usage.ru_utime + usage.ru_stime:.2f} s, "
          f"peak memory {usage.ru_maxrss / 1024:.0f} MiB ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")  # fmt: skip


if __name__ == "__main__":
    main()
