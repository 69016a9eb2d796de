"""``collsim sim run-cost``: how often to checkpoint a run that fails, and what failures cost.

The step time comes from ``--step-time`` or from a DDP / FSDP scenario file simulated by
``sim ddp`` / ``sim fsdp``'s own models (``--from-ddp`` / ``--from-fsdp``); the GPUs from
``--gpus`` or ``--hardware NAME --nodes N``. See docs/failures.md.
"""

from __future__ import annotations

import json
from typing import Any

import click

from sim.cli_fields import field_options
from sim.errors import CollsimError
from sim.fields import command_fields
from sim.training import runcost_fields  # noqa: F401  registers the "runcost" field table

_FIELDS = command_fields("run-cost", "runcost")  # the entries that name the command (sim.training.runcost_fields)
_DECLS = {name: (runcost_fields.RUNCOST[name].option, name) for name in _FIELDS}  # flags keep the field's name


@click.command("run-cost")
@click.option("--scenario", "scenario_file", default=None, help="YAML/JSON run-cost scenario file (flags given override it)")
@click.option("--from-ddp", "from_ddp", default=None, help="DDP scenario file (as sim ddp --scenario): its step time, ranks and parameters")
@click.option(
    "--from-fsdp", "from_fsdp", default=None, help="FSDP scenario file (as sim fsdp --scenario): its step time, ranks and parameters"
)
@click.option("--hardware", default=None, help="hardware preset (collsim hardware list): GPUs per node; with --nodes, the GPUs")
@click.option("--nodes", type=int, default=None, help="nodes of --hardware; GPUs = nodes x the preset's GPUs per node")
@field_options("runcost", *_FIELDS, decls=_DECLS)
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON (run_cost(scenario).to_dict())")
def run_cost_command(
    scenario_file: str | None,
    from_ddp: str | None,
    from_fsdp: str | None,
    hardware: str | None,
    nodes: int | None,
    as_json: bool,
    **flags: Any,
) -> None:
    """Checkpoint interval (Young/Daly and simulated), goodput, wall time and elastic restarts."""
    from sim.training.runcost import run_cost

    data = scenario_data(scenario_file, from_ddp, from_fsdp, hardware, nodes, flags)
    result = run_cost(runcost_fields.scenario_from_dict(data))
    click.echo(json.dumps(result.to_dict()) if as_json else format_result(result.to_dict()))


def scenario_data(
    scenario_file: str | None, from_ddp: str | None, from_fsdp: str | None, hardware: str | None, nodes: int | None, flags: dict[str, Any]
) -> dict[str, Any]:
    """The file's fields, then what a step model or a preset gives, then the flags given."""
    from sim.files import load_mapping

    if from_ddp is not None and from_fsdp is not None:
        raise CollsimError("--from-ddp and --from-fsdp: give one step model, not both")
    data = load_mapping(scenario_file, "run-cost scenario file") if scenario_file else {}
    given = {key: value for key, value in flags.items() if value is not None}
    if from_ddp is not None or from_fsdp is not None:
        data.update(step_model(from_ddp or from_fsdp, "fsdp" if from_fsdp else "ddp", given))
    if hardware is not None or nodes is not None:
        data.update(preset_gpus(hardware, nodes, given))
    data.update(given)
    return data


def step_model(path: str, kind: str, given: dict[str, Any]) -> dict[str, Any]:
    """Step time, ranks and parameter count of a DDP / FSDP scenario file, as sim ddp / sim fsdp
    simulate it; the flags given (--step-time, --gpus, --params) win over them."""
    from sim.training import ddp, ddp_cli, fsdp

    data = ddp_cli.scenario_data(path, {})
    ddp_cli.apply_hardware_flags(data)
    if kind == "fsdp":
        result = fsdp.run_fsdp(fsdp.FSDPScenario.from_dict(data))
    else:
        result = ddp.run_ddp(ddp.DDPScenario.from_dict(data))
    summary = result.summary()
    found = {"step_time_s": f"{result.step_time_s!r}s", "gpus": int(summary["ranks"]), "params": float(summary["param_count"])}
    return {key: value for key, value in found.items() if key not in given}


