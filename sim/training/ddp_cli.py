"""``collsim sim ddp``: simulate a DDP step, sweep bucket sizes, find the best one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from sim.cli_fields import field_options
from sim.errors import CollsimError
from sim.fields import command_fields

_PARAM_FLAGS = ("preset", "params_file", "param_bytes")
_PROFILE_FLAGS = ("backward_time", "backward_rate", "profile_file", "layer_times", "flops_per_s")
_SOURCE_FIELDS = {
    "params": ("preset", "params_file", "param_bytes", "params"),
    "profile": (
        "backward_time",
        "backward_time_s",
        "backward_rate",
        "backward_rate_Bps",
        "profile",
        "profile_file",
        "layer_times",
        "flops_per_s",
        "tokens",
    ),
}


def _layer_times(value: str) -> Any:
    """A YAML/JSON file of {prefix: time}, or inline "layers.0:2ms,layers.1:2ms" (times with units)."""
    from sim.scenario import load_mapping
    from sim.units import require_unit

    if Path(value).exists():  # a directory or /dev/null is said as such, not read as inline times
        from sim.scenario import check_input_file

        mapping = load_mapping(check_input_file(value, "--layer-times file"), "layer times file")
        for prefix, time in mapping.items():
            require_unit(time, f"--layer-times {prefix}", "time")
        return mapping
    for item in value.split(","):
        if ":" in item:
            require_unit(item.rsplit(":", 1)[1].strip(), f"--layer-times {item.strip()!r}", "time")
    return value


# Files a DDP scenario names, by the field that names them: checked up front so a missing one
# is reported as what it is, not as a missing scenario file.
_INPUT_FILES = {"params_file": "--params parameter list", "profile_file": "--profile profile", "profile": "--profile profile"}


def _check_input_files(data: dict[str, Any]) -> None:
    """Each file the scenario names: said as what it is (a directory, /dev/null), not "not found"."""
    from sim.scenario import check_input_file

    for key, kind in _INPUT_FILES.items():
        if isinstance(data.get(key), str):
            check_input_file(data[key], f"{kind} file")


def scenario_data(scenario_file: str | None, flags: dict[str, Any]) -> dict[str, Any]:
    """The scenario file's fields overridden by the flags given; a flag that picks the
    parameter source or the backward profile replaces the file's choice."""
    from sim.scenario import load_mapping

    data = load_mapping(scenario_file, "DDP scenario file") if scenario_file else {}
    given = {key: value for key, value in flags.items() if value is not None and value is not False}
    for group, flag_names in (("params", _PARAM_FLAGS), ("profile", _PROFILE_FLAGS)):
        if any(name in given for name in flag_names):
            for name in _SOURCE_FIELDS[group]:
                data.pop(name, None)
    if "layer_times" in given:
        given["layer_times"] = _layer_times(given["layer_times"])
    if "flops_per_s" in given:
        from sim.training.ddp_scenario import parse_flops

        given["flops_per_s"] = parse_flops(given["flops_per_s"])
    from sim.scenario import override  # a flag replaces the file's value under either name (latency / latency_s)
    from sim.training.ddp import DDPScenario

    return override(DDPScenario, data, given)


