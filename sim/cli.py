"""The ``collsim`` command line.

Commands from ``real`` and ``webapp`` (and the heavier ``sim`` ones) load lazily, when invoked,
so ``collsim sim collective`` never imports torch or dash. Bad input prints one line,
``error: ...``, on stderr and exits with code 2.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from sim.cli_fields import check_outputs, field_options
from sim.errors import CollsimError
from sim.fields import command_fields


class LazyGroup(click.Group):
    """A click group whose subcommands are imported from "module:attribute" on first use."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}  # name -> ("module:attribute", one-line help)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List lazy commands by their stored help, without importing them (torch, dash)."""
        rows = [(name, command.get_short_help_str(60)) for name, command in self.commands.items() if not command.hidden]
        rows += [(name, help_text) for name, (_, help_text) in self.lazy.items()]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(sorted(rows))

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            module, attribute = self.lazy[name][0].split(":")
            try:
                return getattr(importlib.import_module(module), attribute)
            except ImportError as error:
                if (error.name or "").split(".")[0] in ("sim", "real", "webapp"):
                    raise
                raise CollsimError(
                    f"'collsim {name}' needs an optional dependency that is not installed ({error.name}); install collsim[all]"
                ) from None
        return super().get_command(ctx, name)


# click >= 8.2 raises this for a bare group invocation; older versions print help themselves.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class Main(LazyGroup):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            try:
                return super().main(*args, **kwargs)
            finally:
                sys.stdout.flush()  # a full disk shows here, not at exit as a traceback
        except OSError as error:
            _output_failed(error)
        except CollsimError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(2)
        except _NO_ARGS_IS_HELP as error:
            click.echo(error.format_message())
            sys.exit(0)
        except click.UsageError as error:
            where = f" ({error.ctx.command_path})" if error.ctx else ""
            click.echo(f"error{where}: {error.format_message()}", err=True)
            sys.exit(2)
        except click.ClickException as error:
            click.echo(f"error: {error.format_message()}", err=True)
            sys.exit(error.exit_code)
        except click.exceptions.Abort:
            click.echo("aborted", err=True)
            sys.exit(1)


def _output_failed(error: OSError) -> None:
    """One line for an output that cannot be written: standard output on a full disk
    (``> /dev/full``), or a file the command named. (A pipe closed early, ``| head -1``, click
    ends quietly with status 1, as Unix tools do.)"""
    import os

    where = f"{error.filename!r}" if error.filename else "standard output"
    reason = error.strerror or str(error)
    try:  # nothing more reaches stdout: Python's own flush at exit would fail again, with a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (a test runner's)
        pass
    click.echo(f"error: cannot write {where}: {reason}", err=True)
    sys.exit(2)


@click.group(
    cls=Main,
    lazy={
        "real": ("real.cli:real", "Run collectives and DDP steps for real on torch.distributed."),
        "fit": ("real.cli_analysis:fit", "Fit o and w (and more) to measurements in the results store."),
        "compare": ("real.cli_analysis:compare", "Compare simulated with measured times for a scenario."),
        "validate": ("real.cli_analysis:validate", "Measure, fit, predict held-out points and the best bucket size; write a report."),
        "ui": ("webapp.cli:ui", "Serve the browser what-if explorer (Dash) on 127.0.0.1."),
        "sweep": ("sim.sweep:sweep_command", "Run a grid of scenarios on a process pool or a Dask cluster."),
        "hardware": ("sim.hardware.cli:hardware", "List and show hardware presets (DGX A100/H100, PCIe box, CPU Ethernet)."),
    },
)
@click.version_option(package_name="collsim")
def cli() -> None:
    """collsim: simulate, draw and check the collectives behind data-parallel training."""


