"""Chrome trace JSON (Perfetto, chrome://tracing) of event rows: the one trace writer.

Every timeline collsim knows, simulated or measured, is a list of event rows in
:data:`sim.collective.results.EVENT_COLUMNS` (rank, peer, resource, kind, start_s, end_s, bytes,
step, chunk, bucket, name): a collective's sends, reductions and link crossings, a DDP or FSDP
step's compute and communication, a timeline measured by ``real`` (hook timestamps, an imported
torch.profiler trace). :func:`chrome_trace` turns any such list into one trace layout:

- one process per resource family (the part of ``resource`` before ``:``): ``port`` (sends),
  ``compute``, ``comm``, ``link``, then any other, numbered 1, 2, ... in that order;
- one thread per resource: the rank for ``port:3``, ``compute:3``, ``comm:3``; else one per
  name in order of appearance (``link:0->switch``);
- a span (``ph: X``) per row, an instant marker (``ph: i``) for the kinds in ``INSTANT_KINDS``;
  ``cat`` is the row's kind; ``args`` carry bytes, peer, step, chunk and bucket.

:func:`trace_problems` is the schema check every writer's output (and a test) passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["FAMILIES", "INSTANT_KINDS", "chrome_trace", "trace_problems"]

FAMILIES = {"port": "ranks: sends", "compute": "ranks: compute", "comm": "ranks: communication", "link": "links"}
INSTANT_KINDS = frozenset({"grad_ready"})
_ARGS = ("bytes", "peer", "step", "chunk", "bucket")


def _family(resource: str) -> tuple[str, str]:
    family, _, name = resource.partition(":")
    return family, name


def _label(row: dict[str, Any]) -> str:
    if row["kind"] in INSTANT_KINDS:  # "ready fc1.weight"
        return f"{str(row['kind']).removeprefix('grad_')} {row.get('name', '')}".strip()
    if row.get("name"):
        return str(row["name"])
    peer = row.get("peer", -1)
    return f"{row['kind']} {row['rank']}->{peer}" if peer is not None and peer >= 0 else str(row["kind"])


def chrome_trace(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The Chrome trace of event rows (layout in the module docstring); times in microseconds."""
    rows = list(rows)
    present = {_family(str(row["resource"]))[0] for row in rows}
    order = [family for family in FAMILIES if family in present] + sorted(present - set(FAMILIES))
    pid = {family: index + 1 for index, family in enumerate(order)}
    threads: dict[tuple[int, str], int] = {}
    events: list[dict[str, Any]] = []
    for row in rows:
        family, name = _family(str(row["resource"]))
        key = (pid[family], name)
        if key not in threads:
            others = sum(1 for other in threads if other[0] == key[0])
            threads[key] = int(name) if name.isdigit() else others
        event = {"pid": key[0], "tid": threads[key], "name": _label(row), "cat": str(row["kind"]), "ts": row["start_s"] * 1e6}
        event["args"] = {arg: row[arg] for arg in _ARGS if arg in row}
        if row["kind"] in INSTANT_KINDS:
            event.update(ph="i", s="t")
        else:
            event.update(ph="X", dur=(row["end_s"] - row["start_s"]) * 1e6)
        events.append(event)
    meta = [{"ph": "M", "pid": pid[family], "name": "process_name", "args": {"name": FAMILIES.get(family, family)}} for family in order]
    meta += [
        {"ph": "M", "pid": key[0], "tid": tid, "name": "thread_name", "args": {"name": f"rank {key[1]}" if key[1].isdigit() else key[1]}}
        for key, tid in threads.items()
    ]
    return {"traceEvents": meta + events, "displayTimeUnit": "ns"}


def trace_problems(trace: Any) -> list[str]:
    """What keeps ``trace`` from being a Chrome trace as :func:`chrome_trace` writes it (empty: none)."""
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        return ["no 'traceEvents' list"]
    problems = []
    named = {(event.get("pid"), event.get("tid")) for event in trace["traceEvents"] if event.get("name") == "thread_name"}
    for index, event in enumerate(trace["traceEvents"]):
        phase = event.get("ph")
        if phase not in ("X", "i", "M"):
            problems.append(f"event {index}: ph {phase!r} is none of X, i, M")
        elif not isinstance(event.get("pid"), int) or not isinstance(event.get("name"), str):
            problems.append(f"event {index}: needs an int pid and a str name")
        elif phase != "M":
            if (
                not isinstance(event.get("tid"), int)
                or not isinstance(event.get("ts"), (int, float))
                or not isinstance(event.get("args"), dict)
            ):
                problems.append(f"event {index}: needs an int tid, a number ts and an args dict")
            elif phase == "X" and not (isinstance(event.get("dur"), (int, float)) and event["dur"] >= 0):
                problems.append(f"event {index}: a span needs dur >= 0")
            elif (event["pid"], event["tid"]) not in named:
                problems.append(f"event {index}: its thread ({event['pid']}, {event['tid']}) has no thread_name")
    return problems
