"""``collsim sweep GRID.yaml``: a grid of scenarios on a local process pool or a Dask cluster.

A grid file names the kind of scenario, the fields every point shares, and lists of values to
cross (any scenario field, canonical or short name, unit strings allowed)::

    kind: collective          # or ddp (sim/training/ddp.py's DDPScenario)
    mode: full                # collective only: full (per message) or collapsed
    base: {op: all_reduce, bandwidth: 25GB/s, latency: 5us}
    grid:
      algorithm: [ring, rabenseifner]
      ranks: [8, 64, 256]
      size: [1MiB, 64MiB]

On a hardware preset (``base: {hardware: dgx-h100}``, ``grid: {nodes: [1, 2, 4]}``) a point's
``hardware``, ``nodes``, NIC overrides and ``nccl_algo`` / ``nccl_proto`` resolve as the CLI's flags
do, and its result carries the 80 % interval.

Every point is identified by a hash of its parsed scenario (so ``64MiB`` and ``67108864`` are
the same point) and its result is appended to an SQLite table as soon as it finishes; a rerun
skips the points already stored, so an interrupted sweep resumes where it stopped. Invalid
points (say Rabenseifner on 12 ranks) are stored with their error and do not stop the sweep;
at the end each failed point of the grid is printed with its reason (stderr) and the command
exits with status 1. A misspelt key in the grid file stops it before anything runs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from sim.cli_fields import writing_to
from sim.errors import CollsimError
from sim.scenario import check_keys, load_mapping, unknown_key

KINDS = ("collective", "ddp")
GRID_KEYS = ("kind", "mode", "base", "grid", "name")
MODES = ("full", "collapsed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sweep_points (
    point_id TEXT PRIMARY KEY,
    grid TEXT NOT NULL,
    kind TEXT NOT NULL,
    mode TEXT NOT NULL,
    params TEXT NOT NULL,
    scenario TEXT NOT NULL,
    status TEXT NOT NULL,
    time_s REAL,
    result TEXT,
    error TEXT,
    wall_s REAL,
    finished_at TEXT NOT NULL
)
"""


@dataclass(frozen=True)
class Point:
    """One grid point: its identity, the values crossed to make it, its parsed scenario."""

    point_id: str
    params: dict[str, Any]
    scenario: dict[str, Any]
    error: str | None = None  # the scenario itself is invalid


@dataclass(frozen=True)
class Grid:
    name: str
    kind: str
    mode: str
    base: dict[str, Any]
    axes: dict[str, list[Any]]

    @property
    def size(self) -> int:
        count = 1
        for values in self.axes.values():
            count *= len(values)
        return count


