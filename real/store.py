"""The results store: one SQLite file, appended to as results arrive, read by fit, compare and the webapp.

Tables (every row keeps its run's ``run_id``; ``runs`` records where and how it was measured):

- ``runs``: run_id, kind (bench | ddp | import | published), source (measured | nccl-tests |
  published), label, status (running | ok | failed), error, started_at, finished_at, backend,
  device, world_size, host, cpu_model, cpu_count, gpu_model, torch_version, collsim_version,
  backend_version, command, info_json.
- ``collectives``: one row per (run, launch, op, size): the nccl-tests columns, mean/median/p10/p90/
  min/max/std of the per-iteration times (max over ranks), algbw/busbw (GB/s, 1e9), and the raw
  per-iteration times (``times_s``).
- ``ddp_steps``: one row per measured DDP step: model, strategy, config, bucket_bytes, round, step
  and phase times, the paired no-communication step of the same round, and their difference.
- ``ddp_profiles``: measured compute profiles and timelines (``collsim-ddp-profile`` JSON).

Each insert commits, so a crash loses at most the point in flight. ``open_store(None)`` opens the
bundled sample data (a measured gloo dataset and the published RTX 4090 gloo table) read-only in
memory, so the webapp works on a fresh install.
"""

from __future__ import annotations

import csv
import json
import sqlite3
import uuid
from collections.abc import Callable, Iterable
from operator import itemgetter
from pathlib import Path
from typing import Any, TextIO

from sim.errors import CollsimError

SAMPLE_FILES = ("sample_gloo_cpu_2ranks.json", "published_rtx4090_gloo.json")

RUN_COLUMNS = (
    "run_id", "kind", "source", "label", "status", "error", "started_at", "finished_at", "backend", "device", "world_size",
    "host", "cpu_model", "cpu_count", "gpu_model", "torch_version", "collsim_version", "backend_version", "command", "info_json",
)  # fmt: skip
COLLECTIVE_COLUMNS = (
    "run_id", "launch", "op", "world_size", "backend", "device", "size_bytes", "count", "type", "redop", "root",
    "time_s", "median_s", "p10_s", "p90_s", "min_s", "max_s", "std_s", "algbw_GBps", "busbw_GBps", "iters", "warmup",
    "rounds", "times_json", "measured_at",
)  # fmt: skip
DDP_STEP_COLUMNS = (
    "run_id", "launch", "model", "strategy", "config", "bucket_bytes", "world_size", "backend", "device", "round",
    "step_s", "forward_s", "backward_s", "sync_s", "optimizer_s", "baseline_step_s", "baseline_backward_s", "overhead_s",
    "comm_calls", "comm_bytes", "measured_at",
)  # fmt: skip
DDP_PROFILE_COLUMNS = ("run_id", "model", "config", "profile_json", "measured_at")

_TEXT = {"run_id", "kind", "source", "label", "status", "error", "started_at", "finished_at", "backend", "device", "host", "cpu_model",
         "gpu_model", "torch_version", "collsim_version", "backend_version", "command", "info_json", "op", "type", "redop",
         "times_json", "measured_at", "model", "strategy", "config", "profile_json"}  # fmt: skip
_INTEGER = {
    "world_size",
    "cpu_count",
    "launch",
    "size_bytes",
    "count",
    "root",
    "iters",
    "warmup",
    "bucket_bytes",
    "round",
    "rounds",
    "comm_calls",
    "comm_bytes",
}


def _ddl(table: str, columns: Iterable[str]) -> str:
    def kind(name: str) -> str:
        return "TEXT" if name in _TEXT else "INTEGER" if name in _INTEGER else "REAL"

    body = ", ".join(f"{name} {kind(name)}" for name in columns)
    key = "run_id TEXT PRIMARY KEY" if table == "runs" else "id INTEGER PRIMARY KEY AUTOINCREMENT"
    body = body.replace("run_id TEXT", key, 1) if table == "runs" else f"{key}, {body}"
    return f"CREATE TABLE IF NOT EXISTS {table} ({body})"


SCHEMA = [
    _ddl("runs", RUN_COLUMNS),
    _ddl("collectives", COLLECTIVE_COLUMNS),
    _ddl("ddp_steps", DDP_STEP_COLUMNS),
    _ddl("ddp_profiles", DDP_PROFILE_COLUMNS),
    "CREATE INDEX IF NOT EXISTS collectives_key ON collectives (backend, op, world_size, size_bytes)",
    "CREATE INDEX IF NOT EXISTS ddp_steps_key ON ddp_steps (run_id, config)",
]
TABLES = {"runs": RUN_COLUMNS, "collectives": COLLECTIVE_COLUMNS, "ddp_steps": DDP_STEP_COLUMNS, "ddp_profiles": DDP_PROFILE_COLUMNS}


