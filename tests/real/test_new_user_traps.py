"""A new user's trial of ``collsim real ...``, the results store and nccl-tests import (issue 36):
each mistake is one error line (no traceback), no half-written file or store, and warnings for
logs that can be read but not trusted whole."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from ..cli_in_process import collsim_in_process

REPO = Path(__file__).resolve().parents[2]
COMPARE_SPEC = REPO / "real" / "data" / "compare_all_reduce_gloo_2.yaml"
TRACE = REPO / "real" / "data" / "trace_ddp_small_gloo_2ranks.json.gz"
FULL = "/dev/full"
needs_full = pytest.mark.skipif(not os.path.exists(FULL), reason="needs /dev/full (a device whose writes fail: no space)")

HEAD = """# nThread 1 nGpus 1 minBytes 1024 maxBytes 1048576 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
# Collective test starting: all_reduce_perf
#  Rank  0 Group  0 Pid  11111 on node01 device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  11112 on node01 device  1 [0x0b] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
"""
ROWS = [
    "        1024           256     float     sum      -1    20.10    0.05    0.05      0    20.00    0.05    0.05      0",
    "        4096          1024     float     sum      -1    22.00    0.19    0.19      0    21.50    0.19    0.19      0",
    "       65536         16384     float     sum      -1    30.00    2.18    2.18      0    29.50    2.22    2.22      0",
    "     1048576        262144     float     sum      -1   100.00   10.49   10.49      0    99.00   10.59   10.59      0",
]
TAIL = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 4.2\n#\n"


def collsim(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """In this process, as the refusals below (no Python and collsim start-up a command): these
    tests read what a command says and stores, not how its process ends."""
    return collsim_in_process(*args, cwd=cwd or Path.cwd())


def one_error(done: subprocess.CompletedProcess) -> str:
    """The one ``error:`` line of a refused command (exit 2, no traceback)."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    return line


def write_log(path: Path, rows: list[str] = ROWS, tail: str = TAIL) -> Path:
    path.write_text(HEAD + "\n".join(rows) + "\n" + tail)
    return path


def store_counts(db: Path) -> tuple[int, int]:
    connection = sqlite3.connect(db)
    return tuple(connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in ("runs", "collectives"))


# ---------------------------------------------------------------- the results store


@pytest.mark.parametrize("command", [["fit"], ["real", "runs"], ["compare", str(COMPARE_SPEC)], ["real", "export", "--csv", "out.csv"]])
def test_an_empty_file_as_db_is_not_a_results_store(tmp_path, command):
    (tmp_path / "empty.sqlite").write_bytes(b"")
    error = one_error(collsim_in_process(*command, "--db", "empty.sqlite", cwd=tmp_path))
    assert "'empty.sqlite' is not a collsim results store: it has no tables" in error and "real bench" in error
    assert not (tmp_path / "out.csv").exists()


def test_another_programs_sqlite_file_is_named_by_the_tables_it_lacks(tmp_path):
    connection = sqlite3.connect(tmp_path / "other.sqlite")
    connection.execute("CREATE TABLE notes (text TEXT)")
    connection.commit()
    error = one_error(collsim_in_process("real", "runs", "--db", "other.sqlite", cwd=tmp_path))
    assert "lacks the table(s) runs, collectives, ddp_steps, ddp_profiles (it has notes)" in error


def test_export_of_an_unknown_run_is_refused_and_writes_nothing(tmp_path):
    error = one_error(collsim_in_process("real", "export", "--run", "nonsense", "--json", "out.json", cwd=tmp_path))
    assert "--run: no run 'nonsense'" in error and "collsim real runs" in error
    assert not (tmp_path / "out.json").exists()
    error = one_error(collsim_in_process("real", "export", "--run", "nonsense", "--csv", "out.csv", cwd=tmp_path))
    assert "--run: chooses the runs of a --json export" in error  # not silently ignored


