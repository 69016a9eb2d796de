"""Measured nccl-tests busbw against the DES (NCCL's pick on NCCL's data path) and NCCL's own
model, for every calibration log (../shared/data/nccl-tests, see its README).

    python bench/nccl_logs.py [--data DIR] [--sizes] [--json FILE]

Per log: the preset it runs on, then per regime (< 1 MiB, 1-256 MiB, >= 256 MiB) the median
|busbw error| and the worst error of the DES and of NCCL's model; ``--sizes`` adds every size
(measured busbw, DES, model, NCCL's pick, and the spread between the log's out-of-place and
in-place times). "Measured" is the faster of those two columns (sim.hardware.nccl_fit.read_log
says why). busbw error = predicted busbw / measured - 1 =
measured time / predicted time - 1. Logs whose preset does not exist are listed and skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.hardware.nccl_fit import CALIBRATION, REGIMES, compare, regime_stats  # noqa: E402
from sim.hardware.presets import list_presets  # noqa: E402


def _busbw(size: int, seconds: float, ranks: int) -> float:
    return size / seconds / 1e9 * 2 * (ranks - 1) / ranks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "nccl-tests"), help="folder of the logs")
    parser.add_argument("--sizes", action="store_true", help="print every size")
    parser.add_argument("--json", default=None, help="write every point to this file")
    args = parser.parse_args()
    from sim.hardware.presets import load_preset

    everything, started = [], time.perf_counter()
    print(f"{'log':58s} {'preset x nodes':20s} {'regime':11s} {'n':>3s}  {'DES median/worst':>18s}  {'NCCL model median/worst':>24s}")
    for name, (preset, nodes, proto, algo) in CALIBRATION.items():
        path = Path(args.data) / name
        if preset not in list_presets() or not path.exists():
            print(f"{name:58s} skipped: {'no preset ' + preset if path.exists() else 'no log file'}")
            continue
        points = compare(path, preset, nodes, proto, nccl_algo=algo)
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
    print("all logs:")
    for regime, n, des_median, des_worst, model_median, model_worst in regime_stats(everything):
        print(f"  {regime:11s} {n:3d} points  DES median {des_median:6.1%} worst {des_worst:+7.1%}   "
              f"NCCL model median {model_median:6.1%} worst {model_worst:+7.1%}")  # fmt: skip
    beyond = [p for p in everything if abs(p.des_error) > 0.35]
    print(f"DES points beyond 35 %: {len(beyond)} of {len(everything)}")
    for p in beyond:
        print(f"  {p.log[:58]:58s} {p.size_bytes:>12d} B  DES {p.des_error:+6.1%}  model {p.model_error:+6.1%}  spread {p.spread:5.1%}")
    print(f"({time.perf_counter() - started:.1f} s; regimes: {', '.join(r[0] for r in REGIMES)})")
    if args.json:
        Path(args.json).write_text(json.dumps([p.__dict__ for p in everything], indent=1))


if __name__ == "__main__":
    main()
