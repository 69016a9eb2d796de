"""Ranks start from a fork server that imported torch once per process (real.launcher.launch),
yet each launch's ranks see the caller's working folder and environment of that moment, as
ranks started from a fresh interpreter would: a relative output path or an exported variable
set after the first launch still reaches them."""

from __future__ import annotations

import os
import signal
import time

import pytest

pytest.importorskip("torch")

from real.launcher import LaunchConfig, hold_signals, launch  # noqa: E402


def _where(context, payload):
    context.report({"rank": context.rank, "cwd": os.getcwd(), "value": os.environ.get(payload), "world": os.environ["WORLD_SIZE"]})


@pytest.mark.torch
@pytest.mark.slow
def test_each_launch_takes_the_callers_folder_and_environment_of_now(tmp_path, monkeypatch):
    launch(_where, "COLLSIM_TEST_LAUNCH_VALUE", LaunchConfig(world_size=2, timeout_s=120))  # the fork server runs from here on
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLLSIM_TEST_LAUNCH_VALUE", "set after the first launch")
    rows = launch(_where, "COLLSIM_TEST_LAUNCH_VALUE", LaunchConfig(world_size=2, timeout_s=120))
    expected = [{"rank": rank, "cwd": str(tmp_path), "value": "set after the first launch", "world": "2"} for rank in (0, 1)]
    assert sorted(rows, key=lambda row: row["rank"]) == expected


class Stopped(Exception):
    pass


def test_a_signal_while_ranks_start_is_handled_once_they_have_started():
    """A SIGTERM (or Ctrl-C) during the start is handled by the caller's handler when the block
    ends: never between the fork server's fork and the rank's work arriving, never lost."""

    def stop(signum, frame):
        raise Stopped(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    reached = []
    try:
        with pytest.raises(Stopped):
            with hold_signals():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)  # the handler would have run by now
                reached.append("end of the block")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert reached == ["end of the block"]
