"""``collsim sim crossover``: which algorithm is fastest at each message size."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from sim.cli_fields import field_options
from sim.errors import CollsimError
from sim.fields import command_fields


def _sizes(text: str | None) -> tuple[int, ...]:
    """The sizes to compare: a comma list or a START:STOP:xFACTOR range, as ``--sizes`` takes
    elsewhere (sim.units.parse_size_list); every one positive."""
    from sim.collective.explore import CROSSOVER_SIZES
    from sim.units import parse_size_list

    if text is None:  # "" is an empty list, refused, not the default
        return CROSSOVER_SIZES
    sizes = tuple(parse_size_list(text, "--sizes"))
    if min(sizes) <= 0:
        raise CollsimError(f"sizes: give positive sizes, as a comma list (1KiB,1MiB,64MiB) or a range (1KiB:1GiB:x4); got {text!r}")
    return sizes


@click.command("crossover")
@field_options(
    "collective",
    *command_fields("crossover"),
    notes={"ranks": "required without --hardware", "bandwidth_Bps": "required without --hardware",
           "hardware": "adds a row of NCCL's pick run in the DES"},
    extra={"op": {"required": True}},
)  # fmt: skip
@click.option("--sizes", default=None, help="message sizes: a comma list (1KiB,64MiB) or START:STOP:xFACTOR (default 1KiB:1GiB:x4)")
@click.option("--csv", "as_csv", is_flag=True, help="print CSV rows: algorithm,size_bytes,time_s,method,why")
@click.option("--json", "as_json", is_flag=True, help="print the rows as one JSON list")
def crossover_command(sizes: str | None, as_csv: bool, as_json: bool, **flags: Any) -> None:
    """Time of every algorithm of an op over message size, and the fastest at each size.

    Closed forms where the simulation reproduces them exactly, else one collapsed call per
    point (replay or cached simulation)."""
    from sim.collective.explore import crossover
    from sim.scenario import CollectiveScenario

    data = {key: value for key, value in flags.items() if value is not None}
    from sim.algorithms.registry import algorithms_for, ops
    from sim.training.ddp_cli import apply_hardware_flags

    apply_hardware_flags(data)  # --hardware: the preset's ranks and network (sim.training.comm answers its pick)
    data.pop("comm", None)
    missing = [flag for flag, key in (("--ranks", "ranks"), ("--bandwidth", "bandwidth")) if key not in data and key + "_Bps" not in data]
    if missing:
        raise CollsimError(f"missing {', '.join(missing)} (or give --hardware NAME)")

    if data["op"] not in ops():
        raise CollsimError(f"op: choose one of {', '.join(ops())}, got {data['op']!r}")
    scenario, why = None, ""
    for algorithm in algorithms_for(data["op"]):  # any algorithm that accepts the network will do
        try:
            scenario = CollectiveScenario.from_dict({**data, "algorithm": algorithm, "size": "1KiB"})
            break
        except CollsimError as error:
            why = str(error)
    if scenario is None:
        raise CollsimError(why)
    from sim.collective.budget import check_crossover

    chosen = _sizes(sizes)
    check_crossover(scenario, chosen)
    picks = len(chosen) if _runs_nccl(scenario) else 0
    with _progress_bar() as on_point:
        rows = crossover(scenario, chosen, on_point=lambda done, total: on_point(done, total + picks))
        rows += _nccl_rows(scenario, chosen, lambda done: on_point(len(rows) + done, len(rows) + picks))
    if as_json:
        click.echo(json.dumps(rows))
    elif as_csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=["algorithm", "size_bytes", "time_s", "method", "why"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    else:
        click.echo(format_table(rows))


@contextmanager
def _progress_bar() -> Iterator[Callable[[int, int], None]]:
    """A tqdm bar on a terminal's stderr for a crossover that takes a while (shown after a
    second; stdout keeps only the table, CSV or JSON)."""
    from tqdm import tqdm

    quiet = not sys.stderr.isatty()  # a log or a pipe gets no bar lines
    bar = tqdm(total=0, desc="crossover", unit="point", file=sys.stderr, delay=1.0, leave=False, dynamic_ncols=True, disable=quiet)

    def on_point(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        yield on_point
    finally:
        bar.close()


def _runs_nccl(scenario: Any) -> bool:
    from sim.training.comm import PICK_OPS, uses_nccl

    return bool(scenario.hardware) and uses_nccl(scenario.hardware) and scenario.op in PICK_OPS


NCCL_ROWS_SECONDS = 15.0  # NCCL's pick simulated at each size: at most about this long in all (budget.estimate)


def _nccl_rows(scenario: Any, sizes: tuple[int, ...], on_pick: Callable[[int], None] = lambda done: None) -> list[dict[str, Any]]:
    """On a GPU preset: NCCL's pick at each size, run in the DES as every surface runs it
    (``on_pick(done)`` after each), smallest first while the runs' estimated time stays within
    :data:`NCCL_ROWS_SECONDS`; the larger ones "too large to simulate here", as the crossover's
    own points (a tree's pick at 1 GiB on 64 x dgx-h100 is ~260,000 fairly shared messages)."""
    from sim.collective.budget import estimate
    from sim.collective.explore import TOO_LARGE
    from sim.collective.pick import scenario_for_pick
    from sim.hardware.uncertainty import spread
    from sim.training.comm import pick_time

    if not _runs_nccl(scenario):
        return []
    nodes, left, rows = scenario.ranks // scenario.gpus_per_node_resolved, NCCL_ROWS_SECONDS, []
    for size in sorted(sizes):
        run, _ = scenario_for_pick(scenario.hardware, nodes, scenario.op, size)
        seconds = 0.0 if run is None else estimate(run.replace(record="aggregate")).seconds
        if seconds > left or (rows and rows[-1]["time_s"] is None):  # the budget is spent: larger ones too
            rows.append(
                {"algorithm": "nccl", "size_bytes": size, "time_s": None, "method": "n/a", "why": TOO_LARGE, "time_interval_s": None}
            )
        else:
            left -= seconds
            pick = pick_time(scenario.hardware, nodes, scenario.op, size)
            method = f"des ({pick.algorithm} x{pick.chunks})" if pick.algorithm else "nccl model"
            found = spread(scenario.hardware, scenario.ranks, size, scenario.op)  # as sim collective's interval of the same call
            low_high = [pick.time_s / found[0], pick.time_s * found[0]] if found and pick.time_s else None
            rows.append({"algorithm": "nccl", "size_bytes": size, "time_s": pick.time_s, "method": method, "why": pick.nccl_pick,
                         "time_interval_s": low_high})  # fmt: skip
        on_pick(len(rows))
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """One line per size: each algorithm's time and the fastest (:func:`sim.collective.explore.fastest`,
    marked * where some algorithm has no time at that size); algorithms that cannot run, and
    points left out, are listed with the reason."""
    from sim.collective.explore import fastest
    from sim.units import format_size, format_time

    names = list(dict.fromkeys(row["algorithm"] for row in rows if row["size_bytes"] is not None))
    table = {(row["algorithm"], row["size_bytes"]): row for row in rows}
    lines = ["size".rjust(10) + "".join(name[:18].rjust(20) for name in names) + "  fastest"]
    left_out: dict[str, list[int]] = {}
    for best in fastest(rows):
        size = best["size_bytes"]
        times = {name: table[(name, size)]["time_s"] for name in names if (name, size) in table}
        cells = "".join((format_time(times[name]) if times.get(name) is not None else "-").rjust(20) for name in names)
        winner = (best["algorithm"] or "-") + (" *" if best["missing"] else "")
        lines.append(format_size(size).rjust(10) + cells + "  " + winner)
        for name in best["missing"]:
            left_out.setdefault(name, []).append(size)
    if left_out:
        lines.append("* fastest of those with a time at that size; left out (beyond the crossover's budget, "
                     "time them with 'collsim sim collective'): "
                     + "; ".join(f"{name} at {', '.join(map(format_size, sizes))}" for name, sizes in left_out.items()))  # fmt: skip
    for row in rows:
        if row["size_bytes"] is None:
            lines.append(f"not run: {row['algorithm']}: {row['why']}")
    methods = sorted({row["method"] for row in rows if row["time_s"] is not None})
    lines.append(f"(times from: {', '.join(methods)})")
    factors = sorted({round(row["time_interval_s"][1] / row["time_s"], 2) for row in rows if row.get("time_interval_s")})
    if factors:  # the same factor for every algorithm at a size: one line, not a column each
        spans = f"{factors[0]:.2f}" if len(factors) == 1 else f"{factors[0]:.2f} to {factors[-1]:.2f} (smaller sizes wider)"
        lines.append(f"(80 % interval of each time on this preset: x/÷ {spans}; --json gives time_interval_s per point)")
    return "\n".join(lines)
