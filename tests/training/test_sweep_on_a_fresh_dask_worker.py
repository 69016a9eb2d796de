"""The documented Dask sweep (docs/scale.md, "Sweeps") on a freshly started worker process with
two threads: every point completes (issue 22: the two threads imported the alias modules at
once, saw a half-made module, and failed with ImportError after 5 of 27 points; a warm worker
worked, so the test starts its own)."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def documented_grid() -> str:
    """The ``# grid.yaml`` block of docs/scale.md, as a user would copy it."""
    text = (ROOT / "docs" / "scale.md").read_text()
    block = re.search(r"```yaml\n(# grid\.yaml\n.*?)```", text, re.S)
    assert block, "docs/scale.md lost its grid.yaml example"
    return block.group(1)


@pytest.mark.slow
def test_the_documented_sweep_completes_every_point_on_a_fresh_two_thread_dask_worker(tmp_path, monkeypatch):
    distributed = pytest.importorskip("dask.distributed", reason="Dask is the optional 'scale' extra: pip install 'collsim[scale]'")
    from sim.sweep import load_grid, run_sweep

    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(documented_grid())
    grid = load_grid(grid_file)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))  # the worker imports sim fresh
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=True, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 1 and next(iter(workers.values()))["nthreads"] == 2
        assert not any(client.run(lambda: __import__("sys").modules.get("sim") is not None).values()), "the worker must start without sim"
        counts = run_sweep(grid, tmp_path / "sweep.sqlite", scheduler=cluster.scheduler_address)
    with sqlite3.connect(tmp_path / "sweep.sqlite") as db:
        errors = db.execute("SELECT params, error FROM sweep_points WHERE status != 'ok'").fetchall()
    assert errors == []
    assert counts["total"] == 27 and counts["ok"] == 27, counts
