"""``collsim sim dataparallel``: torch.nn.DataParallel on one node against one GPU (sim.training.dataparallel)."""

from __future__ import annotations

import json
from typing import Any

import click

from sim.cli_fields import field_options
from sim.fields import command_fields
from sim.training.dataparallel import FIELDS  # registers the "dataparallel" field table

_FIELDS = command_fields("dataparallel", "dataparallel")  # the entries that name the command


@click.command("dataparallel")
@field_options("dataparallel", *_FIELDS, decls={name: (FIELDS[name].option, name) for name in _FIELDS})
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def dataparallel(as_json: bool, **flags: Any) -> None:
    """Simulate a torch.nn.DataParallel step on one node (scatter, replicate, threads, gather,
    reduce to GPU 0) beside the same step on one GPU."""
    from sim.errors import CollsimError
    from sim.training.dataparallel import DataParallelScenario, run_dataparallel
    from sim.units import parse_time, require_unit

    given = {name: value for name, value in flags.items() if value is not None}
    for name in ("preset", "tokens"):
        if name not in given:
            raise CollsimError(f"{FIELDS[name].option}: required ({FIELDS[name].help})")
    for name in ("thread_s", "launch_s"):
        if name in given:
            require_unit(given[name], FIELDS[name].option, "time")
            given[name] = parse_time(given[name], FIELDS[name].option)
    summary = run_dataparallel(DataParallelScenario(**given)).summary()
    click.echo(json.dumps(summary) if as_json else format_summary(summary))


def format_summary(summary: dict[str, Any]) -> str:
    from sim.units import format_time

    s = summary["scenario"]
    lines = [
        f"DataParallel step, {s['preset']}, {s['tokens']} tokens, {summary['gpus']} GPUs of {s['hardware']} ({s['precision']}, MFU {s['mfu']:g})",
        f"  step time        {format_time(summary['step_time_s'])}  (one GPU {format_time(summary['single_gpu_s'])}; speedup {summary['speedup']:.2f}x)",
    ]
    low, high = summary["step_time_interval_s"]  # always on a preset: DataParallel runs on a GPU node of one
    lines.append(
        f"  80 % interval    {format_time(low)} – {format_time(high)}  (each copy and collective at its interval's low / high end; compute and CPU as given)"
    )
    lines += [f"  {name:<22} {format_time(seconds)}" for name, seconds in summary["phases_s"].items()]
    return "\n".join(lines)
