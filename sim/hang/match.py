"""Match every rank's calls, group by group, by sequence number, and find where ranks block.

The algorithm is a worklist over arrivals, not a simulation that waits: a rank arrives at its
next call; a collective completes when every member of its group has arrived at the same
(group, sequence number), a send when its receiver has arrived at the matching receive. Each
call arrives once and each completion is checked once, so the work is linear in the calls (times
the group size) and the verdict comes in bounded time for any program, hang or not.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from sim.hang.programs import DTYPES, P2P, Call, Programs

__all__ = ["Blocked", "Key", "Mismatch", "Outcome", "fingerprint", "match", "sequence_keys", "wrapper_view"]

Key = tuple  # ("coll", group, seq) or ("p2p", group, src, dst, k)


@dataclass(frozen=True)
class Blocked:
    """Where one rank stopped: its call, the key it waits on and the ranks it waits for."""

    rank: int
    index: int
    call: Call
    seq: int
    waits_for: tuple[int, ...]


@dataclass(frozen=True)
class Mismatch:
    """A (group, sequence number) at which the members arrived with different calls."""

    group: str
    seq: int
    calls: dict[int, Call]  # rank -> its call there

    @cached_property
    def first_ranks(self) -> dict[tuple, int]:
        """Each distinct call as DETAIL's wrapper sees it (a barrier has no tensor), with the lowest
        rank making it."""
        found: dict[tuple, int] = {}
        for rank, call in self.calls.items():
            found.setdefault(wrapper_view(call), rank)
        return found

    @cached_property
    def nbytes(self) -> dict[int, int]:
        """Bytes each rank's call moves in (count x element size)."""
        return {rank: call.count * DTYPES[call.dtype] for rank, call in self.calls.items()}

    @cached_property
    def same_op(self) -> bool:
        return len({call.op for call in self.calls.values()}) == 1

    @cached_property
    def smallest_nbytes(self) -> int:
        return min(self.nbytes.values())

    @cached_property
    def largest(self) -> Call:
        """The call with the most bytes (the lowest rank's on a tie)."""
        return self.calls[max(self.nbytes, key=lambda rank: (self.nbytes[rank], -rank))]

    @property
    def differences(self) -> tuple[str, ...]:
        """Which aspects differ: op, count, dtype, root."""
        first = next(iter(self.calls.values()))
        return tuple(
            name
            for name in ("op", "count", "dtype", "root", "peer")
            if any(getattr(call, name) != getattr(first, name) for call in self.calls.values())
        )


@dataclass
class Outcome:
    """Where the matching stopped: per rank its position and state."""

    positions: list[int]
    states: list[str]  # completed | blocked | mismatched | dead | stalled
    seqs: list[list[int]]  # per rank, per call: its sequence number on its group (0 for events)
    completed: dict[tuple[int, str], int] = field(default_factory=dict)  # (rank, group) -> last completed seq
    blocked: list[Blocked] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)


def wrapper_view(call: Call) -> tuple:
    """What TORCH_DISTRIBUTED_DEBUG=DETAIL compares: the op, and the tensor unless a barrier."""
    return (call.op, () if call.op == "barrier" else (call.count, call.dtype))


def fingerprint(call: Call) -> tuple:
    """What must agree across ranks for a collective to be the same one."""
    return (call.op, call.count, call.dtype, call.root)


def sequence_keys(programs: Programs) -> tuple[list[list[int]], list[list[Key | None]]]:
    """Per rank and call: its sequence number (1-based, per group, collectives and p2p counted
    apart as NCCL does) and its match key (None for events)."""
    seqs, keys = [], []
    for rank, calls in enumerate(programs.ranks):
        counts: Counter = Counter()
        rank_seqs, rank_keys = [], []
        for call in calls:
            if call.is_event:
                rank_seqs.append(0)
                rank_keys.append(None)
                continue
            kind = "p2p" if call.op in P2P else "coll"
            counts[(kind, call.group)] += 1
            rank_seqs.append(counts[(kind, call.group)])
            rank_keys.append(_key(call, rank, counts))
        seqs.append(rank_seqs)
        keys.append(rank_keys)
    return seqs, keys


