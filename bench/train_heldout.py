"""Held-out check of ``collsim sim train`` on published Megatron-LM runs it was not built on.

The model's defaults (``mfu`` 0.70, the dgx-a100 preset) were chosen with Korthikanti et al. 2022
Table 5 in view (bench/train_table5.py); the cases here are other published, measured runs, used
only to check, never to fit: Narayanan et al. 2021, "Efficient Large-Scale Language Model
Training on GPU Clusters Using Megatron-LM" (SC21, arXiv:2104.04473), Table 1 (weak scaling,
GPT 1.7B-1T on 32-3072 A100s) and Table 2 (the PTD-P rows: GPT 174.6B and 529.6B on three GPU
counts each). Both report achieved teraFLOP/s per GPU X; Sec. 5.1 defines it through eq. (3),
the FLOPs of one iteration with full activation recomputation (four passes):

    F = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)),   measured seconds an iteration = F / (n X)

Every run: Selene (DGX A100 80 GB, 8 HDR 200 Gb/s NICs a node: the dgx-a100 preset), mixed
precision fp16, sequence 2048, vocabulary 51,200, full recomputation (eq. 3 assumes it), no
sequence parallelism (it came with Korthikanti et al. 2022). Neither table gives the pipeline
schedule or, in Table 1, the micro-batch: the bench assumes 1F1B (PipeDream-Flush, the paper's
default schedule) and micro-batch 1 (Table 2's PTD-P rows; Korthikanti et al.'s runs of these
shapes), and ``--schedule interleaved`` shows the other reading.

A second, looser group is Llama 3 405B on Meta's H100 clusters (Llama Team 2024, "The Llama 3
Herd of Models", Table 4, the two rows without context parallelism; also on Balaji's SC'24 slide):
16M tokens a batch (2048 sequences of 8192), tp 8, pp 16, dp 64 on 8192 GPUs (430 TFLOP/s a GPU)
and dp 128 on 16,384 GPUs (400). The paper gives no micro-batch (1 assumed), no virtual-stage
count (vpp 2, 4 and 8 are all shown), no FLOP formula (``ModelSpec.model_flops`` of the 126-layer
model converts TFLOP/s to seconds; counting attention causally halved would make the measured
times about 4 % shorter), and it splits 126 layers unevenly: one layer fewer on the first and
last stage, read here as the first and last virtual stage (``first_stage_layers`` /
``last_stage_layers`` = per-stage layers - 1, the other stages 128 / (16 vpp) each).
FlashAttention (``attention="flash"``: no s x s scores in HBM or memory) recomputes the
attention core in the backward pass: ``--recompute selective``. Pipeline sends with sequence
parallelism are 1/8 shards. Preset: dgx-h100 (400 Gb/s InfiniBand a GPU) for Meta's 400 Gb/s
RoCE Grand Teton nodes. These three mechanisms (flash, sharded sends, uneven stages) were added
after these rows showed them missing: the rows are no longer fully held out for them.

The Narayanan et al. runs predate FlashAttention: ``attention="standard"``; Megatron-LM's
scatter/gather of pipeline sends (their Sec. 4.1) was on by default, as in ``sim train``.

    python bench/train_heldout.py [--only 174.6B] [--schedule interleaved] [--no-llama]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.model import MODELS

SEQ_LEN, VOCAB = 2048, 51200
SOURCE = "Narayanan et al. 2021 (SC21)"


@dataclass(frozen=True)
class Case:
    """One published run: shape, layout, batch and its achieved teraFLOP/s per GPU."""

    source: str  # table of Narayanan et al. 2021
    model: str  # the paper's parameter count, billions
    layers: int
    hidden: int
    heads: int
    tp: int
    pp: int
    gpus: int
    global_batch: int
    micro_batch: int
    tflops_per_gpu: float

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    def params(self) -> float:
        """Eq. (2): parameters, P = 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h))."""
        l, h = self.layers, self.hidden  # noqa: E741
        return 12.0 * l * h * h * (1 + 13 / (12 * h) + (VOCAB + SEQ_LEN) / (12 * l * h))

    def flops(self) -> float:
        """Eq. (3): one iteration's FLOPs with full recomputation, as the paper counts them."""
        b, s, l, h = self.global_batch, SEQ_LEN, self.layers, self.hidden  # noqa: E741
        return 96.0 * b * s * l * h * h * (1 + s / (6 * h) + VOCAB / (16 * l * h))

    def measured_s(self) -> float:
        return self.flops() / (self.gpus * self.tflops_per_gpu * 1e12)