class Store:
    """A results database (a file, or the bundled sample data in memory)."""

    def __init__(self, connection: sqlite3.Connection, path: str | None, read_only: bool = False) -> None:
        self.connection = connection
        self.path = path
        self.read_only = read_only
        connection.row_factory = sqlite3.Row
        with connection:
            for statement in SCHEMA:
                connection.execute(statement)

    # ------------------------------------------------------------------ writing

    def _insert(self, table: str, values: dict[str, Any]) -> int:
        self._check_writable()
        with self.connection:
            cursor = self.connection.execute(*_insert_sql(table, values))
        return int(cursor.lastrowid or 0)

    def _check_writable(self) -> None:
        if self.read_only:
            raise CollsimError("the bundled sample store is read-only; pass --db FILE to record measurements")

    def add_run(self, kind: str, meta: dict[str, Any], run_id: str | None = None) -> str:
        """Record a run (status ``running`` until ``finish_run``); returns its id."""
        values = _run_values(kind, meta, run_id)
        self._insert("runs", values)
        return values["run_id"]

    def add_import(self, kind: str, rows: Iterable[dict[str, Any]], run_meta: Callable[[], dict[str, Any]], batch: int = 5000) -> int:
        """An imported run and its collective ``rows`` (an iterable, taken ``batch`` at a time: memory
        stays bounded) in one transaction: all or nothing, so a log refused at its last line
        leaves the store as it was. ``run_meta()`` is asked after the rows (a log's header is read
        with them); it must hold the ``run_id`` the rows carry. Returns the number of rows."""
        self._check_writable()
        count = 0
        with self.connection:
            chunk: list[dict[str, Any]] = []
            for row in rows:
                chunk.append(row)
                if len(chunk) >= batch:
                    count += self._insert_many("collectives", chunk)
                    chunk = []
            count += self._insert_many("collectives", chunk)
            self.connection.execute(*_insert_sql("runs", {**_run_values(kind, run_meta()), "status": "ok"}))
        return count

    def _insert_many(self, table: str, rows: list[dict[str, Any]]) -> int:
        """Rows of one shape (the keys of the first) in one executemany, inside the caller's transaction."""
        if not rows:
            return 0
        columns = [name for name in TABLES[table] if name in rows[0] and name != "times_json"]
        values = map(itemgetter(*columns), rows)
        if table == "collectives" and "times_s" in rows[0]:  # raw times go to times_json
            columns.append("times_json")
            values = ((*plain, json.dumps(row["times_s"]) if row["times_s"] else "[]") for plain, row in zip(values, rows))
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        self.connection.executemany(sql, values)
        return len(rows)

    def finish_run(self, run_id: str, status: str = "ok", error: str | None = None, finished_at: str | None = None) -> None:
        from real.bench import now_utc

        with self.connection:
            self.connection.execute(
                "UPDATE runs SET status = ?, error = ?, finished_at = ? WHERE run_id = ?", (status, error, finished_at or now_utc(), run_id)
            )

    def add_collective(self, row: dict[str, Any]) -> int:
        """Append one benchmark row (raw times go to ``times_json``)."""
        return self._insert("collectives", _collective_values(row))

    def add_ddp_step(self, row: dict[str, Any]) -> int:
        return self._insert("ddp_steps", row)

    def add_ddp_profile(self, run_id: str, model: str, config: str, profile: dict[str, Any], measured_at: str = "") -> int:
        return self._insert(
            "ddp_profiles",
            {"run_id": run_id, "model": model, "config": config, "profile_json": json.dumps(profile), "measured_at": measured_at},
        )

    # ------------------------------------------------------------------ reading

    def _select(self, table: str, filters: dict[str, Any], order: str) -> list[dict[str, Any]]:
        """Rows of ``table`` matching ``filters`` (a value or a list of values), with run metadata joined."""
        run_fields = ("source", "label", "kind", "host", "status")
        where, values = [], []
        for name, value in filters.items():
            if value is None:
                continue
            column = f"r.{name}" if name in run_fields and table != "runs" else f"t.{name}"
            many = isinstance(value, (list, tuple, set))
            where.append(f"{column} IN ({', '.join('?' * len(value))})" if many else f"{column} = ?")
            values += list(value) if many else [value]
        sql = f"SELECT t.* FROM {table} t"
        if table != "runs":
            sql = (
                "SELECT t.*, r.source, r.label, r.kind, r.status AS run_status, r.host, r.cpu_model, r.cpu_count, r.gpu_model, "
                f"r.torch_version, r.collsim_version, r.backend_version FROM {table} t LEFT JOIN runs r ON r.run_id = t.run_id"
            )
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [dict(row) for row in self.connection.execute(sql + f" ORDER BY {order}", values)]

    def runs(self, kind: str | None = None, source: str | None = None) -> list[dict[str, Any]]:
        """Runs, oldest first, with ``info`` (parsed ``info_json``)."""
        rows = self._select("runs", {"kind": kind, "source": source}, "t.started_at, t.run_id")
        for row in rows:
            row["info"] = json.loads(row.pop("info_json") or "{}")
        return rows

    def collectives(self, op: str | None = None, backend: str | None = None, world_size: int | None = None, run_id: str | list[str] | None = None,
                    source: str | None = None, device: str | None = None, status: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
        """Benchmark rows as dicts (``times_s`` parsed, run metadata joined), in measurement order."""
        filters = {
            "op": op,
            "backend": backend,
            "world_size": world_size,
            "run_id": run_id,
            "source": source,
            "device": device,
            "status": status,
        }
        rows = self._select("collectives", filters, "t.id")
        for row in rows:
            row["times_s"] = json.loads(row.pop("times_json") or "[]")
        return rows

    def ddp_steps(self, run_id: str | list[str] | None = None, model: str | None = None, config: str | None = None) -> list[dict[str, Any]]:
        return self._select("ddp_steps", {"run_id": run_id, "model": model, "config": config}, "t.id")

    def ddp_profiles(self, run_id: str | None = None, model: str | None = None, config: str | None = None) -> list[dict[str, Any]]:
        rows = self._select("ddp_profiles", {"run_id": run_id, "model": model, "config": config}, "t.id")
        for row in rows:
            row["profile"] = json.loads(row.pop("profile_json"))
        return rows

    def groups(self) -> list[dict[str, Any]]:
        """Distinct (source, backend, device, op, world_size) with point and run counts: what can be fitted."""
        sql = (
            "SELECT r.source, t.backend, t.device, t.op, t.world_size, COUNT(*) AS points, COUNT(DISTINCT t.run_id) AS runs, "
            "COUNT(DISTINCT t.size_bytes) AS sizes FROM collectives t LEFT JOIN runs r ON r.run_id = t.run_id "
            "GROUP BY r.source, t.backend, t.device, t.op, t.world_size ORDER BY r.source, t.backend, t.op, t.world_size"
        )
        return [dict(row) for row in self.connection.execute(sql)]

    # ------------------------------------------------------------------ export / import

    def export_csv(self, table: str, path: str | Path | TextIO) -> int:
        """Write one table as CSV to a file name or an open text file; returns the number of rows."""
        if table not in TABLES:
            raise CollsimError(f"table: unknown {table!r}; allowed: {', '.join(TABLES)}")
        if isinstance(path, (str, Path)):
            with open(path, "w", newline="") as handle:
                return self.export_csv(table, handle)
        cursor = self.connection.execute(f"SELECT * FROM {table}")
        writer = csv.writer(path)
        writer.writerow([column[0] for column in cursor.description])
        count = 0
        for row in cursor:  # row by row: a large table is never held whole
            writer.writerow(row)
            count += 1
        return count

    def dump(self, run_ids: list[str] | None = None) -> dict[str, Any]:
        """Every table (or the given runs) as plain JSON-able data; ``load`` reads it back."""
        data: dict[str, Any] = {"kind": "collsim-results", "version": 1}
        for table, columns in TABLES.items():
            sql = f"SELECT {', '.join(columns)} FROM {table}"
            params: list[Any] = []
            if run_ids:
                sql += f" WHERE run_id IN ({', '.join('?' * len(run_ids))})"
                params = list(run_ids)
            data[table] = [dict(row) for row in self.connection.execute(sql, params)]
        return data

    def load(self, data: dict[str, Any]) -> None:
        """Insert a ``dump`` (runs already present are skipped)."""
        if not isinstance(data, dict) or data.get("kind") != "collsim-results":
            raise CollsimError("not a collsim results file (expected kind: collsim-results)")
        present = {row["run_id"] for row in self.connection.execute("SELECT run_id FROM runs")}
        fresh = {row["run_id"] for row in data.get("runs", []) if row["run_id"] not in present}
        read_only, self.read_only = self.read_only, False
        try:
            for table in TABLES:
                for row in data.get(table, []):
                    if row.get("run_id") in fresh:
                        self._insert(table, row)
        finally:
            self.read_only = read_only

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _insert_sql(table: str, values: dict[str, Any]) -> tuple[str, list[Any]]:
    columns = [name for name in TABLES[table] if name in values]
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", [values[name] for name in columns]


def _run_values(kind: str, meta: dict[str, Any], run_id: str | None = None) -> dict[str, Any]:
    """A ``runs`` row from a run's metadata (what has no column goes to ``info_json``)."""
    known = {key: meta[key] for key in RUN_COLUMNS if key in meta and key != "info_json"}
    extra = {key: value for key, value in meta.items() if key not in RUN_COLUMNS}
    run_id = run_id or meta.get("run_id") or new_run_id()
    return {"status": "running", "source": "measured", **known, "run_id": run_id, "kind": kind, "info_json": json.dumps(extra, default=str)}


def _collective_values(row: dict[str, Any]) -> dict[str, Any]:
    values = dict(row)
    if "times_s" in values:
        times = values.pop("times_s")
        values["times_json"] = json.dumps(times) if times else "[]"
    return values


def new_run_id() -> str:
    from real.bench import now_utc

    return now_utc().replace(":", "").replace("-", "").replace("+0000", "Z") + "-" + uuid.uuid4().hex[:6]


def open_store(path: str | Path | None = None) -> Store:
    """The store at ``path`` (created if missing), or with ``None`` the bundled sample data, read-only."""
    if path is None:
        store = Store(sqlite3.connect(":memory:", check_same_thread=False), None)
        for name in SAMPLE_FILES:
            store.load(json.loads(_data_file(name).read_text()))
        store.read_only = True
        return store
    path = Path(path)
    if path.exists() and path.is_dir():
        raise CollsimError(f"--db {str(path)!r} is a directory; give a file such as results.sqlite")
    if path.exists():
        check_sqlite(path)
    try:
        connection = sqlite3.connect(str(path), timeout=30.0, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
    except sqlite3.DatabaseError as error:
        raise CollsimError(f"--db {str(path)!r} is not a SQLite database ({error})") from None
    return Store(connection, str(path))


SQLITE_HEADER = b"SQLite format 3\x00"


def check_sqlite(path: Path) -> None:
    """Refuse, in one line, a --db file that is not SQLite (an empty file is a new, empty store)."""
    with open(path, "rb") as handle:
        head = handle.read(len(SQLITE_HEADER))
    if head and head != SQLITE_HEADER:
        raise CollsimError(
            f"--db {str(path)!r} is not a SQLite results store (wrong file header); give the .sqlite file written by "
            "collsim real bench / real ddp / validate (default results.sqlite)"
        )


def check_tables(connection: sqlite3.Connection, path: Path) -> None:
    """Refuse, in one line, a store to read that lacks collsim's tables (an empty file, another
    program's SQLite database): what it has, and where a store comes from."""
    try:
        present = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as error:
        raise CollsimError(f"--db {str(path)!r} is not a SQLite results store ({error})") from None
    missing = [table for table in TABLES if table not in present]
    if not missing:
        return
    has = "it has no tables" if not present else f"it lacks the table(s) {', '.join(missing)} (it has {', '.join(sorted(present))})"
    raise CollsimError(
        f"--db {str(path)!r} is not a collsim results store: {has}; give the .sqlite file written by collsim real bench / "
        "real ddp / real import / validate (default results.sqlite)"
    )


def _data_file(name: str) -> Path:
    return Path(__file__).resolve().parent / "data" / name


def sample_about() -> dict[str, str]:
    """What each bundled dataset is (file name -> description), for the webapp to show."""
    about = {}
    for name in SAMPLE_FILES:
        data = json.loads(_data_file(name).read_text())
        about[name] = data.get("about") or next((run.get("label", "") for run in data.get("runs", [])), "")
    return about


def sample_path(name: str = SAMPLE_FILES[0]) -> Path:
    """Path of a bundled data file."""
    return _data_file(name)


def read_only_copy(path: str | Path) -> Store:
    """Open an existing store without the risk of writing to it (the webapp's view)."""
    path = Path(path)
    if not path.is_file():
        raise CollsimError(f"results store {str(path)!r} not found")
    check_sqlite(path)
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    check_tables(connection, path)
    store = Store.__new__(Store)
    store.connection, store.path, store.read_only = connection, str(path), True
    connection.row_factory = sqlite3.Row
    return store


__all__ = ["Store", "open_store", "read_only_copy", "new_run_id", "sample_about", "sample_path", "TABLES"]


def recorded_run(store: Any, run_meta: dict[str, Any], work: Callable[..., Any], *args: Any) -> Any:
    """``work(*args)`` as one run of the store (``store`` may be None): marked ok, failed with the
    error's message (a launch error or any other), or failed as interrupted on Ctrl-C (the rows
    measured before are kept)."""
    from real.launcher import LaunchError

    try:
        result = work(*args)
    except KeyboardInterrupt:
        if store is not None:
            store.finish_run(run_meta["run_id"], "failed", "interrupted (Ctrl-C); the rows measured before are kept")
        raise
    except (LaunchError, Exception) as error:  # any failure: the run must not stay "running"
        if store is not None:
            store.finish_run(run_meta["run_id"], "failed", str(error) or type(error).__name__)
        raise
    if store is not None:
        store.finish_run(run_meta["run_id"], "ok")
    return result
