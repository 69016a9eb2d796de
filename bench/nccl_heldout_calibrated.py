"""The CALIBRATED target of issue 33 on published nccl-tests runs (bench/heldout/nccl-tests): fit on
some logs of one cluster, predict its other node counts and ops, as a user does with
``collsim validate nccl-tests LOG... --hardware P --fit-on ...`` (the same calls, real.validate_nccl).

    python bench/nccl_heldout_calibrated.py [--split NAME ...] [--stride K] [--record FILE] [--json FILE]

Each split names its cluster's fitted and predicted logs (:data:`SPLITS`); the preset and node count
of each log come from its header (``# preset:      P --nodes N``, bench/nccl_heldout.read_setup), or for a
shipped calibration log (real/data/nccl-tests, named ``shipped/FILE`` in a split) from
sim.collective.nccl_fit.CALIBRATION.
Fitting on a cluster's own logs is the validation workflow itself; the shipped presets and
constants are not touched (the fit pins its values for the run only, sim.hardware.presets.TRIAL).
Per split and over all splits, per regime (< 1 MiB, 1-256 MiB, >= 256 MiB) of the predicted
(held-out) points: the median and worst busbw error (predicted busbw / measured - 1), the share
within 35 %, how often the 80 % interval held the measurement and its median width (x/÷, high /
predicted). Targets (issue 33): median
<= 10 % in each regime, 95 % of points within 35 %, the interval covering 70-90 %.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from nccl_heldout import DATA, Setup, read_setup, record  # noqa: E402

from real.validate_nccl import SHIPPED  # noqa: E402
from sim.collective.nccl_fit import CALIBRATION, REGIMES  # noqa: E402

WITHIN = 0.35  # the "95 % of points within 35 %"


@dataclass(frozen=True)
class Split:
    """One cluster's logs: those fitted, those predicted (file names in bench/heldout/nccl-tests)."""

    name: str
    about: str
    fitted: tuple[str, ...]
    predicted: tuple[str, ...]
    nccl_version: str | None = None  # --nccl-version, for logs naming a release the model has no tables of


SPLITS = (
    Split("h100-xxrjun", "xxrjun example-cluster01 (H100, NCCL 2.29.2): fit 1 node all_gather + alltoall and 2 nodes alltoall, predict 10 nodes, four ops",
          ("h100_1node_nccl2.29.2_all_gather.txt", "h100_1node_nccl2.29.2_alltoall.txt", "h100-ib400_2node_nccl2.29.2_alltoall.txt"),
          tuple(f"h100-ib400_10node_nccl2.29.2_{op}.txt" for op in ("all_reduce", "all_gather", "reduce_scatter", "alltoall"))),
    Split("gj-aion", "NVIDIA/nccl-tests#309 gj-aion (H100, IB 400G): fit 2 nodes all_reduce, predict 4 and 8 nodes",
          ("h100-ib400_2node_issue309-gj-aion_allreduce.txt",),
          ("h100-ib400_4node_issue309-gj-aion_allreduce.txt", "h100-ib400_8node_issue309-gj-aion_allreduce.txt")),
    Split("coreweave-gb200", "CoreWeave GB200 NVL72 (NCCL 2.26.2): fit 1 rack (18 trays), predict 2 racks (36); 20 racks: DES not run (1440 ranks)",
          ("gb200-nvl72_coreweave_1rack-72gpu_nccl2.26.2_allreduce.txt",), ("gb200-nvl72_coreweave_2racks-144gpu_nccl2.26.2_allreduce.txt",)),
    Split("qoofyk-h100", "NVIDIA/nccl-tests#309 qoofyk (H100, 8 x 400G IB, NCCL 2.26.2): fit the shipped 2-node bare-metal log, predict the "
          "poster's 4-node run on VMs (NCCL_TOPO_FILE, GDR level 1): the same hardware kind, not the same machines",
          ("shipped/hgx-h100_2node_ib400_nccl2.26.2_allreduce_default.txt",), ("h100-ib400_4node_issue309-qoofyk-vms_nccl2.26.2_allreduce.txt",)),
    Split("oci-a100", "OCI BM.GPU4.8 A100 RoCE, 2 nodes: fit the NCCL 2.25.1 run, predict the NCCL 2.14.3 run of the same shape",
          ("oci-bm.gpu4.8_a100-40g_2node_roce_nccl2.25.1_allreduce.txt",), ("oci-bm.gpu4.8_a100-40g_2node_roce_nccl2.14.3_allreduce.txt",),
          ",2.19"),  # 2.14 predates the model's releases (sim.nccl.versions: 2.19-2.29): its oldest, said explicitly
)  # fmt: skip


