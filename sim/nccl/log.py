"""An nccl-tests text log read line by line: its result rows, its ranks, and the checks every
reader makes (``collsim hardware fit`` here, ``collsim real import`` in real.nccl_tests).

A log is refused when its run failed ("Test NCCL failure", "Test CUDA failure": nccl-tests stopped
there) or when a time is negative or not a number (the line is named). A size whose ``#wrong``
column is above 0 (nccl-tests found wrong results) is left out with a warning naming its lines;
a log that ends without nccl-tests' closing lines ("# Out of bounds values", "# Avg bus
bandwidth") is read with a warning that it looks truncated.

The NCCL release a log names (:func:`release_named`) is read in the same pass: the first line that
names one, in any of the forms nccl-tests logs carry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from sim.errors import CollsimError

EXPECTED = "nccl-tests result lines such as '  1048576  262144  float  sum  -1  40.10  26.15  39.22  0  ...'"
_FAILURE = re.compile(r"\bTest (?:NCCL |CUDA )?failure\b")
_RANK = re.compile(r"#\s+Rank\s+(\d+)\s+Group")
_TRAILER = ("# Out of bounds values", "# Avg bus bandwidth")
_INF = float("inf")
_SHOWN = 8  # rows named in a warning; the rest are counted
# nccl-tests binary name -> collsim op. Every binary prints the same columns (size count type redop
# root time algbw busbw #wrong, twice), so only its name tells which collective a log timed.
PROGRAMS = {
    "all_reduce_perf": "all_reduce", "all_gather_perf": "all_gather", "reduce_scatter_perf": "reduce_scatter",
    "broadcast_perf": "broadcast", "reduce_perf": "reduce", "sendrecv_perf": "send_recv", "alltoall_perf": "all_to_all",
    "gather_perf": "gather", "scatter_perf": "scatter", "hypercube_perf": "hypercube",
}  # fmt: skip
_PROGRAM = re.compile("|".join(PROGRAMS))  # the leftmost name wins: "reduce_perf" inside "all_reduce_perf" starts later
# The NCCL release a log names: "NCCL version 2.29.3+cuda13.1", bare (nccl-tests prints it) or after NCCL_DEBUG=INFO's
# "NCCL INFO " (NCCL v2.27.7-1 src/init.cc:538 VERSION_STRING); nccl-tests >= 2.13's header "# nccl-tests version 2.13.10
# nccl-headers=22301 nccl-library=22301" (the library's code: the one that ran); the `# NCCL:` collection header of the
# shipped logs (real/data/nccl-tests) where it says the release was printed, not "inferred" or "not printed".
_PRINTED = re.compile(r"\bNCCL version v?(\d+\.\d+\.\d+)")
_LIBRARY = re.compile(r"\bnccl-library=(\d+)")
_COLLECTED = re.compile(r"#\s*NCCL:\s+v?(\d+\.\d+\.\d+)")


class Result(NamedTuple):
    """One size of a log: its line, and nccl-tests' columns (times in us, bandwidths in GB/s); a
    named tuple, not a dataclass: a 50 MB log has 400,000 of them."""

    line: int
    size_bytes: int
    count: int
    dtype: str
    redop: str
    root: int
    out_of_place: tuple[float, ...]  # time_us, algbw, busbw[, #wrong]
    in_place: tuple[float, ...]  # the same, or () where the log has one half


@dataclass
class LogChecks:
    """What a pass over a log saw besides its rows: ranks, wrong sizes, its closing lines."""

    name: str
    ranks: set[int] = field(default_factory=set)
    wrong: list[tuple[str, int]] = field(default_factory=list)  # ("line 45", size) left out
    rows: int = 0
    last_row_line: int = 0
    trailer_line: int = 0
    op: str | None = None  # the op of the first nccl-tests program a line names (program_op), comment or command line
    release: str | None = None  # the NCCL release the first line naming one names ("2.21.5": release_named)
    release_line: int = 0  # that line's number

    @property
    def rank_count(self) -> int | None:
        """Ranks by the "#  Rank N" lines (the highest + 1: some logs list only a few), or None."""
        return max(self.ranks) + 1 if self.ranks else None

    def warnings(self) -> list[str]:
        """One line per problem that leaves the log usable (left-out sizes, a missing end)."""
        out = []
        if self.wrong:
            named = ", ".join(f"{where} ({size} B)" for where, size in self.wrong[:_SHOWN])
            more = f" and {len(self.wrong) - _SHOWN} more" if len(self.wrong) > _SHOWN else ""
            out.append(f"{self.name}: left out {len(self.wrong)} size(s) whose #wrong column is above 0 "
                       f"(nccl-tests found wrong results there): {named}{more}")  # fmt: skip
        if self.rows and self.trailer_line < self.last_row_line:
            out.append(f"{self.name}: the log looks truncated: no '# Out of bounds values' / '# Avg bus bandwidth' line after its "
                       f"last result (line {self.last_row_line}); the run may have stopped early, {self.rows} size(s) read")  # fmt: skip
        return out


def results(lines: Iterable[str], checks: LogChecks, headers: list[str] | None = None) -> Iterator[Result]:
    """The result rows of a log's lines, checked (see the module's docstring); ``headers``, when
    given, receives the comment lines (other readers take the op, devices and version from them)."""
    for number, line in enumerate(lines, 1):
        if line.startswith("#"):
            _comment(line, number, checks)
            if headers is not None:
                headers.append(line)
            continue
        if "failure" in line and _FAILURE.search(line):
            raise CollsimError(f"{checks.name} line {number}: the run failed ({line.strip()[:160]!r}); nccl-tests stopped there, "
                               "so the log is not a working run's times: fix the run and take a new log")  # fmt: skip
        result = parse_result(line, number, checks.name)
        if result is None:
            checks.op = checks.op or program_op(line)  # "$ ./build/alltoall_perf -b 8 ..." before the table
            _release(line, number, checks)
            continue
        checks.last_row_line = number
        if _wrong(result.out_of_place) or _wrong(result.in_place):
            checks.wrong.append((f"line {number}", result.size_bytes))
            continue
        checks.rows += 1
        yield result


def _comment(line: str, number: int, checks: LogChecks) -> None:
    checks.op = checks.op or program_op(line)
    _release(line, number, checks)
    if line.startswith(_TRAILER):
        checks.trailer_line = number
    elif "Rank" in line:
        match = _RANK.match(line)
        if match:
            checks.ranks.add(int(match.group(1)))


def _release(line: str, number: int, checks: LogChecks) -> None:
    if checks.release is None:
        checks.release = release_named(line)
        checks.release_line = number if checks.release else 0


def release_named(line: str) -> str | None:
    """The NCCL release one line of a log names ("2.21.5"), or None: "NCCL version 2.21.5+cuda12.4"
    (bare or after "NCCL INFO"), nccl-tests' "nccl-library=22301" (not its nccl-headers=), a
    "# NCCL:  2.26.2+cuda12.8 (printed)" collection header. A comment saying "inferred" or "not
    printed" names none: a collector's guess is not the release that ran."""
    if "NCCL" not in line and "nccl-library" not in line:
        return None
    if line.startswith("#") and ("inferred" in line or "not printed" in line):
        return None
    found = _PRINTED.search(line) or _COLLECTED.match(line)
    if found:
        return found.group(1)
    library = _LIBRARY.search(line)
    return version_of_code(int(library.group(1))) if library else None


