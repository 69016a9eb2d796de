"""What the ``collsim real``, ``fit``, ``compare`` and ``validate`` commands share: the results store,
launch options and configuration, progress, JSON output, output paths checked before any work."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from sim.errors import CollsimError

DEFAULT_DB = "results.sqlite"


DB_HELP = f"SQLite results store (default {DEFAULT_DB}; results are appended as they are measured)"


def is_rank_zero() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=1, default=str))


@contextmanager
def progress_bar(total: int, what: str) -> Iterator[Callable[[], None]]:
    """A tqdm bar on stderr (silent when stderr is not a terminal)."""
    from tqdm import tqdm

    # Always on rank 0 (also when stderr is a log file): a long run must show where it is.
    with tqdm(total=total, desc=what, unit="pt", file=sys.stderr, disable=not is_rank_zero(), leave=False, mininterval=0.5) as bar:
        yield lambda: bar.update(1)


def open_store(db: str | None, no_db: bool) -> Any:
    if no_db or not is_rank_zero():
        return None
    from real.store import open_store

    return open_store(db or DEFAULT_DB)


def run_meta(config: Any, command: str, label: str | None) -> dict[str, Any]:
    from real.bench import now_utc, system_info

    meta = system_info(config.backend, config.device)
    meta.update(
        backend=config.backend, device=config.device, world_size=config.world_size, command=command, started_at=now_utc(), label=label or ""
    )
    return meta


def measured_launches(
    store: Any, kind: str, meta: dict[str, Any], launches: int, measure: Callable[[dict[str, Any], Callable], list]
) -> list:
    """Run ``measure`` ``launches`` times, each a run in the store, rows appended as they come."""
    from real.store import new_run_id, recorded_run

    if launches < 1:
        raise CollsimError(f"--launches: must be >= 1, got {launches}")
    results: list = []
    for index in range(launches):
        run_meta = {**meta, "run_id": new_run_id(), "launch": index}
        if store is not None:
            store.add_run(kind, run_meta)
        try:
            results += recorded_run(store, run_meta, measure, run_meta, lambda row: None)
        except KeyboardInterrupt:
            if store is not None:
                click.echo(f"\n# interrupted: rows measured so far are kept in {store.path}", err=True)
            raise
    return results


def launch_options(function: Callable) -> Callable:
    options = [
        click.option("--backend", default="gloo", type=click.Choice(["gloo", "nccl"]), show_default=True),
        click.option("--device", default=None, type=click.Choice(["cpu", "cuda"]), help="default: cuda for nccl, cpu for gloo"),
        click.option("--ranks", default=2, type=int, show_default=True, help="processes on this host (ignored under torchrun)"),
        click.option("--timeout", "timeout_s", default=900.0, type=float, show_default=True, help="limit on the whole launch, s"),
        click.option("--op-timeout", "op_timeout_s", default=60.0, type=float, show_default=True, help="limit on every collective, s"),
        click.option("--threads", default=1, type=int, show_default=True, help="torch threads per rank (CPU)"),
        click.option(
            "--launches",
            default=1,
            type=int,
            show_default=True,
            help="repeat the whole measurement in fresh processes (spread between launches)",
        ),
        click.option("--db", default=None, help=DB_HELP),
        click.option("--no-db", is_flag=True, help="do not record to a store"),
        click.option("--label", default=None, help="free text stored with the run"),
        click.option("--json", "as_json", is_flag=True, help="print a JSON list of rows"),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def launch_config(backend: str, device: str | None, ranks: int, timeout_s: float, op_timeout_s: float, threads: int) -> Any:
    from real.launcher import LaunchConfig

    if ranks < 1:
        raise CollsimError(f"--ranks: must be >= 1, got {ranks}")
    device = device or ("cuda" if backend == "nccl" else "cpu")
    under_torchrun = "WORLD_SIZE" in os.environ and "RANK" in os.environ
    world_size = int(os.environ["WORLD_SIZE"]) if under_torchrun else ranks
    if not under_torchrun and device == "cpu":
        warn_oversubscribed(ranks, threads)
    return LaunchConfig(world_size, backend, device, timeout_s, op_timeout_s, threads)


def warn_oversubscribed(ranks: int, threads: int) -> bool:
    """Warn on stderr when the ranks (times threads) exceed this host's cores; True if it warned."""
    from real.bench import _cpu_count

    cores = _cpu_count()
    if ranks * threads <= cores:
        return False
    click.echo(
        f"warning: {ranks} ranks x {threads} thread(s) on {cores} core(s): ranks will share cores, times measure the "
        f"scheduler more than the network, and memory grows with every rank; use --ranks {cores} or fewer for timings",
        err=True,
    )
    return True


def read_store(db: str | None) -> Any:
    """--db FILE, else ./results.sqlite when present, else the bundled sample data (read-only)."""
    from real.store import open_store, read_only_copy

    if db:
        click.echo(f"# results store: {db} (--db)", err=True)
        return read_only_copy(db)
    if os.path.isfile(DEFAULT_DB):
        click.echo(f"# results store: {os.path.abspath(DEFAULT_DB)} (found ./{DEFAULT_DB}; pass --db to choose another)", err=True)
        return read_only_copy(DEFAULT_DB)
    click.echo("# no --db and no ./results.sqlite: using the bundled sample data", err=True)
    return open_store(None)


def check_output_file(path: str, what: str) -> None:
    """An output file that cannot be written is refused before the measurement, not after it."""
    from pathlib import Path

    target = Path(path)
    if target.is_dir():
        raise CollsimError(f"{what}: {path!r} is a directory; give a file name")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        what_is = "is a file, not a directory" if parent.exists() else "does not exist"
        raise CollsimError(f"{what}: cannot write {path!r}: {str(parent)!r} {what_is}")
    if not os.access(parent, os.W_OK):
        raise CollsimError(f"{what}: cannot write {path!r}: no permission to write in {str(parent)!r}")


def write_output(path: str, what: str, write: Callable[[Any], Any]) -> Any:
    """``write(handle)`` into the file ``path``, failures as :func:`output_errors` says. Returns
    what ``write`` returns."""
    with output_errors(path, what), open(path, "w", newline="") as handle:
        return write(handle)


@contextmanager
def output_errors(path: str, what: str) -> Iterator[None]:
    """Where writing ``path`` fails (a full disk, the folder gone), one error line says so and the
    partial file is removed."""
    try:
        yield
    except OSError as error:
        if os.path.isfile(path):  # a regular file cut short; never a device such as /dev/full
            os.remove(path)
        raise CollsimError(f"{what}: cannot write {path!r}: {error.strerror or error}; nothing was written") from None


def check_output_dir(path: str, what: str) -> None:
    """A directory that will be created (or written into), checked before the measurement."""
    from pathlib import Path

    target = Path(path)
    if target.exists() and not target.is_dir():
        raise CollsimError(f"{what}: {path!r} is a file; give a directory")
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise CollsimError(f"{what}: cannot create {path!r}: {str(existing)!r} is a file")
    if not os.access(existing, os.W_OK):
        raise CollsimError(f"{what}: cannot create {path!r}: no permission to write in {str(existing)!r}")
