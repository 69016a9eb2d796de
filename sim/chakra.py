"""Chakra execution traces out and in: one ``PREFIX.RANK.et`` file per rank, as ASTRA-sim 2.x reads
them (Chakra's ``schema/protobuf/et_def.proto``), from and to collsim's per-rank event rows.

A file is a ``GlobalMetadata`` message (``version "0.0.4"``) followed by ``Node`` messages, each
length-delimited (its size as a varint, then its bytes) like Chakra's ``encodeMessage``. The
protobuf wire format is written and read here by hand (varints, standard library only; no
``protobuf`` package needed), with proto3's rules: fields in number order, scalars equal to 0
left out, a ``oneof`` value always written, repeated numbers packed.

Rows (:data:`ROW_KEYS`): ``rank, stream, kind, name, start_s, end_s, bytes, peer, group``; kind
``compute`` becomes a ``COMP_NODE`` (its duration; ``num_ops``/``tensor_size`` when the row has
them), ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all``, ``broadcast`` a
``COMM_COLL_NODE`` (``comm_type``, ``comm_size``, ``pg_name``: the group's number in
:func:`comm_groups`, which ASTRA-sim takes as ``--comm-group-configuration``), ``send``/``recv``
a ``COMM_SEND_NODE``/``COMM_RECV_NODE`` (``comm_src``, ``comm_dst``, ``comm_size``, ``comm_tag``:
the k-th message from one rank to another has tag k on both ends). Every node depends
(``data_deps``) on the previous node of its stream and, per other stream of its rank, on the last
node that ended by its start: the measured order, for a replay to keep. Times are whole
microseconds (``start_time_micros``, ``duration_micros``); the stream is kept in an attribute
``collsim_stream`` that other readers ignore.
"""

from __future__ import annotations

import bisect
import json
import math
import struct
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sim.errors import CollsimError

__all__ = [
    "COLLECTIVES",
    "COMM_COLL_NODE",
    "COMM_RECV_NODE",
    "COMM_SEND_NODE",
    "COMP_NODE",
    "KINDS",
    "ROW_KEYS",
    "comm_groups",
    "decode_node",
    "decode_nodes",
    "encode_node",
    "encode_nodes",
    "from_ddp_events",
    "read_traces",
    "rows_to_nodes",
    "write_traces",
]

VERSION = "0.0.4"
MAX_TRACE_BYTES = 1 << 30  # one rank's trace is read whole: bounded
ROW_KEYS = ("rank", "stream", "kind", "name", "start_s", "end_s", "bytes", "peer", "group")
# NodeType and CollectiveCommType of et_def.proto
COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE = 4, 5, 6, 7
COLLECTIVES = {"all_reduce": 0, "all_gather": 2, "broadcast": 5, "all_to_all": 6, "reduce_scatter": 7}
KINDS = ("compute", *COLLECTIVES, "send", "recv")
_KIND_OF_COLLECTIVE = {number: kind for kind, number in COLLECTIVES.items()}
# AttributeProto's oneof fields used here: (field number, wire type)
_ATTR_FIELDS = {"double": (3, 1), "int32": (7, 0), "int64": (9, 0), "uint64": (13, 0), "bool": (27, 0), "string": (29, 2)}
_ATTR_TYPES = {"comm_type": "int64", "comm_size": "int64", "comm_src": "int32", "comm_dst": "int32", "comm_tag": "int32", "pg_name": "string",
               "is_cpu_op": "bool", "num_ops": "int64", "tensor_size": "uint64", "collsim_stream": "string"}  # fmt: skip