def version_of_code(code: int) -> str:
    """NCCL_VERSION_CODE as a release: major x 10000 + minor x 100 + patch from 2.9 on (22301 is
    2.23.1), major x 1000 + minor x 100 + patch before (2708 is 2.7.8): NCCL v2.27.7-1 src/nccl.h.in:25."""
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def named_release(lines: Iterable[str]) -> tuple[str, int] | None:
    """(release, line number) of the first line of ``lines`` that names an NCCL release
    (:func:`release_named`), or None where none does."""
    for number, line in enumerate(lines, 1):
        found = release_named(line)
        if found:
            return found, number
    return None


def _wrong(half: tuple[float, ...]) -> bool:
    return len(half) > 3 and half[3] > 0


def parse_result(line: str, number: int, name: str) -> Result | None:
    """A result line ("size count type redop [root] time algbw busbw #wrong time algbw busbw
    #wrong"), or None for any other line; a negative or not-a-number time is refused."""
    parts = line.split()
    if len(parts) < 7 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    values = parts[4:]
    has_root = len(values) not in (4, 8) and values[0].lstrip("-").isdigit()  # 4, 8: time algbw busbw #wrong, once or twice
    try:
        numbers = tuple(map(float, values[1:] if has_root else values))
    except ValueError:
        numbers = _numbers(values[1:] if has_root else values)
        if numbers is None:
            return None
    width = 3 if len(numbers) in (3, 6) else 4  # time algbw busbw [#wrong] per half
    out_of_place, in_place = numbers[:width], numbers[width : 2 * width]
    if len(out_of_place) < 3:
        return None
    if not (0 <= out_of_place[0] < _INF and (not in_place or 0 <= in_place[0] < _INF)):  # NaN fails every comparison
        bad = out_of_place[0] if not 0 <= out_of_place[0] < _INF else in_place[0]
        check_time(bad, f"{name} line {number}", line.strip()[:120])
    return Result(number, int(parts[0]), int(parts[1]), parts[2], parts[3], int(values[0]) if has_root else -1, out_of_place, in_place)


