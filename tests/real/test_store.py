"""The results store: append, query, export, and the bundled sample data (no torch needed)."""

from __future__ import annotations

import csv
import json
import sqlite3

import pytest

from real.store import open_store, read_only_copy, sample_path
from sim.errors import CollsimError

PUBLISHED_MS = {
    2: {1048576: 2.52364, 2621440: 5.70207, 26214400: 62.2048, 262144000: 695.814},
    4: {1048576: 3.1842, 2621440: 7.97548, 26214400: 68.8933, 262144000: 855.211},
    6: {1048576: 4.4439, 2621440: 10.2203, 26214400: 92.6451, 262144000: 852.072},
}


def row(run_id: str, size: int, times: list[float]) -> dict:
    return {
        "run_id": run_id,
        "op": "all_reduce",
        "world_size": 2,
        "backend": "gloo",
        "device": "cpu",
        "size_bytes": size,
        "time_s": sum(times) / len(times),
        "times_s": times,
    }


def test_append_and_query(tmp_path):
    store = open_store(tmp_path / "r.sqlite")
    run_id = store.add_run("bench", {"backend": "gloo", "device": "cpu", "world_size": 2, "host": "h", "extra": 5})
    store.add_collective(row(run_id, 4096, [1e-3, 2e-3]))
    store.add_collective(row(run_id, 8192, [3e-3]))
    store.finish_run(run_id, "failed", "rank 1 died")
    # a second connection (the webapp) sees every committed row
    other = read_only_copy(tmp_path / "r.sqlite")
    rows = other.collectives(op="all_reduce", world_size=2)
    assert [r["size_bytes"] for r in rows] == [4096, 8192]
    assert rows[0]["times_s"] == [1e-3, 2e-3] and rows[0]["host"] == "h"
    (run,) = other.runs()
    assert run["status"] == "failed" and run["error"] == "rank 1 died" and run["info"] == {"extra": 5}
    assert other.collectives(op="broadcast") == []
    assert other.groups()[0]["points"] == 2
    with pytest.raises(sqlite3.OperationalError):
        other.connection.execute("DELETE FROM runs")


def test_export_csv_and_dump_round_trip(tmp_path):
    store = open_store(tmp_path / "a.sqlite")
    run_id = store.add_run("bench", {"backend": "gloo"})
    store.add_collective(row(run_id, 4096, [1e-3]))
    assert store.export_csv("collectives", tmp_path / "c.csv") == 1
    with open(tmp_path / "c.csv") as handle:
        (line,) = list(csv.DictReader(handle))
    assert line["size_bytes"] == "4096" and json.loads(line["times_json"]) == [1e-3]
    copy = open_store(tmp_path / "b.sqlite")
    copy.load(store.dump())
    copy.load(store.dump())  # loading twice adds nothing
    assert len(copy.collectives()) == 1 and copy.runs()[0]["run_id"] == run_id
    with pytest.raises(CollsimError, match="table"):
        store.export_csv("nope", tmp_path / "x.csv")


def test_bundled_sample_data():
    store = open_store(None)
    assert store.read_only
    sources = {(g["source"], g["world_size"]) for g in store.groups()}
    assert {("measured", 2), ("published", 2), ("published", 4), ("published", 6)} <= sources
    measured = store.collectives(source="measured")
    assert len({r["run_id"] for r in measured}) >= 2  # repeated launches: a between-launch spread
    assert all(r["backend"] == "gloo" and r["world_size"] == 2 and len(r["times_s"]) >= 20 for r in measured)
    runs = store.runs(source="measured")
    assert all(run["cpu_model"] and run["torch_version"] and run["host"] and run["started_at"] for run in runs)
    published = store.collectives(source="published")
    for r in published:
        assert r["time_s"] == pytest.approx(PUBLISHED_MS[r["world_size"]][r["count"]] / 1e3)
        assert r["size_bytes"] == 4 * r["count"] and r["median_s"] is None
    assert all("Published figures" in run["label"] for run in store.runs(source="published"))
    assert store.ddp_steps(model="small") and store.ddp_profiles(model="small", config="none")
    with pytest.raises(CollsimError, match="read-only"):
        store.add_run("bench", {})
    assert json.loads(sample_path().read_text())["about"].startswith("Measured by collsim")


def test_bad_paths(tmp_path):
    with pytest.raises(CollsimError, match="directory"):
        open_store(tmp_path)
    with pytest.raises(CollsimError, match="not found"):
        read_only_copy(tmp_path / "missing.sqlite")
