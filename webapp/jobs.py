"""The explorer's background jobs stop when their page goes away.

A background callback (Dash's ``DiskcacheManager``) runs in a process of its own while the page
polls it every ``interval`` ms for progress and the result. Closing the tab or leaving the page
stops the polling, but not the process: one ran at 98 % CPU eight minutes after its tab closed
(issue 22). Here each poll is the job's heartbeat: a watcher thread in the server ends every job
that has not been polled for :data:`ORPHAN_AFTER_S` (the page's own limit,
``sim.collective.budget.BACKGROUND_MAX_SECONDS``, still ends a job whose page stays).

A hidden tab keeps polling: browsers slow its timers to about once a second, well inside the
limit. Heartbeats are kept in the server process (``collsim ui`` is one process).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import dash

__all__ = ["CHECK_EVERY_S", "ORPHAN_AFTER_S", "FollowingManager", "check_job"]

log = logging.getLogger(__name__)

ORPHAN_AFTER_S = 4.0  # the page polls every 300 ms (a hidden tab about every second)
CHECK_EVERY_S = 0.5


class FollowingManager(dash.DiskcacheManager):
    """A ``DiskcacheManager`` whose jobs end once their page stops polling them for ``orphan_after_s``."""

    def __init__(self, cache: Any, orphan_after_s: float = ORPHAN_AFTER_S) -> None:
        super().__init__(cache)
        self.orphan_after_s = orphan_after_s
        self._last_poll: dict[int, float] = {}
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None

    def call_job_fn(self, key: Any, job_fn: Any, args: Any, context: Any) -> Any:
        job = super().call_job_fn(key, job_fn, args, context)
        if job is not None:
            self._heard(job, start=True)
        return job

    def get_result(self, key: Any, job: Any) -> Any:
        """Called on every poll of the page: the job's heartbeat."""
        self._heard(job)
        return super().get_result(key, job)

    def watched_jobs(self) -> list[int]:
        """Jobs still followed (for tests and diagnostics)."""
        with self._lock:
            return list(self._last_poll)

    def _heard(self, job: Any, start: bool = False) -> None:
        try:
            pid = int(job)
        except (TypeError, ValueError):
            return
        with self._lock:
            if start or pid in self._last_poll:
                self._last_poll[pid] = time.monotonic()
            if start and (self._watcher is None or not self._watcher.is_alive()):
                self._watcher = threading.Thread(target=self._watch, daemon=True, name="collsim-job-watcher")
                self._watcher.start()

    def _watch(self) -> None:
        """End jobs not polled for ``orphan_after_s``; forget jobs that ended; stop when none is left."""
        while True:
            time.sleep(CHECK_EVERY_S)
            with self._lock:
                followed = dict(self._last_poll)
            for pid, heard in followed.items():
                orphaned = time.monotonic() - heard > self.orphan_after_s
                try:
                    if orphaned and self.job_running(pid):
                        log.info("background job %d: its page stopped polling %.0f s ago; ending it", pid, self.orphan_after_s)
                        self.terminate_job(pid)  # SIGKILL: ended, even where its reaping outlasts the wait
                        running = False
                    else:
                        running = self.job_running(pid)
                except Exception:  # noqa: BLE001 - psutil.Error or a closed cache: the job is not ours to follow any more
                    running = False
                if not running:
                    with self._lock:
                        self._last_poll.pop(pid, None)
            with self._lock:
                if not self._last_poll:
                    self._watcher = None
                    return


def check_job(scenario: Any) -> None:
    """Refuse, before it starts, a background run that the work estimate
    (:func:`sim.collective.budget.check_run`) puts beyond the explorer's limit for one run
    (``BACKGROUND_MAX_SECONDS``): the issue's 1,024-rank double binary tree with 64 chunks ran
    two minutes and stopped, where its estimate said twenty. The message names what would fit."""
    from sim.collective.budget import BACKGROUND_MAX_SECONDS, check_run

    check_run(scenario, "the explorer's background run", max_seconds=BACKGROUND_MAX_SECONDS)
