"""SIGTERM (``timeout``, a batch scheduler, ``kill``) stops ``collsim validate`` as Ctrl-C does
(issue 22's trial: ``timeout`` ended the README's full validate after 40 min; status.json and the
store's run stayed 'running' and nothing said the run had been cut short)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

import pytest


def _rows(db) -> int:
    if not db.exists():
        return 0
    try:
        return sqlite3.connect(db, timeout=5).execute("SELECT COUNT(*) FROM collectives").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_marks_the_run_interrupted_in_its_folder_and_store_and_exits_non_zero(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "validate", "--ranks", "2", "--sizes", "4KiB:1MiB:x4", "--launches", "5", "--no-ddp",
         "--plotlyjs", "cdn", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 200
        while time.monotonic() < deadline and _rows(out / "results.sqlite") < 4 * 5 * 2:
            time.sleep(0.5)
        assert _rows(out / "results.sqlite") >= 4 * 5 * 2, "two launches not measured in time"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0, stderr
    assert "Traceback" not in stderr
    assert json.loads((out / "status.json").read_text())["state"] == "interrupted"
    statuses = [status for (status,) in sqlite3.connect(out / "results.sqlite").execute("SELECT status FROM runs")]
    assert "running" not in statuses, statuses


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc, where nothing can be created")
def test_an_out_folder_that_cannot_be_created_is_one_error_line_before_any_work(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "sim.cli", "validate", "--ranks", "2", "--quick", "--out", "/proc/collsim-nowhere"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == ["error: --out: cannot create '/proc/collsim-nowhere': No such file or directory"]
