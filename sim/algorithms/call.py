"""What every rank of one collective call shares: sizes, the split into pieces, and payloads.

With ``verify`` each rank holds a real numpy buffer (int64, so sums are exact in any order) and
algorithms move slices of it; without, payloads are ``None`` and only byte counts move.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

Piece = tuple[int, int, int]  # element lo, element hi, bytes


@lru_cache(maxsize=256)
def split(elements: int, parts: int) -> tuple[tuple[int, int], ...]:
    """Element ranges [lo, hi) of ``parts`` near-equal pieces (the first ones one larger)."""
    base, extra = divmod(elements, parts)
    bounds, lo = [], 0
    for index in range(parts):
        hi = lo + base + (1 if index < extra else 0)
        bounds.append((lo, hi))
        lo = hi
    return tuple(bounds)


@dataclass
class Call:
    """One collective call as seen by all its ranks."""

    op: str
    ranks: int
    size_bytes: int
    element_bytes: int = 4
    chunks: int = 1
    root: int = 0
    buffers: list[np.ndarray] | None = None  # per rank, only with verify
    inputs: list[np.ndarray] | None = field(default=None, repr=False)
    expected: list | None = field(default=None, repr=False)  # with verify: what the final buffers must hold (sim.collective.verify)
    _pieces: dict = field(default_factory=dict, repr=False)

    @property
    def elements(self) -> int:
        return self.size_bytes // self.element_bytes

    def whole(self) -> Piece:
        return (0, self.elements, self.size_bytes)

    def pieces(self, parts: int, within: Piece | None = None) -> tuple[Piece, ...]:
        """``parts`` pieces (lo, hi, nbytes) covering the buffer, or covering ``within``; cached,
        since every rank of the call asks for the same ones."""
        lo, hi = (0, self.elements) if within is None else (within[0], within[1])
        key = (parts, lo, hi)
        cached = self._pieces.get(key)
        if cached is None:
            size = self.element_bytes
            cached = tuple((lo + a, lo + b, (b - a) * size) for a, b in split(hi - lo, parts))
            self._pieces[key] = cached
        return cached

    def span(self, first: int, last: int) -> Piece:
        """The piece covering blocks first..last-1 of the p-way split (last clipped to p)."""
        blocks = self.pieces(self.ranks)
        lo, hi = blocks[first][0], blocks[min(last, self.ranks) - 1][1]
        return (lo, hi, (hi - lo) * self.element_bytes)

    def blocks_of(self, first: int, last: int, offset: int) -> tuple[Piece, ...]:
        """Blocks (first + offset) .. (last - 1 + offset) mod p as one or two contiguous pieces:
        a rooted scatter/gather works on ranks relative to the root but blocks by absolute rank."""
        p = self.ranks
        last = min(last, p)
        lo, hi = (first + offset) % p, (last - 1 + offset) % p + 1
        if lo < hi:
            return (self.span(lo, hi),)
        return (self.span(lo, p), self.span(0, hi))

    def take_pieces(self, rank: int, pieces: tuple[Piece, ...]) -> np.ndarray | None:
        if self.buffers is None:
            return None
        return np.concatenate([self.buffers[rank][lo:hi] for lo, hi, _ in pieces])

    def put_pieces(self, rank: int, payload: np.ndarray | None, pieces: tuple[Piece, ...]) -> None:
        if payload is None:
            return
        at = 0
        for lo, hi, _ in pieces:
            self.buffers[rank][lo:hi] = payload[at : at + hi - lo]
            at += hi - lo

    def take(self, rank: int, piece: Piece | None = None) -> np.ndarray | None:
        """A snapshot of ``rank``'s buffer (or one piece of it) to send; None without verify."""
        if self.buffers is None:
            return None
        if piece is None:
            return self.buffers[rank].copy()
        return self.buffers[rank][piece[0] : piece[1]].copy()

    def add(self, rank: int, payload: np.ndarray | None, piece: Piece | None = None) -> None:
        """Reduce (sum) a received payload into ``rank``'s buffer."""
        if payload is not None:
            target = self.buffers[rank] if piece is None else self.buffers[rank][piece[0] : piece[1]]
            target += payload

    def put(self, rank: int, payload: np.ndarray | None, piece: Piece | None = None) -> None:
        """Copy a received payload into ``rank``'s buffer."""
        if payload is not None:
            if piece is None:
                self.buffers[rank][:] = payload
            else:
                self.buffers[rank][piece[0] : piece[1]] = payload
