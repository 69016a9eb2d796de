"""`collsim ui`: the project's main job serves the explorer on a fresh install."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from ..cli_in_process import collsim_in_process
from .test_server_stops_on_signals import stop_and_check


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_collsim_ui_serves_the_landing_page():
    """The page, then SIGTERM: the server and its helpers stop within 5 s (one server start serves
    both checks; tests/webapp/test_server_stops_on_signals.py has SIGINT and a busy helper)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "sim.cli", "ui", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    page = response.read().decode()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"collsim ui did not start: {process.stdout.read() if process.poll() is not None else 'timeout'}")
                time.sleep(0.3)
        assert "collsim explorer" in page
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_dash-layout", timeout=10) as response:
            assert b'"url"' in response.read()
        output = stop_and_check(process, signal.SIGTERM)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert f"http://127.0.0.1:{port}/" in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "70000"], "--port: must be between 0 and 65535"),
        (["--port", "abc"], "is not a valid integer"),
        (["--db", "/nonexistent/results.sqlite"], "--db: results store"),
    ],
)
def test_collsim_ui_refuses_bad_flags(tmp_path, args, message):
    result = collsim_in_process("ui", *args, cwd=tmp_path)  # a refusal: no Python start-up needed to read it
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert message in result.stderr


def test_collsim_ui_db_names_what_it_accepts(tmp_path):
    from click.testing import CliRunner

    from sim.cli import cli

    out = CliRunner().invoke(cli, ["ui", "--db", str(tmp_path)])
    assert out.exit_code == 2 and "collsim validate" in out.output
