"""``collsim sim chakra write|read``: event rows to Chakra execution traces (ASTRA-sim 2.x's
workload input) and back (:mod:`sim.chakra` does the work)."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from typing import Any

import click

from sim.chakra import read_traces, write_traces
from sim.errors import CollsimError
from sim.files import read_text, user_file

__all__ = ["chakra", "rows_of_document", "summarize"]


@click.group("chakra")
def chakra() -> None:
    """Chakra execution traces (one PREFIX.RANK.et per rank, as ASTRA-sim 2.x reads them) out and in."""


def rows_of_document(data: Any, step: int | None, where: str) -> list[dict[str, Any]]:
    """The rows of one step: ``data`` is a list of rows or a document with ``rows`` (``collsim
    real train --out``); with several steps, ``step`` or else the step of median time."""
    rows = data.get("rows") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise CollsimError(f"{where}: expected a JSON list of rows or a document with 'rows' (collsim real train --out)")
    steps = sorted({row.get("step", -1) for row in rows})
    if step is None and len(steps) > 1 and isinstance(data, dict) and data.get("step_time_s"):
        times = data["step_time_s"]
        step = min(range(len(times)), key=lambda i: abs(times[i] - statistics.median(times)))
    if step is None:
        step = steps[0] if steps else -1
    if step not in steps:
        raise CollsimError(f"--step {step}: the rows have steps {', '.join(map(str, steps))}")
    return [row for row in rows if row.get("step", -1) == step]


@chakra.command("write")
@click.argument("rows_file")
@click.option("--prefix", required=True, help="write PREFIX.0.et, PREFIX.1.et, ... and PREFIX.comm_groups.json")
@click.option("--step", type=int, default=None, help="which step of a multi-step file (default: the step of median time)")
@click.option("--ranks", type=int, default=None, help="world size (default: the highest rank in the rows + 1)")
def write(rows_file: str, prefix: str, step: int | None, ranks: int | None) -> None:
    """Write one step's rows (rank, stream, kind, name, start_s, end_s, bytes, peer, group) as Chakra traces."""
    path = user_file(rows_file, "rows_file", "a JSON list of rows or a collsim real train --out profile", "ROWS_FILE")
    try:
        data = json.loads(read_text(path, "ROWS_FILE"))
    except ValueError as error:
        raise CollsimError(f"ROWS_FILE: {rows_file!r} is not JSON ({error})") from None
    if ranks is not None and ranks < 1:
        raise CollsimError(f"--ranks: must be >= 1, got {ranks}")
    paths = write_traces(rows_of_document(data, step, "ROWS_FILE"), prefix, ranks)
    click.echo(f"# {len(paths) - 1} Chakra trace(s) and the comm groups written: {paths[0]} ... {paths[-1]}")


@chakra.command("read")
@click.argument("prefix")
@click.option("--json", "as_json", is_flag=True, help="print the rows as JSON")
def read(prefix: str, as_json: bool) -> None:
    """Read PREFIX.0.et, PREFIX.1.et, ... as a workload: per rank, compute time and communication sizes."""
    rows = read_traces(prefix)
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    for line in summarize(rows):
        click.echo(line)


def summarize(rows: list[dict[str, Any]]) -> list[str]:
    """One line per rank: nodes, compute seconds, and per communication kind its count and bytes."""
    per_rank: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0, 0.0]))
    for row in rows:
        total = per_rank[row["rank"]][row["kind"]]
        total[0] += 1
        total[1] += row["end_s"] - row["start_s"] if row["kind"] == "compute" else row["bytes"]
    lines = []
    for rank, kinds in sorted(per_rank.items()):
        parts = [f"{int(count)} {kind} {value:.6g} {'s' if kind == 'compute' else 'B'}" for kind, (count, value) in sorted(kinds.items())]
        lines.append(f"rank {rank}: " + ", ".join(parts))
    return lines
