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
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.errors import CollsimError

if TYPE_CHECKING:  # annotations only: reading results needs no engine
    from sim.network import Compute, Message, Network

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


def message_rows(messages: Iterable[Message]) -> Iterable[dict[str, Any]]:
    for src, dst, start, end, nbytes, step, chunk in messages:
        yield event_row(src, dst, f"port:{src}", "send", start, end, nbytes, step, chunk)


def compute_rows(computes: Iterable[Compute]) -> Iterable[dict[str, Any]]:
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


def summary_head(scenario: Any, time_s: float, analytic_time_s: float | None) -> dict[str, Any]:
    """The first keys of every collective summary, full or collapsed (the CLI contract)."""
    from sim.collective.analytic import why_no_closed_form

    s = scenario
    error = None if not analytic_time_s else (time_s - analytic_time_s) / analytic_time_s
    note = why_no_closed_form(s) if analytic_time_s is None else None  # why there is none, in words
    return {"op": s.op, "algorithm": s.algorithm, "ranks": s.ranks, "size_bytes": s.size_bytes, "topology": s.topology,
            "time_s": time_s, "analytic_time_s": analytic_time_s, "analytic_note": note, "relative_error": error}  # fmt: skip


def algbw_GBps(size_bytes: int, time_s: float) -> float | None:
    return size_bytes / time_s / 1e9 if time_s else None


def link_name(link: tuple[object, object]) -> str:
    return f"{link[0]}->{link[1]}"


@dataclass
class LinkStats:
    link: str
    messages: int
    bytes: int
    busy_s: float
    utilisation: float


@dataclass
class CollectiveResult:
    """What one simulated collective run produced."""

    scenario: Any  # CollectiveScenario
    time_s: float  # per call: total time / repetitions
    total_time_s: float
    rank_end_s: list[float]
    message_count: int
    bytes_sent: int
    steps: int
    analytic_time_s: float | None
    verified: bool | None
    network: Network = field(repr=False)
    mode: str = "full"
    group_times_s: list[float] | None = None  # with groups: each group's time per call; time_s is the makespan

    @property
    def messages(self) -> list[Message]:
        return self.network.messages

    @property
    def truncated(self) -> bool:
        """True when messages beyond ``max_events`` were aggregated rather than recorded."""
        return bool(self.network.overflow)

    def events(self) -> list[dict[str, Any]]:
        rows = list(message_rows(self.network.messages)) + list(compute_rows(self.network.computes))
        rows.sort(key=lambda row: (row["start_s"], row["rank"]))
        return rows

    @cached_property
    def link_stats(self) -> list[LinkStats]:
        """Messages, bytes and busy time per directed link, over every message (recorded or not).

        A link's busy time is its bytes over its own bandwidth (the time it spends transmitting),
        so utilisation, busy over the run's span, stays within 1 under both sharing modes: summed
        message durations would count flows that share a link (fair) once each."""
        net = self.network
        pairs = net.pair_totals()  # numpy over the recorded columns plus the aggregated totals
        per_link = [[0, 0] for _ in net.links]
        for (src, dst), (count, nbytes, _) in pairs.items():
            for index in net.route(src, dst)[0]:
                if index < len(per_link):
                    per_link[index][0] += count
                    per_link[index][1] += nbytes
        span = self.total_time_s or 1.0
        edges = net.topology.graph.edges
        stats = []
        for link, (count, nbytes) in zip(net.links, per_link):
            if count:
                busy = nbytes / edges[link]["bandwidth"]
                stats.append(LinkStats(link_name(link), int(count), int(nbytes), busy, busy / span))
        return stats

    def summary(self) -> dict[str, Any]:
        """The JSON the CLI prints (keys are part of the CLI contract)."""
        s = self.scenario
        links = self.link_stats
        return {
            **summary_head(s, self.time_s, self.analytic_time_s),
            "messages": self.message_count,
            "bytes_on_wire": self.bytes_sent,
            "steps": self.steps,
            "verified": self.verified,
            "mode": self.mode,
            "repetitions": s.repetitions,
            "rank_end_s": {"min": min(self.rank_end_s), "max": max(self.rank_end_s)},
            "group_times_s": self.group_times_s,
            "algbw_GBps": algbw_GBps(s.size_bytes, self.time_s),
            "busiest_link": None if not links else max(links, key=lambda stats: (stats.busy_s, stats.bytes)).__dict__,
            "events_recorded": len(self.network.messages),
            "events_truncated": self.truncated,
            "scenario": s.to_dict(),
        }

    def to_csv(self, path: str | Path) -> None:
        write_csv(self.events(), path)

    def chrome_trace(self) -> dict[str, Any]:
        return chrome_trace(self.network.messages, self.network.computes, self.network)

    def write_trace(self, path: str | Path) -> None:
        write_text(path, json.dumps(self.chrome_trace()), "--trace")


def _meta(pid: int, tid: int | None, name: str) -> dict[str, Any]:
    if tid is None:
        return {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": name}}
    return {"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": name}}


def chrome_trace(messages: Iterable[Message], computes: Iterable[Compute], net: Network | None = None) -> dict[str, Any]:
    """Chrome trace JSON (Perfetto opens it): one track per rank's send port, per rank's
    compute, and per directed link that carried traffic."""
    events: list[dict[str, Any]] = [_meta(1, None, "ranks: sends"), _meta(2, None, "ranks: reductions"), _meta(3, None, "links")]
    seen_ranks: set[int] = set()
    seen_links: set[int] = set()
    for src, dst, start, end, nbytes, step, chunk in messages:
        args = {"bytes": nbytes, "to": dst, "step": step, "chunk": chunk}
        events.append(
            {"ph": "X", "pid": 1, "tid": src, "name": f"send {src}->{dst}", "ts": start * 1e6, "dur": (end - start) * 1e6, "args": args}
        )
        seen_ranks.add(src)
        if net is not None:
            for index in net.route(src, dst)[0]:
                if index < len(net.links):
                    seen_links.add(index)
                    events.append(
                        {
                            "ph": "X",
                            "pid": 3,
                            "tid": index,
                            "name": f"{src}->{dst}",
                            "ts": start * 1e6,
                            "dur": (end - start) * 1e6,
                            "args": args,
                        }
                    )
    for rank, start, end, nbytes, step, chunk in computes:
        events.append(
            {
                "ph": "X",
                "pid": 2,
                "tid": rank,
                "name": "reduce",
                "ts": start * 1e6,
                "dur": (end - start) * 1e6,
                "args": {"bytes": nbytes, "step": step, "chunk": chunk},
            }
        )
        seen_ranks.add(rank)
    events += [_meta(pid, rank, f"rank {rank}") for rank in sorted(seen_ranks) for pid in (1, 2)]
    if net is not None:
        events += [_meta(3, index, link_name(net.links[index])) for index in sorted(seen_links)]
    return {"traceEvents": events, "displayTimeUnit": "ns"}
