"""Flight-recorder dumps in torch's own format (a pickle per rank with "version", "pg_config",
"entries", as ``torch.distributed.flight_recorder``'s loader reads them), written from a
simulated run, and read back from real dumps into per-rank programs to explain."""

from __future__ import annotations

import io
import pickle
import re
from pathlib import Path
from typing import Any

from sim.errors import CollsimError
from sim.files import user_folder
from sim.hang.match import match
from sim.hang.messages import SCALAR_NAMES, numel
from sim.hang.programs import MAX_CALLS, MAX_RANKS, Programs, parse_programs

__all__ = ["DUMP_PREFIX", "VERSION", "read_dumps", "write_dumps"]

VERSION = "2.10"  # the dump format torch 2.13 writes
DUMP_PREFIX = "nccl_trace_rank_"  # TORCH_FR_DUMP_TEMP_FILE's default prefix
_TORCH_DTYPE = SCALAR_NAMES
_FROM_TORCH = {value: key for key, value in _TORCH_DTYPE.items()}
_FR_OP = {"all_gather": "_allgather_base", "reduce_scatter": "_reduce_scatter_base", "all_to_all": "all_to_all"}
_TO_OP = {
    "all_reduce": "all_reduce",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "_allgather_base": "all_gather",
    "all_gather": "all_gather",
    "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter": "reduce_scatter",
    "all_to_all": "all_to_all",
    "barrier": "barrier",
}
MAX_DUMP_BYTES = 256 * 2**20


def _pg_ids(programs: Programs) -> dict[str, str]:
    names = ["world"] + sorted(name for name in programs.groups if name != "world")
    return {name: str(index) for index, name in enumerate(names)}


def write_dumps(programs: Programs, folder: str | Path) -> list[Path]:
    """One dump per rank that is alive at the end (a dead rank writes none), each holding the
    calls the rank issued: completed ones, then the one it is stuck in as "started"."""
    outcome = match(programs)
    ids = _pg_ids(programs)
    pg_config = {
        ids[name]: {"name": ids[name], "desc": "default_pg" if name == "world" else "undefined", "ranks": str(list(members))}
        for name, members in programs.groups.items()
    }
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank, calls in enumerate(programs.ranks):
        if outcome.states[rank] == "dead":
            continue
        stop = outcome.positions[rank] + (1 if outcome.states[rank] in ("blocked", "mismatched") else 0)
        entries = [
            _entry(programs, ids, rank, calls, index, outcome.seqs[rank][index], index < outcome.positions[rank])
            for index in range(stop)
            if not calls[index].is_event
        ]
        for record_id, entry in enumerate(entries):
            entry["record_id"] = record_id
        path = folder / f"{DUMP_PREFIX}{rank}"
        path.write_bytes(
            pickle.dumps({"version": VERSION, "pg_config": pg_config, "pg_status": {}, "comm_lib_version": "collsim", "entries": entries})
        )
        paths.append(path)
    return paths


def _entry(programs: Programs, ids: dict[str, str], rank: int, calls: Any, index: int, seq: int, done: bool) -> dict[str, Any]:
    call = calls[index]
    members = programs.groups[call.group]
    numel_in, numel_out = numel(call, len(members))
    p2p = call.op in ("send", "recv")
    if p2p:
        src, dst = (members.index(rank), members.index(call.peer)) if call.op == "send" else (members.index(call.peer), members.index(rank))
        name = f"nccl:send {src}->{dst}" if call.op == "send" else f"nccl:recv {dst}<-{src}"
    else:
        name = f"nccl:{_FR_OP.get(call.op, call.op)}"
    sizes_in, sizes_out = ([], []) if call.op == "barrier" else ([[numel_in]], [[numel_out]])
    dtypes = [] if call.op == "barrier" else [_TORCH_DTYPE[call.dtype]]
    return {
        "frames": [{"name": call.tag or call.op, "filename": "collsim-program", "line": index}],
        "pg_id": int(ids[call.group]),
        "process_group": (ids[call.group], "default_pg" if call.group == "world" else "undefined"),
        "collective_seq_id": 0 if p2p else seq,
        "p2p_seq_id": seq if p2p else 0,
        "op_id": index + 1,
        "profiling_name": name,
        "time_created_ns": index * 1000,
        "input_sizes": sizes_in,
        "input_dtypes": dtypes,
        "output_sizes": sizes_out,
        "output_dtypes": dtypes,
        "state": "completed" if done else "started",
        "time_discovered_started_ns": index * 1000 + 1,
        "time_discovered_completed_ns": index * 1000 + 2 if done else None,
        "retired": done,
        "timeout_ms": round(programs.timeout_for("nccl") * 1000),
        "is_p2p": p2p,
        "thread_name": "collsim",
        "thread_id": "0",
    }