@cli.group(
    cls=LazyGroup,
    lazy={
        "ddp": ("sim.training.ddp_cli:ddp", "Simulate a DDP step: buckets, overlap, overhead, best bucket size."),
        "fsdp": ("sim.training.fsdp_cli:fsdp", "Simulate an FSDP / ZeRO step: all-gathers, reduce-scatters, memory; --compare strategies."),
        "dataparallel": ("sim.training.dataparallel_cli:dataparallel", "Simulate torch.nn.DataParallel on one node beside one GPU."),
        "run-cost": (
            "sim.training.runcost_cli:run_cost_command",
            "Failures, checkpoints and restarts of a run: checkpoint interval, goodput, wall time.",
        ),
        "train": ("sim.training.parallel.cli:train", "Simulate a transformer step under TP, SP, PP, DP/ZeRO and EP; --sweep layouts."),
        "hang": ("sim.hang.cli:hang", "Explain a hang or desync: where ranks block; NCCL, gloo, DETAIL and flight-recorder messages."),
        "crossover": (
            "sim.crossover_cli:crossover_command",
            "Time of every algorithm of an op over message size; the fastest per size.",
        ),
        "chakra": ("sim.chakra_cli:chakra", "Chakra execution traces (ASTRA-sim) from event rows, and back."),
    },
)
def sim() -> None:
    """Simulate collectives and DDP steps (SimPy, no torch needed)."""


def _unit(parse):
    """A click callback that parses a unit string and reports errors as CollsimError."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        return parse(value, "--" + param.name.replace("_", "-"))

    return callback


@sim.command("collective")
@field_options("collective", *command_fields("collective"), decls={"stragglers": ("--straggler", "stragglers")})
@click.option(
    "--model",
    default="des",
    type=click.Choice(["des", "nccl"]),
    help="des: simulate (default); nccl: NCCL's own tuning model on --hardware (its pick, time, busbw, every candidate)",
)
@click.option("--scenario", "scenario_file", default=None, help="YAML/JSON scenario file (flags given override it)")
@click.option(
    "--calibration",
    default=None,
    help="calibration file from 'collsim fit --calibration': fills overhead, latency, bandwidth, algorithm not given",
)
@click.option("--backend", default=None, help="with --calibration: use this backend's entries (gloo, nccl)")
@click.option("--trace", default=None, help="write a Chrome trace JSON (open in Perfetto)")
@click.option("--csv", "csv_path", default=None, help="write the event table as CSV")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option(
    "--mode",
    default="full",
    type=click.Choice(["full", "collapsed"]),
    help="full: message by message (default); collapsed: one timed event per call (closed form, ring replay or cached simulation)",
)
def collective(scenario_file: str | None, trace: str | None, csv_path: str | None, as_json: bool, mode: str, **flags: Any) -> None:
    """Simulate one collective message by message on a topology.

    Times and bandwidths need a unit (--latency 5us, --bandwidth 25GB/s; a bare number other
    than 0 is an error, since --latency 5 would be 5 s). Sizes may be bare bytes, as in
    nccl-tests. In a --scenario file the same holds for the short keys (latency: 5us); the
    canonical keys carry their unit in the name and take plain numbers (latency_s: 5.0e-6).
    """
    from sim.collective.collapsed import run as run_in_mode
    from sim.collective.collapsed import summarize
    from sim.scenario import CollectiveScenario, check_keys, fill_only_algorithm, load_mapping, missing_text, override

    check_outputs((trace, "--trace"), (csv_path, "--csv"))
    calibration, backend = flags.pop("calibration"), flags.pop("backend")
    data = load_mapping(scenario_file) if scenario_file else {}
    check_keys(CollectiveScenario, data)  # a misspelt key is named before "missing --ranks"
    model = flags.pop("model")
    restrict = {"nccl_algo": flags.pop("nccl_algo"), "nccl_proto": flags.pop("nccl_proto")}
    data = override(CollectiveScenario, data, _scenario_fields(flags))
    if "nics_per_node" in data or "nic_bandwidth" in data:  # NIC overrides: a preset variant (sim.hardware.cluster)
        from sim.hardware.presets import apply_nic_keys  # only then: the presets load yaml

        apply_nic_keys(data)
    from sim.collective.pick import PICK_KEYS, wants_pick

    for key in PICK_KEYS:  # a scenario file's nccl_algo / nccl_proto (flags win)
        restrict[key] = restrict[key] or data.pop(key, None)
    picked = "algorithm" not in data or wants_pick(data)  # the default pick: the output says what it ran
    if "hardware" in data or "nodes" in data or any(restrict.values()):
        from sim.nccl.pick import apply_hardware

        apply_hardware(data, pick=model == "des", **restrict)
    no_size = _no_size(data)
    if model == "nccl":
        from sim.hardware.cli import echo_nccl

        if no_size:
            raise CollsimError(missing_text(["--size"], data.get("op")))
        return echo_nccl(data, as_json, **restrict)
    calibration_used = _apply_calibration(data, calibration, backend) if calibration else None
    fill_only_algorithm(data)
    missing = [flag for flag, keys in _REQUIRED.items() if not any(key in data for key in keys)] + ["--size"] * no_size
    if missing:
        raise CollsimError(missing_text(missing, data.get("op")))
    if "size_bytes" not in data:
        data.setdefault("size", 0)  # a barrier moves no data
    scenario = CollectiveScenario.from_dict(data)
    from sim.collective.plan import resolve

    plan = resolve(scenario)  # the preset loaded once: budget, run, NCCL's pick and notes read it
    with _progress(scenario, _check_budget(plan, mode)) as on_progress:
        result = run_in_mode(scenario, mode, plan, on_progress)
    if (trace or csv_path) and result.mode == "collapsed":
        raise CollsimError("--trace and --csv need per-message events: use --mode full")
    if trace is not None:
        result.write_trace(trace)
    if csv_path is not None:
        result.to_csv(csv_path)
    summary = summarize(result, plan.preset)
    if calibration_used is not None:
        summary["calibration"] = calibration_used
    if picked and scenario.hardware:
        from sim.nccl.rooted import pick_note

        if note := pick_note(scenario, plan.preset):
            summary["note"] = note
    _add_nccl(summary, plan, picked)
    _echo_collective(summary, as_json)


def _add_nccl(summary: dict[str, Any], plan: Any, picked: bool) -> None:
    """An nccl_* run on a GPU preset: what NCCL picks (or what ran) on how many channels, and NCCL's
    own model's time beside the DES's (sim.collective.pick); ``plan``: the run's (sim.collective.plan)."""
    from sim.collective.pick import lines

    info = plan.describe(picked)
    if info is not None:
        summary["nccl"] = {**info.to_dict(), "lines": list(lines(info, summary["time_s"]))}


