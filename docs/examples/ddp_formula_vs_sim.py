"""Where the DDP overhead formula holds and where it does not: every number quoted in docs/ddp.md.

Run: python docs/examples/ddp_formula_vs_sim.py  (expected output: ddp_formula_vs_sim.expected.md)
"""

from __future__ import annotations

from sim.training.ddp import DDPScenario, run_ddp
from sim.training.ddp_sweep import optimize, sweep_bucket_sizes
from sim.training.overhead import optimal_bucket_bytes, overhead_simple, overhead_uniform
from sim.units import format_size, format_time

MiB = 2**20


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def uniform_check() -> str:
    """Equal buckets: the DES against max(d, n_b (d - c) + c), both regimes."""
    rows = []
    for label, backward_time_s, w_Bps in (("d < c", 0.100, 10e9), ("d > c", 0.010, 1e9)):
        for num_buckets in (1, 4, 16):
            nbytes = 64 * MiB // num_buckets
            scenario = DDPScenario(
                param_bytes=(nbytes,) * num_buckets,
                bucket_cap_bytes=nbytes,
                first_bucket_bytes=None,
                backward_time_s=backward_time_s,
                o_s=50e-6,
                w_Bps=w_Bps,
            )
            simulated = run_ddp(scenario).overhead_s
            closed = overhead_uniform(64 * MiB, num_buckets, backward_time_s, 50e-6, w_Bps)
            rows.append([label, str(num_buckets), format_time(simulated), format_time(closed), f"{abs(simulated - closed) / closed:.1e}"])
    return table(["regime", "n_b", "simulated", "closed form", "rel. error"], rows)


def regimes(preset: str, o_s: float, w_Bps: float) -> str:
    """The textbook optimum against the simulated one as backward time T varies."""
    rows = []
    for backward_time_s in (0.05, 0.2, 0.8, 3.2):
        scenario = DDPScenario(preset=preset, backward_time_s=backward_time_s, o_s=o_s, w_Bps=w_Bps)
        best = optimize(scenario)
        rows.append([
            format_time(backward_time_s),
            format_size(best["best_bucket_bytes_formula"]),
            format_time(best["overhead_at_formula_s"]),
            format_size(best["best_bucket_bytes_sim"]),
            format_time(best["best_overhead_s"]),
            format_time(overhead_simple(best["grad_bytes"], best["grad_bytes"] / best["best_bucket_bytes_formula"], o_s, w_Bps)),
        ])  # fmt: skip
    return table(["T", "b* = sqrt(s w o)", "overhead at b*", "best cap (sim)", "overhead at best", "formula's own prediction at b*"], rows)


def strategies(preset: str, o_s: float, w_Bps: float, backward_time_s: float) -> str:
    rows = []
    for strategy in ("naive", "flat", "overlap", "bucketed"):
        result = run_ddp(DDPScenario(preset=preset, strategy=strategy, backward_time_s=backward_time_s, o_s=o_s, w_Bps=w_Bps)).summary()
        rows.append(
            [
                strategy,
                str(result["num_buckets"]),
                format_time(result["comm_busy_s"]),
                format_time(result["overhead_s"]),
                format_time(result["step_time_s"]),
            ]
        )
    return table(["strategy", "all-reduces", "comm busy", "overhead", "step time"], rows)


def embedding_floor() -> str:
    """GPT-2: wte (a third of the bytes) is registered first, so its gradient is ready last."""
    scenario = DDPScenario(preset="gpt2", backward_time_s=0.12, o_s=50e-6, w_Bps=10e9)
    rows = []
    for row in sweep_bucket_sizes(scenario, [MiB, 4 * MiB, 25 * MiB, 100 * MiB]):
        rows.append(
            [
                format_size(row["bucket_cap_bytes"]),
                str(row["num_buckets"]),
                format_time(row["overhead_s"]),
                format_time(row["formula_overhead_s"]),
                format_time(row["formula_simple_overhead_s"]),
            ]
        )
    last = run_ddp(scenario).buckets[-1]
    note = f"\n\nLast bucket at 25 MiB: {format_size(last['bytes'])} ({', '.join(last['params'][-3:])}), all-reduce {format_time(last['end_s'] - last['start_s'])}."
    return table(["bucket cap", "buckets", "overhead (sim)", "closed form, equal buckets", "n_b o + s/(n_b w)"], rows) + note


def first_bucket() -> str:
    rows = []
    for preset in ("gpt2", "resnet18", "xl"):
        for first in (MiB, None):
            result = run_ddp(DDPScenario(preset=preset, first_bucket_bytes=first, backward_time_s=0.1, o_s=50e-6, w_Bps=10e9))
            rows.append(
                [
                    preset,
                    "1 MiB" if first else "none",
                    format_size(result.buckets[0]["bytes"]),
                    format_time(result.buckets[0]["start_s"]),
                    format_time(result.overhead_s),
                ]
            )
    return table(["model", "first bucket cap", "first bucket", "first launch", "overhead"], rows)


def slowdown() -> str:
    rows = []
    for factor in (1.0, 1.25, 1.5, 2.0):
        result = run_ddp(DDPScenario(preset="medium", backward_time_s=0.3, o_s=50e-6, w_Bps=5e9, slowdown=factor))
        rows.append([f"{factor:g}", format_time(result.backward_end_s), format_time(result.overhead_s), format_time(result.step_time_s)])
    flat = run_ddp(DDPScenario(preset="medium", strategy="flat", backward_time_s=0.3, o_s=50e-6, w_Bps=5e9))
    return (
        table(["slowdown", "backward end", "overhead", "step time"], rows)
        + f"\n\nflat (no overlap, no slowdown): step time {format_time(flat.step_time_s)}."
    )


def main() -> None:
    sections = [
        ("Closed form against the DES, 64 MiB in n_b equal buckets, o = 50 us", uniform_check()),
        ("xl (7.44 GiB of fp32 gradients), o = 50 us, w = 10 GB/s: optimum by formula and by simulation", regimes("xl", 50e-6, 10e9)),
        ("Per-call overhead accumulating: xl, 435 tensors, o = 200 us, w = 10 GB/s, T = 1 s", strategies("xl", 200e-6, 10e9, 1.0)),
        ("GPT-2 124M, T = 120 ms, o = 50 us, w = 10 GB/s: the embedding floor", embedding_floor()),
        ("First bucket 1 MiB or none, 25 MiB cap, T = 100 ms, o = 50 us, w = 10 GB/s", first_bucket()),
        ("Compute slowdown while comm is in flight: medium, T = 300 ms, o = 50 us, w = 5 GB/s", slowdown()),
    ]
    print("\n\n".join(f"### {title}\n\n{body}" for title, body in sections))
    print(f"\nb* check: sqrt(s w o) for s = 1 GiB, w = 10 GB/s, o = 50 us is {format_size(optimal_bucket_bytes(2**30, 10e9, 50e-6))}.")


if __name__ == "__main__":
    main()
