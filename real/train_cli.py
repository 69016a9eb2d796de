"""``collsim real train``: the command (registered in :mod:`real.cli`); the work is in :mod:`real.train`."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import click

from real.cli_common import check_output_file, echo_json, write_output
from sim.units import format_size, format_time

__all__ = ["train", "format_train"]


def _int(name: str, default: int, text: str) -> Any:
    return click.option(f"--{name}", default=default, type=int, show_default=True, help=text)


@click.command("train")
@_int("tp", 2, "tensor-parallel ranks (each holds heads/tp heads and 4h/tp MLP columns)")
@_int("pp", 1, "pipeline stages (ranks)")
@_int("dp", 1, "data-parallel replicas (one flat gradient all-reduce per step)")
@_int("layers", 4, "transformer layers (split evenly over the stages)")
@_int("hidden", 64, "hidden size h")
@_int("heads", 4, "attention heads (a multiple of --tp)")
@_int("seq-len", 32, "sequence length s")
@_int("micro-batch", 2, "sequences per micro-batch b")
@_int("global-batch", 8, "sequences per step, all replicas (micro-batches = global / (dp x micro))")
@click.option("--schedule", default="1f1b", show_default=True, help="gpipe, 1f1b or interleaved (2 stages per rank)")
@_int("steps", 5, "measured steps")
@_int("warmup", 2, "steps run before, not measured")
@click.option("--timeout", "timeout_s", default=600.0, type=float, show_default=True, help="limit on the whole run, s")
@click.option("--op-timeout", "op_timeout_s", default=60.0, type=float, show_default=True, help="limit on every collective, s")
@click.option("-o", "--out", default=None, help="write the measured profile (collsim-train-profile JSON) here")
@click.option("--json", "as_json", is_flag=True, help="print the whole profile JSON")
@click.option("--compare", "with_compare", is_flag=True, help="also simulate the layout with collsim sim train fed the measured compute "
              "and collective times, and print measured vs simulated step time")  # fmt: skip
def train(tp: int, pp: int, dp: int, layers: int, hidden: int, heads: int, seq_len: int, micro_batch: int, global_batch: int, schedule: str,
          steps: int, warmup: int, timeout_s: float, op_timeout_s: float, out: str | None, as_json: bool, with_compare: bool) -> None:  # fmt: skip
    """Train a small transformer with tensor, pipeline and data parallelism on gloo ranks (CPU) and
    record every rank's timeline: compute per micro-batch, each TP all-reduce, each PP send and
    receive, the DP all-reduce; and the measured compute per layer, for the simulator."""
    from real.launcher import LaunchConfig
    from real.train import TrainConfig, run_train

    config = TrainConfig(tp, pp, dp, layers, hidden, heads, seq_len, micro_batch, global_batch, schedule, steps, warmup)
    LaunchConfig(config.world_size, timeout_s=timeout_s, op_timeout_s=op_timeout_s)  # refuse bad limits before spawning
    if out:
        check_output_file(out, "--out")
    result = run_train(config, timeout_s, op_timeout_s)
    if out:
        write_output(out, "--out", lambda handle: json.dump(result, handle, indent=1))
    comparison = _compare(result) if with_compare else None
    if as_json:
        echo_json({**result, "compare": comparison} if comparison else result)
        return
    click.echo(format_train(result) + (f"\n# profile written to {out}" if out else ""))
    if comparison:
        from real.train_compare import format_compare

        click.echo(format_compare(comparison))


def _compare(result: dict[str, Any]) -> dict[str, Any]:
    from real.train_compare import compare
    from real.train_sim import simulate_train

    return compare(result, simulate_train)


def format_train(result: dict[str, Any]) -> str:
    """A few lines: the layout, the step time, the compute per stage, each stream's total per step."""
    config, step = result["config"], result["step_time"]
    lines = [
        f"# collsim real train: tp {config['tp']} x pp {config['pp']} x dp {config['dp']} on gloo (CPU), {config['schedule']}, "
        f"{result['micro_batches']} micro-batches of {config['micro_batch']} x {config['seq_len']} x {config['hidden']}",
        f"step time: median {format_time(step['median_s'])} (min {format_time(step['min_s'])}, max {format_time(step['max_s'])}, "
        f"spread {step['spread']:.0%}) over {len(result['step_time_s'])} steps",
    ]
    stages = result["compute"]["stage"]
    for index, (forward, backward) in enumerate(zip(stages["forward_s"], stages["backward_s"])):
        lines.append(f"stage {index}: forward {format_time(forward)}, backward {format_time(backward)} per micro-batch (measured compute)")
    for stream, (count, seconds, nbytes) in sorted(stream_totals(result).items()):
        lines.append(f"{stream:>8}: {count} ops, {format_time(seconds)} busy, {format_size(nbytes)} per step (all ranks)")
    return "\n".join(lines)


def stream_totals(result: dict[str, Any]) -> dict[str, tuple[float, float, float]]:
    """Per stream: operations, busy seconds and bytes per step, summed over ranks."""
    steps = max(1, len(result["step_time_s"]))
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0])
    for row in result["rows"]:
        total = totals[f"{row['stream']} {row['kind']}" if row["stream"] == "pp" else row["stream"]]
        total[0] += 1
        total[1] += row["end_s"] - row["start_s"]
        total[2] += row["bytes"]
    return {key: (int(count / steps), seconds / steps, nbytes / steps) for key, (count, seconds, nbytes) in totals.items()}
