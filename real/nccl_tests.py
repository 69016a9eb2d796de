"""Read nccl-tests output (the text table, or the JSON file of ``-J``/``--output_file``), and write
collsim rows back out in nccl-tests' text format (so a round trip can be checked).

nccl-tests reports, per size, an out-of-place and an in-place result (time in us, algbw and busbw
in GB/s, GB = 1e9). One collsim row is made per size from the out-of-place columns (``--in-place``
picks the other). nccl-tests prints one time per size, the mean over its iterations (``-a``
chooses mean/min/max/sum across ranks), so ``median_s``, ``p10_s`` and ``p90_s`` are left empty
unless per-iteration timing (``-Y``/per_iter) was on and the JSON carries ``times_us``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.errors import CollsimError
from sim.nccl.log import PROGRAMS, LogChecks, check_time, not_a_log, program_op, results, unknown_op, version_of_code

TYPES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "bfloat16": "bfloat16",
    "int32": "int32",
    "int8": "int8",
    "uint8": "uint8",
    "int64": "int64",
}


def world_size_from_busbw(op: str, algbw: float, busbw: float) -> int | None:
    """Recover p from busbw/algbw (all_reduce: 2(p-1)/p; all_gather, reduce_scatter: (p-1)/p),
    only where the columns' two decimals cannot change it (8 ranks' 512 B all_reduce prints
    0.02 / 0.03 GB/s, which reads as 4 ranks): else None, and a larger size tells."""
    if not algbw or not busbw:
        return None
    found = {_ranks_of(op, b / a) for a in (algbw - _HALF_DIGIT, algbw + _HALF_DIGIT) if a > 0
             for b in (busbw - _HALF_DIGIT, busbw + _HALF_DIGIT)}  # fmt: skip
    return found.pop() if len(found) == 1 else None


_HALF_DIGIT = 0.005  # nccl-tests prints algbw and busbw with two decimals


def _ranks_of(op: str, ratio: float) -> int | None:
    if op == "all_reduce" and ratio < 2:
        return round(2 / (2 - ratio))
    if op in ("all_gather", "reduce_scatter", "all_to_all") and ratio < 1:
        return round(1 / (1 - ratio))
    return None


def _row(
    op: str, world_size: int | None, size: int, count: int, dtype: str, redop: str, root: int, time_us: float, algbw: float, busbw: float
) -> dict[str, Any]:
    return {
        "op": op, "world_size": world_size, "backend": "nccl", "device": "cuda", "size_bytes": size, "count": count,
        "type": TYPES.get(dtype, dtype), "redop": redop, "root": root, "time_s": time_us * 1e-6, "median_s": None, "p10_s": None,
        "p90_s": None, "algbw_GBps": algbw, "busbw_GBps": busbw, "times_s": [],
    }  # fmt: skip


_PENDING_LIMIT = 100_000  # rows held while no line yet tells the ranks (memory stays bounded)


@dataclass
class Log:
    """An nccl-tests output being read: ``rows`` (an iterator: a large log is never held whole),
    ``meta`` (filled from the header as the rows are read) and ``checks`` (ranks, left-out sizes,
    warnings; :mod:`sim.nccl.log`)."""

    meta: dict[str, Any]
    checks: LogChecks
    rows: Iterator[dict[str, Any]]


def parse_text(text: str, op: str | None = None, world_size: int | None = None, in_place: bool = False) -> dict[str, Any]:
    """Parse an nccl-tests stdout log. Returns ``{"meta": {...}, "rows": [...], "warnings": [...]}``.

    ``op`` and ``world_size`` override what the log says (the op comes from the nccl-tests program
    it names, the "Collective test starting: all_reduce_perf" line of recent versions or a command
    line; a log that names none is refused without ``op``; p from the "#  Rank" lines, else from busbw).
    """
    log = text_log(text.splitlines(), "nccl-tests log", op, world_size, in_place)
    rows = list(log.rows)
    return {"meta": log.meta, "rows": rows, "warnings": log.checks.warnings()}


def text_log(lines: Iterable[str], name: str, op: str | None = None, world_size: int | None = None, in_place: bool = False) -> Log:
    """The rows of a text log's ``lines`` as they are read (see :class:`Log`)."""
    meta: dict[str, Any] = {"source": "nccl-tests", "devices": []}
    checks = LogChecks(name)
    return Log(meta, checks, _text_rows(lines, meta, checks, op, world_size, in_place))


