"""Fail before the work, not after (issue 22): every mistake a real command can see up front is
one `error:` line and exit 2 before anything is launched; a failed or interrupted run is marked
so in the store and in its folder."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..cli_in_process import collsim_in_process

pytest.importorskip("torch")

TRACE = Path(__file__).resolve().parents[2] / "real" / "data" / "trace_ddp_small_gloo_2ranks.json.gz"


def collsim(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sim.cli", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def _one_error(done: subprocess.CompletedProcess, *words: str) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1, done.stderr
    for word in words:
        assert word in errors[0], errors[0]
    return errors[0]


def _cases(tmp: Path) -> list[tuple[list[str], tuple[str, ...]]]:
    a_file = tmp / "a_file"
    a_file.write_text("x")
    binary = tmp / "binary.bin"
    binary.write_bytes(bytes(range(256)) * 8)
    empty_trace = tmp / "empty.json"
    empty_trace.write_text('{"traceEvents": []}')
    broken = tmp / "broken.yaml"
    broken.write_text("a: [1, 2\n")
    (tmp / "grid.yaml").write_text(
        "kind: collective\nbase: {op: all_reduce, algorithm: ring, bandwidth: 25GB/s, size: 1MiB}\ngrid: {ranks: [2, 4]}\n"
    )
    return [
        (["real", "bench", "--sizes", "1", "--no-db"], ("sizes", "1 B", "4 B")),
        (["real", "bench", "--launches", "0", "--no-db"], ("--launches", ">= 1")),
        (["real", "fsdp", "--save", str(tmp / "MISSING_DIR" / "rows.json"), "--no-db"], ("--save", "does not exist")),
        (["real", "fsdp", "--save", str(tmp), "--no-db"], ("--save", "is a directory")),
        (["real", "fsdp", "--shard-size", "0", "--no-db"], ("--shard-size",)),
        (["real", "ddp", "--profile-dir", str(a_file), "--no-db"], ("--profile-dir", "is a file")),
        (["real", "ddp", "--params", str(a_file / "x.json"), "--no-db"], ("--params", "is a file")),
        (["fit", "--op", "nonexistent"], ("--op", "nonexistent", "present")),
        (["fit", "--world-size", "99"], ("--world-size", "99", "present")),
        (["fit", "--calibration", str(tmp / "MISSING_DIR" / "cal.yaml")], ("--calibration", "does not exist")),
        (["fit", "--calibration", str(a_file / "cal.yaml")], ("--calibration", "is a file")),
        (["validate", "--ranks", "2", "--sizes", "4KiB,16KiB,1", "--out", str(tmp / "v")], ("--sizes",)),
        (["real", "export", "--csv", str(tmp / "MISSING_DIR" / "x.csv")], ("--csv", "does not exist")),
        (["real", "import-trace", str(TRACE), "--model", "small", "-o", str(tmp / "MISSING_DIR" / "p.json")], ("--out", "does not exist")),
        (["real", "import-trace", str(TRACE), "--params", str(binary)], ("params file", "cannot be read")),
        (["real", "import-trace", str(empty_trace), "--model", "small"], ("traceEvents list is empty",)),
        (["real", "import-trace", str(tmp), "--model", "small"], ("is a directory",)),
        (["sim", "ddp", "--params", str(binary), "--o", "10us", "--w", "10GB/s", "--backward-time", "100ms"], ("cannot be read",)),
        (["sim", "ddp", "--params", str(tmp), "--o", "10us", "--w", "10GB/s", "--backward-time", "100ms"], ("is a directory",)),
        (["sim", "collective", "--scenario", str(broken)], ("broken.yaml", "not valid YAML", "line ")),
        (["sweep", str(tmp / "grid.yaml"), "--csv", str(tmp / "MISSING_DIR" / "s.csv")], ("--csv", "does not exist")),
        (
            "sim collective --op all_reduce --algorithm ring --ranks 8 --bandwidth 25GB/s --size 1MiB --straggler 99:1ms".split(),
            ("got 99:1ms",),
        ),
        (["ui", "--host", "999.1.1.1"], ("--host", "999.1.1.1")),
    ]


@pytest.mark.slow
def test_mistakes_seen_up_front_are_one_error_line_before_anything_runs(tmp_path):
    """The first case as a process (what a user runs), the others in this process (the same
    ``main``: the error line and exit status do not depend on a fresh interpreter)."""
    for index, (args, words) in enumerate(_cases(tmp_path)):
        started = time.monotonic()
        _one_error((collsim if index == 0 else collsim_in_process)(*args, cwd=tmp_path), *words)
        assert time.monotonic() - started < 30, args  # nothing was launched


def test_a_batch_that_does_not_split_takes_the_next_multiple_of_the_world_size():
    from real.models import batch_for, model_spec

    small = model_spec("small")
    assert small.batch_size == 8
    assert [batch_for(small, p) for p in (1, 2, 3, 4, 5)] == [8, 8, 9, 8, 10]


def test_a_run_that_fails_is_marked_failed_in_the_store_not_left_running(tmp_path):
    from real.store import open_store, recorded_run
    from sim.errors import CollsimError

    store = open_store(tmp_path / "r.sqlite")
    run_id = store.add_run("ddp", {"backend": "gloo", "world_size": 3})

    def broken() -> None:
        raise CollsimError("--model small: something went wrong after minutes")

    with pytest.raises(CollsimError):
        recorded_run(store, {"run_id": run_id}, broken)
    status, error = store.connection.execute("SELECT status, error FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    assert status == "failed" and "something went wrong" in error


def test_a_new_validate_run_moves_the_previous_report_away_and_says_it_is_running(tmp_path):
    from real.validate import mark_folder, prepare_folder

    out = tmp_path / "validate"
    out.mkdir()
    (out / "report.html").write_text("<html>the last --quick run</html>")
    (out / "summary.json").write_text("{}")
    previous = prepare_folder(out, "collsim validate --ranks 2,3,4")
    assert not (out / "report.html").exists() and not (out / "summary.json").exists()
    assert (previous / "report.html").read_text().startswith("<html>the last")
    assert json.loads((out / "status.json").read_text())["state"] == "running"
    mark_folder(out, "failed", error="boom")
    status = json.loads((out / "status.json").read_text())
    assert status["state"] == "failed" and status["error"] == "boom" and status["command"] == "collsim validate --ranks 2,3,4"
