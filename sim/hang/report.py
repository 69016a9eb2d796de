"""explain(programs) -> HangReport: which ranks block where, why, and what each tool would show.

The report is plain data (``to_dict()`` is JSON) for the CLI and an explorer page alike."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sim.hang import messages
from sim.hang.match import Blocked, Mismatch, Outcome, fingerprint, match
from sim.hang.programs import DTYPES, P2P, Call, Programs, check_timeout, parse_programs

__all__ = ["HangReport", "RankReport", "ToolLine", "explain"]


@dataclass(frozen=True)
class RankReport:
    """One rank: its state, the call it stopped at, whom it waits for, its first divergent call."""

    rank: int
    state: str  # completed | blocked | mismatched | dead | stalled
    call_index: int | None
    group: str | None
    seq: int | None
    op: str | None
    tag: str
    waits_for: tuple[int, ...]
    first_divergence: str | None


@dataclass(frozen=True)
class ToolLine:
    """What a tool shows on one rank: ``outcome`` error, abort, timeout, completes or nothing."""

    tool: str
    rank: int
    outcome: str
    message: str


@dataclass(frozen=True)
class HangReport:
    """The verdict: completes, mismatch, deadlock (a wait-for cycle) or missing_party."""

    verdict: str
    summary: str
    ranks: tuple[RankReport, ...]
    wait_for: tuple[tuple[int, int], ...]
    cycle: tuple[int, ...]
    missing: tuple[int, ...]
    mismatches: tuple[dict[str, Any], ...]
    tools: tuple[ToolLine, ...]
    flight_recorder: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None  # None: torch's defaults, 600 s NCCL and 1800 s gloo

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self, tool: str) -> list[ToolLine]:
        """The lines of one tool (nccl, nccl_detail, gloo, gloo_detail)."""
        return [line for line in self.tools if line.tool == tool]


def explain(programs: Programs | dict[str, Any], timeout_s: float | None = None) -> HangReport:
    """Explain per-rank programs (a :class:`Programs` or its plain data); ``timeout_s`` overrides
    the programs' process-group timeout."""
    if not isinstance(programs, Programs):
        programs = parse_programs(programs)
    if timeout_s is not None:
        programs = replace(programs, timeout_s=check_timeout(timeout_s))
    outcome = match(programs)
    edges = tuple((b.rank, other) for b in outcome.blocked if b.rank not in _mismatched(outcome) for other in b.waits_for)
    cycle = _cycle(edges)
    missing = tuple(sorted({other for _, other in edges if outcome.states[other] in ("completed", "dead", "stalled")}))
    verdict = _verdict(outcome, cycle, missing)
    tools = tuple(_nccl(programs, outcome, cycle)) + tuple(_gloo(programs, outcome))
    return HangReport(
        verdict,
        _summary(verdict, outcome, cycle, missing),
        tuple(_rank_reports(programs, outcome)),
        edges,
        cycle,
        missing,
        tuple(_mismatch_dict(m) for m in outcome.mismatches),
        tools,
        flight_classification(programs, outcome),
        programs.timeout_s,
    )


def _mismatched(outcome: Outcome) -> set[int]:
    return {rank for mismatch in outcome.mismatches for rank in mismatch.calls}


