"""When each gradient is ready during backward on one GPU: the shape DDP's buckets overlap with.

For each preset (``real.presets``) one eager training step per repetition at ``--tokens`` tokens
(bf16 autocast, fp32 gradients): a CUDA event at the start of backward and one in every
parameter's post-accumulate-grad hook; the median over ``--steps`` steps of each parameter's
ready time since backward start, with the median forward, backward and AdamW times, is written as
a ``collsim-ddp-profile`` JSON that ``collsim sim ddp --profile FILE`` replays.

    python bench/gpu_ready_times.py --presets gpt2,small --out-dir profiles/      # on a CUDA machine
    python bench/gpu_ready_times.py --device cpu --presets cs336-tiny --tokens 256 --steps 1 --warmup 1 --out-dir /tmp/p

The H100 profiles of 2026-11-24 are in real/data/profiles/; docs/ddp.md ("Gradient ready times")
compares them with the FLOP-derived ready times (``python bench/gpu_ready_times.py --compare``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "real" / "data" / "profiles"


def measure(name: str, tokens: int, steps: int, warmup: int, device_name: str) -> dict:
    import torch
    from gpu_step_times import Timer  # bench/ is this script's own folder on sys.path

    from real import presets
    from sim.training.ddp import PROFILE_KIND

    device = torch.device(device_name)
    cuda = device.type == "cuda"
    torch.manual_seed(0)
    with torch.device(device):
        model = presets.build(name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=cuda)
    inputs, targets = presets.batch(name, tokens, device, torch.Generator().manual_seed(1))
    names = {id(p): n for n, p in model.named_parameters()}
    marks: dict[str, object] = {}

    timer = Timer(device)  # CUDA events on a GPU, perf_counter elsewhere (bench/gpu_step_times.py)
    mark, since = timer.mark, timer.seconds

    for param in model.parameters():
        param.register_post_accumulate_grad_hook(lambda p: marks.__setitem__(names[id(p)], mark()))
    ready: dict[str, list[float]] = {n: [] for n in names.values()}
    phases: dict[str, list[float]] = {"forward_s": [], "backward_s": [], "optimizer_s": []}
    for index in range(warmup + steps):
        marks.clear()
        t0 = mark()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            value = presets.loss(model, inputs, targets)
        t1 = mark()
        value.backward()
        t2 = mark()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t3 = mark()
        if index >= warmup:
            for key, (a, b) in {"forward_s": (t0, t1), "backward_s": (t1, t2), "optimizer_s": (t2, t3)}.items():
                phases[key].append(since(a, b))
            for param_name, event in marks.items():
                ready[param_name].append(since(t1, event))
    params = [{"name": n, "shape": list(p.shape), "element_bytes": 4} for n, p in model.named_parameters()]
    events = [
        {"rank": 0, "resource": "compute", "kind": "grad_ready", "start_s": statistics.median(times), "end_s": statistics.median(times),
         "nbytes": 0, "bucket": -1, "name": param_name}
        for param_name, times in ready.items()
    ]  # fmt: skip
    machine = torch.cuda.get_device_name() if cuda else "cpu"
    return {
        "kind": PROFILE_KIND,
        "source": f"bench/gpu_ready_times.py: {name}, {tokens} tokens, bf16 autocast, eager, {machine}, torch {torch.__version__}",
        "params": params,
        **{key: statistics.median(values) for key, values in phases.items()},
        "events": events,
    }


def compare(directory: Path) -> list[dict]:
    """Measured ready times against the FLOP-derived ones at the same backward total, and what the
    difference does to the DDP overhead at 25 MiB buckets (o 30 us, w 100 GB/s, 8 ranks)."""
    from sim.training.ddp import DDPScenario, load_profile, run_ddp

    rows = []
    for path in sorted(directory.glob("*.json")):
        profile = load_profile(path)
        name = path.stem
        base = dict(preset=name, ranks=8, comm="ow", o_s=30e-6, w_Bps=100e9, precision="fp32")
        measured = run_ddp(DDPScenario(profile_file=str(path), **base))
        total = profile.backward_s
        # FLOP shares at the measured backward total: flops_per_s chosen so the sum matches
        from sim.training.compute import model_flops
        from sim.training.params import preset

        _, backward_flops = model_flops(preset(name), 8192)
        modelled = run_ddp(DDPScenario(flops_per_s=backward_flops / total, tokens=8192, forward_time_s=profile.forward_s,
                                       optimizer_time_s=profile.optimizer_s, **base))  # fmt: skip
        ready_m, ready_f = measured.ready_s, modelled.ready_s
        start_m, start_f = measured.backward_start_s, modelled.backward_start_s
        worst = max(abs((a - start_m) - (b - start_f)) for a, b in zip(ready_m, ready_f, strict=True)) / total
        rows.append({
            "preset": name, "backward_s": total, "worst_ready_gap": worst,
            "overhead_measured_s": measured.overhead_s, "overhead_flops_s": modelled.overhead_s,
        })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="gpt2,small,large")
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out-dir", help="write one profile JSON per preset here")
    parser.add_argument("--compare", nargs="?", const=str(SHIPPED), help="compare the profiles in this folder (default: the shipped ones)")
    args = parser.parse_args(argv)
    if args.compare:
        print(f"{'preset':<8} {'backward ms':>11} {'worst ready gap':>15} {'overhead measured':>17} {'overhead FLOPs':>14}")
        for row in compare(Path(args.compare)):
            print(f"{row['preset']:<8} {row['backward_s'] * 1e3:>11.2f} {row['worst_ready_gap']:>15.1%} "
                  f"{row['overhead_measured_s'] * 1e3:>14.3f} ms {row['overhead_flops_s'] * 1e3:>11.3f} ms")  # fmt: skip
        return 0
    if not args.out_dir:
        parser.error("--out-dir: where to write the profiles (or --compare)")
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.presets.split(","):
        profile = measure(name, args.tokens, args.steps, args.warmup, args.device)
        (out / f"{name}.json").write_text(json.dumps(profile, indent=1) + "\n")
        print(f"{name}: forward {profile['forward_s'] * 1e3:.2f} ms, backward {profile['backward_s'] * 1e3:.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