def run_split(split: Split, data: Path, stride: int = 1) -> dict:
    """``collsim validate nccl-tests`` on the split's logs: real.validate_nccl's document."""
    from real.validate_nccl import read_logs, validate

    paths = [path_of(name, data) for name in split.fitted + split.predicted]
    setups = [setup_of(path) for path in paths]
    presets = {setup.preset for setup in setups}
    restricts = {(setup.nccl_algo, setup.nccl_proto) for setup in setups}
    if len(presets) != 1 or len(restricts) != 1:
        raise SystemExit(f"{split.name}: its logs name different presets or NCCL_ALGO/NCCL_PROTO ({presets}, {restricts})")
    (preset,), ((algo, proto),) = presets, restricts
    logs = read_logs(paths, preset, ",".join(str(setup.nodes) for setup in setups), proto, algo, split.nccl_version)
    return validate(logs, preset, ",".join(path_of(name, data).name for name in split.fitted), stride)


def path_of(name: str, data: Path) -> Path:
    """A split's log: ``shipped/FILE`` in real/data/nccl-tests, else FILE in ``data``."""
    return SHIPPED / name.removeprefix("shipped/") if name.startswith("shipped/") else data / name


def setup_of(path: Path) -> Setup:
    """What a log ran on: a shipped calibration log's entry in CALIBRATION, else its header's lines."""
    if path.name in CALIBRATION:
        preset, nodes, proto, algo = CALIBRATION[path.name]
        return Setup(preset, nodes, algo, proto)
    return read_setup(path)


def regime_line(label: str, regime: str, points: list[dict]) -> str:
    """n, median |error|, worst error, within 35 %, signed median, 80 % interval coverage and median width (x/÷ high / predicted)."""
    errors = [p["error"] for p in points]
    judged = [p for p in points if p["covered"] is not None]
    within = sum(abs(e) <= WITHIN for e in errors)
    covered = sum(p["covered"] for p in judged)
    coverage = f"{covered:3d}/{len(judged):<3d} ({covered / len(judged):4.0%})" if judged else f"{'n/a':>14s}"
    width = f"{statistics.median(p['high_s'] / p['predicted_s'] for p in judged):6.2f}" if judged else f"{'n/a':>6s}"
    return (f"{label[:40]:40s} {regime:11s} {len(points):3d}  {statistics.median(map(abs, errors)):6.1%}  {max(errors, key=abs):+7.1%}  "
            f"{within:3d}/{len(errors):<3d} ({within / len(errors):4.0%})  {statistics.median(errors):+7.1%}  {coverage}  {width}")  # fmt: skip


HEAD = (f"{'split / log':40s} {'regime':11s} {'n':>3s}  {'median':>6s}  {'worst':>7s}  {'within 35 %':>15s}  {'signed':>7s}  "
        f"{'80% covered':>14s}  {'x/÷':>6s}")  # fmt: skip


def lines_of(label: str, points: list[dict]) -> list[str]:
    return [regime_line(label, name, [p for p in points if lo <= p["size_bytes"] < hi])
            for name, lo, hi in REGIMES if any(lo <= p["size_bytes"] < hi for p in points)]  # fmt: skip


def report(documents: dict[str, dict]) -> list[str]:
    """Per split (its regimes, then each predicted log's), then all splits together: predicted points only."""
    out = [HEAD]
    pooled = []
    for split in (s for s in SPLITS if s.name in documents):
        document = documents[split.name]
        predicted = [p for p in document["points"] if p["role"] == "predicted"]
        pooled += predicted
        kept = ", ".join(f"{name} {entry['value']:.3g}" for name, entry in (document["fit"]["constants"] or {}).items())
        out += [
            "",
            f"{split.name}: {split.about}",
            f"  fitted constants: {kept or 'none'}; residual spread s {document['interval']['residual_spread']:.3f}",
        ]
        out += lines_of(split.name, predicted)
        for log in dict.fromkeys(p["log"] for p in predicted):
            out += lines_of(f"  {log}", [p for p in predicted if p["log"] == log])
    return out + ["", "all splits (predicted points):", HEAD, *lines_of("all", pooled)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA), help="folder of the held-out logs")
    parser.add_argument("--split", nargs="*", default=None, choices=[s.name for s in SPLITS], help="only these splits")
    parser.add_argument("--stride", type=int, default=1, help="predict every Kth size of each held-out log")
    parser.add_argument("--record", default=None, help="write the output, date, machine and command to this Markdown file")
    parser.add_argument("--json", default=None, help="write every split's document (fit, points, intervals) to this file")
    args = parser.parse_args(argv)
    if args.stride < 1:
        raise SystemExit("--stride: give a whole number of 1 or more (every Kth size)")
    started, documents, spent = time.perf_counter(), {}, []
    for split in (s for s in SPLITS if args.split is None or s.name in args.split):
        begun = time.perf_counter()
        documents[split.name] = run_split(split, Path(args.data), args.stride)
        spent.append(f"{split.name} {time.perf_counter() - begun:.0f} s")
    lines = report(documents) + [f"({len(documents)} splits, {time.perf_counter() - started:.0f} s wall: {'; '.join(spent)})"]
    print("\n".join(lines))
    if args.record:
        title = "Calibrated held-out check: fit on a cluster's logs, predict its others"
        record(Path(args.record), lines, argv if argv is not None else sys.argv[1:], title, "bench/nccl_heldout_calibrated.py")
    if args.json:
        Path(args.json).write_text(json.dumps(documents, indent=1, default=str))


if __name__ == "__main__":
    main()