def _text_rows(lines: Iterable[str], meta: dict[str, Any], checks: LogChecks, op: str | None, world_size: int | None,
               in_place: bool) -> Iterator[dict[str, Any]]:  # fmt: skip
    headers: list[str] = []
    section = _Section()  # one file may hold several tables (collsim real export --nccl-tests)
    ranks = _Ranks(world_size)
    count = 0
    for result in results(lines, checks, headers):
        if headers:
            for line in headers:
                _header_line(line, meta)
                section.read(line)
            headers.clear()
        half = result.in_place if in_place and len(result.in_place) >= 3 else result.out_of_place
        named = op or section.op or (None if section.where else checks.op)  # an exported table names its own op
        if named is None:  # every nccl-tests binary prints the same columns: only its name tells the op
            raise unknown_op(checks.name, "--op")
        row = _row(named, world_size or section.world_size, result.size_bytes, result.count, result.dtype, result.redop, result.root,
                   *half[:3])  # fmt: skip
        if section.where:
            row.update(section.where)  # an exported gloo/cpu table stays gloo/cpu
        if not count:
            meta.setdefault("op", row["op"])
        count += 1
        if row["world_size"] is None:
            devices = checks.rank_count  # the highest "#  Rank" + 1: logs often list only some ranks
            row["world_size"] = None if ranks.pending else devices or ranks.guess
        if row["world_size"] is not None:
            yield row
        else:
            yield from ranks.settle(row, devices)
    if checks.release:  # sim.nccl.log.release_named, the one reader of the release a log names: "2.23.1"
        meta["nccl_version"] = checks.release
    yield from ranks.flush()
    if not count:
        raise (CollsimError(f"{checks.name}: every size has #wrong above 0 (nccl-tests found wrong results); nothing to import")
               if checks.wrong else not_a_log(checks.name))  # fmt: skip


class _Section:
    """The op, world size and backend of the table being read (from its comment lines)."""

    def __init__(self) -> None:
        self.op: str | None = None
        self.world_size: int | None = None
        self.where: dict[str, str] = {}

    def read(self, line: str) -> None:
        starting = re.search(r"test starting:\s*(\w+)_perf", line, re.IGNORECASE)
        if starting:  # collsim export names an op nccl-tests has no binary for as OP_perf (to_text): barrier_perf
            self.op = program_op(line) or (starting.group(1) if self.where else None) or self.op
        exported = re.match(r"#\s*collsim export:.*backend (\S+), device (\S+), world size (\d+)", line)
        if exported:
            self.world_size, self.op = int(exported.group(3)), None
            self.where = {"backend": exported.group(1), "device": exported.group(2)}


class _Ranks:
    """Rows without a world size of their own take the one the "#  Rank" lines give, else the
    first busbw/algbw that tells it; rows before that wait (at most _PENDING_LIMIT of them)."""

    def __init__(self, given: int | None) -> None:
        self.guess = given
        self.pending: list[dict[str, Any]] = []

    def settle(self, row: dict[str, Any], devices: int | None) -> Iterator[dict[str, Any]]:
        if row["world_size"] is not None:
            yield row
            return
        self.guess = self.guess or devices or world_size_from_busbw(row["op"], row["algbw_GBps"], row["busbw_GBps"])
        if self.guess is None:
            if len(self.pending) >= _PENDING_LIMIT:
                raise CollsimError(
                    f"cannot tell the number of ranks from the first {_PENDING_LIMIT} rows (no '#  Rank' lines, no busbw); pass --world-size"
                )
            self.pending.append(row)
            return
        yield from self.flush()
        row["world_size"] = self.guess
        yield row

    def flush(self) -> Iterator[dict[str, Any]]:
        for row in self.pending:
            row["world_size"] = self.guess
        yield from self.pending
        self.pending = []


def _header_line(line: str, meta: dict[str, Any]) -> None:
    rank = re.match(r"#\s+Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)", line)
    if rank:
        meta["devices"].append(
            {"rank": int(rank.group(1)), "hostname": rank.group(4), "device": int(rank.group(5)), "device_info": rank.group(7).strip()}
        )
    settings = re.search(r"warmup iters:\s*(\d+)\s+iters:\s*(\d+)", line)
    if settings:
        meta["warmup"], meta["iters"] = int(settings.group(1)), int(settings.group(2))


def _release_of(code: Any) -> str:
    """The release a -J file's "nccl_version" (NCCL_VERSION_CODE, 22703) names, dotted as a text log's: "2.27.3"."""
    return version_of_code(int(code)) if str(code).isdigit() else str(code or "")


def _fill_world_size(rows: list[dict[str, Any]], world_size: int | None) -> None:
    """Rows without a world size of their own (from their section) take ``world_size``, else
    the one busbw/algbw gives."""
    open_rows = [row for row in rows if row.get("world_size") is None]
    guess = world_size
    if guess is None:
        for row in open_rows:
            guess = world_size_from_busbw(row["op"], row["algbw_GBps"], row["busbw_GBps"])
            if guess:
                break
    for row in open_rows:
        row["world_size"] = guess


