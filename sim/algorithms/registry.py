"""Algorithms registered by (op, algorithm), with what each needs of a scenario."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from sim.errors import CollsimError

# op -> algorithm -> spec; filled by the @register decorators in sim.algorithms
_REGISTRY: dict[str, dict[str, AlgorithmSpec]] = {}

RankProgram = Callable[..., Generator]


@dataclass(frozen=True)
class AlgorithmSpec:
    """An algorithm: a per-rank generator function plus its requirements."""

    op: str
    name: str
    program: RankProgram
    power_of_two: bool = False  # refuses other rank counts
    chunked: bool = False  # honours chunks > 1
    splits: bool = False  # cuts the buffer into per-rank pieces: size must be whole elements
    topology: str | None = None  # needs this topology (e.g. two_level)

    def check(self, scenario: Any) -> None:
        p = scenario.ranks
        if self.power_of_two and p & (p - 1):
            raise CollsimError(
                f"algorithm {self.name} for {self.op} needs a power-of-two number of ranks, got {p}; "
                f"use ranks in 1, 2, 4, 8, ... or an algorithm that takes any count "
                f"({', '.join(a for a, s in _REGISTRY[self.op].items() if not s.power_of_two)})",
                field="ranks",
            )
        if scenario.chunks > 1 and not self.chunked:
            chunked = [f"{s.op}/{s.name}" for algs in _REGISTRY.values() for s in algs.values() if s.chunked]
            raise CollsimError(f"chunks: {self.op}/{self.name} does not pipeline chunks; chunks > 1 works with {', '.join(chunked)}")
        if scenario.size_bytes % scenario.element_bytes:
            raise CollsimError(
                f"size: {scenario.size_bytes} bytes is not a multiple of the element size "
                f"({scenario.element_bytes} bytes); collectives move whole elements"
            )
        if self.topology and scenario.topology != self.topology:
            raise CollsimError(f"algorithm {self.name} needs topology {self.topology}, got {scenario.topology}", field="topology")


def register(op: str, name: str, **requirements: Any) -> Callable[[RankProgram], RankProgram]:
    """Decorator: ``@register("all_reduce", "ring", chunked=True)`` above a rank program."""

    def wrap(program: RankProgram) -> RankProgram:
        _REGISTRY.setdefault(op, {})[name] = AlgorithmSpec(op, name, program, **requirements)
        return program

    return wrap


def _load() -> None:
    import sim.algorithms  # noqa: F401  (registers every algorithm on import)
    import sim.hardware.nccl_des  # noqa: F401  (nccl_ring: rings on NCCL's channels)


OP_ORDER = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "gather", "scatter", "barrier", "send_recv")


def ops() -> list[str]:
    _load()
    return sorted(_REGISTRY, key=lambda op: OP_ORDER.index(op) if op in OP_ORDER else len(OP_ORDER))


def algorithms_for(op: str) -> list[str]:
    _load()
    return list(_REGISTRY.get(op, {}))


def algorithm_spec(op: str, name: str) -> AlgorithmSpec | None:
    _load()
    return _REGISTRY.get(op, {}).get(name)
