"""A rank that dies or hangs fails the run within the timeout, naming the rank and the operation,
and every result measured before the failure is kept (in the store too)."""

from __future__ import annotations

import os
import signal
import time

import pytest

pytest.importorskip("torch")

from real.bench import BenchSpec, run_bench  # noqa: E402
from real.launcher import LaunchConfig, LaunchError, launch  # noqa: E402
from real.store import open_store  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.slow]

SIZES = tuple(4096 * 2**k for k in range(12))  # 12 points; rank 1 dies after the 2nd


def _run_and_interfere(tmp_path, sig: int, op_timeout_s: float):
    store = open_store(tmp_path / "results.sqlite")
    run_id = store.add_run("bench", {"backend": "gloo", "device": "cpu", "world_size": 2})
    pids: list[int] = []
    seen: list[dict] = []

    def on_result(row: dict) -> None:
        store.add_collective({**row, "run_id": run_id})
        seen.append(row)
        if len(seen) == 2:
            os.kill(pids[1], sig)

    spec = BenchSpec(("all_reduce",), SIZES, iters=30, warmup=1)
    config = LaunchConfig(2, timeout_s=120, op_timeout_s=op_timeout_s)
    started = time.monotonic()
    with pytest.raises(LaunchError) as caught:
        run_bench(spec, config, {"run_id": run_id}, on_result, launcher=lambda *a: launch(*a, on_start=pids.extend))
    return caught.value, time.monotonic() - started, store, run_id, pids


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as handle:  # a zombie is gone too
        return handle.read().split()[2] == "Z"


def test_killed_rank_fails_fast_and_keeps_results(tmp_path):
    error, elapsed, store, run_id, pids = _run_and_interfere(tmp_path, signal.SIGKILL, op_timeout_s=30)
    message = str(error)
    assert "rank 1 was killed by signal SIGKILL during all_reduce" in message
    assert elapsed < 30  # well inside the collective timeout: a dead peer is noticed at once
    assert len(error.results) >= 2
    kept = store.collectives(run_id=run_id)
    assert len(kept) >= 2 and [row["size_bytes"] for row in kept[:2]] == list(SIZES[:2])
    assert all(_gone(pid) for pid in pids)


def test_hung_rank_fails_within_the_collective_timeout(tmp_path):
    error, elapsed, store, run_id, pids = _run_and_interfere(tmp_path, signal.SIGSTOP, op_timeout_s=4)
    message = str(error)
    assert "rank 0 failed in all_reduce" in message and "rank 1 was still in all_reduce" in message
    assert elapsed < 4 + 30  # the op timeout plus start-up, not the 120 s run limit
    assert len(store.collectives(run_id=run_id)) >= 2
    assert all(_gone(pid) for pid in pids)


def test_config_refuses_impossible_choices():
    from sim.errors import CollsimError

    with pytest.raises(CollsimError, match="nccl needs device cuda"):
        LaunchConfig(2, backend="nccl", device="cpu")
    with pytest.raises(CollsimError, match="backend"):
        LaunchConfig(2, backend="mpi")
