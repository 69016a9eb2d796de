"""Per-rank programs of collectives: the data the hang explainer reads.

A program file (YAML or JSON, read through :func:`sim.files.load_mapping`: bounded, no aliases)::

    timeout_s: 600            # the process group's timeout; default torch's: 600 s NCCL, 1800 s gloo
    groups: {tp0: [0, 1]}     # optional; "world" (every rank) always exists
    ranks:                    # one list of calls per rank, rank 0 first
      - [{op: all_reduce, count: 1024, dtype: float32, group: world, tag: grads}]
      - [{op: all_reduce, count: 2048, dtype: float32, group: world, tag: grads}]

A call's ``op`` is a collective (all_reduce, broadcast, reduce, all_gather, reduce_scatter,
all_to_all, barrier), a point-to-point ``send``/``recv`` (``peer``: a rank of the group), or an
event of the rank: ``die`` (its process exits) or ``stall`` (it stops issuing calls, for
``seconds`` or for ever).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sim.errors import CollsimError

__all__ = [
    "COLLECTIVES",
    "DEFAULT_TIMEOUT_S",
    "DTYPES",
    "EVENTS",
    "MAX_CALLS",
    "MAX_GROUPS",
    "MAX_RANKS",
    "P2P",
    "Call",
    "Programs",
    "check_timeout",
    "load_programs",
    "parse_programs",
]

COLLECTIVES = ("all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all", "barrier")
P2P = ("send", "recv")
EVENTS = ("die", "stall")
DTYPES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "uint8": 1}
MAX_RANKS = 1024
MAX_CALLS = 100_000  # all ranks together: the explainer's work is linear in this
MAX_GROUPS = 4_096
# torch's defaults: default_pg_nccl_timeout for NCCL, default_pg_timeout for every other backend
DEFAULT_TIMEOUT_S = {"nccl": 600.0, "gloo": 1800.0}
_KEYS = {"op", "count", "dtype", "group", "tag", "peer", "root", "seconds"}


@dataclass(frozen=True)
class Call:
    """One call of a rank's program (``count``: elements of the input tensor)."""

    op: str
    count: int = 1
    dtype: str = "float32"
    group: str = "world"
    tag: str = ""
    peer: int | None = None  # send/recv: the other rank (global)
    root: int | None = None  # broadcast/reduce: the source/destination rank (global)
    seconds: float | None = None  # stall: how long; None for ever

    @property
    def is_event(self) -> bool:
        return self.op in EVENTS

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value not in (None, "")}


@dataclass(frozen=True)
class Programs:
    """Every rank's calls, the groups (name -> global ranks) and the process-group timeout."""

    ranks: tuple[tuple[Call, ...], ...]
    groups: dict[str, tuple[int, ...]]
    timeout_s: float | None = None  # None: torch's default for each backend

    def timeout_for(self, backend: str) -> float:
        """The timeout a backend's process group has: the given one, else torch's default."""
        return self.timeout_s if self.timeout_s is not None else DEFAULT_TIMEOUT_S[backend]

    @property
    def world_size(self) -> int:
        return len(self.ranks)

    def to_dict(self) -> dict[str, Any]:
        groups = {name: list(members) for name, members in self.groups.items() if name != "world"}
        return {"timeout_s": self.timeout_s, "groups": groups, "ranks": [[call.to_dict() for call in calls] for calls in self.ranks]}


def load_programs(path: str | Path) -> Programs:
    """A program file's programs (see the module's docstring)."""
    from sim.files import load_mapping

    return parse_programs(load_mapping(path, "program file"))


def parse_programs(data: Any) -> Programs:
    """Validated :class:`Programs` from plain data (a parsed YAML/JSON mapping)."""
    if not isinstance(data, dict):
        raise CollsimError("programs: give a mapping with 'ranks' (a list of calls per rank), optional 'groups' and 'timeout_s'")
    unknown = set(data) - {"ranks", "groups", "timeout_s", "about"}
    if unknown:
        raise CollsimError(f"programs: unknown key(s) {sorted(map(str, unknown))[:5]}; allowed: ranks, groups, timeout_s, about")
    ranks = _rank_lists(data.get("ranks"))
    groups = _groups(data.get("groups") or {}, len(ranks))
    timeout_s = None if data.get("timeout_s") is None else check_timeout(data["timeout_s"])
    member_sets = {name: frozenset(members) for name, members in groups.items()}  # membership in O(1)
    parsed = tuple(tuple(_call(item, rank, k, groups, member_sets) for k, item in enumerate(calls)) for rank, calls in enumerate(ranks))
    return Programs(parsed, groups, timeout_s)


