"""Phases that several algorithms share (a ring all-gather is the same move inside ring
all-reduce, van de Geijn's broadcast and NCCL's channels): one name and one sentence each.
An algorithm's record lists its phases; a phase used by one algorithm only is declared there."""

from __future__ import annotations

from sim.algorithms.registry import Phase, ceil_lg

__all__ = [
    "BINOMIAL_BROADCAST",
    "BINOMIAL_GATHER",
    "BINOMIAL_REDUCE",
    "BINOMIAL_SCATTER",
    "HALVING_THEN",
    "RECURSIVE_DOUBLING_GATHER",
    "RECURSIVE_HALVING",
    "RING_ALL_GATHER",
    "RING_REDUCE_SCATTER",
    "RS_THEN",
    "THEN_AG",
    "THEN_DOUBLING",
    "after_ring",
    "after_rounds",
]

_RING_RS = "each rank sends one piece to its right neighbour, which adds it to its own copy of that piece"
_RING_AG = "each rank forwards a fully reduced piece to its right neighbour, which keeps it"
_HALVING = "partners at halving distance swap half of what they hold and add the half they keep"
_DOUBLING = "partners at doubling distance swap everything they hold, so each holds twice as much"


def after_ring(p: int) -> int:
    """The first step after a ring phase on p ranks (p - 1 steps)."""
    return p - 1


def after_rounds(p: int) -> int:
    """The first step after a binomial or butterfly phase on p ranks (ceil(lg p) rounds)."""
    return ceil_lg(p)


# a whole algorithm of one phase
RING_REDUCE_SCATTER = Phase("reduce-scatter around the ring", _RING_RS)
RING_ALL_GATHER = Phase(
    "all-gather around the ring", "each rank forwards the piece it received last to its right neighbour, which keeps it"
)
RECURSIVE_HALVING = Phase("reduce-scatter (recursive halving)", _HALVING)
RECURSIVE_DOUBLING_GATHER = Phase("all-gather (recursive doubling)", _DOUBLING)
BINOMIAL_BROADCAST = Phase("broadcast down the binomial tree", "every rank holding the data sends it to a rank that has none yet")
BINOMIAL_REDUCE = Phase("reduce up the binomial tree", "ranks send their partial sums to their parent, which adds them")
BINOMIAL_SCATTER = Phase("scatter down the binomial tree", "ranks holding blocks hand half of them down the tree")
BINOMIAL_GATHER = Phase("gather up the binomial tree", "subtrees send the blocks they collected to their parent")

# the first and second phases of two-phase algorithms
RS_THEN = Phase("reduce-scatter", _RING_RS)
THEN_AG = Phase("all-gather", _RING_AG, after_ring)
HALVING_THEN = RECURSIVE_HALVING
THEN_DOUBLING = Phase("all-gather (recursive doubling)", _DOUBLING, after_rounds)
