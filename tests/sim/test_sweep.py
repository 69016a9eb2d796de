"""collsim sweep: grid expansion, SQLite store, resume without recomputation, Dask == local."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sim import sweep
from sim.sweep import Grid, load_grid, points, run_sweep

GRID = """
name: small
kind: collective
base: {op: all_reduce, bandwidth: 25GB/s, latency: 5us}
grid:
  algorithm: [ring, recursive_doubling]
  ranks: [4, 6, 8]
  size: [4KiB, 64KiB]
"""


@pytest.fixture
def grid_file(tmp_path: Path) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(GRID)
    return path


def _times(db: Path) -> dict[str, tuple]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT point_id, status, time_s, result FROM sweep_points").fetchall()
    return {pid: (status, time_s, json.loads(result)["messages"] if result != "null" else None) for pid, status, time_s, result in rows}


def test_grid_expands_and_identifies_points(grid_file: Path) -> None:
    grid = load_grid(grid_file)
    assert grid.size == 12
    listed = list(points(grid))
    assert len({p.point_id for p in listed}) == 12
    # recursive doubling refuses 6 ranks: the point is listed with its error
    assert sum(1 for p in listed if p.error) == 2
    same = Grid(
        "x",
        "collective",
        "full",
        {"op": "all_reduce", "bandwidth": "25GB/s", "latency": "5us"},
        {"algorithm": ["ring"], "ranks": [4], "size": [4096]},
    )
    assert next(points(same)).point_id in {p.point_id for p in listed}  # 4KiB == 4096


def test_local_pool_resume_and_errors(grid_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "sweep.sqlite"
    grid = load_grid(grid_file)
    counts = run_sweep(grid, db, workers=2)
    assert counts == {"total": 12, "skipped": 0, "ok": 10, "error": 2}
    first = _times(db)
    assert len(first) == 12
    # a rerun computes nothing: run_point would fail loudly if called
    monkeypatch.setattr(sweep, "run_point", lambda *a: pytest.fail("recomputed a finished point"))
    assert run_sweep(grid, db, workers=1) == {"total": 12, "skipped": 12, "ok": 0, "error": 0}
    assert _times(db) == first


def test_interrupted_sweep_resumes_only_the_rest(grid_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "sweep.sqlite"
    grid = load_grid(grid_file)
    real = sweep.run_point
    calls = []

    def flaky(kind: str, mode: str, scenario: dict) -> dict:
        if len(calls) == 4:
            raise KeyboardInterrupt  # interrupted after four points
        calls.append(scenario)
        return real(kind, mode, scenario)

    monkeypatch.setattr(sweep, "run_point", flaky)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(grid, db, workers=1)
    assert len(_times(db)) == 4 + 2  # four ran, two invalid points stored up front
    calls.clear()
    monkeypatch.setattr(sweep, "run_point", lambda *a: (calls.append(a), real(*a))[1])
    counts = run_sweep(grid, db, workers=1)
    assert counts["skipped"] == 6 and counts["ok"] == 6 and len(calls) == 6


def test_dask_local_cluster_matches_local_pool(grid_file: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    grid = load_grid(grid_file)
    local_db, dask_db = tmp_path / "local.sqlite", tmp_path / "dask.sqlite"
    run_sweep(grid, local_db, workers=1)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        counts = run_sweep(grid, dask_db, scheduler=cluster.scheduler_address)
    assert counts["ok"] == 10 and counts["error"] == 2
    assert _times(dask_db) == _times(local_db)


def test_cli_sweep(grid_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "cli.sqlite"
    command = [sys.executable, "-m", "sim.cli", "sweep", str(grid_file), "--db", str(db), "--workers", "1", "--quiet", "--json"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr  # two points are invalid: exit 1, one line each (issue 10 item 14)
    assert json.loads(out.stdout)["ok"] == 10
    assert out.stderr.count("failed: algorithm=recursive_doubling ranks=6") == 2
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and json.loads(again.stdout)["skipped"] == 12 and json.loads(again.stdout)["ok"] == 0
    bad = subprocess.run([*command[:4], str(tmp_path / "missing.yaml")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error:")


def test_ddp_grid(tmp_path: Path) -> None:
    pytest.importorskip("sim.training.ddp")
    path = tmp_path / "ddp.yaml"
    path.write_text(
        "kind: ddp\n"
        "base: {preset: small, backward_time_s: 0.1, comm: ow, o_s: 1e-5, w_Bps: 1e10}\n"
        "grid: {strategy: [bucketed, flat], bucket_cap_bytes: [1048576, 26214400]}\n"
    )
    db = tmp_path / "ddp.sqlite"
    assert run_sweep(load_grid(path), db, workers=1)["ok"] == 4
    rows = sweep.Store(db).rows()
    assert all(row["status"] == "ok" and row["time_s"] > 0.1 for row in rows)
