"""``collsim sim train``: one training step under TP, SP, PP, DP/ZeRO and EP, or ``--sweep``."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import replace
from typing import Any

import click

from sim.cli_fields import field_options
from sim.errors import CollsimError
from sim.training.parallel.scenario import FIELDS, TrainScenario

__all__ = ["format_result", "interval_line", "layout_interval", "sweep_layouts", "train"]


@click.command("train")
@field_options(
    "train",
    *FIELDS,
    decls={name: (info.option, name) for name, info in FIELDS.items()}
    | {"scatter_gather": ("--scatter-gather/--no-scatter-gather", "scatter_gather")},
)
@click.option("--fsdp", is_flag=True, default=False, help="fully sharded data parallel (as --zero 3)")
@click.option("--sweep", is_flag=True, default=False, help="every valid (tp, pp, dp[, ep]) for the GPUs of --nodes, ranked")
@click.option("--events", "events_path", default=None, help="write the representative pipeline's event rows to this JSON file")
@click.option(
    "--chakra",
    "chakra_prefix",
    default=None,
    help="write every rank's events as Chakra traces PREFIX.RANK.et and PREFIX.comm_groups.json (up to 4096 ranks)",
)
@click.option("--json", "as_json", is_flag=True, default=False, help="print the result as JSON")
def train(fsdp: bool, sweep: bool, events_path: str | None, chakra_prefix: str | None, as_json: bool, **flags: Any) -> None:
    """Simulate one transformer training step: tensor, sequence, pipeline, data and expert parallelism on a hardware preset."""
    from sim.training.parallel.interval import simulate_with_interval

    if fsdp:
        if flags.get("zero") not in (None, 3):
            raise CollsimError("--fsdp: means --zero 3; give one of them", field="zero")
        flags["zero"] = 3
    if sweep and chakra_prefix is not None:
        raise CollsimError("--chakra: writes one layout's traces; not with --sweep", field="chakra")
    if sweep:
        rows = sweep_layouts(flags, progress=True)
        rows[0] = {**rows[0], **layout_interval(flags, rows[0])}
        _echo_sweep(rows, as_json)
        return
    scenario = TrainScenario.from_dict(flags)
    if chakra_prefix is not None:
        _check_chakra(chakra_prefix, scenario)
    result, interval = simulate_with_interval(scenario, events=events_path is not None or chakra_prefix is not None)
    if events_path:
        with open(events_path, "w", encoding="utf-8") as handle:
            json.dump(result.events, handle)
    if chakra_prefix is not None:
        _write_chakra(chakra_prefix, result)
    click.echo(json.dumps({**result.to_dict(), **interval}, indent=2) if as_json else format_result(scenario, result, interval))


def _check_chakra(prefix: str, scenario: TrainScenario) -> None:
    """Refused before the run: an empty prefix, one in a directory that does not exist, too many ranks."""
    from pathlib import Path

    from sim.training.parallel.trace import check_trace_ranks

    if not prefix.strip():
        raise CollsimError("--chakra: empty prefix; give the PREFIX of the PREFIX.RANK.et files to write", field="chakra")
    folder = Path(prefix).parent
    if not folder.is_dir():
        raise CollsimError(f"--chakra: folder {str(folder)!r} does not exist", field="chakra")
    check_trace_ranks(scenario.gpus)


def _write_chakra(prefix: str, result: Any) -> None:
    from sim.chakra import write_traces
    from sim.training.parallel.trace import trace_rows

    paths = write_traces(trace_rows(result), prefix, world_size=_ranks(result))
    click.echo(f"# wrote {len(paths) - 1} Chakra traces {prefix}.0.et .. {prefix}.{len(paths) - 2}.et and {paths[-1]}", err=True)


def _ranks(result: Any) -> int:
    layout = result.layout
    return layout["tp"] * layout["ep"] * layout["dp"] * layout["pp"]


def format_result(scenario: TrainScenario, result: Any, interval: dict[str, Any] | None = None) -> str:
    """The text report: step time (its 80 % interval on a preset), where it goes, memory."""
    gb = 1e9
    fits = "fits" if result.fits else "DOES NOT FIT"
    return "\n".join(
        (
            f"step: {result.step_time_s:.3f} s ({result.micro_batches} micro-batches, {scenario.gpus} GPUs, "
            f"tp {scenario.tp} pp {scenario.pp} dp {scenario.dp} ep {scenario.ep}, {scenario.schedule})",
            *interval_line(interval or {}),
            f"slowest stage: compute {result.compute_s:.3f} s, TP {result.tp_s:.3f} s, EP {result.ep_s:.3f} s, "
            f"waiting for PP {result.pp_exposed_s:.3f} s; DP exposed {result.dp_exposed_s:.3f} s",
            f"bubble: {result.bubble_fraction:.1%}; model FLOPs utilization {result.mfu_achieved:.1%}; {result.tokens_per_s:,.0f} tokens/s",
            f"memory per GPU: {result.memory_bytes / gb:.1f} GB of {result.memory_limit_bytes / gb:.0f} GB ({fits})",
            *result.notes,
        )
    )


def interval_line(interval: dict[str, Any]) -> list[str]:
    """The step's 80 % interval on a preset (sim.training.parallel.interval); none without one (the JSON says why)."""
    found = interval.get("step_time_interval_s")
    if not found:
        return []
    scaled = "every collective and pipeline send at its interval's low / high end; compute as given"
    return [f"80 % interval: {found[0]:.3f} – {found[1]:.3f} s ({scaled})"]


