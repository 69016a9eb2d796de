"""The DES (NCCL's pick on NCCL's data path) beside NCCL's own cost model on every shipped GPU
preset, node count, op and size: where the calibration logs do not reach (more nodes, other ops,
other machines) NCCL's model is the only reference, and at large sizes it is usually within a
few % of real runs.

    python bench/nccl_audit.py [--presets a,b] [--nodes 1,2,4,8,16] [--ops ...] [--sizes ...]
                               [--cpu-limit 8] [--flagged] [--json FILE]

Per case: NCCL's pick (the DES runs the same pick), the DES and model times, ratio DES/model,
and a flag: ``>25%`` where |ratio - 1| > 25 % at >= 64 MiB (NCCL's model is trustworthy there),
``>2x`` where the ratio is beyond 2 (or below 1/2) at any size. all_to_all has no tuner model
(NCCL runs it as grouped send/recv), so it is not audited. CPU is bounded: within one preset x
op, a node count x size whose smaller neighbour (fewer nodes, or the next smaller size) took more
than ``--cpu-limit`` / 4 CPU seconds is skipped when its estimate (that time x 4, the growth of
one step in either direction at most) exceeds ``--cpu-limit``; skipped cases are listed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.collective.nccl_fit import des_time  # noqa: E402
from sim.errors import CollsimError  # noqa: E402
from sim.hardware.presets import list_presets, load_preset  # noqa: E402
from sim.nccl.model import predict  # noqa: E402

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
NODES = (1, 2, 4, 8, 16)
SIZES = (4 << 10, 256 << 10, 4 << 20, 64 << 20, 1 << 30)
TRUSTED_BYTES = 64 << 20  # NCCL's model within a few % of real runs from here up
GROWTH = 4  # CPU of a case is at most this many times its smaller neighbour's (measured: 1.5-3x)


def flag(size_bytes: int, ratio: float) -> str:
    """The audit's flag for one case: '>2x' anywhere, '>25%' at trusted sizes, else ''."""
    if ratio > 2 or ratio < 0.5:
        return ">2x"
    if size_bytes >= TRUSTED_BYTES and abs(ratio - 1) > 0.25:
        return ">25%"
    return ""


def gpu_presets() -> list[str]:
    """Shipped presets NCCL runs on (gloo presets have no NCCL model)."""
    return [name for name in list_presets() if load_preset(name).nccl is not None]


def audit_case(preset: str, nodes: int, op: str, size_bytes: int) -> dict:
    """One case: pick, DES and model times, their ratio, the flag and the DES's CPU seconds."""
    started = time.process_time()
    des_s, pick = des_time(preset, nodes, op, size_bytes)
    cpu_s = time.process_time() - started
    model = predict(preset, nodes, op, size_bytes)
    ratio = des_s / model.time_s
    return dict(preset=preset, nodes=nodes, op=op, size_bytes=size_bytes, pick=pick, des_s=des_s, model_s=model.time_s,
                ratio=ratio, flag=flag(size_bytes, ratio), cpu_s=cpu_s)  # fmt: skip


def _size(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def run(
    presets: list[str], nodes_list: list[int], ops: list[str], sizes: list[int], cpu_limit: float, only_flagged: bool
) -> tuple[list, list]:
    """Every case in order, printing each; returns (cases, skipped)."""
    cases, skipped = [], []
    for preset in presets:
        spec = load_preset(preset)
        for op in ops:
            cpu: dict[tuple[int, int], float] = {}
            for nodes in nodes_list:
                if spec.max_nodes is not None and nodes > spec.max_nodes:
                    continue
                for size in sorted(sizes):
                    smaller = [cpu.get((n, s), 0.0) for n, s in cpu if (n < nodes and s == size) or (n == nodes and s < size)]
                    estimate = GROWTH * max(smaller, default=0.0)
                    if estimate > cpu_limit:
                        skipped.append(dict(preset=preset, nodes=nodes, op=op, size_bytes=size, estimate_cpu_s=estimate))
                        cpu[(nodes, size)] = estimate
                        continue
                    try:
                        case = audit_case(preset, nodes, op, size)
                    except CollsimError as error:
                        print(f"{preset:15s} {nodes:3d} {op:15s} {_size(size):>8s}  refused: {error}")
                        continue
                    cpu[(nodes, size)] = case["cpu_s"]
                    cases.append(case)
                    if case["flag"] or not only_flagged:
                        print(f"{preset:15s} {nodes:3d} {op:15s} {_size(size):>8s}  {case['pick']:16s} DES {case['des_s'] * 1e6:11.1f} us"
                              f"  model {case['model_s'] * 1e6:11.1f} us  ratio {case['ratio']:6.3f} {case['flag']:5s} cpu {case['cpu_s']:5.2f} s",
                              flush=True)  # fmt: skip
    return cases, skipped


def markdown(cases: list[dict], sizes: tuple[int, ...] = (64 << 20, 1 << 30)) -> str:
    """A table of DES/model per preset x op (rows) and node count (columns): ``sizes``' ratios
    in each cell, flagged ones marked ``*``; then the flag counts per op."""
    nodes = sorted({c["nodes"] for c in cases})
    cell = {(c["preset"], c["op"], c["nodes"], c["size_bytes"]): c for c in cases}
    lines = [f"| preset | op | {' | '.join(f'{n} node' + ('s' if n > 1 else '') for n in nodes)} |", "|---|---|" + "---|" * len(nodes)]
    for preset, op in dict.fromkeys((c["preset"], c["op"]) for c in cases):
        row = []
        for n in nodes:
            found = [cell.get((preset, op, n, size)) for size in sizes]
            row.append(" / ".join(f"{c['ratio']:.2f}{'*' if c['flag'] else ''}" if c else "-" for c in found) if any(found) else "")
        lines.append(f"| {preset} | {op} | {' | '.join(row)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default=None, help="comma list (default: every GPU preset)")
    parser.add_argument("--nodes", default=",".join(map(str, NODES)))
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="bytes, comma list")
    parser.add_argument("--cpu-limit", type=float, default=8.0, help="skip cases estimated above this many CPU seconds")
    parser.add_argument("--flagged", action="store_true", help="print only flagged cases")
    parser.add_argument("--json", default=None, help="write every case to this file")
    parser.add_argument("--markdown", default=None, help="read a --json file and print its 64 MiB / 1 GiB table (no runs)")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())["cases"]))
        return
    presets = args.presets.split(",") if args.presets else gpu_presets()
    started = time.process_time()
    cases, skipped = run(presets, [int(n) for n in args.nodes.split(",")], args.ops.split(","),
                         [int(s) for s in args.sizes.split(",")], args.cpu_limit, args.flagged)  # fmt: skip
    flagged = [c for c in cases if c["flag"]]
    print(f"\n{len(cases)} cases, {len(flagged)} flagged ({sum(c['flag'] == '>2x' for c in cases)} >2x, "
          f"{sum(c['flag'] == '>25%' for c in cases)} >25% at >= 64 MiB); CPU {time.process_time() - started:.0f} s")  # fmt: skip
    for s in skipped:
        print(
            f"skipped (DES estimated > {args.cpu_limit:g} CPU s: {s['estimate_cpu_s']:.1f}): {s['preset']} x {s['nodes']} {s['op']} {_size(s['size_bytes'])}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"cases": cases, "skipped": skipped}, indent=1))


if __name__ == "__main__":
    main()
