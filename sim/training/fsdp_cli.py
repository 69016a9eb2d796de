"""``collsim sim fsdp``: simulate an FSDP / ZeRO step, or compare strategies side by side.

The parameter, profile and comm flags are those of ``collsim sim ddp`` (the same option objects).
"""

from __future__ import annotations

import json
from typing import Any

import click

from sim.errors import CollsimError
from sim.training import ddp_cli

_DDP_ONLY = {
    "sweep",
    "optimize",
    "strategy",
    "accumulation_steps",
    "rebuild",
    "trace",
    "csv_path",
    "as_json",
    "scenario_file",
}
_SHARED = [param for param in ddp_cli.ddp.params if param.name not in _DDP_ONLY]
_STRATEGIES = ("ddp", "zero1", "full_shard", "shard_grad_op", "no_shard", "hybrid_shard")


def _refuse_what_is_not_modelled(data: dict[str, Any]) -> None:
    """Inputs sim fsdp would otherwise drop without a word (issue 22): a shard group of 0 ranks
    (read as "default") and a compute slowdown (not modelled here, see sim.training.fsdp)."""
    size = data.get("shard_size")
    if size is not None and str(size).strip().lstrip("-").isdigit() and int(size) < 1:
        raise CollsimError(f"shard_size: must be >= 1 ranks per shard group, got {size}", field="shard_size")
    slowdown = data.get("slowdown")
    if slowdown is not None and float(slowdown) != 1.0:
        raise CollsimError(
            f"slowdown: sim fsdp does not model compute slowing down under communication (got {slowdown}); "
            "leave it at 1, or use collsim sim ddp --slowdown for DDP steps",
            field="slowdown",
        )


def _run(
    scenario_file: str | None,
    compare: str | None,
    trace: str | None,
    csv_path: str | None,
    as_json: bool,
    **flags: Any,
) -> None:
    from sim.cli_fields import check_outputs
    from sim.collective.results import write_csv, write_text
    from sim.training import fsdp as model

    check_outputs((trace, "--trace"), (csv_path, "--csv"))
    if compare is not None and (trace is not None or csv_path is not None):
        raise CollsimError("--compare prints a table; --trace and --csv need a single --sharding")
    switches = {key: flags.pop(key) for key in ("overlap", "limit_all_gathers")}
    calibration, backend = flags.pop("calibration"), flags.pop("backend")
    data = ddp_cli.scenario_data(scenario_file, flags)
    data.update({key: value for key, value in switches.items() if value is not None})
    ddp_cli._check_input_files(data)
    if calibration:
        ddp_cli._apply_calibration(data, calibration, backend)
    ddp_cli.apply_hardware_flags(data)
    _refuse_what_is_not_modelled(data)
    scenario = model.FSDPScenario.from_dict(data)
    if compare is not None:  # "" is refused by compare(), not read as "no --compare"
        rows = model.compare(scenario, [name.strip() for name in compare.split(",") if name.strip()])
        click.echo(json.dumps(rows) if as_json else format_compare(rows))
        return
    result = model.run_fsdp(scenario)
    if trace is not None:
        write_text(trace, json.dumps(result.chrome_trace()), "--trace")
    if csv_path is not None:
        write_csv(result.events(), csv_path)
    summary = {**result.summary(), **model.step_interval(scenario, result.step_time_s)}  # 80 % on a preset (issue 33)
    click.echo(json.dumps(summary) if as_json else format_summary(summary))


def _time(seconds: float) -> str:
    from sim.units import format_time

    return format_time(seconds)


def format_summary(summary: dict[str, Any], max_rows: int = 8) -> str:
    from sim.units import format_size

    memory = summary["memory"]
    lines = [
        f"{summary['sharding']} step, {summary['num_units']} units, {format_size(summary['grad_bytes'])} of parameters, {summary['ranks']} ranks (shard group {summary['shard_group']}, {summary['comm']})",
        f"  step time        {_time(summary['step_time_s'])}  (compute {_time(summary['compute_time_s'])}, exposed comm {_time(summary['exposed_comm_s'])})",
        *ddp_cli.interval_line(summary),
        f"  comm busy        {_time(summary['comm_busy_s'])}  "
        + ", ".join(f"{k} {_time(v)}" for k, v in summary["comm_by_kind_s"].items()),
        f"  bounds           no overlap {_time(summary['no_overlap_bound_s'])}, perfect overlap {_time(summary['perfect_overlap_bound_s'])}",
        f"  memory per rank  {format_size(summary['peak_memory_bytes'])} peak: params {format_size(memory['params_bytes'])}, grads {format_size(memory['grads_bytes'])}, optimizer {format_size(memory['optimizer_bytes'])}, unsharded {format_size(memory['unsharded_peak_bytes'])}",
        *memory_extra(memory),
        f"  GPU memory       {summary['gpu_memory_note']}",
        "  unit             bytes        ops (kind start-end)",
    ]
    for unit in summary["units"][:max_rows]:
        ops = "  ".join(
            f"{op['kind']} {_time(op['start_s'])}-{_time(op['end_s'])}" for op in unit["ops"] if op["kind"] not in ("forward", "backward")
        )
        lines.append(f"  {unit['name'][:16]:<16} {format_size(unit['bytes']):<12} {ops}")
    if len(summary["units"]) > max_rows:
        lines.append(f"  ... {len(summary['units']) - max_rows} more (use --json)")
    lines += [f"  note: {note}" for note in summary.get("notes", [])]
    return "\n".join(lines)


