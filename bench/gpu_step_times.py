"""Forward, backward and optimizer times of the bundled model presets on one GPU.

Each preset (``real.presets``: the same tensors as ``sim.training.params``) runs training steps on
a random micro-batch of ``--tokens`` tokens per rank (the DDP page's default, 8,192), timed with
CUDA events: forward (loss included), backward, ``AdamW.step`` (fused) and ``zero_grad``; the
median and the 25-75 % range over ``--steps`` steps after ``--warmup``. ``--precision bf16`` is
mixed precision as PyTorch users run it (fp32 parameters and gradients, bf16 autocast);
``fp32`` runs the matrix products in full fp32 (TF32 off). Where a micro-batch does not fit,
the tokens are halved (the row says so).

Beside each time it prints the FLOP rate that ``sim.training.compute``'s model implies
(forward 2 x tokens x numel per matrix, backward twice that; embeddings excluded, a tied head
counted as a matrix) as a fraction of the GPU's dense peak (MFU): the number the DDP page's
default "MFU 40 %" stands for.

    python bench/gpu_step_times.py --out times.json            # on a CUDA machine
    python bench/gpu_step_times.py --device cpu --presets cs336-tiny --tokens 256 --steps 2 --warmup 1

Figures: docs/ddp.md ("Measured compute times"), with device and date; the JSON is
sim/training/data/step_times_h100.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from real import presets  # noqa: E402
from sim.training.compute import model_flops, peak_flops  # noqa: E402
from sim.training.params import PRESETS, preset  # noqa: E402

PEAK_GPU = "dgx-h100"  # the dense peaks the MFU is a fraction of (sim/hardware/presets/dgx-h100.yaml: H100 SXM)


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return q[0], statistics.median(values), q[2]


class Timer:
    """Elapsed seconds of a region: CUDA events on a GPU, perf_counter after a sync elsewhere."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"

    def mark(self):  # noqa: ANN201
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        import time

        return time.perf_counter()

    def seconds(self, start, end) -> float:  # noqa: ANN001
        if self.cuda:
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        return end - start


def _steps(name: str, tokens: int, precision: str, steps: int, warmup: int, device: torch.device, compiled: bool) -> dict:
    torch.manual_seed(0)
    with torch.device(device):
        model = presets.build(name)
    fused = device.type == "cuda"
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused)
    if compiled:
        model = torch.compile(model)
    generator = torch.Generator().manual_seed(1)
    inputs, targets = presets.batch(name, tokens, device, generator)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    timer, times = Timer(device), {"forward": [], "backward": [], "optimizer": [], "step": []}
    for index in range(warmup + steps):
        t0 = timer.mark()
        with autocast:
            value = presets.loss(model, inputs, targets)
        t1 = timer.mark()
        value.backward()
        t2 = timer.mark()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t3 = timer.mark()
        if index >= warmup:
            for key, (a, b) in {"forward": (t0, t1), "backward": (t1, t2), "optimizer": (t2, t3), "step": (t0, t3)}.items():
                times[key].append(timer.seconds(a, b))
    peak_memory = torch.cuda.max_memory_allocated() if device.type == "cuda" else None
    del model, optimizer, inputs, targets, value
    return {key: _quartiles(values) for key, values in times.items()} | {"peak_memory_bytes": peak_memory}


def measure(name: str, tokens: int, precision: str, steps: int, warmup: int, device: torch.device, compiled: bool = False) -> dict:
    """One preset's row; halves the tokens while a micro-batch does not fit in GPU memory."""
    asked = tokens
    while True:
        try:
            if device.type == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            timed = _steps(name, tokens, precision, steps, warmup, device, compiled)
            break
        except torch.OutOfMemoryError:
            if tokens // 2 < presets.sequence_length(name):
                return {"preset": name, "precision": precision, "tokens": tokens, "error": "out of GPU memory"}
            tokens //= 2
    row = {"preset": name, "precision": precision, "compiled": compiled, "tokens": tokens, "tokens_asked": asked, "steps": steps}
    for key in ("forward", "backward", "optimizer", "step"):
        low, mid, high = timed[key]
        row[f"{key}_s"], row[f"{key}_s_iqr"] = mid, [low, high]
    row["peak_memory_bytes"] = timed["peak_memory_bytes"]
    if presets.sequence_length(name) > 1:  # the FLOPs model is a transformer's (2 x tokens x numel a matrix)
        forward_flops, backward_flops = model_flops(preset(name), tokens)
        peak = peak_flops(PEAK_GPU, precision)
        row["model_forward_flops"], row["model_backward_flops"] = forward_flops, backward_flops
        row["mfu_forward"], row["mfu_backward"] = forward_flops / row["forward_s"] / peak, backward_flops / row["backward_s"] / peak
    return row


def _pct(value: float | None) -> str:
    return f"{value:>7.1%}" if value is not None else f"{'-':>7}"


def _write(path: str | None, machine: dict, rows: list[dict]) -> None:
    """Rows so far (a run stopped at its time limit keeps what it measured)."""
    if path:
        Path(path).write_text(json.dumps({"machine": machine, "rows": rows}, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default=",".join(PRESETS), help="comma list (default: all)")
    parser.add_argument("--tokens", type=int, default=8192, help="tokens (images for resnet18: --image-batch) per micro-batch")
    parser.add_argument("--image-batch", type=int, default=64, help="ResNet-18 images per micro-batch")
    parser.add_argument("--precision", default="bf16,fp32", help="bf16 (autocast, fp32 master) and/or fp32")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (the first warm-up step compiles)")
    parser.add_argument("--out", help="write the rows and the machine as JSON here")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: this machine has no CUDA GPU (use --device cpu for a smoke run)")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    names = [name.strip() for name in args.presets.split(",") if name.strip()]
    unknown = sorted(set(names) - set(PRESETS))
    if unknown:
        parser.error(f"--presets: unknown {', '.join(unknown)}; allowed: {', '.join(PRESETS)}")
    machine = {
        "device": torch.cuda.get_device_name() if device.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": datetime.date.today().isoformat(),
        "command": "python bench/gpu_step_times.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    rows: list[dict] = []
    print(
        f"{'preset':<11} {'prec':<5} {'tokens':>6} {'forward ms':>10} {'backward ms':>11} {'optim ms':>9} {'step ms':>9} {'MFU fwd':>7} {'MFU bwd':>7}"
    )
    for precision in args.precision.split(","):
        for name in names:
            tokens = args.image_batch if name == "resnet18" else args.tokens
            row = measure(name, tokens, precision, args.steps, args.warmup, device, args.compile)
            rows.append(row)
            _write(args.out, machine, rows)
            if "error" in row:
                print(f"{name:<11} {precision:<5} {row['tokens']:>6} {row['error']}")
                continue
            print(
                f"{name:<11} {precision:<5} {row['tokens']:>6} {row['forward_s'] * 1e3:>10.2f} {row['backward_s'] * 1e3:>11.2f} "
                f"{row['optimizer_s'] * 1e3:>9.2f} {row['step_s'] * 1e3:>9.2f} {_pct(row.get('mfu_forward'))} {_pct(row.get('mfu_backward'))}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
