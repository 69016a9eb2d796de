"""Results as data: a tidy event table, summary numbers, CSV and Chrome trace export.

One event schema serves simulated and measured runs (rank, resource, kind, times, bytes and indices):

=========  ===============================================================
rank       the rank the event belongs to (sender for messages)
peer       the other rank of a message (receiver), -1 otherwise
resource   what was busy: ``port:3``, ``compute:3``, ``link:3->switch``...
kind       send, reduce, backward, forward, optimizer, comm, ...
start_s    start, seconds from the start of the run
end_s      end, seconds
bytes      bytes moved or combined (0 where none)
step       the algorithm's step (round) number, -1 where none
chunk      chunk / piece index, -1 where none
bucket     DDP bucket index, -1 where none
name       a free label: parameter or bucket name, op name ("" where none)
=========  ===============================================================
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.errors import CollsimError

if TYPE_CHECKING:  # annotations only: reading results needs no engine
    from sim.network import Network

EVENT_COLUMNS = ("rank", "peer", "resource", "kind", "start_s", "end_s", "bytes", "step", "chunk", "bucket", "name")


def event_row(
    rank: int,
    peer: int,
    resource: str,
    kind: str,
    start_s: float,
    end_s: float,
    nbytes: int = 0,
    step: int = -1,
    chunk: int = -1,
    bucket: int = -1,
    name: str = "",
) -> dict[str, Any]:
    """One row of the event table (EVENT_COLUMNS order)."""
    return dict(zip(EVENT_COLUMNS, (rank, peer, resource, kind, start_s, end_s, nbytes, step, chunk, bucket, name)))


def message_rows(messages: Iterable[tuple]) -> Iterable[dict[str, Any]]:
    for src, dst, start, end, nbytes, step, chunk in messages:
        yield event_row(src, dst, f"port:{src}", "send", start, end, nbytes, step, chunk)


def compute_rows(computes: Iterable[tuple]) -> Iterable[dict[str, Any]]:
    for rank, start, end, nbytes, step, chunk in computes:
        yield event_row(rank, -1, f"compute:{rank}", "reduce", start, end, nbytes, step, chunk)


def check_output_path(path: str | Path, what: str) -> None:
    """Refuse an output file that cannot be written, before a long run rather than after it."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise CollsimError(f"{what}: {str(path)!r} is a directory; give a file name")
    if not parent.is_dir():
        raise CollsimError(f"{what}: cannot write {str(path)!r}: the directory {str(parent)!r} does not exist")


def write_text(path: str | Path, text: str, what: str = "output") -> None:
    """Write a file; an OSError (missing directory, no permission, full disk) becomes one error line."""
    try:
        Path(path).write_text(text)
    except OSError as error:
        raise CollsimError(f"{what}: cannot write {str(path)!r}: {error.strerror or error}") from None