def _rank_lists(value: Any) -> list[list[Any]]:
    if isinstance(value, dict) and all(isinstance(key, int) for key in value):
        if sorted(value) != list(range(len(value))):
            raise CollsimError(f"ranks: keys must be the ranks 0..{len(value) - 1}, got {sorted(value)[:8]}")
        value = [value[rank] for rank in range(len(value))]
    if not isinstance(value, list) or not value or not all(isinstance(calls, list) for calls in value):
        raise CollsimError("ranks: give a list with one list of calls per rank (rank 0 first)")
    if len(value) > MAX_RANKS:
        raise CollsimError(f"ranks: {len(value):,} ranks; up to {MAX_RANKS:,} are explained")
    total = sum(len(calls) for calls in value)
    if total > MAX_CALLS:
        raise CollsimError(f"ranks: {total:,} calls in all; up to {MAX_CALLS:,} are explained")
    return value


def _groups(value: Any, world_size: int) -> dict[str, tuple[int, ...]]:
    if not isinstance(value, dict):
        raise CollsimError("groups: give a mapping of group name to its list of global ranks")
    if len(value) > MAX_GROUPS:
        raise CollsimError(f"groups: {len(value):,} groups; up to {MAX_GROUPS:,} are explained")
    groups = {"world": tuple(range(world_size))}
    for name, members in value.items():
        if not isinstance(name, str) or name == "world" or not name:
            raise CollsimError(f"groups: {name!r} is not a group name; 'world' is predefined, give other names")
        if not isinstance(members, list) or not members or not all(type(r) is int and 0 <= r < world_size for r in members):
            raise CollsimError(f"groups: {name} must list ranks of 0..{world_size - 1}, got {str(members)[:80]}")
        if len(set(members)) != len(members):
            raise CollsimError(f"groups: {name} lists a rank twice: {members[:16]}")
        groups[name] = tuple(sorted(members))
    return groups


def _call(item: Any, rank: int, index: int, groups: dict[str, tuple[int, ...]], member_sets: dict[str, frozenset]) -> Call:
    where = f"rank {rank} call {index}"
    if not isinstance(item, dict) or "op" not in item:
        raise CollsimError(f"ranks: {where}: give a mapping with 'op' (and count, dtype, group, tag, peer, root)")
    unknown = set(item) - _KEYS
    if unknown:
        raise CollsimError(f"ranks: {where}: unknown key(s) {sorted(map(str, unknown))}; allowed: {', '.join(sorted(_KEYS))}")
    op = item["op"]
    if op not in COLLECTIVES + P2P + EVENTS:
        raise CollsimError(f"ranks: {where}: op {str(op)[:40]!r} is not one of {', '.join(COLLECTIVES + P2P + EVENTS)}")
    group = item.get("group", "world")
    if group not in groups:
        raise CollsimError(f"ranks: {where}: group {str(group)[:40]!r} is not defined; groups: {', '.join(groups)}")
    if rank not in member_sets[group] and op not in EVENTS:
        raise CollsimError(f"ranks: {where}: rank {rank} is not a member of group {group} {list(groups[group])[:16]}")
    dtype = item.get("dtype", "float32")
    if dtype not in DTYPES:
        raise CollsimError(f"ranks: {where}: dtype {str(dtype)[:40]!r} is not one of {', '.join(DTYPES)}")
    count = item.get("count", 0 if op in ("barrier",) + EVENTS else 1)
    if type(count) is not int or not 0 <= count <= 2**40:
        raise CollsimError(f"ranks: {where}: count must be a whole number of elements 0..2**40, got {str(count)[:40]}")
    peer = _rank_field(item, "peer", op in P2P, where, groups[group], member_sets[group], rank)
    root = _rank_field(item, "root", op in ("broadcast", "reduce"), where, groups[group], member_sets[group], None)
    seconds = _number(item["seconds"], f"{where}: seconds", 0.0, 1e9) if "seconds" in item else None
    return Call(op, count, dtype, group, str(item.get("tag", ""))[:80], peer, root, seconds)


def _rank_field(
    item: dict, key: str, needed: bool, where: str, members: tuple[int, ...], member_set: frozenset, own: int | None
) -> int | None:
    if key not in item:
        if needed:
            raise CollsimError(f"ranks: {where}: {item['op']} needs '{key}' (a rank of its group {list(members)[:16]})")
        return None
    value = item[key]
    if not needed or type(value) is not int or value not in member_set or value == own:
        raise CollsimError(
            f"ranks: {where}: {key} {str(value)[:40]} must be another rank of the group {list(members)[:16]}, for {', '.join(P2P) if key == 'peer' else 'broadcast, reduce'}"
        )
    return value


def check_timeout(value: Any, what: str = "timeout_s") -> float:
    """A process-group timeout in seconds, within the bounds of :data:`sim.hang.fields.FIELDS`."""
    from sim.hang.fields import FIELDS

    info = FIELDS["timeout_s"]
    return _number(value, what, info.low, info.high)


def _number(value: Any, what: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise CollsimError(f"{what}: give a number of seconds from {low:g} to {high:g}, got {str(value)[:40]}")
    return float(value)