def _cycle(edges: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    import networkx as nx

    graph = nx.DiGraph(list(edges))
    try:
        return tuple(source for source, _ in nx.find_cycle(graph))
    except nx.NetworkXNoCycle:
        return ()


def _verdict(outcome: Outcome, cycle: tuple[int, ...], missing: tuple[int, ...]) -> str:
    if outcome.mismatches:
        return "mismatch"
    if missing:
        return "missing_party"
    if cycle:
        return "deadlock"
    return "missing_party" if outcome.blocked else "completes"  # ranks that stop with no one waiting hang nobody


def _summary(verdict: str, outcome: Outcome, cycle: tuple[int, ...], missing: tuple[int, ...]) -> str:
    if verdict == "mismatch":
        first = outcome.mismatches[0]
        return f"ranks {_ranks_text(sorted(first.calls))} disagree at {first.group} #{first.seq}: {', '.join(first.differences)} differ"
    if verdict == "deadlock":
        return f"wait-for cycle {' -> '.join(map(str, cycle + cycle[:1]))}: each rank waits for the next in another call"
    if verdict == "missing_party":
        waiting = sorted(b.rank for b in outcome.blocked)
        return f"ranks {_ranks_text(waiting)} wait for ranks {_ranks_text(list(missing))}, which never come ({', '.join(outcome.states[r] for r in missing)})"
    if all(state == "completed" for state in outcome.states):
        return "every rank completes its program"
    return "every call completes; no rank waits for another"


def _call_text(call: Any) -> str:
    size = "" if call.op == "barrier" else f" {call.count} x {call.dtype}"
    peer = f" peer {call.peer}" if call.peer is not None else ""
    return f"{call.op}{size}{peer} on {call.group}" + (f" ({call.tag})" if call.tag else "")


def _rank_reports(programs: Programs, outcome: Outcome) -> list[RankReport]:
    where = {b.rank: b for b in outcome.blocked}
    divergence = first_divergences(programs, outcome)
    reports = []
    for rank, state in enumerate(outcome.states):
        stop = where.get(rank)
        call = stop.call if stop else None
        reports.append(
            RankReport(
                rank,
                state,
                stop.index if stop else outcome.positions[rank],
                call.group if call else None,
                stop.seq if stop else None,
                call.op if call else None,
                call.tag if call else "",
                stop.waits_for if stop else (),
                divergence.get(rank),
            )
        )
    return reports


def first_divergences(programs: Programs, outcome: Outcome) -> dict[int, str]:
    """Per rank, its first call (per group, by sequence number) unlike the most common one there
    (ties: the lowest rank's), or the first sequence number it never reaches that others do. Tags
    count: a skipped call shifts every later one, and calls of the same shape (every transformer
    block's all-gather) then match silently, tag against another tag, until the shapes differ."""
    lists: dict[tuple[str, int], list[Call]] = defaultdict(list)
    for rank, calls in enumerate(programs.ranks):
        for call in calls:
            if not call.is_event and call.op not in P2P:
                lists[(call.group, rank)].append(call)
    found: dict[int, str] = {}
    for group, members in programs.groups.items():
        for seq in range(max((len(lists[(group, r)]) for r in members), default=0)):
            prints = {
                r: (*fingerprint(lists[(group, r)][seq]), lists[(group, r)][seq].tag) for r in members if seq < len(lists[(group, r)])
            }
            common = Counter(prints.values()).most_common(1)[0][0]  # max keeps the first: the lowest rank's on a tie
            for rank in members:
                if rank in found:
                    continue
                if rank not in prints:
                    found[rank] = f"never calls {group} #{seq + 1} ({common[0]}), which ranks {_ranks_text(sorted(prints))} call"
                elif prints[rank] != common:
                    found[rank] = (
                        f"{group} #{seq + 1}: {_call_text(lists[(group, rank)][seq])}, where the others call {common[0]} {common[1]} x {common[2]}"
                        + (f" ({common[4]})" if common[4] else "")
                    )
    return found


def _ranks_text(ranks: list[int]) -> str:
    return str(ranks) if len(ranks) <= 8 else f"[{', '.join(map(str, ranks[:8]))}, ... {len(ranks)} in all]"


def _mismatch_dict(mismatch: Mismatch) -> dict[str, Any]:
    return {
        "group": mismatch.group,
        "seq": mismatch.seq,
        "differences": list(mismatch.differences),
        "calls": {r: c.to_dict() for r, c in mismatch.calls.items()},
    }


def _nccl(programs: Programs, outcome: Outcome, cycle: tuple[int, ...]) -> list[ToolLine]:
    lines = _streams_note(outcome, cycle)
    for blocked in outcome.blocked:
        last = outcome.completed.get((blocked.rank, blocked.call.group), 0)
        watchdog = " | ".join(messages.nccl_watchdog(programs, blocked, last))
        lines.append(ToolLine("nccl", blocked.rank, "timeout", watchdog))
        lines.append(
            _detail_line("nccl_detail", programs, outcome, blocked, "cuda") or ToolLine("nccl_detail", blocked.rank, "timeout", watchdog)
        )
    return lines


def _streams_note(outcome: Outcome, cycle: tuple[int, ...]) -> list[ToolLine]:
    """A note before NCCL's lines when the cycle crosses process groups (collectives only: a
    rank's send and recv to one peer share a stream)."""
    calls = [b.call for b in outcome.blocked if b.rank in cycle]
    groups = sorted({call.group for call in calls})
    if len(groups) < 2 or any(call.op in P2P for call in calls):
        return []
    return [ToolLine("nccl", min(cycle), "note", messages.nccl_streams_note(groups))]


def _detail_line(tool: str, programs: Programs, outcome: Outcome, blocked: Blocked, device: str) -> ToolLine | None:
    """DETAIL's wrapper checks collectives (not send/recv): a mismatch, or rank 0 of the group
    naming the ranks that never reach its monitored barrier."""
    timeout_s = programs.timeout_for(tool.split("_")[0])  # DETAIL's gloo helper group has the wrapped group's timeout
    if blocked.call.op in P2P:  # the wrapper checks collectives only
        return None
    for mismatch in outcome.mismatches:
        if blocked.rank in mismatch.calls and mismatch.group == blocked.call.group:
            return ToolLine(tool, blocked.rank, "error", messages.detail_mismatch(mismatch, blocked.rank, device))
    members = programs.groups[blocked.call.group]
    if blocked.rank == members[0] and blocked.waits_for:
        group_ranks = [members.index(r) for r in blocked.waits_for]
        return ToolLine(tool, blocked.rank, "error", messages.detail_monitored_barrier(timeout_s, group_ranks))
    return ToolLine(tool, blocked.rank, "error", messages.detail_barrier_peer(timeout_s, members.index(blocked.rank)))


def _gloo(programs: Programs, outcome: Outcome) -> list[ToolLine]:
    lines = []
    for blocked in outcome.blocked:
        lines.append(_gloo_line(programs, outcome, blocked))
        lines.append(_detail_line("gloo_detail", programs, outcome, blocked, "cpu") or replace(lines[-1], tool="gloo_detail"))
    return lines


def _gloo_line(programs: Programs, outcome: Outcome, blocked: Blocked) -> ToolLine:
    rank = blocked.rank
    for mismatch in outcome.mismatches:
        if rank not in mismatch.calls:
            continue
        if mismatch.same_op:
            if mismatch.largest.count * DTYPES[mismatch.largest.dtype] == mismatch.smallest_nbytes:
                return ToolLine("gloo", rank, "completes", "no error: same bytes, different dtypes; the values are garbage")
            if mismatch.nbytes[rank] == mismatch.smallest_nbytes:
                return ToolLine("gloo", rank, "abort", messages.gloo_size_abort(mismatch.largest, blocked.call, len(mismatch.calls)))
            return ToolLine("gloo", rank, "error", "Connection reset by peer (the rank that received too much aborted)")
        return ToolLine("gloo", rank, "timeout", messages.gloo_timeout(programs.timeout_for("gloo")))
    if any(outcome.states[other] in ("dead", "completed") for other in blocked.waits_for):  # its process exited
        return ToolLine("gloo", rank, "error", "Connection reset by peer / Connection closed by peer (a rank it waits for exited)")
    return ToolLine("gloo", rank, "timeout", messages.gloo_timeout(programs.timeout_for("gloo"), blocked.call.op))


def flight_classification(programs: Programs, outcome: Outcome) -> dict[str, Any]:
    """What torch's flight-recorder analyzer reports first: a mismatch's culprits, or the ranks
    missing from a collective (the first blocked collective of the lowest blocked rank)."""
    if outcome.mismatches:
        mismatch = outcome.mismatches[0]
        first_rank = min(mismatch.calls)
        first = mismatch.calls[first_rank]
        culprits = {r: _error_type(first, call) for r, call in mismatch.calls.items() if fingerprint(call) != fingerprint(first)}
        return {"classification": "mismatch", "group": mismatch.group, "seq": mismatch.seq, "culprits": culprits}
    collective = sorted((b for b in outcome.blocked if b.call.op not in P2P), key=lambda b: b.rank)
    if collective:
        blocked = collective[0]
        return {
            "classification": "not_all_ranks_joining",
            "group": blocked.call.group,
            "seq": blocked.seq,
            "culprits": {r: "missing" for r in blocked.waits_for},
        }
    if outcome.blocked:
        blocked = outcome.blocked[0]
        return {
            "classification": "unmatched_p2p",
            "group": blocked.call.group,
            "seq": blocked.seq,
            "culprits": {r: "missing" for r in blocked.waits_for},
        }
    return {"classification": "no_error", "group": None, "seq": None, "culprits": {}}


def _error_type(first: Any, other: Any) -> str:
    if first.op != other.op:
        return "COLLECTIVE_TYPE_MISMATCH"
    if first.count != other.count:
        return "SIZE_OR_SYNTAX_MISMATCH"
    return "COLLECTIVE_DTYPE_MISMATCH"
