"""Event records of a run in bounded memory: typed columns up to a limit, aggregates beyond it.

The network appends one plain tuple per message to a short buffer (the cheapest thing Python
can do per event); every ``BUFFER_ROWS`` rows the buffer moves into ``array.array`` columns
(40 bytes a message instead of about 200 for a tuple in a list) until ``limit`` rows are
kept, and later rows fold into per-key totals (count, bytes, busy seconds) with numpy. Memory is
therefore ``limit`` rows of columns plus the totals, whatever the run's length.

:class:`RecordTable` still reads as the sequence of tuples it always was (``len``, index,
slice, iteration, ``==`` with a list), and :meth:`RecordTable.columns` hands numpy arrays to
code that wants speed.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

BUFFER_ROWS = 8192
MERGE_ROWS = 16_384  # aggregated rows held as arrays before they merge into per-key totals

# name, array typecode: int32 ranks/steps/chunks, float64 times, int64 bytes
MESSAGE_COLUMNS = (("src", "i"), ("dst", "i"), ("start_s", "d"), ("end_s", "d"), ("nbytes", "q"), ("step", "i"), ("chunk", "i"))
COMPUTE_COLUMNS = (("rank", "i"), ("start_s", "d"), ("end_s", "d"), ("nbytes", "q"), ("step", "i"), ("chunk", "i"))


class RecordTable(Sequence):
    """Rows as tuples, stored as columns; rows past ``limit`` become totals per ``key`` columns.

    Args:
        columns: (name, typecode) per tuple position.
        key: positions whose values name an aggregate (``(0, 1)``: per (src, dst) pair).
        limit: rows to keep; ``None`` keeps every row.
    """

    def __init__(self, columns: tuple[tuple[str, str], ...], key: tuple[int, ...], limit: int | None) -> None:
        self.names = tuple(name for name, _ in columns)
        self._columns = [array(code) for _, code in columns]
        self._key = key
        self._start, self._end, self._bytes, self._step = (self.names.index(n) for n in ("start_s", "end_s", "nbytes", "step"))
        self.limit = limit
        self.buffer: list[tuple] = []  # the network appends here; see flush()
        self.flushed = 0  # rows moved out of the buffer so far: row i is buffer[i - flushed] if >= 0
        self._parts: list[tuple[np.ndarray, ...]] = []  # aggregated (keys, counts, bytes, busy)
        self._part_rows = 0
        self._merged = True
        self._aggregated = [0, 0]  # rows, bytes
        self._aggregated_steps: set[int] = set()

    # -- writing ------------------------------------------------------------------------------
    def flush(self) -> None:
        """Move buffered rows into the columns, or into the totals once ``limit`` rows are kept."""
        rows = self.buffer
        if not rows:
            return
        self.buffer = []
        self.flushed += len(rows)
        room = len(rows) if self.limit is None else max(0, self.limit - len(self._columns[0]))
        kept, rest = (rows, []) if room >= len(rows) else (rows[:room], rows[room:])
        if kept:
            for column, values in zip(self._columns, zip(*kept)):
                column.extend(values)
        if rest:
            self._aggregate(rest)

    def amend_end(self, index: int, row: tuple, end: float) -> None:
        """Change the end time of ``row`` (as it was appended, row ``index``; 0: the first row) to
        ``end``, wherever it is now: buffered, kept in the columns, or folded into its key's totals."""
        position = self._end
        buffered = index - self.flushed
        if buffered >= 0:
            self.buffer[buffered] = (*row[:position], end, *row[position + 1 :])
            return
        columns = self._columns
        if index < len(columns[0]):
            columns[position][index] = end
            return
        key = 0  # folded into the totals: correct its key's busy seconds
        for place in self._key:
            key = (key << 32) + int(row[place])
        one = np.array([key], dtype=np.int64)
        self._parts.append((one, np.zeros(1, dtype=np.int64), np.zeros(1), np.array([end - row[position]])))
        self._merged = False
        self._part_rows += 1

    def _aggregate(self, rows: list[tuple]) -> None:
        """Fold rows into per-key totals: numpy arrays per flush, merged every MERGE_ROWS rows, so
        neither Python loops over keys nor memory grow with the run's length."""
        columns = list(zip(*rows))
        keys = np.zeros(len(rows), dtype=np.int64)
        for position in self._key:  # one int per key: (src, dst) -> src * 2**32 + dst
            keys = (keys << 32) + np.array(columns[position], dtype=np.int64)
        nbytes = np.array(columns[self._bytes], dtype=np.float64)
        busy = np.array(columns[self._end], dtype=np.float64) - np.array(columns[self._start], dtype=np.float64)
        self._parts.append((keys, np.ones(len(rows), dtype=np.int64), nbytes, busy))
        self._merged = False
        self._part_rows += len(rows)
        if self._part_rows > MERGE_ROWS:
            self._merge()
        self._aggregated[0] += len(rows)
        self._aggregated[1] += sum(columns[self._bytes])
        self._aggregated_steps.update(columns[self._step])

    def _merge(self) -> None:
        if not self._parts or (len(self._parts) == 1 and self._merged):
            return
        keys, counts, nbytes, busy = (np.concatenate(arrays) for arrays in zip(*self._parts))
        unique, inverse = np.unique(keys, return_inverse=True)
        size = len(unique)
        merged = (
            unique,
            np.bincount(inverse, weights=counts, minlength=size).astype(np.int64),
            np.bincount(inverse, weights=nbytes, minlength=size),
            np.bincount(inverse, weights=busy, minlength=size),
        )
        self._parts = [merged]
        self._part_rows = size
        self._merged = True

    @property
    def totals(self) -> dict[tuple[int, ...], list[float]]:
        """key -> [count, bytes, busy_s] over the aggregated rows."""
        self.flush()
        self._merge()
        if not self._parts:
            return {}
        keys, counts, nbytes, busy = self._parts[0]
        width = len(self._key)
        totals = {}
        for packed, count, size, seconds in zip(keys.tolist(), counts.tolist(), nbytes.tolist(), busy.tolist()):
            key = tuple((packed >> (32 * (width - 1 - k))) & 0xFFFFFFFF for k in range(width))
            totals[key] = [int(count), int(size), seconds]
        return totals

    # -- reading ------------------------------------------------------------------------------
    @property
    def recorded(self) -> int:
        """Rows kept as rows (the rest are in ``totals``)."""
        self.flush()
        return len(self._columns[0])

    @property
    def count(self) -> int:
        """Every row appended, kept or aggregated."""
        self.flush()
        return len(self._columns[0]) + self._aggregated[0]

    @property
    def total_bytes(self) -> int:
        self.flush()
        return int(sum(self._columns[self._bytes])) + self._aggregated[1]

    def steps(self) -> set[int]:
        """Distinct step numbers over every row, kept or aggregated."""
        self.flush()
        return set(np.unique(self.views()[self.names[self._step]]).tolist()) | self._aggregated_steps

    def views(self) -> dict[str, np.ndarray]:
        """The kept rows as numpy views of the columns (no copy; valid until the next append)."""
        self.flush()
        dtypes = {"i": np.int32, "q": np.int64, "d": np.float64}
        return {name: np.frombuffer(column, dtype=dtypes[column.typecode]) for name, column in zip(self.names, self._columns)}

    def columns(self) -> dict[str, np.ndarray]:
        """The kept rows as numpy arrays by column name (copies)."""
        self.flush()
        return {name: np.array(column) for name, column in zip(self.names, self._columns)}

    def nbytes(self) -> int:
        """Memory held by the kept rows' columns."""
        return sum(column.itemsize * len(column) for column in self._columns)

    def __len__(self) -> int:
        return self.recorded

    def __getitem__(self, index: Any) -> Any:
        self.flush()
        if isinstance(index, slice):
            return list(zip(*(column[index].tolist() for column in self._columns)))
        return tuple(column[index] for column in self._columns)

    def __iter__(self) -> Iterator[tuple]:
        self.flush()
        step = 65536  # iterate in slices: no full list of tuples at once
        for lo in range(0, len(self._columns[0]), step):
            yield from zip(*(column[lo : lo + step].tolist() for column in self._columns))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, RecordTable)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __bool__(self) -> bool:
        return self.recorded > 0

    def __repr__(self) -> str:
        return f"RecordTable({self.recorded} rows kept, {self._aggregated[0]} aggregated)"