def write_csv(rows: Iterable[dict[str, Any]], path: str | Path) -> None:
    try:
        with open(path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=EVENT_COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    except OSError as error:
        raise CollsimError(f"--csv: cannot write {str(path)!r}: {error.strerror or error}") from None


def summary_head(scenario: Any, time_s: float, analytic_time_s: float | None, preset: Any = None) -> dict[str, Any]:
    """The first keys of every collective summary, full or collapsed (the CLI contract);
    ``preset``: the scenario's, loaded already (its run's plan's)."""
    from sim.collective.analytic import busbw_factor, why_no_closed_form
    from sim.hardware.uncertainty import interval_fields

    s = scenario
    error = None if not analytic_time_s else (time_s - analytic_time_s) / analytic_time_s
    note = why_no_closed_form(s) if analytic_time_s is None else None  # why there is none, in words
    return {"op": s.op, "algorithm": s.algorithm, "ranks": s.ranks, "size_bytes": s.size_bytes, "topology": s.topology,
            "time_s": time_s, "analytic_time_s": analytic_time_s, "analytic_note": note, "relative_error": error,
            **interval_fields(s, time_s, busbw_factor(s.op, s.ranks), preset)}  # fmt: skip


NO_BANDWIDTH_OPS = ("barrier",)  # move no data: algbw and busbw are not defined (issue 36: a 1 GiB "barrier" read 357,913 GB/s)


def algbw_GBps(size_bytes: int, time_s: float, op: str = "") -> float | None:
    """nccl-tests' algbw (size / time) in GB/s; None without a time or for an op that moves no data."""
    return size_bytes / time_s / 1e9 if time_s and op not in NO_BANDWIDTH_OPS else None


def link_name(link: tuple[object, object]) -> str:
    return f"{link[0]}->{link[1]}"


MESSAGE_FIELDS = ("src", "dst", "start_s", "end_s", "nbytes", "step", "chunk")
COMPUTE_FIELDS = ("rank", "start_s", "end_s", "nbytes", "step", "chunk")
PAIR_FIELDS = ("src", "dst", "messages", "nbytes", "busy_s")
LINK_FIELDS = ("name", "src", "dst", "bandwidth_Bps", "latency_s", "kind", "messages", "bytes")


class Table:
    """Named columns of equal length (numpy arrays), read as a sequence of row tuples.

    ``table["src"]`` is a column; ``len``, iteration, ``table[i]`` and slices give rows as
    tuples of plain Python values in column order; ``to_dict()`` gives lists for JSON. Plain
    data: it pickles, and nothing in it refers to the run that made it."""

    def __init__(self, columns: dict[str, Any]) -> None:
        self.columns = {name: np.asarray(values) for name, values in columns.items()}
        lengths = {len(values) for values in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"Table: columns of different lengths {sorted(lengths)}")
        self.names = tuple(self.columns)

    @classmethod
    def empty(cls, names: tuple[str, ...]) -> Table:
        return cls({name: np.zeros(0) for name in names})

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self.columns[key]
        if isinstance(key, slice):
            return list(zip(*(values[key].tolist() for values in self.columns.values())))
        return tuple(
            value.item() if isinstance(value, np.generic) else value for value in (values[key] for values in self.columns.values())
        )

    def __iter__(self) -> Iterator[tuple]:
        step = 65_536  # rows in slices: no full list of tuples at once
        for lo in range(0, len(self), step):
            yield from zip(*(values[lo : lo + step].tolist() for values in self.columns.values()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, Table)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __bool__(self) -> bool:
        return len(self) > 0

    def __repr__(self) -> str:
        return f"Table({len(self)} rows: {', '.join(self.names)})"

    def rows(self) -> list[dict[str, Any]]:
        """The rows as dicts by column name."""
        return [dict(zip(self.names, row)) for row in self]

    def to_dict(self) -> dict[str, list]:
        return {name: values.tolist() for name, values in self.columns.items()}


def utilisation(busy_s: float, span_s: float) -> float:
    """The one definition of utilisation: the fraction of ``span_s`` a resource spent busy
    (transmitting, computing). 0 for an empty span."""
    return busy_s / span_s if span_s > 0 else 0.0


@dataclass
class LinkStats:
    link: str
    messages: int
    bytes: int
    busy_s: float
    utilisation: float


@dataclass(frozen=True)
class RunRecords:
    """What a run's network recorded, as plain data (:func:`records_of` reads it once, at the end).

    ``messages`` (MESSAGE_FIELDS) and ``computes`` (COMPUTE_FIELDS): the recorded rows;
    ``overflow`` (PAIR_FIELDS): per (src, dst) totals of the messages past ``max_events``;
    ``pairs`` (PAIR_FIELDS): per (src, dst) totals over every message; ``links``
    (LINK_FIELDS): every directed link with its metadata and crossings (messages, bytes over
    every message); ``routes``: (src, dst) -> the link indices (rows of ``links``) its
    messages crossed, for every pair that sent."""

    messages: Table
    computes: Table
    overflow: Table
    pairs: Table
    links: Table
    routes: dict[tuple[int, int], tuple[int, ...]]


def _pair_table(totals: dict[tuple[int, int], list[float]]) -> Table:
    keys = sorted(totals)
    values = [totals[key] for key in keys]
    return Table({
        "src": np.array([k[0] for k in keys], dtype=np.int64), "dst": np.array([k[1] for k in keys], dtype=np.int64),
        "messages": np.array([v[0] for v in values], dtype=np.int64), "nbytes": np.array([v[1] for v in values], dtype=np.int64),
        "busy_s": np.array([v[2] for v in values], dtype=np.float64),
    })  # fmt: skip


def _link_kind(data: dict[str, Any], u: object, v: object) -> str:
    """The edge's own ``kind`` where the graph gives one; else where it sits: rank to rank,
    up (rank into the fabric), down (fabric to rank) or fabric."""
    if data.get("kind"):
        return str(data["kind"])
    rank_u, rank_v = isinstance(u, int), isinstance(v, int)
    return {(True, True): "rank", (True, False): "up", (False, True): "down"}.get((rank_u, rank_v), "fabric")


def records_of(net: Network) -> RunRecords:
    """Copy what ``net`` recorded into plain data; the routes and per-link crossings are
    computed here, once."""
    totals = net.pair_totals()  # every message, recorded or aggregated
    count = len(net.links)
    routes = {pair: tuple(index for index in net.route(*pair)[0] if index < count) for pair in sorted(totals)}
    crossings = np.zeros((count, 2), dtype=np.int64)
    for pair, (messages, nbytes, _) in totals.items():
        for index in routes[pair]:
            crossings[index] += (messages, nbytes)
    edges = net.topology.graph.edges
    data = [edges[link] for link in net.links]
    links = Table({
        "name": np.array([link_name(link) for link in net.links], dtype=object),
        "src": np.array([str(u) for u, _ in net.links], dtype=object), "dst": np.array([str(v) for _, v in net.links], dtype=object),
        "bandwidth_Bps": np.array([float(d["bandwidth"]) for d in data]), "latency_s": np.array([float(d["latency"]) for d in data]),
        "kind": np.array([_link_kind(d, *link) for d, link in zip(data, net.links)], dtype=object),
        "messages": crossings[:, 0], "bytes": crossings[:, 1],
    })  # fmt: skip
    return RunRecords(
        Table(net.messages.columns()), Table(net.computes.columns()), _pair_table(net.overflow), _pair_table(totals), links, routes
    )


@dataclass(frozen=True)
class CollectiveResult:
    """What one simulated collective run produced: plain data (named columns, no live objects).

    The records (``messages``, ``computes``, ``overflow``, ``pairs``, ``links``, ``routes``)
    are those of :class:`RunRecords`; ``to_dict()`` is the whole result as JSON-ready data."""

    scenario: Any  # CollectiveScenario
    time_s: float  # per call: total time / repetitions
    total_time_s: float
    rank_end_s: list[float]
    message_count: int
    bytes_sent: int
    steps: int
    analytic_time_s: float | None
    verified: bool | None
    records: RunRecords
    mode: str = "full"
    group_times_s: list[float] | None = None  # with groups: each group's time per call; time_s is the makespan
    mode_note: str | None = None  # why a collapsed run ran in full
    # NCCL's data path simulates one channel (or a tree's pair) and counts the others as its
    # copies: ``bytes_sent`` is every channel's bytes; the message and link records are those
    # of the simulated channels (runner.wire_copies)
    wire_copies: float = 1.0

    @property
    def messages(self) -> Table:
        return self.records.messages

    @property
    def computes(self) -> Table:
        return self.records.computes

    @property
    def overflow(self) -> Table:
        return self.records.overflow

    @property
    def pairs(self) -> Table:
        return self.records.pairs

    @property
    def links(self) -> Table:
        return self.records.links

    @property
    def routes(self) -> dict[tuple[int, int], tuple[int, ...]]:
        return self.records.routes

    @property
    def truncated(self) -> bool:
        """True when messages beyond ``max_events`` were aggregated rather than recorded."""
        return bool(self.overflow)

    def events(self) -> list[dict[str, Any]]:
        rows = list(message_rows(self.messages)) + list(compute_rows(self.computes))
        rows.sort(key=lambda row: (row["start_s"], row["rank"]))
        return rows

    def link_rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        """One event row per (recorded message, directed link it crossed), resource ``link:NAME``."""
        names, rows = self.links["name"], []
        for src, dst, start, end, nbytes, step, chunk in self.messages:
            for index in self.routes[(src, dst)]:
                rows.append(event_row(src, dst, f"link:{names[index]}", "send", start, end, nbytes, step, chunk))
                if limit is not None and len(rows) >= limit:
                    return rows
        return rows

    @property
    def link_stats(self) -> list[LinkStats]:
        """Messages, bytes and busy time per directed link that carried traffic, over every
        message (recorded or not). A link's busy time is its bytes over its own bandwidth (the
        time it spends transmitting), so utilisation stays within 1 under both sharing modes:
        summed message durations would count flows that share a link (fair) once each."""
        links = self.links
        stats = []
        for name, messages, nbytes, bandwidth in zip(
            links["name"], links["messages"].tolist(), links["bytes"].tolist(), links["bandwidth_Bps"].tolist()
        ):
            if messages:
                busy = nbytes / bandwidth
                stats.append(LinkStats(str(name), int(messages), int(nbytes), busy, utilisation(busy, self.total_time_s or 1.0)))
        return stats

    def summary(self, preset: Any = None) -> dict[str, Any]:
        """The JSON the CLI prints (keys are part of the CLI contract); ``preset``: loaded already."""
        s = self.scenario
        links = self.link_stats
        return {
            **summary_head(s, self.time_s, self.analytic_time_s, preset),
            "messages": self.message_count,
            "bytes_on_wire": self.bytes_sent,
            "wire_copies": self.wire_copies,
            "steps": self.steps,
            "verified": self.verified,
            "mode": self.mode,
            "repetitions": s.repetitions,
            "rank_end_s": {"min": min(self.rank_end_s), "max": max(self.rank_end_s)},
            "group_times_s": self.group_times_s,
            "algbw_GBps": algbw_GBps(s.size_bytes, self.time_s, s.op),
            "busiest_link": None if not links else max(links, key=lambda stats: (stats.busy_s, stats.bytes)).__dict__,
            "events_recorded": len(self.messages),
            "events_truncated": self.truncated,
            "scenario": s.to_dict(),
        }

    def to_dict(self) -> dict[str, Any]:
        """The whole result as JSON-ready data: every field, tables as lists per column, routes
        as ``{"src", "dst", "links"}`` rows."""
        out: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name == "scenario":
                value = value.to_dict()
            elif item.name == "records":
                value = {name: getattr(value, name).to_dict() for name in ("messages", "computes", "overflow", "pairs", "links")}
                value["routes"] = [{"src": src, "dst": dst, "links": list(links)} for (src, dst), links in self.routes.items()]
            out[item.name] = value
        return out

    def to_csv(self, path: str | Path) -> None:
        write_csv(self.events(), path)

    def chrome_trace(self) -> dict[str, Any]:
        from sim.trace import chrome_trace

        return chrome_trace(self.events() + self.link_rows())

    def write_trace(self, path: str | Path) -> None:
        write_text(path, json.dumps(self.chrome_trace()), "--trace")