def _echo_collective(summary: dict[str, Any], as_json: bool) -> None:
    """The collective's summary as JSON or text (collapsed runs: the time per call)."""
    calibration_used = summary.get("calibration")
    if as_json:
        click.echo(json.dumps(summary))
    elif summary["mode"] == "collapsed":
        head = f"{summary['op']}/{summary['algorithm']} on {summary['ranks']} ranks, {summary['size_bytes']} B"
        click.echo(f"{head} (collapsed: {summary['collapsed_source']})")
        click.echo(f"  time per call    {summary['time_s']:.6g} s")
    else:
        click.echo(format_summary(summary))
    if calibration_used is not None and calibration_used["extrapolated"] and not as_json:
        click.echo(f"  note             {calibration_used['note']}")
    if summary.get("note") and not as_json:
        click.echo(f"  note             {summary['note']}")


def _check_budget(plan: Any, mode: str) -> Any:
    """Refuse before starting a run beyond the time and memory limits (sim.collective.budget);
    the estimate of the per-message run (a collapsed call's where it simulates), else None."""
    from sim.collective import budget
    from sim.collective.collapsed import simulated_call, why_not_collapsed

    scenario = plan.scenario
    if mode == "full" or why_not_collapsed(scenario) is not None:
        return budget.check_run(scenario, "sim collective", plan=plan)
    budget.check_collapsed(scenario, plan.preset)
    single = simulated_call(scenario)
    return None if single is None else budget.check_run(single, "sim collective --mode collapsed", plan=plan.with_scenario(single))


@contextmanager
def _progress(scenario: Any, told: Any) -> Iterator[Any]:
    """A long run (sim.collective.budget.long_run_note) says so on stderr and shows its messages
    sent against the estimate's; None (no progress) for a short one."""
    from sim.collective.budget import long_run_note

    note = long_run_note(scenario, told)
    if note is None:
        yield None
        return
    click.echo(f"note: {note}", err=True)
    with click.progressbar(length=told.messages, label="messages", file=sys.stderr) as bar:
        yield lambda messages, now_s: bar.update(messages - bar.pos)


