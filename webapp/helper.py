"""The server's one helper process, for the algorithm crossover.

Why a process of its own beside Dash's background-callback manager (docs/webapp.md, "One helper
process"): an uncached crossover is ~0.1-0.3 s of pure Python that arrives with the same update's
simulation. In a thread it would wait for the interpreter lock; as a Dash background callback it
would start a new process per request (losing the per-network cache) and answer only at the
manager's next poll. One long-lived process keeps both cores busy and its answers are cached in
the server (``functools.lru_cache`` on :func:`sim.collective.explore.crossover_key`).

The background manager stays what it is for: long simulations with progress and Cancel.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import lru_cache
from typing import Any

from sim import files
from sim.collective import explore
from sim.scenario import CollectiveScenario

__all__ = ["CROSSOVER_MESSAGES", "crossover", "helper_pid", "start_helper", "stop_helper"]

log = logging.getLogger(__name__)
CROSSOVER_SIZES = explore.CROSSOVER_SIZES

CROSSOVER_MESSAGES = 30_000  # half the CLI's budget: an uncached crossover answers in ~0.25 s here at 48-256 ranks


def crossover(scenario: CollectiveScenario, sizes: tuple[int, ...] = CROSSOVER_SIZES) -> list[dict[str, Any]]:
    """Every algorithm of the op over message size (:func:`sim.collective.explore.crossover`, cached), on
    the page's budget: points beyond it say "too large to simulate here" (the CLI draws more).

    With :func:`start_helper` (the served app), a crossover not cached here is computed in a
    helper process: its CPU then runs on the other core beside the same update's simulation,
    where a thread would wait for the interpreter lock."""
    from sim.collective.budget import check_crossover

    check_crossover(scenario, tuple(sizes))  # refused before the helper starts (it grew to 12.8 GB on chunks 1,000,000)
    return [dict(row) for row in _crossover(explore.crossover_key(scenario), tuple(sizes))]


@lru_cache(maxsize=256)
def _crossover(key: str, sizes: tuple[int, ...]) -> tuple[dict[str, Any], ...]:
    """Per network and ranks (:func:`sim.collective.explore.crossover_key`), computed in the helper when
    one runs, else here."""
    pool = _helper
    if pool is not None:
        try:
            return pool.submit(_crossover_rows, key, sizes).result(timeout=HELPER_TIMEOUT_S)
        except (BrokenProcessPool, RuntimeError, TimeoutError):  # the helper died or hangs: compute it here
            log.warning("crossover helper process unavailable; computing in the server process", exc_info=True)
            stop_helper()
    return _crossover_rows(key, sizes)


def _crossover_rows(key: str, sizes: tuple[int, ...]) -> tuple[dict[str, Any], ...]:
    return explore.crossover_of(key, sizes, CROSSOVER_MESSAGES)


HELPER_TIMEOUT_S = 120.0
_helper: ProcessPoolExecutor | None = None
_helper_lock = threading.Lock()


def start_helper() -> None:
    """Start the crossover's helper process (one per server process; a fresh interpreter, so no
    lock or thread of the server is copied into it) and warm it on the default scenario, so the
    first page's crossover does not wait for it to start. Stopped at exit."""
    global _helper
    with _helper_lock:
        if _helper is None:
            _helper = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_follow_parent,
                initargs=(os.getpid(), allowed_folders()),
            )
            from webapp.collective import DEFAULTS, parse_form

            scenario, _ = parse_form(DEFAULTS)
            if scenario is not None:
                _helper.submit(_crossover_rows, explore.crossover_key(scenario), CROSSOVER_SIZES)
            atexit.register(stop_helper)


def _follow_parent(parent: int, folders: tuple[str, ...] = ()) -> None:
    """In the helper: exit when the server is gone. A server killed by a signal runs no exit
    handler, and the helper, which holds both ends of its task pipe, would wait forever. Ctrl+C
    reaches the whole terminal's process group: the server ends the helper, which ignores it.
    Like the server's requests, the helper opens no path a link names (:mod:`sim.files`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    files.allow_folders(folders)
    files.refuse_paths_in_this_process()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="collsim-follow-parent").start()


def allowed_folders() -> tuple[str, ...]:
    """The folders the server may open files of (``collsim ui --files``), for the helper to follow."""
    return tuple(files.allowed_folders())


def stop_helper() -> None:
    global _helper
    with _helper_lock:
        pool, _helper = _helper, None
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


def helper_pid() -> int | None:
    """The helper process's id (None when none runs): for tests and diagnostics."""
    pool = _helper
    if pool is None:
        return None
    return pool.submit(os.getpid).result(timeout=HELPER_TIMEOUT_S)