def _numbers(tokens: list[str]) -> tuple[float, ...] | None:
    """The numbers of a result line with "N/A" columns (read as 0), or None if one is not a number."""
    try:
        return tuple(0.0 if token == "N/A" else float(token) for token in tokens)
    except ValueError:
        return None


def check_time(time_us: float, where: str, shown: str) -> None:
    """Refuse a time that is negative or not a number (NaN, inf), naming where it is."""
    if not 0 <= time_us < _INF:  # NaN fails every comparison
        what = "negative" if time_us < 0 else "not a finite number"
        raise CollsimError(f"{where}: time {time_us} us is {what} ({shown!r}); a measured time is a number >= 0: check or rerun the log")


def program_op(text: str) -> str | None:
    """The op of the first nccl-tests program name in ``text`` ("# Collective test starting:
    all_gather_perf", a command line "./build/alltoall_perf -b 8 ..."), or None where none is."""
    found = _PROGRAM.search(text)
    return PROGRAMS[found.group(0)] if found else None


def unknown_op(name: str, flag: str | None = None) -> CollsimError:
    """The error for a log that names no nccl-tests program: its op cannot be told (the columns
    of every binary are the same), and how to say it."""
    given = f", or give {flag} (e.g. {flag} all_gather)" if flag else ""
    return CollsimError(
        f"{name}: cannot tell which collective this nccl-tests log timed: it names no nccl-tests program "
        f"({', '.join(PROGRAMS)}); keep the line nccl-tests prints ('# Collective test starting: all_gather_perf') "
        f"or the command that ran it, or add such a line at the top{given}"
    )


def not_a_log(name: str) -> CollsimError:
    """The error for a file with no result lines: what was expected."""
    return CollsimError(
        f"{name} is not an nccl-tests output: it has no {EXPECTED}; give the stdout of all_reduce_perf or another nccl-tests binary"
    )


__all__ = ["EXPECTED", "PROGRAMS", "LogChecks", "Result", "check_time", "named_release", "not_a_log", "parse_result", "program_op",
           "release_named", "results", "unknown_op", "version_of_code"]  # fmt: skip