T1, T2 = "Table 1", "Table 2"
# Korthikanti et al. 2022 Table 5 (the calibration rows) ran these shapes (175B, 530B, 1T) at other
# layouts, and DEFAULT_MFU's note starts from Table 1's 52 % for the 1T: new layouts, not new models.
CALIBRATION_SHAPES = ("174.6B", "529.6B", "1008.0B")
# source, model (B params), layers, hidden, heads, tp, pp, GPUs, batch, micro-batch, TFLOP/s a GPU.
# Table 1: micro-batch not given (1 assumed). Table 2: PTD-P rows, micro-batch 1 as printed,
# model-parallel size 96 = 8 x 12 (174.6B) and 280 = 8 x 35 (529.6B).
CASES = tuple(
    Case(*row)
    for row in (
        (T1, "1.7B", 24, 2304, 24, 1, 1, 32, 512, 1, 137.0),
        (T1, "3.6B", 30, 3072, 32, 2, 1, 64, 512, 1, 138.0),
        (T1, "7.5B", 36, 4096, 32, 4, 1, 128, 512, 1, 142.0),
        (T1, "18.4B", 40, 6144, 48, 8, 1, 256, 1024, 1, 135.0),
        (T1, "39.1B", 48, 8192, 64, 8, 2, 512, 1536, 1, 138.0),
        (T1, "76.1B", 60, 10240, 80, 8, 4, 1024, 1792, 1, 140.0),
        (T1, "145.6B", 80, 12288, 96, 8, 8, 1536, 2304, 1, 148.0),
        (T1, "310.1B", 96, 16384, 128, 8, 16, 1920, 2160, 1, 155.0),
        (T1, "529.6B", 105, 20480, 128, 8, 35, 2520, 2520, 1, 163.0),
        (T1, "1008.0B", 128, 25600, 160, 8, 64, 3072, 3072, 1, 163.0),
        (T2, "174.6B", 96, 12288, 96, 8, 12, 384, 1536, 1, 153.0),
        (T2, "174.6B", 96, 12288, 96, 8, 12, 768, 1536, 1, 149.0),
        (T2, "174.6B", 96, 12288, 96, 8, 12, 1536, 1536, 1, 141.0),
        (T2, "529.6B", 105, 20480, 128, 8, 35, 560, 2240, 1, 171.0),
        (T2, "529.6B", 105, 20480, 128, 8, 35, 1120, 2240, 1, 167.0),
        (T2, "529.6B", 105, 20480, 128, 8, 35, 2240, 2240, 1, 159.0),
    )
)


@dataclass(frozen=True)
class LlamaCase:
    """Llama 3 405B, Llama Team 2024 Table 4: GPUs, dp and achieved TFLOP/s a GPU (BF16)."""

    gpus: int
    dp: int
    tflops_per_gpu: float
    source: str = "Llama 3 Table 4"
    model: str = "llama3-405b"
    global_batch: int = 2048  # 16M tokens / 8192
    tp: int = 8
    pp: int = 16

    def flops(self) -> float:
        return MODELS[self.model].model_flops(self.global_batch)

    def measured_s(self) -> float:
        return self.flops() / (self.gpus * self.tflops_per_gpu * 1e12)


LLAMA_CASES = (LlamaCase(8192, 64, 430.0), LlamaCase(16384, 128, 400.0))
LLAMA_VPPS = (2, 4, 8)


def llama_scenario(case: LlamaCase, vpp: int) -> TrainScenario:
    """Meta's 126 layers, one fewer on the first and last virtual stage; FlashAttention, its
    backward as selective recompute."""
    edge = 128 // (case.pp * vpp) - 1
    return TrainScenario.from_dict(
        dict(hardware="dgx-h100", nodes=case.gpus // 8, model=case.model, layers=126, global_batch=case.global_batch,
             micro_batch=1, tp=case.tp, pp=case.pp, dp=case.dp, precision="bf16", schedule="interleaved", vpp=vpp,
             recompute="selective", sequence_parallel=True, zero=2, attention="flash",
             first_stage_layers=edge, last_stage_layers=edge)
    )  # fmt: skip


