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
from pathlib import Path
from typing import Any

from sim.errors import CollsimError

# nccl-tests binary name -> collsim op
PROGRAMS = {
    "all_reduce_perf": "all_reduce", "all_gather_perf": "all_gather", "reduce_scatter_perf": "reduce_scatter",
    "broadcast_perf": "broadcast", "reduce_perf": "reduce", "sendrecv_perf": "send_recv", "alltoall_perf": "all_to_all",
    "gather_perf": "gather", "scatter_perf": "scatter", "hypercube_perf": "hypercube",
}  # fmt: skip
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
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)?\s*(.*)$")


def _op_from(text: str) -> str | None:
    for program, op in PROGRAMS.items():
        if program in text:
            return op
    return None


def world_size_from_busbw(op: str, algbw: float, busbw: float) -> int | None:
    """Recover p from busbw/algbw (all_reduce: 2(p-1)/p; all_gather, reduce_scatter: (p-1)/p)."""
    if not algbw or not busbw:
        return None
    ratio = busbw / algbw
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


def parse_text(text: str, op: str | None = None, world_size: int | None = None, in_place: bool = False) -> dict[str, Any]:
    """Parse an nccl-tests stdout log. Returns ``{"meta": {...}, "rows": [...]}``.

    ``op`` and ``world_size`` override what the log says (the op comes from the "Collective test
    starting: all_reduce_perf" line of recent versions; p from the "#  Rank" lines, else from busbw).
    """
    meta: dict[str, Any] = {"source": "nccl-tests", "devices": []}
    rows = []
    section_where: dict[str, str] = {}
    section_op, section_p = None, None  # one file may hold several tables (collsim real export --nccl-tests)
    for line in text.splitlines():
        if line.startswith("#"):
            _header_line(line, meta)
            found = _op_from(line) if "test starting" in line.lower() else None
            section_op = found or section_op
            exported = re.match(r"#\s*collsim export:.*backend (\S+), device (\S+), world size (\d+)", line)
            if exported:
                section_p, section_op = int(exported.group(3)), None
                section_where = {"backend": exported.group(1), "device": exported.group(2)}
            continue
        match = _ROW.match(line)
        if not match:
            continue
        size, count, dtype, redop, root, rest = match.groups()
        numbers = [token for token in rest.split()]
        try:
            values = [float(token) if token != "N/A" else 0.0 for token in numbers]
        except ValueError:
            continue
        half = values[4:8] if in_place and len(values) >= 8 else values[0:4]
        if len(half) < 3:
            continue
        row = _row(op or section_op or meta.get("op") or "unknown", None, int(size), int(count), dtype, redop, int(root) if root else -1, *half[:3])
        row["world_size"] = world_size or section_p
        row.update(section_where)  # an exported gloo/cpu table stays gloo/cpu
        rows.append(row)
    _fill_world_size(rows, world_size or (len(meta["devices"]) or None))
    if not rows:
        raise CollsimError("no nccl-tests result lines found (expected lines such as '  1048576  262144  float  sum  -1  ...')")
    meta["op"] = rows[0]["op"]
    return {"meta": meta, "rows": rows}


def _header_line(line: str, meta: dict[str, Any]) -> None:
    found = _op_from(line)
    if found and "op" not in meta:
        meta["op"] = found
    rank = re.match(r"#\s+Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)", line)
    if rank:
        meta["devices"].append(
            {"rank": int(rank.group(1)), "hostname": rank.group(4), "device": int(rank.group(5)), "device_info": rank.group(7).strip()}
        )
    settings = re.search(r"warmup iters:\s*(\d+)\s+iters:\s*(\d+)", line)
    if settings:
        meta["warmup"], meta["iters"] = int(settings.group(1)), int(settings.group(2))
    version = re.search(r"nccl-library=(\d+)", line) or re.search(r"NCCL version (\S+)", line)
    if version:
        meta["nccl_version"] = version.group(1)


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


def parse_json(data: dict[str, Any], op: str | None = None, world_size: int | None = None, in_place: bool = False) -> dict[str, Any]:
    """Parse the JSON file nccl-tests writes with ``-J FILE`` (file version 2)."""
    if not isinstance(data, dict) or "results" not in data:
        raise CollsimError("not an nccl-tests JSON file (no 'results' list)")
    config = data.get("config") or {}
    devices = config.get("devices") or data.get("devices") or []
    args = " ".join(data.get("args") or [])
    op = op or _op_from(args) or "unknown"
    meta = {"source": "nccl-tests", "op": op, "devices": devices, "nccl_version": str(data.get("nccl_version", "")),
            "iters": config.get("iterations"), "warmup": config.get("warmup_iters"), "start_time": data.get("start_time", "")}  # fmt: skip
    rows = []
    for result in data["results"]:
        body = result.get("in_place" if in_place else "out_of_place") or result.get("in_place") or {}
        if not body:
            continue
        root = int(str(result.get("root", "-1")).strip() or -1)
        time_us = body.get("time", body.get("cpu_time", 0.0))
        row = _row(op, None, int(result["size"]), int(result["count"]), result.get("type", "float"), result.get("redop", "none"), root, float(time_us),
                   float(body.get("alg_bw", 0.0)), float(body.get("bus_bw", 0.0)))  # fmt: skip
        per_iter = result.get("in_place_per_iter" if in_place else "out_of_place_per_iter") or {}
        if per_iter.get("times_us"):
            from real.bench import time_stats

            row["times_s"] = [value * 1e-6 for value in per_iter["times_us"]]
            row.update({key: value for key, value in time_stats(row["times_s"]).items() if key != "time_s"})
        rows.append(row)
    _fill_world_size(rows, world_size or (len(devices) or None))
    return {"meta": meta, "rows": rows}


def read(path: str | Path, op: str | None = None, world_size: int | None = None, in_place: bool = False) -> dict[str, Any]:
    """Read an nccl-tests text log or JSON file (detected by content)."""
    path = Path(path)
    if not path.is_file():
        raise CollsimError(f"nccl-tests output {str(path)!r} not found")
    text = path.read_text(errors="replace")
    if text.lstrip().startswith("{"):
        try:
            return parse_json(json.loads(text), op, world_size, in_place)
        except json.JSONDecodeError as error:
            raise CollsimError(f"{path}: malformed JSON ({error})") from None
    return parse_text(text, op, world_size, in_place)


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