@click.command("ddp")
@click.option("--scenario", "scenario_file", default=None, help="YAML/JSON DDP scenario file (flags given override it)")
@field_options(
    "ddp",
    *command_fields("ddp", "ddp"),
    decls={
        "params_file": ("--params", "params_file"),
        "profile_file": ("--profile", "profile_file"),
        "forward_time_s": ("--forward-time", "--forward", "forward_time"),
        "optimizer_time_s": ("--optimizer-time", "--optimizer", "optimizer_time"),
        "master_weights": ("--master-weights/--no-master-weights",),
    },
    notes={
        "hardware": "NCCL's pick per all-reduce; implies --comm network; with --comm ow, o and w fitted to the same times",
        "mode": "default collapsed: the same times",
    },
)
@click.option("--calibration", default=None, help="calibration file from 'collsim fit --calibration': o and w of all_reduce at --ranks")
@click.option("--backend", default=None, help="with --calibration: use this backend's entries (gloo, nccl)")
@click.option("--sweep-bucket-sizes", "sweep", default=None, help="bucket caps to sweep: 1MiB,4MiB,16MiB or 1MiB:256MiB:x2")
@click.option("--optimize", is_flag=True, help="find the best bucket cap by simulation, beside the formula's")
@click.option("--trace", default=None, help="write a Chrome trace JSON of the step (open in Perfetto)")
@click.option("--csv", "csv_path", default=None, help="write the event table as CSV")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def ddp(
    scenario_file: str | None, sweep: str | None, optimize: bool, trace: str | None, csv_path: str | None, as_json: bool, **flags: Any
) -> None:
    """Simulate a DDP training step: when gradients are ready, how buckets all-reduce, what it costs.

    Times and bandwidths need a unit (--backward-time 120ms, --o 50us, --w 10GB/s); a bare
    number other than 0 is an error. Sizes may be bare bytes. In a --scenario file the short
    keys (backward_time: 120ms) need units too; the canonical ones (backward_time_s: 0.12) do not.
    """
    from sim.cli_fields import check_outputs
    from sim.training import ddp as model
    from sim.training import ddp_sweep
    from sim.units import parse_size_list

    if sweep is not None and optimize:
        raise CollsimError("--sweep-bucket-sizes and --optimize: give one of them")
    check_outputs((trace, "--trace"), (csv_path, "--csv"))
    calibration, backend = flags.pop("calibration"), flags.pop("backend")
    data = scenario_data(scenario_file, flags)
    _check_input_files(data)
    calibration_used = _apply_calibration(data, calibration, backend) if calibration else None
    apply_hardware_flags(data)
    scenario = model.DDPScenario.from_dict(data)
    from sim.training.ddp_check import check_ddp  # refused before it runs (issue 22), not after minutes

    sizes = parse_size_list(sweep, "--sweep-bucket-sizes") if sweep is not None else None
    check_ddp(scenario, len(sizes) if sizes else (12 if optimize else 1))
    if sizes:
        rows = ddp_sweep.sweep_bucket_sizes(scenario, sizes)
        click.echo(json.dumps(rows) if as_json else format_sweep(rows))
        return
    if optimize:
        best = ddp_sweep.optimize(scenario)
        click.echo(json.dumps(best) if as_json else format_optimum(best))
        return
    result = model.run_ddp(scenario)
    if trace is not None:
        result.write_trace(trace)
    if csv_path is not None:
        result.to_csv(csv_path)
    from sim.training.step_interval import ddp_interval

    summary = {**result.summary(), **ddp_interval(result)}  # the step's 80 % interval on a preset (issue 33)
    from sim.training.fsdp import ddp_memory  # memory per rank and whether it fits the GPU (issue 36)

    summary.update(ddp_memory(scenario))
    if calibration_used is not None:
        summary["calibration"] = calibration_used  # fitted at which world sizes, extrapolated or not
    click.echo(json.dumps(summary) if as_json else format_summary(summary))