# ----------------------------------------------------------------------------- wire format


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32/int64: two's complement on 64 bits, as protobuf does
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire) + payload


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _field(number, 2, _varint(len(payload)) + payload)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise CollsimError("chakra: truncated or malformed varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of one message: ints for varint/fixed, bytes for length-delimited."""
    at = 0
    while at < len(data):
        key, at = _read_varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _read_varint(data, at)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, at = data[at : at + size], at + size
        elif wire == 2:
            size, at = _read_varint(data, at)
            value, at = data[at : at + size], at + size
        else:
            raise CollsimError(f"chakra: unsupported wire type {wire} (field {number})")
        if at > len(data):
            raise CollsimError("chakra: message runs past its end")
        yield number, wire, value


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


# ----------------------------------------------------------------------------- messages


def _attribute(name: str, value: Any) -> bytes:
    kind = _ATTR_TYPES[name]
    number, wire = _ATTR_FIELDS[kind]
    if kind == "string":
        payload = _bytes_field(number, str(value).encode())
    elif kind == "double":
        payload = _field(number, wire, struct.pack("<d", value))
    else:
        payload = _field(number, wire, _varint(int(value)))
    return _bytes_field(1, name.encode()) + payload


def _read_attribute(data: bytes) -> tuple[str, Any]:
    name, value = "", None
    for number, wire, raw in _fields(data):
        if number == 1:
            name = raw.decode()
        elif number == 29:
            value = raw.decode()
        elif number == 3:
            value = struct.unpack("<d", raw)[0]
        elif number in (7, 9):
            value = _signed(raw, 32 if number == 7 else 64)
        elif number == 27:
            value = bool(raw)
        elif wire == 0:
            value = raw
    return name, value


def _packed(number: int, values: list[int]) -> bytes:
    return _bytes_field(number, b"".join(_varint(v) for v in values)) if values else b""


def _unpacked(wire: int, raw: Any) -> list[int]:
    if wire == 0:
        return [raw]
    values, at = [], 0
    while at < len(raw):
        value, at = _read_varint(raw, at)
        values.append(value)
    return values


def encode_node(node: dict[str, Any]) -> bytes:
    """One ``Node``: id, name, type, ctrl_deps, data_deps, start_time_micros, duration_micros, attr."""
    parts = [_field(1, 0, _varint(node["id"])) if node["id"] else b"", _bytes_field(2, node["name"].encode()) if node["name"] else b"",
             _field(3, 0, _varint(node["type"])), _packed(4, node.get("ctrl_deps", [])), _packed(5, node.get("data_deps", [])),
             _field(6, 0, _varint(node["start_time_micros"])) if node["start_time_micros"] else b"",
             _field(7, 0, _varint(node["duration_micros"])) if node["duration_micros"] else b""]  # fmt: skip
    parts += [_bytes_field(10, _attribute(name, value)) for name, value in node["attr"].items()]
    return b"".join(parts)


def decode_node(data: bytes) -> dict[str, Any]:
    node: dict[str, Any] = {
        "id": 0,
        "name": "",
        "type": 0,
        "ctrl_deps": [],
        "data_deps": [],
        "start_time_micros": 0,
        "duration_micros": 0,
        "attr": {},
    }
    simple = {1: "id", 3: "type", 6: "start_time_micros", 7: "duration_micros"}
    for number, wire, raw in _fields(data):
        if number in simple:
            node[simple[number]] = raw
        elif number == 2:
            node["name"] = raw.decode()
        elif number in (4, 5):
            node["ctrl_deps" if number == 4 else "data_deps"] += _unpacked(wire, raw)
        elif number == 10:
            name, value = _read_attribute(raw)
            node["attr"][name] = value
    return node


def encode_nodes(nodes: Iterable[dict[str, Any]]) -> bytes:
    """A whole ``.et`` file: GlobalMetadata, then every node, each length-delimited."""
    messages = [_bytes_field(1, VERSION.encode())] + [encode_node(node) for node in nodes]
    return b"".join(_varint(len(message)) + message for message in messages)


def decode_nodes(data: bytes) -> tuple[str, list[dict[str, Any]]]:
    """(version, nodes) of a whole ``.et`` file."""
    messages, at = [], 0
    while at < len(data):
        size, at = _read_varint(data, at)
        if at + size > len(data):
            raise CollsimError(f"chakra: a message of {size} bytes runs past the end of the file ({len(data)} bytes)")
        messages.append(data[at : at + size])
        at += size
    if not messages:
        raise CollsimError("chakra: empty trace (no GlobalMetadata)")
    try:
        version = next((raw.decode() for number, _, raw in _fields(messages[0]) if number == 1), "")
        return version, [decode_node(message) for message in messages[1:]]
    except (TypeError, ValueError, AttributeError, struct.error) as error:  # a field of the wrong wire type, text not UTF-8
        raise CollsimError(f"chakra: not a Chakra execution trace ({type(error).__name__}: {error})") from None


# ----------------------------------------------------------------------------- rows <-> nodes


def _check_row(row: dict[str, Any], index: int) -> None:
    missing = [key for key in ("rank", "kind", "start_s", "end_s") if key not in row]
    if missing:
        raise CollsimError(f"chakra: row {index} lacks {', '.join(missing)}; rows need {', '.join(ROW_KEYS)}")
    if row["kind"] not in KINDS:
        raise CollsimError(f"chakra: row {index} has kind {row['kind']!r}; allowed: {', '.join(KINDS)}")
    if row["kind"] in ("send", "recv") and int(row.get("peer", -1)) < 0:
        raise CollsimError(f"chakra: row {index} is a {row['kind']} without a peer rank")
    if not 0 <= row["start_s"] <= row["end_s"]:
        raise CollsimError(f"chakra: row {index} must have 0 <= start_s <= end_s, got {row['start_s']!r}..{row['end_s']!r}")


def comm_groups(rows: Iterable[dict[str, Any]]) -> dict[str, list[int]]:
    """Every collective's group, numbered from 1 in order of first appearance (ASTRA-sim's
    comm-group configuration: ``{"1": [0, 1], ...}``)."""
    groups: dict[tuple[int, ...], str] = {}
    for row in rows:
        if row["kind"] in COLLECTIVES and row.get("group"):
            groups.setdefault(tuple(row["group"]), str(len(groups) + 1))
    return {name: list(group) for group, name in groups.items()}


def _micros(seconds: float) -> int:
    return round(seconds * 1e6)


def _node_attr(row: dict[str, Any], tag: int, group_names: dict[tuple[int, ...], str]) -> tuple[int, dict[str, Any]]:
    kind, attr = row["kind"], {"is_cpu_op": False, "collsim_stream": row.get("stream", "")}
    nbytes = int(row.get("bytes", 0))
    if kind == "compute":
        attr.update({key: int(row[key]) for key in ("num_ops", "tensor_size") if key in row})
        return COMP_NODE, attr
    if kind in COLLECTIVES:
        attr.update(comm_type=COLLECTIVES[kind], comm_size=nbytes)
        if row.get("group"):
            attr["pg_name"] = group_names[tuple(row["group"])]
        return COMM_COLL_NODE, attr
    src, dst = (row["rank"], row["peer"]) if kind == "send" else (row["peer"], row["rank"])
    attr.update(comm_src=src, comm_dst=dst, comm_size=nbytes, comm_tag=tag)
    return (COMM_SEND_NODE if kind == "send" else COMM_RECV_NODE), attr


def _dependencies(rows: list[dict[str, Any]]) -> list[list[int]]:
    """Per row (in start order): the previous node of its stream, and per other stream the node
    that ended last by its start (the later one of equal ends). Per stream the (end, index) pairs
    are kept sorted, so each look-up is a bisection."""
    ends: dict[str, list[tuple[float, int]]] = defaultdict(list)
    previous: dict[str, int] = {}
    deps = []
    for index, row in enumerate(rows):
        stream = row.get("stream", "")
        chosen = {previous[stream]} if stream in previous else set()
        for other, pairs in ends.items():
            at = bisect.bisect_right(pairs, (row["start_s"], math.inf)) - 1
            if other != stream and at >= 0:
                chosen.add(pairs[at][1])
        deps.append(sorted(chosen))
        bisect.insort(ends[stream], (row["end_s"], index))
        previous[stream] = index
    return deps


def rows_to_nodes(rows: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Per rank, the Chakra nodes of its rows (ids 0, 1, ... in start order)."""
    for index, row in enumerate(rows):
        _check_row(row, index)
    group_names = {tuple(group): name for name, group in comm_groups(rows).items()}
    by_rank: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["rank"], r["start_s"], r["end_s"])):
        by_rank[int(row["rank"])].append(row)
    out = {}
    for rank, mine in by_rank.items():
        counters: dict[tuple[str, int], int] = defaultdict(int)
        nodes = []
        for node_id, (row, deps) in enumerate(zip(mine, _dependencies(mine))):
            pair = (row["kind"], int(row.get("peer", -1)))
            node_type, attr = _node_attr(row, counters[pair], group_names)
            counters[pair] += 1
            start = _micros(row["start_s"])
            nodes.append({"id": node_id, "name": str(row.get("name", "")), "type": node_type, "ctrl_deps": [], "data_deps": deps,
                          "start_time_micros": start, "duration_micros": _micros(row["end_s"]) - start, "attr": attr})  # fmt: skip
        out[rank] = nodes
    return out


def write_traces(rows: list[dict[str, Any]], prefix: str | Path, world_size: int | None = None) -> list[Path]:
    """Write ``PREFIX.RANK.et`` for every rank (0 .. world_size - 1; a rank without rows gets an
    empty trace) and ``PREFIX.comm_groups.json``; return the paths written."""
    nodes = rows_to_nodes(rows)
    ranks = world_size if world_size is not None else (max(nodes) + 1 if nodes else 0)
    if nodes and max(nodes) >= ranks:
        raise CollsimError(f"chakra: rows name rank {max(nodes)} but the world has {ranks} ranks")
    paths = []
    try:
        for rank in range(ranks):
            path = Path(f"{prefix}.{rank}.et")
            path.write_bytes(encode_nodes(nodes.get(rank, [])))
            paths.append(path)
        groups = Path(f"{prefix}.comm_groups.json")
        groups.write_text(json.dumps(comm_groups(rows), indent=1) + "\n")
    except OSError as error:
        raise CollsimError(f"chakra: cannot write {str(prefix) + '.*'!r}: {error.strerror or error}") from None
    return paths + [groups]


def _row_of(rank: int, node: dict[str, Any], groups: dict[str, list[int]]) -> dict[str, Any]:
    attr, node_type = node["attr"], node["type"]
    start = node["start_time_micros"] / 1e6
    row = {"rank": rank, "stream": attr.get("collsim_stream", ""), "name": node["name"], "start_s": start,
           "end_s": start + node["duration_micros"] / 1e6, "bytes": int(attr.get("comm_size", 0)), "peer": -1, "group": []}  # fmt: skip
    if node_type == COMP_NODE:
        row["kind"] = "compute"
        row.update({key: attr[key] for key in ("num_ops", "tensor_size") if key in attr})
    elif node_type == COMM_COLL_NODE:
        if attr.get("comm_type") not in _KIND_OF_COLLECTIVE:
            raise CollsimError(
                f"chakra: node {node['id']} of rank {rank}: collective type {attr.get('comm_type')!r} is not one collsim models"
            )
        row["kind"], row["group"] = _KIND_OF_COLLECTIVE[attr["comm_type"]], list(groups.get(str(attr.get("pg_name", "")), []))
    elif node_type in (COMM_SEND_NODE, COMM_RECV_NODE):
        row["kind"] = "send" if node_type == COMM_SEND_NODE else "recv"
        row["peer"] = int(attr.get("comm_dst" if node_type == COMM_SEND_NODE else "comm_src", -1))
    else:
        return {}  # metadata, memory and other nodes carry no work collsim replays
    return row


def _read_bounded(path: Path) -> bytes:
    size = path.stat().st_size
    if size > MAX_TRACE_BYTES:
        raise CollsimError(f"chakra: {str(path)!r} is {size:,} bytes; traces up to {MAX_TRACE_BYTES:,} bytes a rank are read")
    return path.read_bytes()


def read_traces(prefix: str | Path) -> list[dict[str, Any]]:
    """The rows of ``PREFIX.0.et``, ``PREFIX.1.et``, ... (and the groups of
    ``PREFIX.comm_groups.json`` when present): compute as durations, communication as sizes."""
    groups_path = Path(f"{prefix}.comm_groups.json")
    try:
        groups = json.loads(groups_path.read_text()) if groups_path.exists() else {}
        rows, rank = [], 0
        while Path(f"{prefix}.{rank}.et").exists():
            _, nodes = decode_nodes(_read_bounded(Path(f"{prefix}.{rank}.et")))
            rows += [row for row in (_row_of(rank, node, groups) for node in nodes) if row]
            rank += 1
    except OSError as error:
        raise CollsimError(f"chakra: cannot read {str(prefix) + '.*'!r}: {error.strerror or error}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CollsimError(f"chakra: {str(prefix)!r}: not a Chakra trace ({error})") from None
    if rank == 0:
        raise CollsimError(f"chakra: no trace file {str(prefix) + '.0.et'!r}; give the prefix of PREFIX.RANK.et files")
    return sorted(rows, key=lambda row: (row["rank"], row["start_s"], row["end_s"]))


def from_ddp_events(events: Iterable[dict[str, Any]], world_size: int) -> list[dict[str, Any]]:
    """Rows for every rank from a DDP step's event table (``sim.training`` DDP result events,
    rank 0's, the same on every rank): forward/backward/optimizer as compute, each bucket's
    ``comm`` as an all-reduce over all ranks; instants (gradient ready) left out."""
    rows = []
    for event in events:
        if event["kind"] == "comm":
            kind, stream = "all_reduce", "dp"
        elif event["kind"] in ("forward", "backward", "optimizer"):
            kind, stream = "compute", "compute"
        else:
            continue
        for rank in range(world_size):
            rows.append({"rank": rank, "stream": stream, "kind": kind, "name": event.get("name", ""), "start_s": event["start_s"],
                         "end_s": event["end_s"], "bytes": event.get("bytes", 0) if kind != "compute" else 0, "peer": -1,
                         "group": list(range(world_size)) if kind != "compute" else []})  # fmt: skip
    return rows
