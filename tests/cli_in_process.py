"""A ``collsim`` command run in the test's own process: click's CliRunner on collsim's own ``main``
(the same exit status and ``error:`` line), without the ~1 s Python start-up of a subprocess.
For tests about what a command says, not about the process (signals, a full stdout, exit codes
set by the interpreter): those keep ``subprocess``."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import traceback
from pathlib import Path


def collsim_in_process(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command through click's CliRunner in this process (collsim's own ``main``, so the same
    exit status and error line), without a Python start-up per command; an exception that escapes
    is put in stderr as the traceback a process would print."""
    from click.testing import CliRunner

    from sim.cli import cli

    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        with contextlib.chdir(cwd):
            result = CliRunner().invoke(cli, list(args))
    finally:
        for signum, handler in handlers.items():  # a command that got far enough to set its own
            signal.signal(signum, handler)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))  # "Traceback (most recent call last):" ...
    return subprocess.CompletedProcess(["collsim", *args], result.exit_code, result.stdout, stderr)