def apply_hardware_flags(data: dict[str, Any]) -> None:
    """--hardware, --nodes, --nics-per-node, --nic-bandwidth (flags or scenario file): the
    preset's ranks and network (NIC overrides as a preset variant, sim.hardware.cluster), comm
    network unless given. No algorithm given: NCCL's pick per all-reduce (sim.training.comm)."""
    from sim.hardware.presets import apply_nic_keys

    apply_nic_keys(data)
    if data.get("hardware") is None:
        if data.get("nodes") is not None:
            raise CollsimError("--nodes needs --hardware NAME (collsim hardware list)")
        data.pop("nodes", None)
        return
    from sim.nccl.pick import apply_hardware

    if data.get("nodes") is None and data.get("ranks") is not None:  # a saved scenario names ranks, not nodes
        from sim.hardware.presets import load_preset

        data["nodes"] = max(1, int(data["ranks"]) // load_preset(data["hardware"]).gpus_per_node)
    apply_hardware(data, pick=False)
    data.setdefault("comm", "network")


def _apply_calibration(data: dict[str, Any], path: str, backend: str | None) -> dict[str, Any]:
    """o and w from a calibration file for the ow model, unless given (flags and files win)."""
    from sim.calibration import calibrated_ow, load_calibration

    if data.get("comm", "ow") != "ow":
        raise CollsimError("--calibration gives o and w: use it with --comm ow")
    document = load_calibration(path)
    o_s, w_Bps = calibrated_ow(document, int(data.get("ranks", 2)), backend)
    if not any(key in data for key in ("o", "o_s")):
        data["o_s"] = o_s
    if not any(key in data for key in ("w", "w_Bps")):
        data["w_Bps"] = w_Bps
    from sim.calibration import calibration_note  # extrapolation across world sizes is said, not silent (issue 22)

    note = calibration_note(document, path, "all_reduce", int(data.get("ranks", 2)), backend)
    if note["extrapolated"]:
        click.echo(f"note: {note['note']}", err=True)
    return note


def _time(seconds: float | None) -> str:
    from sim.units import format_time

    return "-" if seconds is None else format_time(seconds)


def _rate(bytes_per_s: float) -> str:
    from sim.units import format_bandwidth

    return format_bandwidth(bytes_per_s) if bytes_per_s != float("inf") else "inf"


def format_summary(summary: dict[str, Any], max_rows: int = 12) -> str:
    from sim.units import format_size

    lines = [
        f"DDP step, {summary['strategy']}, {summary['num_params']} tensors, {format_size(summary['grad_bytes'])} of gradients, {summary['ranks']} ranks ({summary['comm']})",
        f"  step time        {_time(summary['step_time_s'])}  (compute alone {_time(summary['compute_time_s'])})",
        *interval_line(summary),
        f"  backward end     {_time(summary['backward_end_s'])}",
        f"  comm end         {_time(summary['comm_end_s'])}",
        f"  overhead         {_time(summary['overhead_s'])}  (comm end - backward end; comm busy {_time(summary['comm_busy_s'])})",
        f"  formula          {_time(summary['formula_overhead_s'])} exact uniform, {_time(summary['formula_simple_overhead_s'])} n_b o + s/(n_b w)  (o {_time(summary['o_s'])}, w {_rate(summary['w_Bps'])})",
        f"  all-reduces      {summary['num_buckets']}",
        *_hook_line(summary),
        *_memory_line(summary),
        "  #   bytes        params  ready        start        end",
    ]
    for bucket in summary["buckets"][:max_rows]:
        lines.append(
            f"  {bucket['index']:<3} {format_size(bucket['bytes']):<12} {bucket['num_params']:<7} {_time(bucket['ready_s']):<12} {_time(bucket['start_s']):<12} {_time(bucket['end_s'])}"
        )
    if len(summary["buckets"]) > max_rows:
        lines.append(f"  ... {len(summary['buckets']) - max_rows} more (use --json)")
    return "\n".join(lines + hardware_lines(summary.get("hardware_comm")))


def _hook_line(summary: dict[str, Any]) -> list[str]:
    """With a communication hook: its all-reduces and the bytes they carry."""
    from sim.units import format_size

    if summary.get("comm_hook", "none") == "none":
        return []
    calls = sum(len(bucket["all_reduces"]) for bucket in summary["buckets"])
    return [
        f"  comm hook        {summary['comm_hook']}: {calls} all-reduces, {format_size(summary['wire_bytes'])} sent of {format_size(summary['grad_bytes'])}"
    ]


def interval_line(summary: dict[str, Any]) -> list[str]:
    """The step time's 80 % interval on a hardware preset (none without one: the JSON says why)."""
    found = summary.get("step_time_interval_s")
    if not found:
        return []
    ends = f"{_time(found[0])} – {_time(found[1])}"
    return [f"  80 % interval    {ends}  (every collective at its interval's low / high end; compute as given)"]


def _memory_line(summary: dict[str, Any]) -> list[str]:
    from sim.units import format_size

    if "memory" not in summary:
        return []
    return [f"  memory per rank  {format_size(summary['peak_memory_bytes'])} peak (as sim fsdp's ddp row): {summary['gpu_memory_note']}"]


def hardware_lines(hardware: dict[str, Any] | None, max_rows: int = 6) -> list[str]:
    """What each all-reduce ran on the preset (NCCL's pick, or NCCL's model and why), and how
    o and w were fitted under ow."""
    from sim.units import format_size

    if not hardware:
        return []
    lines = [f"  hardware         {hardware['nodes']} x {hardware['hardware']}"]
    for pick in hardware["picks"][:max_rows]:
        ran = f"{pick['algorithm']} on {pick['channels']} channels (DES)" if pick["algorithm"] else f"NCCL's model ({pick['why']})"
        lines.append(f"    {format_size(pick['bytes']):<12} NCCL picks {pick['nccl_pick'] or '-'}: {ran}, {_time(pick['time_s'])}")
    if hardware["ow_fit"]:
        lines.append(f"  o and w          {hardware['ow_fit']['how']}")
    return lines


def format_sweep(rows: list[dict[str, Any]]) -> str:
    from sim.units import format_size

    lines = ["bucket cap    buckets  step time    overhead     formula (exact)  formula (simple)"]
    for row in rows:
        lines.append(
            f"{format_size(row['bucket_cap_bytes']):<13} {row['num_buckets']:<8} {_time(row['step_time_s']):<12} {_time(row['overhead_s']):<12} {_time(row['formula_overhead_s']):<16} {_time(row['formula_simple_overhead_s'])}"
        )
    return "\n".join(lines)


def format_optimum(best: dict[str, Any]) -> str:
    from sim.units import format_size

    inputs = best["formula_inputs"]
    low, high = best["best_bucket_bytes_range"]
    size = lambda nbytes: "-" if nbytes is None else format_size(nbytes)  # noqa: E731
    lines = [
        f"best bucket cap by simulation  {size(best['best_bucket_bytes_sim'])}: step {_time(best['best_step_time_s'])}, overhead {_time(best['best_overhead_s'])}, {best['num_buckets']} buckets",
        f"  same step time for caps      {size(low)} .. {size(high)} (of the caps tried)",
        f"formula b* = sqrt(s w o)       {size(best['best_bucket_bytes_formula'])}: step {_time(best['step_time_at_formula_s'])}, overhead {_time(best['overhead_at_formula_s'])}",
        f"exact closed form optimum      {size(best['best_bucket_bytes_closed_form'])}",
        f"  s = {format_size(inputs['s_bytes'])}, w = {_rate(inputs['w_Bps'])}, o = {_time(inputs['o_s'])}, T = {_time(inputs['backward_time_s'])}",
    ]
    for key, label in (("fit", "n_b o + s/(n_b w)"), ("fit_exact", "exact closed form")):
        fit = best.get(key)
        if fit:
            lines.append(f"  {label} fitted to the sweep: o = {_time(fit['o_s'])}, w = {_rate(fit['w_Bps'])}, R^2 = {fit['r2']:.3f}")
    return "\n".join(lines)