def _key(call: Call, rank: int, counts: Counter) -> Key:
    if call.op not in P2P:
        return ("coll", call.group, counts[("coll", call.group)])
    src, dst = (rank, call.peer) if call.op == "send" else (call.peer, rank)
    counts[("pair", call.group, src, dst, call.op)] += 1
    return ("p2p", call.group, src, dst, counts[("pair", call.group, src, dst, call.op)])


def match(programs: Programs) -> Outcome:
    """Run the worklist to its fixed point (see the module's docstring)."""
    seqs, keys = sequence_keys(programs)
    world = programs.world_size
    outcome = Outcome([0] * world, ["running"] * world, seqs)
    arrived: dict[Key, dict[int, Call]] = defaultdict(dict)
    work = list(range(world))
    while work:
        rank = work.pop()
        for ready in _arrive(programs, outcome, keys, arrived, rank):
            work.append(ready)
    _finish(programs, outcome, keys, arrived)
    return outcome


def _arrive(programs: Programs, outcome: Outcome, keys: list, arrived: dict, rank: int) -> list[int]:
    """Rank ``rank`` moves to its next call; the ranks a completion released are returned."""
    calls, index = programs.ranks[rank], outcome.positions[rank]
    while index < len(calls) and calls[index].is_event:
        call = calls[index]
        if call.op == "die" or call.seconds is None or call.seconds >= programs.timeout_for("nccl"):  # the shorter default
            outcome.states[rank] = "dead" if call.op == "die" else "stalled"
            return []
        index += 1  # a stall shorter than the timeout only delays the rank
    outcome.positions[rank] = index
    if index == len(calls):
        outcome.states[rank] = "completed"
        return []
    key = keys[rank][index]
    arrived[key][rank] = calls[index]
    return _complete(programs, outcome, key, arrived)


def _complete(programs: Programs, outcome: Outcome, key: Key, arrived: dict) -> list[int]:
    present = arrived[key]
    needed = programs.groups[key[1]] if key[0] == "coll" else (key[2], key[3])
    if len(present) != len(needed):  # every arrival is a member (parse_programs checks it): counting is enough
        return []
    calls = list(present.values())
    same = all(fingerprint(call) == fingerprint(calls[0]) for call in calls)
    if key[0] == "p2p":
        same = present[key[2]].op == "send" and present[key[3]].op == "recv" and present[key[2]].count == present[key[3]].count
        same = same and present[key[2]].dtype == present[key[3]].dtype
    if not same:
        outcome.mismatches.append(
            Mismatch(key[1], outcome.seqs[min(present)][outcome.positions[min(present)]], dict(sorted(present.items())))
        )
        for rank in present:
            outcome.states[rank] = "mismatched"
        return []
    del arrived[key]
    for rank in present:
        outcome.completed[(rank, key[1])] = outcome.seqs[rank][outcome.positions[rank]]
        outcome.positions[rank] += 1
    return sorted(present)


def _finish(programs: Programs, outcome: Outcome, keys: list, arrived: dict) -> None:
    """Name each waiting rank's call and the ranks it waits for."""
    for rank, state in enumerate(outcome.states):
        if state not in ("running", "mismatched"):
            continue
        index = outcome.positions[rank]
        key = keys[rank][index]
        needed = programs.groups[key[1]] if key[0] == "coll" else (key[2], key[3])
        waits_for = tuple(other for other in needed if other not in arrived[key])
        if state == "running":
            outcome.states[rank] = "blocked"
        outcome.blocked.append(Blocked(rank, index, programs.ranks[rank][index], outcome.seqs[rank][index], waits_for))