def preset_gpus(hardware: str | None, nodes: int | None, given: dict[str, Any]) -> dict[str, Any]:
    """GPUs and GPUs per node of ``nodes`` nodes of preset ``hardware``."""
    from sim.hardware.presets import load_preset

    if hardware is None or nodes is None:
        raise CollsimError("--hardware and --nodes go together: GPUs = nodes x the preset's GPUs per node (collsim hardware list)")
    if nodes < 1:
        raise CollsimError(f"--nodes: must be >= 1, got {nodes}")
    per_node = load_preset(hardware).gpus_per_node
    if "gpus" in given and int(given["gpus"]) != nodes * per_node:
        raise CollsimError(
            f"--gpus {given['gpus']} disagrees with --hardware {hardware} --nodes {nodes} ({nodes * per_node} GPUs); give one of them"
        )
    return {"gpus": nodes * per_node, "gpus_per_node": per_node}


def duration(seconds: float) -> str:
    """A time in the unit a person reads it in: ms, s, min, h or d."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds * 1e3:.3g} ms"


def elastic_line(elastic: dict[str, Any], nodes: int) -> str:
    """Wait for a spare node, or continue on the nodes left and grow back when it comes."""
    head = f"  elastic      a failure takes {elastic['nodes_lost']} node(s): wait {duration(elastic['replace_wait_s'])} for a spare: goodput {elastic['wait_goodput']:.2%}"
    if elastic["shrink_goodput"] is None:
        return head + "; no node left to continue on"
    left = nodes - elastic["nodes_lost"]
    return (
        head
        + f"; continue on {left} nodes ({elastic['shrink_throughput']:.2%} throughput) and grow back: {elastic['shrink_goodput']:.2%} -> {elastic['better']}"
    )


def format_result(result: dict[str, Any]) -> str:
    """The text ``collsim sim run-cost`` prints."""
    s, ck, el = result["scenario"], result["checkpoint"], result["elastic"]
    parts = ", ".join(f"{name[:-2].replace('_', ' ')} {duration(value)}" for name, value in result["restart_parts"].items())
    steps = round(result["interval_s"] / s["step_time_s"])
    nodes = max(1, s["gpus"] // s["gpus_per_node"])
    tokens = f", {result['tokens']:.3g} tokens" if result["tokens"] else ""
    lines = [
        f"run cost: {s['gpus']} GPUs ({nodes} node{'s' if nodes > 1 else ''}), step {duration(s['step_time_s'])}, {s['steps']} steps{tokens}; "
        f"MTBF {duration(result['mtbf_s'])} ({s['failure_rate']:.3g} failures per GPU-hour)",
        f"  checkpoint   {ck['nbytes'] / 1e9:.4g} GB ({ck['bytes_per_param']} B/param), {s['sharding']}, {s['write']}: "
        f"write {duration(ck['write_s'])}, copy {duration(ck['copy_s'])}, training blocked {duration(ck['blocking_s'])}",
        f"  restart      {duration(result['restart_s'])}: {parts}",
        f"  optimum      Young {duration(result['young_interval_s'])}, Daly {duration(result['daly_interval_s'])}, "
        f"exact {duration(result['exact_interval_s'])}, simulated {duration(result['simulated_interval_s'])} ({s['samples']} samples, seed {s['seed']})",
        f"  interval     {duration(result['interval_s'])} ({steps} steps): goodput {result['goodput']:.2%} "
        f"(simulated {result['simulated_goodput']:.2%} ± {result['simulated_goodput_stderr']:.2%}; at the optimum {result['optimal_goodput']:.2%})",
        f"  run          work {duration(result['work_s'])}, wall {duration(result['wall_s'])}, {result['expected_failures']:.3g} failures expected, "
        f"each losing {duration(result['lost_work_per_failure_s'])} of work and {duration(result['restart_s'])} of restart",
        elastic_line(el, nodes),
    ]
    return "\n".join(lines + [f"  note: {note}" for note in result["notes"]])