def test_export_of_a_known_run_keeps_just_that_run(tmp_path):
    from real.store import open_store

    run_id = open_store(None).runs()[0]["run_id"]
    done = collsim("real", "export", "--run", run_id, "--json", "out.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import json

    assert [run["run_id"] for run in json.loads((tmp_path / "out.json").read_text())["runs"]] == [run_id]


# ---------------------------------------------------------------- output files on a full disk


@needs_full
@pytest.mark.parametrize(
    "args, flag",
    [
        (["fit", "--calibration", FULL], "--calibration"),
        (["real", "export", "--csv", FULL], "--csv"),
        (["real", "export", "--json", FULL], "--json"),
        (["real", "export", "--nccl-tests", FULL], "--nccl-tests"),
        (["real", "import-trace", str(TRACE), "-o", FULL], "--out"),
        pytest.param(["real", "params", "--model", "mlp", "-o", FULL], "--output", marks=pytest.mark.torch),
    ],
)
def test_an_output_file_on_a_full_disk_is_one_error_line(tmp_path, args, flag):
    error = one_error(collsim_in_process(*args, cwd=tmp_path))  # the write fails in this process just the same
    assert f"{flag}: cannot write '{FULL}': No space left on device" in error


def test_a_partly_written_output_file_is_removed(tmp_path):
    from real.cli_common import write_output
    from sim.errors import CollsimError

    target = tmp_path / "half.csv"

    def fail_halfway(handle):
        handle.write("run_id,op\n")
        raise OSError(28, "No space left on device")

    with pytest.raises(CollsimError, match="--csv: cannot write .*half.csv.*No space left on device; nothing was written"):
        write_output(str(target), "--csv", fail_halfway)
    assert not target.exists()


# ---------------------------------------------------------------- real bench flags


@pytest.mark.parametrize(
    "args, said",
    [
        (["--op-timeout", "0.001"], "--op-timeout: must be between 1 and 86400 s, got 0.001"),
        (["--op-timeout", "nan"], "--op-timeout: must be between 1 and 86400 s, got nan"),
        (["--timeout", "inf"], "--timeout: must be between 1 and 604800 s, got inf"),
        (["--sizes", "0"], "sizes: must be > 0, got 0 B"),
    ],
)
def test_bench_flags_out_of_range_are_refused_saying_the_range(tmp_path, args, said):
    assert said in one_error(collsim_in_process("real", "bench", "--no-db", *args, cwd=tmp_path))


# ---------------------------------------------------------------- nccl-tests import


def test_a_failed_run_is_not_imported(tmp_path):
    log = write_log(tmp_path / "failed.txt", ROWS[:2] + ["node01: Test NCCL failure common.cu:1005 'unhandled system error / '"], tail="")
    error = one_error(collsim_in_process("real", "import", str(log), "--db", "r.sqlite", cwd=tmp_path))
    assert "failed.txt line 8: the run failed" in error and "Test NCCL failure" in error
    assert store_counts(tmp_path / "r.sqlite") == (0, 0)


def test_a_nan_time_on_the_last_line_leaves_the_store_as_it_was(tmp_path):
    """One transaction per import: the rows before the bad line are not kept half-imported."""
    db = tmp_path / "r.sqlite"
    assert collsim("real", "import", str(write_log(tmp_path / "good.txt")), "--db", str(db)).returncode == 0
    before = store_counts(db)
    bad = ROWS[:3] + [ROWS[3].replace("   100.00", "      nan")]
    error = one_error(collsim("real", "import", str(write_log(tmp_path / "bad.txt", bad)), "--db", str(db)))
    assert "bad.txt line 9: time nan us is not a finite number" in error
    assert store_counts(db) == before == (1, 4)


def test_rows_with_wrong_results_are_left_out_with_a_warning(tmp_path):
    wrong = ROWS[2].replace("      0    29.50", "      5    29.50")
    log = write_log(tmp_path / "wrong.txt", [ROWS[0], ROWS[1], wrong, ROWS[3]])
    done = collsim("real", "import", str(log), "--db", "r.sqlite", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "imported 3 all_reduce row(s), p = 2" in done.stdout
    assert "warning:" in done.stderr and "line 8 (65536 B)" in done.stderr
    sizes = [row[0] for row in sqlite3.connect(tmp_path / "r.sqlite").execute("SELECT size_bytes FROM collectives")]
    assert 65536 not in sizes and len(sizes) == 3


def test_a_truncated_log_is_imported_with_a_warning(tmp_path):
    done = collsim("real", "import", str(write_log(tmp_path / "cut.txt", ROWS[:3], tail="")), "--db", "r.sqlite", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "looks truncated" in done.stderr and "3 size(s) read" in done.stderr


def test_a_large_import_shows_progress_on_stderr(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import real.cli

    monkeypatch.setattr(real.cli, "PROGRESS_BYTES", 0)  # every file counts as large
    result = CliRunner().invoke(real.cli.real, ["import", str(write_log(tmp_path / "log.txt")), "--db", str(tmp_path / "r.sqlite")])
    assert result.exit_code == 0, result.output
    assert "import:" in result.stderr and ("B/s" in result.stderr or "100%" in result.stderr)


def test_an_import_reads_the_log_as_it_goes(tmp_path):
    """A log's rows are taken from the file as they are inserted (memory stays bounded): the
    stream gives its first rows before the file's end is read."""
    from real.nccl_tests import stream

    log = write_log(tmp_path / "log.txt", ROWS * 30_000)  # 120,000 rows, 13 MB
    read: list[int] = []
    rows = stream(log, on_bytes=read.append).rows
    first = [next(rows) for _ in range(3)]
    assert [row["size_bytes"] for row in first] == [1024, 4096, 65536] and first[0]["world_size"] == 2
    assert sum(read) < log.stat().st_size / 2


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_one_second_op_timeout_does_not_bound_the_ranks_start(tmp_path):
    """The ranks meet before the process group's timeout counts: rank 1 held back 4 s at its
    start does not make a 1 s --op-timeout fail the launch (it did: the TCP store waited 1 s)."""
    pytest.importorskip("torch")
    import signal
    import threading

    from real.bench import BenchSpec, run_bench
    from real.launcher import LaunchConfig, launch

    def hold_rank_one(pids: list[int]) -> None:
        os.kill(pids[1], signal.SIGSTOP)
        threading.Timer(4.0, os.kill, (pids[1], signal.SIGCONT)).start()

    rows = run_bench(BenchSpec(("all_reduce",), (4096,), iters=3, warmup=1), LaunchConfig(2, timeout_s=120, op_timeout_s=1), {"run_id": "t"},
                     launcher=lambda *a: launch(*a, on_start=hold_rank_one))  # fmt: skip
    assert [row["size_bytes"] for row in rows] == [4096]


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_collective_past_the_op_timeout_says_which_flag_to_raise():
    pytest.importorskip("torch")
    import signal

    from real.bench import BenchSpec, run_bench
    from real.launcher import LaunchConfig, LaunchError, launch

    pids: list[int] = []

    def stop_rank_one(row: dict) -> None:
        os.kill(pids[1], signal.SIGSTOP)

    with pytest.raises(LaunchError) as caught:
        run_bench(BenchSpec(("all_reduce",), (4096, 8192, 16384), iters=20, warmup=1), LaunchConfig(2, timeout_s=120, op_timeout_s=2),
                  {"run_id": "t"}, stop_rank_one, launcher=lambda *a: launch(*a, on_start=pids.extend))  # fmt: skip
    assert "a collective took longer than --op-timeout 2 s: raise it" in str(caught.value)


def test_a_log_that_lists_only_some_ranks_imports_with_all_of_them(tmp_path):
    """Published logs trim the "#  Rank" list (the OCI GB200 log shows only rank 127 of 128): the
    world size is the highest rank + 1, as hardware fit counts it, not the number of lines (p = 1)."""
    from real.nccl_tests import parse_text

    text = HEAD.replace("#  Rank  1 Group", "#  Rank 15 Group") + "\n".join(ROWS) + "\n" + TAIL
    assert {row["world_size"] for row in parse_text(text)["rows"]} == {16}


def test_an_exported_gloo_table_imported_by_the_cli_stays_gloo(tmp_path):
    """`real export --nccl-tests` then `real import`: the CLI kept the parser's backend only until
    it stamped its --backend default (nccl, cuda) over every row."""
    assert collsim("real", "export", "--nccl-tests", "tables.txt", cwd=tmp_path).returncode == 0
    done = collsim("real", "import", "tables.txt", "--db", "r.sqlite", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    connection = sqlite3.connect(tmp_path / "r.sqlite")
    assert {row[0] for row in connection.execute("SELECT DISTINCT backend FROM collectives")} == {"gloo"}
    assert connection.execute("SELECT backend, device FROM runs").fetchone() == ("gloo", "cpu")
    done = collsim("real", "import", str(write_log(tmp_path / "nccl.txt")), "--db", "r.sqlite", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert connection.execute("SELECT backend, device FROM runs WHERE label LIKE '%nccl.txt'").fetchone() == ("nccl", "cuda")