def load_grid(path: str | Path) -> Grid:
    """Read and check a grid file (see the module docstring)."""
    data = load_mapping(path, "sweep grid")
    for key in data:
        if key not in GRID_KEYS:
            raise unknown_key(key, GRID_KEYS, f"grid {path}", "key")
    kind = data.get("kind", "collective")
    if kind not in KINDS:
        raise CollsimError(f"grid {path}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    mode = data.get("mode", "full")
    if mode not in MODES:
        raise CollsimError(f"grid {path}: mode must be one of {', '.join(MODES)}, got {mode!r}")
    base, axes = data.get("base") or {}, data.get("grid") or {}
    if not isinstance(base, dict) or not isinstance(axes, dict):
        raise CollsimError(f"grid {path}: base and grid must be mappings of scenario fields")
    axes = {key: values if isinstance(values, list) else [values] for key, values in axes.items()}
    if any(not values for values in axes.values()):
        raise CollsimError(f"grid {path}: every grid field needs at least one value")
    try:  # a misspelt field would make every point fail: name it now
        check_keys(_scenario_class(kind), {key: value for key, value in {**base, **axes}.items() if key not in _preset_keys(kind)})
    except CollsimError as error:
        raise CollsimError(f"grid {path}: {error}") from None
    grid = Grid(str(data.get("name", Path(path).stem)), kind, mode, base, axes)
    from sim.collective.budget import MAX_SWEEP_POINTS, check_points

    check_points(grid.size, f"grid {path}", f"split it into grids of at most {MAX_SWEEP_POINTS:,} points (fewer values per grid field)")
    return grid


def _scenario_class(kind: str) -> Any:
    if kind == "collective":
        from sim.scenario import CollectiveScenario

        return CollectiveScenario
    try:
        from sim.training.ddp import DDPScenario
    except ImportError:
        raise CollsimError("kind ddp: sim/training/ddp.py (DDPScenario) is not available in this installation") from None
    return DDPScenario


def _preset_keys(kind: str) -> tuple[str, ...]:
    """Keys a grid may set beside the scenario's fields: a hardware preset's nodes and NICs (and, for
    a collective, NCCL_ALGO / NCCL_PROTO), resolved as ``collsim sim collective`` / ``sim ddp`` resolve their flags."""
    from sim.fields import PRESET_KEYS

    return PRESET_KEYS if kind == "collective" else ("nodes", "nics_per_node", "nic_bandwidth")


def _resolve_preset(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """A point's mapping with its hardware preset applied as the CLI applies it: ranks, topology and
    links from the preset at ``nodes``, NCCL's pick where no algorithm is given (collective), the
    network comm model with NCCL's pick per all-reduce (ddp)."""
    data = dict(data)
    if kind == "ddp":
        from sim.training.ddp_cli import apply_hardware_flags

        apply_hardware_flags(data)
        return data
    if data.get("hardware") is None and not any(data.get(key) is not None for key in _preset_keys(kind)):
        return data
    from sim.hardware.presets import apply_nic_keys
    from sim.nccl.pick import apply_hardware

    apply_nic_keys(data)
    restrict = {"nccl_algo": data.pop("nccl_algo", None), "nccl_proto": data.pop("nccl_proto", None)}
    apply_hardware(data, pick=True, **restrict)
    return data


def points(grid: Grid) -> Iterator[Point]:
    """Every point of the grid, in a stable order, parsed and identified (a preset's point by the
    scenario it resolves to: ``nodes: 2`` of an 8-GPU preset and ``ranks: 16`` are one point)."""
    cls = _scenario_class(grid.kind)
    names = list(grid.axes)
    for values in itertools.product(*(grid.axes[name] for name in names)):
        params = dict(zip(names, values))
        try:
            scenario = cls.from_dict(_resolve_preset(grid.kind, {**grid.base, **params})).to_dict()
            error = None
        except CollsimError as problem:
            scenario, error = {**grid.base, **params}, str(problem)
        text = json.dumps({"kind": grid.kind, "mode": grid.mode, "scenario": scenario}, sort_keys=True, default=str)
        yield Point(hashlib.sha256(text.encode()).hexdigest()[:32], params, scenario, error)


def run_point(kind: str, mode: str, scenario: dict[str, Any]) -> dict[str, Any]:
    """Simulate one point; runs in a worker process (local pool or Dask), so it takes plain data."""
    started = time.perf_counter()
    try:
        if kind == "collective":
            from sim.collective.budget import check_collapsed, check_run
            from sim.collective.collapsed import run as run_in_mode
            from sim.collective.collapsed import summarize, why_not_collapsed
            from sim.scenario import CollectiveScenario

            parsed = CollectiveScenario.from_dict(scenario)
            if mode == "full" or why_not_collapsed(parsed) is not None:
                check_run(parsed, "sweep point")  # refused before it runs, stored with the reason
            else:
                check_collapsed(parsed)
            summary = summarize(run_in_mode(parsed, mode))
        else:
            from sim.training.ddp import DDPScenario, run_ddp
            from sim.training.ddp_check import check_ddp

            parsed_ddp = DDPScenario.from_dict(scenario)
            check_ddp(parsed_ddp, what="sweep point")
            from sim.training.step_interval import ddp_interval

            result = run_ddp(parsed_ddp)
            summary = {**result.summary(), **ddp_interval(result)}  # the step's 80 % interval on a preset, as sim ddp
        status, error = "ok", None
    except CollsimError as problem:
        summary, status, error = None, "error", str(problem)
    time_s = None if summary is None else summary.get("time_s", summary.get("step_time_s"))
    return {"status": status, "result": summary, "error": error, "time_s": time_s, "wall_s": time.perf_counter() - started}


class Store:
    """The sweep's SQLite table; one row per finished point, written as it finishes."""

    def __init__(self, path: str | Path) -> None:
        try:
            self.connection = sqlite3.connect(str(path), timeout=30)
            self.connection.execute(_SCHEMA)
            self.connection.commit()
        except sqlite3.Error as error:  # a missing directory, a directory, a file that is not SQLite
            raise CollsimError(f"--db: cannot use {str(path)!r} as the sweep's SQLite store ({error})") from None

    def done(self) -> set[str]:
        return {row[0] for row in self.connection.execute("SELECT point_id FROM sweep_points")}

    def add(self, grid: Grid, point: Point, outcome: dict[str, Any]) -> None:
        row = (
            point.point_id,
            grid.name,
            grid.kind,
            grid.mode,
            json.dumps(point.params, default=str),
            json.dumps(point.scenario, default=str),
            outcome["status"],
            outcome["time_s"],
            json.dumps(outcome["result"], default=str),
            outcome["error"],
            outcome["wall_s"],
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        self.connection.execute("INSERT OR REPLACE INTO sweep_points VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", row)
        self.connection.commit()

    def rows(self, grid_name: str | None = None) -> list[dict[str, Any]]:
        query = "SELECT point_id, grid, kind, mode, params, status, time_s, result, error FROM sweep_points"
        cursor = self.connection.execute(query + (" WHERE grid = ?" if grid_name else ""), (grid_name,) if grid_name else ())
        names = [column[0] for column in cursor.description]
        rows = [dict(zip(names, row)) for row in cursor]
        for row in rows:
            row["params"] = json.loads(row["params"])
            row["result"] = json.loads(row["result"]) if row["result"] else None
        return rows

    def close(self) -> None:
        self.connection.close()


def _ignore_interrupt() -> None:
    """Pool workers leave Ctrl-C to the parent, which stores what finished and stops them."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _LocalPool:
    """Points on local worker processes, yielded as they finish; after Ctrl-C, :meth:`ready`
    gives the ones finished but not yet taken, and :meth:`close` stops the workers at once
    (leaving the pool with ``with`` ran every queued point first: about a minute). A worker
    that dies (killed for memory) ends the sweep with an error, as before."""

    def __init__(self, todo: list[Point], grid: Grid, workers: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self.pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_interrupt)
        self.futures = {self.pool.submit(run_point, grid.kind, grid.mode, point.scenario): point for point in todo}
        self.taken: set[Any] = set()

    def __iter__(self) -> Iterator[tuple[Point, dict[str, Any]]]:
        from concurrent.futures import as_completed

        for future in as_completed(self.futures):
            self.taken.add(future)
            yield self.futures[future], future.result()

    def ready(self) -> Iterator[tuple[Point, dict[str, Any]]]:
        for future, point in self.futures.items():
            if future not in self.taken and future.done() and not future.cancelled() and future.exception() is None:
                self.taken.add(future)
                yield point, future.result()

    def close(self) -> None:
        workers = list((getattr(self.pool, "_processes", None) or {}).values())  # the standard library's; public only from 3.14
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in workers:  # the points still running: stopped now, not run to their end
            process.terminate()
        for process in workers:
            process.join(5)


def _local(todo: list[Point], grid: Grid) -> Iterator[tuple[Point, dict[str, Any]]]:
    for point in todo:
        yield point, run_point(grid.kind, grid.mode, point.scenario)


def _dask(todo: list[Point], grid: Grid, scheduler: str) -> Iterator[tuple[Point, dict[str, Any]]]:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise CollsimError("--scheduler needs Dask distributed: pip install 'collsim[scale]'") from None
    try:
        client = Client(scheduler, timeout="20s")
    except OSError as error:
        raise CollsimError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({error})") from None
    try:
        futures = {}
        for point in todo:  # pure=False: the same scenario twice is still two tasks only if asked
            futures[client.submit(run_point, grid.kind, grid.mode, point.scenario, key=f"collsim-{point.point_id}")] = point
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        client.close()


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep, after the finished points were stored; ``counts`` as run_sweep's
    (still a KeyboardInterrupt to whoever called run_sweep)."""

    def __init__(self, counts: dict[str, int]) -> None:
        super().__init__("sweep interrupted")
        self.counts = counts


def run_sweep(
    grid: Grid, db: str | Path, workers: int | None = None, scheduler: str | None = None, progress: bool = False
) -> dict[str, int]:
    """Run every point of ``grid`` not yet in ``db``; returns counts (total, skipped, ok, error).
    On Ctrl-C every point finished so far is stored, then :class:`SweepInterrupted` is raised."""
    store = Store(db)
    counts = {"total": 0, "skipped": 0, "ok": 0, "error": 0}
    pool = None
    try:
        todo = _points_to_run(grid, store, counts)
        workers = workers or os.cpu_count() or 1
        if scheduler:
            finished: Any = _dask(todo, grid, scheduler)
        elif workers > 1:
            finished = pool = _LocalPool(todo, grid, workers)
        else:
            finished = _local(todo, grid)
        bar = _progress(len(todo), progress)
        try:
            for point, outcome in finished:
                _store(store, grid, point, outcome, counts)
                bar.update(1)
        except KeyboardInterrupt:
            for point, outcome in pool.ready() if pool else ():
                _store(store, grid, point, outcome, counts)
            raise SweepInterrupted(counts) from None
        finally:
            bar.close()
    finally:
        if pool is not None:
            pool.close()
        store.close()
    return counts


def _points_to_run(grid: Grid, store: Store, counts: dict[str, int]) -> list[Point]:
    """The grid's points not in the store yet; invalid ones are stored with their error."""
    done = store.done()
    todo = []
    for point in points(grid):
        counts["total"] += 1
        if point.point_id in done:
            counts["skipped"] += 1
        elif point.error:
            _store(store, grid, point, {"status": "error", "result": None, "error": point.error, "time_s": None, "wall_s": 0.0}, counts)
        else:
            todo.append(point)
    return todo


def _store(store: Store, grid: Grid, point: Point, outcome: dict[str, Any], counts: dict[str, int]) -> None:
    store.add(grid, point, outcome)
    counts[outcome["status"]] += 1


def _progress(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, disable=not enabled, unit="point", desc="sweep", dynamic_ncols=True)


def write_points_csv(db: str | Path, grid_name: str, path: str | Path) -> int:
    """One CSV row per stored point of ``grid_name``: its axis values, status, time_s, error."""
    import csv

    store = Store(db)
    try:
        rows = store.rows(grid_name)
    finally:
        store.close()
    axes = sorted({key for row in rows for key in row["params"]})
    with writing_to(path, "--csv"), open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*axes, "status", "time_s", "error"])
        for row in sorted(rows, key=lambda r: [str(r["params"].get(axis)) for axis in axes]):
            writer.writerow([*(row["params"].get(axis) for axis in axes), row["status"], row["time_s"], row["error"] or ""])
    return len(rows)


@click.command("sweep")
@click.argument("grid_file")
@click.option("--db", default="sweep.sqlite", show_default=True, help="SQLite file the results are appended to")
@click.option("--workers", default=None, type=int, help="local worker processes (default: one per CPU)")
@click.option("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://10.0.0.5:8786 (default: local pool)")
@click.option("--quiet", is_flag=True, help="no progress bar")
@click.option("--json", "as_json", is_flag=True, help="print the counts as JSON")
@click.option("--csv", "csv_path", default=None, help="write this grid's points (its axes, status, time_s, error) as CSV")
def sweep_command(
    grid_file: str, db: str, workers: int | None, scheduler: str | None, quiet: bool, as_json: bool, csv_path: str | None
) -> None:
    """Run a grid of scenarios (GRID.yaml); finished points are skipped on a rerun."""
    from sim.cli_fields import check_outputs

    grid = load_grid(grid_file)
    check_outputs((csv_path, "--csv"))
    if workers is not None and workers < 1:
        raise CollsimError(f"--workers: must be >= 1, got {workers}")
    started = time.perf_counter()
    try:
        counts = run_sweep(grid, db, workers, scheduler, progress=not quiet)
    except SweepInterrupted as stop:
        _interrupted(grid, db, csv_path, stop.counts)
    counts["wall_s"] = round(time.perf_counter() - started, 3)
    if csv_path is not None:
        write_points_csv(db, grid.name, csv_path)
    failed = failed_points(grid, db)
    if as_json:
        click.echo(json.dumps({**counts, "failed": failed}))
    else:
        click.echo(
            f"{grid.name}: {counts['total']} points, {counts['skipped']} already in {db}, "
            f"{counts['ok']} ran, {counts['error']} invalid or failed, {counts['wall_s']:.1f} s"
        )
    for row in failed:
        where = " ".join(f"{key}={value}" for key, value in row["params"].items()) or "(the base scenario)"
        click.echo(f"failed: {where}: {row['error']}", err=True)
    if failed:
        click.echo(f"{len(failed)} of {counts['total']} points failed; the others are stored in {db}", err=True)
        sys.exit(1)


def _interrupted(grid: Grid, db: str | Path, csv_path: str | None, counts: dict[str, int]) -> None:
    """Ctrl-C: say how many finished points were kept and where (the --csv too), exit 130."""
    kept = counts["ok"] + counts["error"]
    if csv_path is not None:
        write_points_csv(db, grid.name, csv_path)
    left = counts["total"] - counts["skipped"] - kept
    click.echo(
        f"interrupted: kept the {kept} point(s) that finished in {db}{f' and {csv_path}' if csv_path else ''}; "
        f"{left} not run; the same command runs only those",
        err=True,
    )
    sys.exit(130)


def failed_points(grid: Grid, db: str | Path) -> list[dict[str, Any]]:
    """This grid's points stored with an error (this run's and earlier runs'), in grid order."""
    order = {point.point_id: index for index, point in enumerate(points(grid))}
    store = Store(db)
    try:
        rows = [row for row in store.rows(grid.name) if row["status"] == "error" and row["point_id"] in order]
    finally:
        store.close()
    rows.sort(key=lambda row: order[row["point_id"]])
    return [{"params": row["params"], "error": row["error"]} for row in rows]
