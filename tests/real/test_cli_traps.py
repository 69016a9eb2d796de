"""Issue 10 items 9, 15 and 16: a non-SQLite --db, oversubscribed ranks with progress and Ctrl-C,
and which store compare reads."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..cli_in_process import collsim_in_process

REPO = Path(__file__).resolve().parents[2]
COMPARE_SPEC = REPO / "real" / "data" / "compare_all_reduce_gloo_2.yaml"


def collsim(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return collsim_in_process(*args, cwd=cwd or Path.cwd())  # what it says: no Python start-up needed


@pytest.mark.parametrize("command", [["fit"], ["real", "runs"], ["compare", str(COMPARE_SPEC)]])
def test_a_db_that_is_not_sqlite_is_one_error_line(tmp_path, command):
    not_sqlite = tmp_path / "some.yaml"
    not_sqlite.write_text("kind: not a database\nranks: 4\n")
    done = collsim_in_process(*command, "--db", str(not_sqlite), cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "not a SQLite results store" in errors[0] and "some.yaml" in errors[0]


def test_compare_names_the_store_it_found_in_the_working_directory(tmp_path):
    """A ./results.sqlite in the working directory is read: compare must say so."""
    from real.store import open_store

    sample = open_store(None)
    copy = open_store(tmp_path / "results.sqlite")
    copy.load(sample.dump())
    done = collsim("compare", str(COMPARE_SPEC), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "results store:" in done.stderr and str(tmp_path / "results.sqlite") in done.stderr


def test_compare_names_the_store_given_with_db(tmp_path):
    from real.store import open_store

    db = tmp_path / "mine.sqlite"
    open_store(db).load(open_store(None).dump())
    done = collsim("compare", str(COMPARE_SPEC), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"results store: {db}" in done.stderr


def test_oversubscribed_ranks_warn(monkeypatch):
    """More ranks than cores: a warning naming both, before anything starts."""
    import click

    import real.bench
    from real.cli_common import launch_config as _config

    monkeypatch.setattr(real.bench, "_cpu_count", lambda: 2)
    messages: list[str] = []
    monkeypatch.setattr(click, "echo", lambda message="", err=False, **_: messages.append((err, message)))
    _config("gloo", None, 64, 900.0, 60.0, 1)
    assert any(err and "64 ranks" in text and "2 core(s)" in text for err, text in messages)
    messages.clear()
    _config("gloo", None, 2, 900.0, 60.0, 1)
    assert not messages


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_bench_shows_progress_on_stderr_and_ctrl_c_keeps_rows(tmp_path):
    """Progress per point on stderr even when it is a pipe; Ctrl-C stops within seconds, keeps
    the rows already measured and marks the run as interrupted."""
    pytest.importorskip("torch")
    db = tmp_path / "results.sqlite"
    process = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "real", "bench", "--ranks", "2", "--sizes", "4KiB:64MiB:x4", "--iters", "200", "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a `pytest &` job ignores SIGINT, and so would it
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and _rows(db) < 2:
            time.sleep(0.5)
        assert _rows(db) >= 2, "no rows measured in time"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0 and "Traceback" not in stderr
    assert "bench:" in stderr and "pt" in stderr  # the tqdm bar: "bench:  25%|... | 2/8 [..pt/s]"
    assert _rows(db) >= 2
    status, error = sqlite3.connect(db).execute("SELECT status, error FROM runs").fetchone()
    assert status == "failed" and "interrupted" in error


def _rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        return sqlite3.connect(db, timeout=5).execute("SELECT COUNT(*) FROM collectives").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