def _divisors(number: int) -> list[int]:
    return [value for value in range(1, number + 1) if number % value == 0]


def sweep_layouts(flags: dict[str, Any], progress: bool = False) -> list[dict[str, Any]]:
    """Every valid (tp, pp, dp, ep) using all the GPUs of ``--nodes``, fastest first; layouts
    the scenario refuses are skipped, each result marked whether it fits in the GPU's memory."""
    from sim.hardware.presets import load_preset
    from sim.training.parallel.step import simulate

    base = {key: value for key, value in flags.items() if key not in ("tp", "pp", "dp", "ep") and value is not None}
    preset = load_preset(TrainScenario.from_dict({**base, "nodes": base.get("nodes", 1)}).hardware)
    gpus = base.get("nodes", 1) * preset.gpus_per_node
    eps = _divisors(gpus) if base.get("experts") else [1]
    layouts = [(tp, pp, gpus // (tp * pp * ep), ep) for ep in eps for tp in _divisors(min(gpus, preset.gpus_per_node))
               for pp in _divisors(gpus // tp) if gpus % (tp * pp * ep) == 0]  # fmt: skip
    scenarios = []
    for tp, pp, dp, ep in layouts:
        try:
            scenarios.append(TrainScenario.from_dict({**base, "tp": tp, "pp": pp, "dp": dp, "ep": ep}))
        except CollsimError:
            continue
    rows = []
    # the bar on stderr: stdout is the table or the JSON alone (`--sweep --json | jq` parses)
    with click.progressbar(scenarios, label="layouts", file=sys.stderr if progress else io.StringIO()) as bar:
        for scenario in bar:
            result = simulate(replace(scenario))
            rows.append({"tp": scenario.tp, "pp": scenario.pp, "dp": scenario.dp, "ep": scenario.ep, "step_time_s": result.step_time_s,
                         "bubble_fraction": result.bubble_fraction, "memory_bytes": result.memory_bytes, "fits": result.fits})  # fmt: skip
    if not rows:
        raise CollsimError(
            f"sweep: no valid (tp, pp, dp) layout for {gpus} GPUs and this model; check heads, layers and global batch", field="sweep"
        )
    return sorted(rows, key=lambda row: (not row["fits"], row["step_time_s"]))


def layout_interval(flags: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """The 80 % interval keys of one sweep row's step (sim.training.parallel.interval). A sweep gives
    them for its first row alone: each row's would run its schedule twice more, 1.5 to 1.8 times the
    sweep's time where the schedule, not the collectives, takes it (docs/parallelism.md)."""
    from sim.training.parallel.interval import simulate_with_interval

    layout = {key: row[key] for key in ("tp", "pp", "dp", "ep")}
    return simulate_with_interval(TrainScenario.from_dict({**flags, **layout}))[1]


def _echo_sweep(rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'rank':>4} {'tp':>3} {'pp':>4} {'dp':>5} {'ep':>3} {'step_s':>9} {'bubble':>7} {'mem_GB':>7}  fits")
    for index, row in enumerate(rows, 1):
        fits = "yes" if row["fits"] else "does not fit"
        click.echo(f"{index:4} {row['tp']:3} {row['pp']:4} {row['dp']:5} {row['ep']:3} {row['step_time_s']:9.3f} "
                   f"{row['bubble_fraction']:7.1%} {row['memory_bytes'] / 1e9:7.1f}  {fits}")  # fmt: skip
    for line in interval_line(rows[0]):
        click.echo(f"the first layout's {line}; another layout's: collsim sim train --tp T --pp P --dp D --ep E")