def scenario(case: Case, schedule: str = "1f1b") -> TrainScenario:
    """The case as ``collsim sim train`` takes it: the cited defaults, nothing tuned."""
    per_stage = case.layers // case.pp  # interleaved: 3 virtual stages (Korthikanti et al.'s), else 2
    vpp = next((v for v in (3, 2) if per_stage % v == 0), 1) if schedule == "interleaved" and case.pp > 1 else 1
    return TrainScenario.from_dict(
        dict(hardware="dgx-a100", nodes=case.gpus // 8, layers=case.layers, hidden=case.hidden, heads=case.heads,
             seq_len=SEQ_LEN, vocab=VOCAB, global_batch=case.global_batch, micro_batch=case.micro_batch, tp=case.tp,
             pp=case.pp, dp=case.dp, precision="fp16", recompute="full", attention="standard",
             schedule="interleaved" if vpp > 1 else "1f1b", vpp=vpp)
    )  # fmt: skip


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            result[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rank correlation: Pearson's correlation of the ranks (ties averaged)."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("spearman needs two sequences of the same length, at least 2")
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    spread = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return cov / spread if spread else float("nan")


@dataclass(frozen=True)
class Outcome:
    case: Case | LlamaCase
    label: str  # the reading: schedule, vpp
    simulated_s: float
    fits: bool
    wall_s: float
    memory_gb: float = 0.0  # the fullest GPU's bytes / 1e9 (sim.training.parallel.step.memory_per_gpu)

    @property
    def error(self) -> float:
        return self.simulated_s / self.case.measured_s() - 1

    @property
    def simulated_tflops(self) -> float:
        return self.case.flops() / (self.case.gpus * self.simulated_s) / 1e12


def run(case: Case | LlamaCase, scenario: TrainScenario, label: str) -> Outcome:
    began = time.perf_counter()
    result = simulate(scenario)
    outcome = Outcome(case, label, result.step_time_s, result.fits, time.perf_counter() - began, result.memory_bytes / 1e9)
    c = outcome.case
    print(
        f"{c.source:15} {c.model:>11} {label:11} {c.gpus:6} {c.tp:3} {c.pp:3} {c.dp:4} {c.global_batch:5} "
        f"{c.measured_s():8.2f} {outcome.simulated_s:8.2f} {outcome.error:+7.1%} "
        f"{c.tflops_per_gpu:5.0f} {outcome.simulated_tflops:5.0f} {outcome.memory_gb:6.1f} {'yes' if outcome.fits else 'no':>4} {outcome.wall_s:6.1f}",
        flush=True,
    )
    return outcome


def print_median(name: str, outcomes: list[Outcome]) -> None:
    errors = [o.error for o in outcomes]
    print(f"{name}: median |error| {statistics.median(map(abs, errors)):.1%}, largest {max(map(abs, errors)):.1%}, "
          f"signed median {statistics.median(errors):+.1%} over {len(errors)} cases")  # fmt: skip


def print_spearman(outcomes: list[Outcome]) -> None:
    """Per model with several layouts: ranks of iteration time (same batch) and of TFLOP/s a GPU."""
    for model in sorted({o.case.model for o in outcomes}):
        group = [o for o in outcomes if o.case.model == model]
        if len(group) < 2:
            continue
        same_batch = [o for o in group if o.case.global_batch == group[-1].case.global_batch]
        time_rho = spearman([o.case.measured_s() for o in same_batch], [o.simulated_s for o in same_batch])
        rate_rho = spearman([o.case.tflops_per_gpu for o in group], [o.simulated_tflops for o in group])
        print(
            f"{model} {group[0].label}: Spearman of iteration times ({len(same_batch)} layouts, batch "
            f"{same_batch[0].case.global_batch}) {time_rho:+.2f}; of TFLOP/s a GPU ({len(group)} layouts) {rate_rho:+.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only this model, e.g. 174.6B")
    parser.add_argument("--schedule", choices=("1f1b", "interleaved"), default="1f1b", help="Narayanan et al.'s runs")
    parser.add_argument("--no-llama", action="store_true", help="leave out the Llama 3 405B rows")
    args = parser.parse_args()
    print("defaults only (mfu 0.70 and the presets' figures); measured = published FLOPs / (GPUs x TFLOP/s a GPU)")
    print(f"{'source':15} {'model':>11} {'reading':11} {'GPUs':>6} {'tp':>3} {'pp':>3} {'dp':>4} {'batch':>5} {'meas_s':>8} "
          f"{'sim_s':>8} {'error':>7} {'TF/s':>5} {'simTF':>5} {'mem_GB':>6} {'fits':>4} {'wall_s':>6}")  # fmt: skip
    narayanan = [run(c, scenario(c, args.schedule), args.schedule) for c in CASES if args.only in (None, c.model)]
    vpps = () if args.no_llama else LLAMA_VPPS
    llama = {vpp: [run(c, llama_scenario(c, vpp), f"vpp {vpp}") for c in LLAMA_CASES] for vpp in vpps}
    if narayanan:
        print_median(f"{SOURCE}, {args.schedule}", narayanan)
        fresh = [o for o in narayanan if o.case.model not in CALIBRATION_SHAPES]
        if fresh:
            print_median(f"{SOURCE}, {args.schedule}, shapes not in Table 5", fresh)
        print_spearman(narayanan)
        table1 = [o for o in narayanan if o.case.source == T1]
        rho = spearman([o.case.tflops_per_gpu for o in table1], [o.simulated_tflops for o in table1])
        print(f"Table 1 across its {len(table1)} models: Spearman of TFLOP/s a GPU {rho:+.2f}")
    for vpp, outcomes in llama.items():
        print_median(f"Llama 3 405B, interleaved vpp {vpp}", outcomes)
        print_median(f"all, Llama rows at vpp {vpp}", narayanan + outcomes)
        print_spearman(outcomes)


if __name__ == "__main__":
    main()