def read_dumps(folder: str | Path) -> Programs:
    """Per-rank programs from a folder of real flight-recorder dumps (any prefix ending in the
    rank number): each rank's recorded calls; a rank without a dump is taken to have died."""
    folder = user_folder(folder, "--flight-recorder", "a folder of flight-recorder dumps")
    dumps = {}
    for path in sorted(folder.iterdir()):
        found = re.search(r"(\d+)$", path.name)
        if found and path.is_file():
            dumps[int(found.group(1))] = _load(path)
    if not dumps:
        raise CollsimError(f"--flight-recorder: no dump files (names ending in the rank number) in {str(folder)[:120]!r}")
    return _programs(dumps)


class _PlainUnpickler(pickle.Unpickler):
    """A dump holds dicts, lists, tuples, strings and numbers only: any class or function a
    pickle names (a way to run code) is refused, so a dump from anywhere is safe to read."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"it names {module}.{name}; a flight-recorder dump holds plain data only")


def _load(path: Path) -> dict[str, Any]:
    if path.stat().st_size > MAX_DUMP_BYTES:
        raise CollsimError(f"--flight-recorder: {path.name} is {path.stat().st_size:,} bytes; dumps up to {MAX_DUMP_BYTES:,} are read")
    try:
        data = _PlainUnpickler(io.BytesIO(path.read_bytes())).load()
    except Exception as error:  # noqa: BLE001 - any unpickling failure is a bad file
        raise CollsimError(f"--flight-recorder: {path.name} is not a flight-recorder pickle: {str(error)[:120]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list) or not isinstance(data.get("pg_config"), dict):
        raise CollsimError(f"--flight-recorder: {path.name} has no 'entries' list and 'pg_config' mapping; is it a flight-recorder dump?")
    return data


def _programs(dumps: dict[int, dict[str, Any]]) -> Programs:
    """Programs from dumps: every rank's recorded calls, then a stall (it was alive, issuing no
    more); a rank without a dump dies. gloo's dumps list no subgroup's ranks (their pg_config
    holds only the default group, under the key ''): a group known only by its id in the entries
    is taken as every rank's."""
    configured = [_config_ranks(config) for dump in dumps.values() for config in dump["pg_config"].values()]
    world = max([max(dumps) + 1] + [max(ranks) + 1 for ranks in configured if ranks])
    if world > MAX_RANKS:
        raise CollsimError(f"--flight-recorder: rank {world - 1:,} in the dumps; up to {MAX_RANKS:,} ranks are explained")
    groups: dict[str, list[int]] = {}
    for dump in dumps.values():
        for uid, config in dump["pg_config"].items():
            ranks = _config_ranks(config)
            if ranks and sorted(ranks) != list(range(world)):
                groups.setdefault(str(uid), ranks)
    for dump in dumps.values():
        for entry in dump["entries"]:
            uid = str((entry.get("process_group") or ("0",))[0]) if isinstance(entry, dict) else "0"
            if uid not in groups and uid != "0":
                groups[uid] = list(range(world))
    ranks, total = [], 0
    for rank in range(world):
        if rank not in dumps:
            ranks.append([{"op": "die"}])
            continue
        calls = [_call(entry, groups, world) for entry in dumps[rank]["entries"] if isinstance(entry, dict)]
        total += len(calls)
        if total > MAX_CALLS:
            raise CollsimError(f"--flight-recorder: over {MAX_CALLS:,} entries; up to that are explained")
        ranks.append([call for call in calls if call] + ([{"op": "stall"}]))
    return parse_programs({"ranks": ranks, "groups": groups})


def _config_ranks(config: Any) -> list[int]:
    return [int(r) for r in re.findall(r"\d+", str(config.get("ranks", "")))[: MAX_RANKS + 1]] if isinstance(config, dict) else []


def _call(entry: dict[str, Any], groups: dict[str, list[int]], world: int) -> dict[str, Any] | None:
    name = str(entry.get("profiling_name", ""))
    op_text = name.split(":", 1)[-1].split(" ")[0]
    uid = str((entry.get("process_group") or ("0",))[0])
    group = uid if uid in groups else "world"
    sizes = entry.get("input_sizes") or [[0]]
    count = 1
    for dim in sizes[0] if sizes and isinstance(sizes[0], list) else [0]:
        count *= int(dim)
    dtype = _FROM_TORCH.get((entry.get("input_dtypes") or ["Float"])[0], "float32")
    if op_text in ("send", "recv"):
        members = groups.get(group, list(range(world)))
        other = int(re.findall(r"\d+", name.split(" ", 1)[1])[1]) if " " in name else 0
        return {"op": op_text, "count": count, "dtype": dtype, "group": group, "peer": members[other]}
    op = _TO_OP.get(op_text)
    if op is None:
        return None
    call = {"op": op, "count": 0 if op == "barrier" else count, "dtype": dtype, "group": group, "tag": f"record {entry.get('record_id')}"}
    if op in ("broadcast", "reduce"):
        call["root"] = 0 if 0 in groups.get(group, [0]) else groups[group][0]
    return call