def memory_extra(memory: dict[str, Any]) -> list[str]:
    """fp32 master weights and activations, when the step holds any."""
    from sim.units import format_size

    parts = [
        f"{label} {format_size(memory[key])}"
        for key, label in (("master_bytes", "fp32 master weights"), ("activations_bytes", "activations"))
        if memory.get(key)
    ]
    return [f"                   + {', '.join(parts)}"] if parts else []


def _fit(row: dict[str, Any]) -> str:
    """Says "does not fit" on a strategy whose peak is over the GPU's memory (issue 36)."""
    return "  does not fit" if row.get("fits") is False else ""


def _within(row: dict[str, Any]) -> str:
    """The step's 80 % interval on a hardware preset (every collective at its interval's ends), "" without one."""
    found = row.get("step_time_interval_s")
    return f"  step 80 %: {_time(found[0])} – {_time(found[1])}" if found else ""


def _capacity(rows: list[dict[str, Any]]) -> str:
    """The GPU's memory, in the header: what every peak memory is measured against."""
    from sim.units import format_size

    if not rows:
        return ""
    total = rows[0]["gpu_memory_bytes"]
    return f"  (GPU memory: {format_size(total)} a rank, {rows[0]['gpu']})" if total else f"  ({rows[0]['gpu_memory_note']})"


def format_compare(rows: list[dict[str, Any]]) -> str:
    from sim.units import format_size

    header = (
        f"{'strategy':<14} {'step':>11} {'exposed comm':>13} {'comm busy':>11} {'peak memory':>12}  params / grads / optimizer / unsharded"
    )
    lines = [header + _capacity(rows)]
    for row in rows:
        m = row["memory"]
        parts = " / ".join(format_size(m[key]) for key in ("params_bytes", "grads_bytes", "optimizer_bytes", "unsharded_peak_bytes"))
        extra = "".join(
            f" + {label} {format_size(m[key])}"
            for key, label in (("master_bytes", "master"), ("activations_bytes", "activations"))
            if m.get(key)
        )
        lines.append(
            f"{row['sharding']:<14} {_time(row['step_time_s']):>11} {_time(row['exposed_comm_s']):>13} {_time(row['comm_busy_s']):>11} {format_size(row['peak_memory_bytes']):>12}  {parts}{extra}{_fit(row)}{_within(row)}"
        )
    lines += [f"note ({row['sharding']}): {note}" for row in rows for note in row.get("notes", [])]

    return "\n".join(lines)


fsdp = click.Command(
    "fsdp",
    callback=_run,
    help="""Simulate an FSDP / ZeRO training step: per-unit all-gathers, reduce-scatters, memory per rank.

    Strategies: full_shard (ZeRO-3), shard_grad_op (ZeRO-2), no_shard, hybrid_shard, and for
    comparison ddp and zero1 (DDP + ZeroRedundancyOptimizer). Compute and comm flags as in
    collsim sim ddp (times need a unit). See docs/fsdp.md.
    """,
    params=[
        click.Option(["--scenario", "scenario_file"], default=None, help="YAML/JSON scenario file (flags given override it)"),
        click.Option(["--sharding"], default=None, type=click.Choice(_STRATEGIES), help="default full_shard"),
        click.Option(["--compare"], default=None, help="strategies side by side, e.g. ddp,zero1,shard_grad_op,full_shard"),
        click.Option(["--backward-prefetch"], default=None, type=click.Choice(["pre", "post", "none"]), help="default pre (BACKWARD_PRE)"),
        click.Option(
            ["--limit-all-gathers/--no-limit-all-gathers"],
            default=None,
            help="FSDP rate limiter: at most 2 in-flight all-gathers (default on)",
        ),
        click.Option(["--shard-size"], default=None, type=int, help="hybrid_shard: ranks per shard group (default --gpus-per-node)"),
        click.Option(
            ["--units"], default=None, help="FSDP units: blocks (default: one per transformer block + root), single, or name prefixes"
        ),
        click.Option(
            ["--optimizer-state-bytes"],
            default=None,
            help="optimizer state bytes per parameter element, a whole number (default 8: Adam fp32); a size such as 8GB is refused",
        ),
        click.Option(["--no-overlap", "overlap"], flag_value=False, default=None, help="collectives block compute (the no-overlap bound)"),
        *_SHARED,
        click.Option(["--trace"], default=None, help="write a Chrome trace JSON of the step (open in Perfetto)"),
        click.Option(["--csv", "csv_path"], default=None, help="write the event table as CSV"),
        click.Option(["--json", "as_json"], is_flag=True, help="print JSON"),
    ],
)