def _apply_calibration(data: dict[str, Any], path: str, backend: str | None) -> dict[str, Any]:
    """Fill the fields the user did not give from a calibration file (flags and files win)."""
    from sim.calibration import calibrated_fields, calibration_note, load_calibration

    if "op" not in data or "ranks" not in data:
        raise CollsimError("--calibration needs --op and --ranks to pick the calibrated entry")
    document = load_calibration(path)
    fields = calibrated_fields(document, data["op"], int(data["ranks"]), backend)
    short = {"overhead_s": "overhead", "latency_s": "latency", "bandwidth_Bps": "bandwidth"}
    for key, value in fields.items():
        if key not in data and short.get(key) not in data and value is not None:
            data[key] = value
    return calibration_note(document, path, data["op"], int(data["ranks"]), backend)


_REQUIRED = {"--op": ("op",), "--algorithm": ("algorithm",), "--ranks": ("ranks",), "--bandwidth": ("bandwidth", "bandwidth_Bps")}


def _no_size(data: dict[str, Any]) -> bool:
    """No --size (nor size in the scenario file) for an op that moves data: refused, where it
    ran 0 bytes and answered "0 s" (a barrier moves none and needs none)."""
    return data.get("op") != "barrier" and "size" not in data and "size_bytes" not in data


def _scenario_fields(flags: dict[str, Any]) -> dict[str, Any]:
    fields = {key: value for key, value in flags.items() if value is not None}
    stragglers = fields.pop("stragglers", ())
    if stragglers:
        fields["stragglers"] = ",".join(stragglers)
    if not fields.get("verify"):
        fields.pop("verify", None)
    return fields


def format_summary(summary: dict[str, Any]) -> str:
    from sim.units import format_size, format_time

    lines = [
        f"{summary['op']}/{summary['algorithm']} on {summary['ranks']} ranks ({summary['topology']}), {format_size(summary['size_bytes'])}",
        f"  simulated time   {format_time(summary['time_s'])}",
    ]
    if summary.get("time_interval_s"):  # on a hardware preset: how far real clusters spread (sim.hardware.uncertainty)
        low, high = summary["time_interval_s"]
        lines.append(
            f"  {summary['interval_level']:.0%} interval      {format_time(low)} - {format_time(high)}  ({summary['interval_basis']})"
        )
    if summary["analytic_time_s"] is not None:
        error = summary["relative_error"]
        versus = "" if error is None else f"  (relative error {error:.2e})"
        lines.append(f"  closed form      {format_time(summary['analytic_time_s'])}{versus}")
    else:
        lines.append(f"  closed form      none: {summary.get('analytic_note') or 'none for this scenario'}")
    if summary["messages"]:
        lines.append(
            f"  messages         {summary['messages']} in {summary['steps']} steps, {format_size(summary['bytes_on_wire'])} on the wire"
        )
    else:
        lines.append("  messages         none (nothing to send)")
    if summary["algbw_GBps"] is not None:
        lines.append(f"  algbw            {summary['algbw_GBps']:.4g} GB/s")
    link = summary["busiest_link"]
    if link:
        lines.append(
            f"  busiest link     {link['link']}: {link['messages']} messages, {format_size(link['bytes'])}, "
            f"busy {format_time(link['busy_s'])}, utilisation {link['utilisation']:.1%}"
        )
    if summary.get("group_times_s"):
        times = ", ".join(format_time(time) for time in summary["group_times_s"])
        lines.append(f"  group times      {times} (time above: the makespan)")
    for index, line in enumerate((summary.get("nccl") or {}).get("lines", ())):
        lines.append(f"  {'' if index else 'nccl':16s} {line}")
    if summary["verified"] is not None:
        lines.append(
            f"  verified         {'yes: every rank holds the right result' if summary['verified'] else 'NO: buffers differ from the definition'}"
        )
    return "\n".join(lines)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
