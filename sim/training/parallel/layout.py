"""Where each rank sits: rank -> (tp, ep, dp, pp) coordinates and the process groups.

Megatron-LM's default order ("tp-cp-ep-dp-pp", megatron/core/parallel_state.py): tensor
parallel fastest, so a TP group is consecutive ranks inside a node, then expert, then data
parallel, pipeline slowest; ranks fill nodes in order (block placement). Groups are lists of
global ranks, as ``torch.distributed.new_group`` takes them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Coordinates", "Layout"]

KINDS = ("tp", "ep", "dp", "pp")


@dataclass(frozen=True)
class Coordinates:
    tp: int
    ep: int
    dp: int
    pp: int


@dataclass(frozen=True)
class Layout:
    """Sizes of each dimension (tp fastest, pp slowest) and the GPUs a node holds."""

    tp: int
    ep: int
    dp: int
    pp: int
    gpus_per_node: int

    @property
    def ranks(self) -> int:
        return self.tp * self.ep * self.dp * self.pp

    def size(self, kind: str) -> int:
        return getattr(self, kind)

    def stride(self, kind: str) -> int:
        stride = 1
        for name in KINDS[: KINDS.index(kind)]:
            stride *= self.size(name)
        return stride

    def coordinates(self, rank: int) -> Coordinates:
        return Coordinates(*((rank // self.stride(kind)) % self.size(kind) for kind in KINDS))

    def rank(self, tp: int = 0, ep: int = 0, dp: int = 0, pp: int = 0) -> int:
        return tp + self.tp * (ep + self.ep * (dp + self.dp * pp))

    def group(self, kind: str, rank: int) -> tuple[int, ...]:
        """The ``kind`` group (tp, ep, dp, pp, or "dense_dp": dp x ep, what dense weights' gradients
        are reduced over in a MoE model) that ``rank`` belongs to, in group-rank order."""
        if kind == "dense_dp":
            return tuple(sorted(set(r for e in self.group("ep", rank) for r in self.group("dp", e))))
        stride, size = self.stride(kind), self.size(kind)
        first = rank - ((rank // stride) % size) * stride
        return tuple(first + index * stride for index in range(size))

    def groups(self, kind: str) -> list[tuple[int, ...]]:
        """Every ``kind`` group of the job, each once."""
        seen: dict[tuple[int, ...], None] = {}
        for rank in range(self.ranks):
            seen.setdefault(self.group(kind, rank), None)
        return list(seen)

    def node_of(self, rank: int) -> int:
        return rank // self.gpus_per_node

    def pipeline(self) -> tuple[int, ...]:
        """The ranks of the representative pipeline (tp, ep, dp rank 0), stage by stage."""
        return self.group("pp", 0)
