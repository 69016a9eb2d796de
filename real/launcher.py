"""Start one process per rank, watch them, and fail fast and clearly when one dies or hangs.

Two ways to run a worker:

- ``launch``: one host, ranks forked from ``torch.multiprocessing``'s fork server (torch
  imported once per process, not once a rank), a free port on 127.0.0.1. The parent
  receives every result over a queue as soon as it is measured (the caller appends it to the
  store), knows which operation each rank is in, and enforces two timeouts: ``op_timeout_s`` on
  every collective (the process group's timeout, so a rank whose peer is gone raises instead of
  waiting forever) and ``timeout_s`` on the whole run. A rank that exits, is killed or raises
  stops the run within those limits with a message naming the rank and its operation; results
  that arrived before the failure are kept (they were handed to ``on_result`` already).
- ``run_torchrun``: under ``torchrun`` (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR set), one
  rank per process with ``env://``; rank 0 hands results to ``on_result``.

A worker is a module-level function ``worker(ctx: RankContext, payload) -> None`` that calls
``ctx.status("all_reduce 4 MiB")`` before each operation and ``ctx.report(row)`` (rank 0) with
each finished result.
"""

from __future__ import annotations

import os
import queue as queue_module
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sim.errors import CollsimError

BACKENDS = ("gloo", "nccl")
DEVICES = ("cpu", "cuda")


