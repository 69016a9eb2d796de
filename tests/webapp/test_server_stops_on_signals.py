"""`collsim ui` stops within 5 s on SIGTERM or SIGINT, its helper processes with it (the issue's
server ignored both while a crossover helper grew; SIGKILL was needed)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request

import psutil
import pytest



def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_the_server_and_its_helpers_stop_within_5_s_of_a_signal(signum):
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "sim.cli", "ui", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "collsim ui did not start"
                time.sleep(0.3)
        children = psutil.Process(process.pid).children(recursive=True)
        process.send_signal(signum)
        started = time.monotonic()
        process.wait(timeout=10)
        assert time.monotonic() - started < 5.0
        _, alive = psutil.wait_procs(children, timeout=2)
        assert not alive, alive
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
