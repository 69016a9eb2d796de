"""``collsim real bench``: the JSON contract, nccl-tests columns and the store, in one launch."""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path

import pytest

from ..cli_in_process import collsim_in_process

pytest.importorskip("torch")

pytestmark = [pytest.mark.torch, pytest.mark.slow]

REQUIRED = ("op", "world_size", "backend", "size_bytes", "time_s", "median_s", "p10_s", "p90_s", "algbw_GBps", "busbw_GBps")


def collsim(*args: str) -> subprocess.CompletedProcess:
    """In this process (tests/cli_in_process.py): the ranks come from this process's fork server,
    and no command pays a Python, collsim and torch start-up; these tests read what it says and stores."""
    return collsim_in_process(*args, cwd=Path.cwd())


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory):
    db = tmp_path_factory.mktemp("bench") / "results.sqlite"
    done = collsim("real", "bench", "--backend", "gloo", "--ranks", "2", "--ops", "all_reduce,all_gather,broadcast,send_recv",
                   "--sizes", "4KiB,1MiB", "--iters", "6", "--warmup", "1", "--rounds", "2", "--db", str(db), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), db


def test_json_rows_have_the_contract_fields(bench_run):
    rows, _ = bench_run
    assert [(row["op"], row["size_bytes"]) for row in rows] == [
        ("all_reduce", 4096), ("all_reduce", 1 << 20), ("all_gather", 4096), ("all_gather", 1 << 20),
        ("broadcast", 4096), ("broadcast", 1 << 20), ("send_recv", 4096), ("send_recv", 1 << 20),
    ]  # fmt: skip
    for row in rows:
        assert all(key in row for key in REQUIRED)
        assert row["world_size"] == 2 and row["backend"] == "gloo" and row["device"] == "cpu"
        assert row["host"] and row["torch_version"] and row["collsim_version"] and row["measured_at"]


def test_statistics_and_bandwidths_are_consistent(bench_run):
    rows, _ = bench_run
    factors = {"all_reduce": 2 * (2 - 1) / 2, "all_gather": (2 - 1) / 2, "broadcast": 1.0, "send_recv": 1.0}
    for row in rows:
        times = row["times_s"]
        assert len(times) == 6 and all(t > 0 for t in times)
        assert row["time_s"] == pytest.approx(statistics.fmean(times))
        assert row["median_s"] == pytest.approx(statistics.median(times))
        assert min(times) <= row["p10_s"] <= row["median_s"] <= row["p90_s"] <= max(times)
        assert row["algbw_GBps"] == pytest.approx(row["size_bytes"] / row["time_s"] / 1e9)
        assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * factors[row["op"]])
        assert row["count"] == row["size_bytes"] // 4 and row["type"] == "float32"
    assert {row["root"] for row in rows if row["op"] == "broadcast"} == {0}
    assert {row["redop"] for row in rows if row["op"] == "all_reduce"} == {"sum"}


def test_rows_are_in_the_store_with_their_run(bench_run):
    from real.store import open_store

    rows, db = bench_run
    store = open_store(db)
    stored = store.collectives()
    assert len(stored) == len(rows)
    assert stored[0]["times_s"] == pytest.approx(rows[0]["times_s"])
    (run,) = store.runs()
    assert run["status"] == "ok" and run["kind"] == "bench" and run["world_size"] == 2 and run["cpu_model"]


def test_fit_and_export_on_the_measured_store(bench_run, tmp_path):
    _, db = bench_run
    done = collsim("fit", "--db", str(db), "--op", "all_reduce", "--json", "--calibration", str(tmp_path / "cal.json"))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    (entry,) = document["collectives"]
    assert entry["op"] == "all_reduce" and entry["world_size"] == 2 and entry["points"] == 2
    assert json.loads((tmp_path / "cal.json").read_text())["kind"] == "collsim-calibration"
    done = collsim("real", "export", "--db", str(db), "--csv", str(tmp_path / "rows.csv"))
    assert done.returncode == 0, done.stderr
    assert len((tmp_path / "rows.csv").read_text().splitlines()) == 1 + 8


def test_bad_input_is_one_line_and_exit_2():
    done = collsim("real", "bench", "--ops", "all_to_all_v", "--no-db")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ops: unknown all_to_all_v")
    done = collsim("real", "bench", "--sizes", "4KiB:1KiB:x2", "--no-db")
    assert done.returncode == 2 and "error:" in done.stderr