class LaunchError(CollsimError):
    """A rank died, hung or raised; ``results`` holds what was measured before."""

    def __init__(self, message: str, results: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.results = results or []


# --op-timeout bounds each collective (and not the start: ranks meet within RENDEZVOUS_S); under
# 1 s a rank's first collective, whose peers are still starting, times out. --timeout: the run.
OP_TIMEOUT_RANGE_S = (1.0, 86400.0)
TIMEOUT_RANGE_S = (1.0, 7 * 86400.0)
RENDEZVOUS_S = 300.0


@dataclass(frozen=True)
class LaunchConfig:
    """How to start ranks: how many, which backend and device, and the time limits."""

    world_size: int
    backend: str = "gloo"
    device: str = "cpu"
    timeout_s: float = 900.0  # the whole run
    op_timeout_s: float = 60.0  # every collective (process-group timeout)
    threads_per_rank: int = 1  # torch intra-op threads per rank (CPU)

    def __post_init__(self) -> None:
        if self.world_size < 1:
            raise CollsimError(f"ranks: must be >= 1, got {self.world_size}")
        if self.backend not in BACKENDS:
            raise CollsimError(f"backend: must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.device not in DEVICES:
            raise CollsimError(f"device: must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.backend == "nccl" and self.device != "cuda":
            raise CollsimError("backend nccl needs device cuda (NCCL moves GPU tensors only); use --backend gloo for CPU")
        for flag, value, (low, high) in (
            ("--op-timeout", self.op_timeout_s, OP_TIMEOUT_RANGE_S),
            ("--timeout", self.timeout_s, TIMEOUT_RANGE_S),
        ):
            if not low <= value <= high:  # NaN too
                raise CollsimError(f"{flag}: must be between {low:g} and {high:g} s, got {value:g}")


def check_devices(config: LaunchConfig, local_ranks: int | None = None) -> None:
    """Refuse, with a clear message, a backend/device this machine cannot run."""
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise CollsimError("this torch build has no torch.distributed")
    if config.backend == "gloo" and not dist.is_gloo_available():
        raise CollsimError("this torch build has no gloo backend")
    if config.device != "cuda":
        return
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    needed = config.world_size if local_ranks is None else local_ranks
    if config.backend == "nccl":
        if not dist.is_nccl_available():
            raise CollsimError("backend nccl: this torch build has no NCCL (CPU-only build?); install a CUDA build of torch")
        if gpus < needed:
            raise CollsimError(f"backend nccl needs one GPU per rank: {needed} ranks on this host but {gpus} GPU(s) visible")
    elif gpus < 1:
        raise CollsimError("device cuda: no CUDA GPU visible (torch.cuda.is_available() is False)")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RankContext:
    """What a worker sees: its rank, the world, its device, and the channel to the parent."""

    rank: int
    world_size: int
    backend: str
    device: str
    op_timeout_s: float
    _send: Callable[[tuple], None] = field(repr=False)

    def status(self, operation: str) -> None:
        """Say which operation this rank is entering (named in failure messages)."""
        self._send(("status", self.rank, operation))

    def report(self, row: dict[str, Any]) -> None:
        """Hand a finished result to the parent (rank 0 only, by convention)."""
        self._send(("result", self.rank, row))

    def torch_device(self) -> Any:
        import torch

        if self.device == "cuda":
            return torch.device("cuda", self.local_rank % max(1, torch.cuda.device_count()))
        return torch.device("cpu")

    @property
    def local_rank(self) -> int:
        return int(os.environ.get("LOCAL_RANK", self.rank))


def _init_group(config: LaunchConfig, rank: int, port: int | None) -> None:
    """Join the process group: on ``port`` of 127.0.0.1 (spawned ranks), else env:// (torchrun).
    Spawned ranks first meet on a store of their own, waiting up to RENDEZVOUS_S for each other
    (they start seconds apart); the group's timeout, --op-timeout, then bounds each collective."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(config.threads_per_rank)
    if config.device == "cuda":
        local_rank = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    # NCCL: surface a collective that exceeds the timeout as an error rather than a hang.
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    kwargs: dict[str, Any] = {"backend": config.backend, "timeout": timedelta(seconds=config.op_timeout_s)}
    if port is not None:
        store = dist.TCPStore("127.0.0.1", port, config.world_size, is_master=rank == 0, timeout=timedelta(seconds=RENDEZVOUS_S))
        _meet(store, config.world_size)
        kwargs.update(store=store, rank=rank, world_size=config.world_size)
    if config.backend == "nccl":
        kwargs["device_id"] = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group(**kwargs)


def _meet(store: Any, world_size: int) -> None:
    """Return once every rank has reached this point (or raise after RENDEZVOUS_S)."""
    deadline = time.monotonic() + RENDEZVOUS_S
    arrived = store.add("collsim/arrived", 1)
    while arrived < world_size:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{arrived} of {world_size} ranks started within {RENDEZVOUS_S:g} s")
        time.sleep(0.01)
        arrived = store.add("collsim/arrived", 0)


def _rank_main(rank: int, worker: Callable, payload: Any, config: LaunchConfig, port: int, channel: Any, environ: dict[str, str]) -> None:
    """Entry point of a started rank: set up, run the worker, report errors, tear down."""
    os.environ.clear()  # the caller's environment of now, not the fork server's of its start
    os.environ.update(environ)
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(config.world_size)
    )
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    context = RankContext(rank, config.world_size, config.backend, config.device, config.op_timeout_s, channel.put)
    try:
        _init_group(config, rank, port)
        worker(context, payload)
        channel.put(("done", rank, None))
    except BaseException as error:  # noqa: BLE001  (report anything, then exit non-zero)
        text = " ".join(f"{type(error).__name__}: {error}".split())[:400]  # a message that starts with a newline (pipelining's) kept
        channel.put(("error", rank, {"message": text, "traceback": traceback.format_exc()[-4000:]}))
        channel.close()
        channel.join_thread()
        os._exit(1)
    _teardown()
    # Leave without the interpreter's teardown: torch/gloo threads destroyed there can abort a
    # rank (SIGABRT, "terminate called without an active exception") after its work is done and
    # reported, which the parent would then count as a failure.
    channel.close()
    channel.join_thread()
    os._exit(0)


def _teardown() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001  (a broken group may not tear down cleanly)
            pass


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class _Watch:
    """The parent's view of a launch: last operation and fate of each rank, results so far."""

    def __init__(self, world_size: int, on_result: Callable[[dict[str, Any]], None] | None) -> None:
        self.operation = ["starting (process group init)"] * world_size
        self.done = [False] * world_size
        self.errors: dict[int, dict[str, str]] = {}
        self.results: list[dict[str, Any]] = []
        self.on_result = on_result

    def handle(self, message: tuple) -> None:
        kind, rank, body = message
        if kind == "status":
            self.operation[rank] = body
        elif kind == "result":
            self.results.append(body)
            if self.on_result is not None:
                self.on_result(body)
        elif kind == "done":
            self.done[rank] = True
        elif kind == "error":
            self.errors.setdefault(rank, body)


def launch(
    worker: Callable[[RankContext, Any], None],
    payload: Any,
    config: LaunchConfig,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    on_start: Callable[[list[int]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``worker`` on ``config.world_size`` spawned ranks; return the results rank 0 reported.

    ``on_start`` receives the ranks' process ids once they run (monitoring, or tests that kill one).

    Raises:
        LaunchError: a rank died, raised, or the run exceeded ``timeout_s``; the message names
            the rank(s) and operation(s), ``error.results`` holds the results measured before.
    """
    import torch.multiprocessing as mp

    check_devices(config)
    # Ranks are forked from one server per process that imported torch once (the first launch
    # starts it), not each a fresh interpreter importing torch (~2 s of CPU a rank, every launch).
    # The server is a clean process (CUDA is initialised in each rank, as with spawn); each rank
    # takes the caller's working folder (multiprocessing sends it) and environment of now.
    context = mp.get_context("forkserver")
    context.set_forkserver_preload(["torch", "torch.distributed", "real.launcher"])
    channel = context.Queue()
    port = free_port()
    processes = [
        context.Process(target=_rank_main, args=(rank, worker, payload, config, port, channel, dict(os.environ)), daemon=True)
        for rank in range(config.world_size)
    ]
    watch = _Watch(config.world_size, on_result)
    try:
        with hold_signals():
            for process in processes:
                process.start()
        if on_start is not None:
            on_start([process.pid for process in processes])
        _supervise(processes, channel, watch, config)
    finally:
        _stop(processes)
        channel.close()
    return watch.results


@contextmanager
def hold_signals() -> Iterator[None]:
    """SIGINT and SIGTERM that arrive within the block are handled as it ends, by the handlers in
    place (a Ctrl-C is delayed, not lost). A rank forked from the fork server reads its work from
    the caller after the fork: a caller interrupted in between left it to print an EOFError
    traceback. Outside the main thread, or under handlers not set from Python, nothing is held."""
    signums = (signal.SIGINT, signal.SIGTERM)
    handlers = [signal.getsignal(signum) for signum in signums]
    if threading.current_thread() is not threading.main_thread() or None in handlers:
        yield
        return
    caught: list[int] = []
    for signum in signums:
        signal.signal(signum, lambda number, _frame: caught.append(number))
    try:
        yield
    finally:
        for signum, handler in zip(signums, handlers):
            signal.signal(signum, handler)
        for signum in caught[:1]:
            signal.raise_signal(signum)


def _drain(channel: Any, watch: _Watch, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            watch.handle(channel.get(timeout=max(0.0, deadline - time.monotonic())))
        except (queue_module.Empty, EOFError, OSError):
            return


def _supervise(processes: list[Any], channel: Any, watch: _Watch, config: LaunchConfig) -> None:
    deadline = time.monotonic() + config.timeout_s
    while True:
        try:
            watch.handle(channel.get(timeout=0.2))
            continue
        except queue_module.Empty:
            pass
        codes = [process.exitcode for process in processes]
        if all(watch.done) and all(code is not None for code in codes):
            _drain(channel, watch, 0.1)
            return
        if _looks_failed(codes, watch):
            _drain(channel, watch, 1.0)  # let survivors report, and results in flight arrive
            if _looks_failed([process.exitcode for process in processes], watch):
                raise LaunchError(_failure_text(processes, watch, config.op_timeout_s), watch.results)
        if time.monotonic() > deadline:
            _drain(channel, watch, 0.5)
            stuck = "; ".join(f"rank {rank} in {watch.operation[rank]}" for rank, done in enumerate(watch.done) if not done)
            raise LaunchError(f"run timed out after {config.timeout_s:g} s ({stuck}); {len(watch.results)} result(s) kept", watch.results)


def _looks_failed(codes: list[int | None], watch: _Watch) -> bool:
    """A rank raised, died, or exited without saying it was done."""
    return bool(watch.errors) or any(code is not None and (code != 0 or not done) for code, done in zip(codes, watch.done))


def _failure_text(processes: list[Any], watch: _Watch, op_timeout_s: float) -> str:
    """Name the rank that caused the failure first (a dead rank), then what the others saw, and
    what to do when a collective ran past --op-timeout."""
    parts = []
    for rank, process in enumerate(processes):
        code = process.exitcode
        if code not in (None, 0, 1) or (code == 0 and not watch.done[rank]) or (code == 1 and rank not in watch.errors):
            parts.append(f"rank {rank} {_exit_text(code)} during {watch.operation[rank]}")
    for rank, error in sorted(watch.errors.items()):
        parts.append(f"rank {rank} failed in {watch.operation[rank]}: {error['message']}")
    for rank, process in enumerate(processes):
        if process.exitcode is None and rank not in watch.errors and not watch.done[rank]:
            parts.append(f"rank {rank} was still in {watch.operation[rank]} (hung or stopped)")
    if any(
        "timed out" in error["message"].lower() and not watch.operation[rank].startswith("starting") for rank, error in watch.errors.items()
    ):
        parts.append(
            f"a collective took longer than --op-timeout {op_timeout_s:g} s: raise it (up to {OP_TIMEOUT_RANGE_S[1]:g} s) or look for a stalled rank"
        )
    return "; ".join(parts) + f"; {len(watch.results)} result(s) kept"


def _stop(processes: list[Any]) -> None:
    processes = [process for process in processes if process.pid is not None]  # started
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + 3.0
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(timeout=1.0)


def under_torchrun() -> bool:
    """True when this process was started by torchrun (or another env:// launcher)."""
    return all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


def run_torchrun(
    worker: Callable[[RankContext, Any], None],
    payload: Any,
    config: LaunchConfig,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run ``worker`` as this process's rank under torchrun (env://); rank 0 gets the results.

    torchrun's agent stops every rank when one dies; the process-group timeout bounds a hang.
    """
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if world_size != config.world_size:
        config = LaunchConfig(world_size, config.backend, config.device, config.timeout_s, config.op_timeout_s, config.threads_per_rank)
    check_devices(config, local_ranks=int(os.environ.get("LOCAL_WORLD_SIZE", world_size)))
    results: list[dict[str, Any]] = []
    operation = ["init"]

    def send(message: tuple) -> None:
        kind, _, body = message
        if kind == "status":
            operation[0] = body
        elif kind == "result":
            results.append(body)
            if on_result is not None:
                on_result(body)

    import torch.distributed as dist

    # One process group for the life of the torchrun processes: env:// cannot rendezvous again
    # after destroy_process_group (a second init hangs), so repeated "launches" under torchrun
    # are repetitions inside the same processes; the group is destroyed at exit.
    if not dist.is_initialized():
        _init_group(config, rank, None)
        import atexit

        atexit.register(_teardown)
    try:
        worker(RankContext(rank, world_size, config.backend, config.device, config.op_timeout_s, send), payload)
    except Exception as error:
        _teardown()
        raise LaunchError(f"rank {rank} failed in {operation[0]}: {type(error).__name__}: {error}", results) from error
    return results