def parse_json(data: dict[str, Any], op: str | None = None, world_size: int | None = None, in_place: bool = False,
               checks: LogChecks | None = None) -> dict[str, Any]:  # fmt: skip
    """Parse the JSON file nccl-tests writes with ``-J FILE`` (file version 2), checked as a text
    log is (:mod:`sim.nccl.log`): results with nwrong > 0 left out (``warnings`` names
    them), a negative or NaN time refused."""
    if not isinstance(data, dict) or "results" not in data:
        raise CollsimError("not an nccl-tests JSON file (no 'results' list)")
    config = data.get("config") or {}
    devices = config.get("devices") or data.get("devices") or []
    args = " ".join(data.get("args") or [])
    op = op or program_op(args)
    if op is None:
        raise unknown_op(checks.name if checks else "nccl-tests JSON", "--op")
    meta = {"source": "nccl-tests", "op": op, "devices": devices, "nccl_version": _release_of(data.get("nccl_version")),
            "iters": config.get("iterations"), "warmup": config.get("warmup_iters"), "start_time": data.get("start_time", "")}  # fmt: skip
    rows, checks = [], checks or LogChecks("nccl-tests JSON")
    for number, result in enumerate(data["results"], 1):
        body = result.get("in_place" if in_place else "out_of_place") or result.get("in_place") or {}
        if not body:
            continue
        if any(float((result.get(half) or {}).get("nwrong") or 0) > 0 for half in ("out_of_place", "in_place")):
            checks.wrong.append((f"result {number}", int(result["size"])))
            continue
        root = int(str(result.get("root", "-1")).strip() or -1)
        time_us = body.get("time", body.get("cpu_time", 0.0))
        check_time(float(time_us), f"{checks.name} result {number} (size {result['size']})", f"time {time_us}")
        row = _row(op, None, int(result["size"]), int(result["count"]), result.get("type", "float"), result.get("redop", "none"), root, float(time_us),
                   float(body.get("alg_bw", 0.0)), float(body.get("bus_bw", 0.0)))  # fmt: skip
        per_iter = result.get("in_place_per_iter" if in_place else "out_of_place_per_iter") or {}
        if per_iter.get("times_us"):
            from real.bench import time_stats

            row["times_s"] = [value * 1e-6 for value in per_iter["times_us"]]
            row.update({key: value for key, value in time_stats(row["times_s"]).items() if key != "time_s"})
        rows.append(row)
    _fill_world_size(rows, world_size or (len(devices) or None))
    return {"meta": meta, "rows": rows, "warnings": checks.warnings()}


def read(path: str | Path, op: str | None = None, world_size: int | None = None, in_place: bool = False) -> dict[str, Any]:
    """Read an nccl-tests text log or JSON file (detected by content), whole."""
    log = stream(path, op, world_size, in_place)
    rows = list(log.rows)
    return {"meta": log.meta, "rows": rows, "warnings": log.checks.warnings()}


def stream(path: str | Path, op: str | None = None, world_size: int | None = None, in_place: bool = False,
           on_bytes: Callable[[int], None] | None = None) -> Log:  # fmt: skip
    """An nccl-tests text log or JSON file (detected by content) as a :class:`Log`: a text log is
    read line by line as its rows are taken (``on_bytes`` hears how far), never whole."""
    path = Path(path)
    if not path.is_file():
        raise CollsimError(f"nccl-tests output {str(path)!r} not found")
    with open(path, errors="replace") as handle:
        is_json = handle.read(4096).lstrip().startswith("{")
    if is_json:
        try:
            checks = LogChecks(str(path))
            parsed = parse_json(json.loads(path.read_text(errors="replace")), op, world_size, in_place, checks)
        except json.JSONDecodeError as error:
            raise CollsimError(f"{path}: malformed JSON ({error})") from None
        return Log(parsed["meta"], checks, iter(parsed["rows"]))
    return text_log(_lines(path, on_bytes), str(path), op, world_size, in_place)


def _lines(path: Path, on_bytes: Callable[[int], None] | None) -> Iterator[str]:
    """The file's lines, telling ``on_bytes`` every 20,000 lines how many characters went by."""
    with open(path, errors="replace") as handle:
        if on_bytes is None:
            yield from handle
            return
        done = 0
        for number, line in enumerate(handle, 1):
            done += len(line)
            if number % 20_000 == 0:
                on_bytes(done)
                done = 0
            yield line
        on_bytes(done)


def _number(value: float, width: int) -> str:
    """nccl-tests' getFloatStr: as many decimals as fit the column."""
    digits = len(str(int(abs(value)))) if abs(value) >= 1 else 0
    if digits < width - 2:
        return f"{value:{width}.2f}"
    if digits < width - 1:
        return f"{value:{width}.1f}"
    if digits < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


def to_text(rows: list[dict[str, Any]], program: str | None = None) -> str:
    """collsim rows as an nccl-tests stdout table (time = mean, us; same numbers in both halves)."""
    op = rows[0]["op"] if rows else "all_reduce"
    program = program or next((name for name, value in PROGRAMS.items() if value == op), f"{op}_perf")
    names = {value: key for key, value in TYPES.items()}
    lines = [
        f"# Collective test starting: {program}",
        "#",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
    ]
    for row in rows:
        half = f"{_number(row['time_s'] * 1e6, 7)}  {_number(row['algbw_GBps'], 6)}  {_number(row['busbw_GBps'], 6)}     0"
        lines.append(
            f"{row['size_bytes']:12d}  {row['count']:12d}  {names.get(row['type'], row['type']):>8}  {row['redop']:>6}  {row['root']:6d}  {half}  {half}"
        )
    lines.append("# Out of bounds values : 0 OK")
    return "\n".join(lines) + "\n"
