"""Algorithms registered by (op, algorithm), each with one record of everything collsim knows
about it: the rank program, what it needs of a scenario, its closed form (or why there is none),
its message counts, its phases and the sentence for each, and what real backends run as it.

The record is declared in the ``@register`` call above the rank program; sim.collective.analytic,
sim.collective.explore, sim.collective.narrative, real.fit and real.validate read it, and
tests/algorithms/test_records.py fails on any algorithm missing a part.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, NamedTuple

from sim.errors import CollsimError

__all__ = [
    "AlgorithmSpec",
    "Form",
    "OP_ORDER",
    "Phase",
    "Shape",
    "algorithm_spec",
    "algorithms_for",
    "all_specs",
    "backend_algorithms",
    "ceil_lg",
    "needs_a_peer",
    "ops",
    "register",
]

# op -> algorithm -> spec; filled by the @register decorators in sim.algorithms
_REGISTRY: dict[str, dict[str, AlgorithmSpec]] = {}

RankProgram = Callable[..., Generator]
# (p, n, a, b, g, k) -> seconds: p ranks, n bytes, a latency, b = 1/bandwidth, g = 1/reduce bandwidth, k chunks
FormTime = Callable[[int, float, float, float, float, int], float]


def ceil_lg(p: int) -> int:
    """ceil(lg p): the rounds of a binomial tree or a butterfly on p ranks (0 for p <= 1)."""
    return max(0, (p - 1).bit_length())


@dataclass(frozen=True)
class Form:
    """A closed form (Hockney alpha-beta plus gamma) and when the DES reproduces it exactly.

    ``power_of_two``: the algorithm runs on any p but the form holds only for powers of two (an
    algorithm that refuses other counts says so once, in its record); ``chunked``: carries the chunk count k (other forms are for one chunk); ``split``:
    the even split its (p-1)/p n or n/k terms assume, into p pieces ("p"), k chunks ("k") or
    p pieces of k chunks ("pk"), "" when every step moves the whole message; ``rendezvous``:
    a rooted reduction whose form assumes each receive completes before the next is posted
    (eager sends race for the root's port instead); ``eager``: its own form when its messages
    are sent eagerly under fifo sharing."""

    time: FormTime
    power_of_two: bool = False
    chunked: bool = False
    split: str = ""
    rendezvous: bool = False
    eager: FormTime | None = None


def _first(p: int) -> int:
    return 0


@dataclass(frozen=True)
class Phase:
    """A phase of an algorithm: its name, what every rank does in one of its steps (a sentence
    without the final full stop, for the step player), and its first step on p ranks."""

    name: str
    sentence: str
    start: Callable[[int], int] = _first


class Shape(NamedTuple):
    """What an algorithm's message counts depend on: ranks, chunks, GPUs per node (the ranks on
    a flat topology), elements and bytes per element."""

    p: int
    k: int
    gpus: int
    elements: int
    element_bytes: int


# Shape -> (point-to-point messages of one call, distinct sender-receiver pairs or a bound on them)
Counts = Callable[[Shape], tuple[int, int]]


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm's record: a per-rank generator function, its requirements, and what
    collsim knows about it (see the module docstring). ``form`` is the closed form, or the
    reason in words why there is none; ``whole_cells`` (True, or a test on the scenario) says
    when every split the ranks make of ``ranks * chunks`` cells falls on whole cells, so that
    one scaled run records the buffer frames (sim.collective.explore.same_run_scale); ``runs``
    lists the (backend, torch.distributed op) pairs that real backends run as this algorithm
    (sources in docs/real.md)."""

    op: str
    name: str
    program: RankProgram
    power_of_two: bool = False  # refuses other rank counts
    chunked: bool = False  # honours chunks > 1
    splits: bool = False  # cuts the buffer into per-rank pieces: size must be whole elements
    topology: str | None = None  # needs this topology (e.g. two_level)
    form: Form | str = ""
    counts: Counts | None = None
    phases: tuple[Phase, ...] = ()
    whole_cells: bool | Callable[[Any], bool] = True
    runs: tuple[tuple[str, str], ...] = ()
    listed: bool = True  # False: runs by name, left out of algorithms_for (NCCL's protocol variants)
    needs: Callable[[Any], str | None] | None = None  # what else it needs of a scenario: why one will not do, or None

    @property
    def closed_form(self) -> Form | None:
        return self.form if isinstance(self.form, Form) else None

    @property
    def form_power_of_two(self) -> bool:
        """Whether the closed form holds only for power-of-two p (the power-of-two rule)."""
        return self.power_of_two or (self.closed_form is not None and self.closed_form.power_of_two)

    def terms(self, p: int) -> tuple[float, float] | None:
        """(latency terms L, bandwidth factor F) of one call on switch(p), read off the closed
        form: t(n) = o + L a + F n / B, so a fitted t(n) = o + n / w gives o = o_call + L a and
        w = B / F. None where there is no closed form."""
        form = self.closed_form
        if form is None:
            return None
        return form.time(p, 0.0, 1.0, 0.0, 0.0, 1), form.time(p, 1.0, 0.0, 1.0, 0.0, 1)

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
        why = self.needs(scenario) if self.needs is not None else None
        if why:
            raise CollsimError(why, field="ranks" if why.startswith("ranks") else "algorithm")


def needs_a_peer(scenario: Any) -> str | None:
    """send/recv moves a buffer from rank 0 to the last rank: on one rank there is no peer."""
    if scenario.ranks < 2:
        return f"ranks: send_recv sends from rank 0 to another rank and needs at least 2 ranks, got {scenario.ranks}"
    return None


def register(op: str, name: str, **record: Any) -> Callable[[RankProgram], RankProgram]:
    """Decorator: ``@register("all_reduce", "ring", chunked=True, form=Form(...), ...)`` above a
    rank program declares its record (the fields of :class:`AlgorithmSpec`)."""

    def wrap(program: RankProgram) -> RankProgram:
        _REGISTRY.setdefault(op, {})[name] = AlgorithmSpec(op, name, program, **record)
        return program

    return wrap


def _load() -> None:
    import sim.algorithms  # noqa: F401  (registers every algorithm on import)
    import sim.hardware.nccl_des  # noqa: F401  (nccl_ring: rings on NCCL's channels)
    import sim.hardware.nccl_p2p  # noqa: F401  (nccl_p2p: all_to_all and send_recv on NCCL's point-to-point path)
    import sim.hardware.nccl_rooted  # noqa: F401  (nccl_ring for broadcast and reduce: chains on NCCL's channels)


OP_ORDER = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "gather", "scatter", "barrier", "send_recv")


def ops() -> list[str]:
    _load()
    return sorted(_REGISTRY, key=lambda op: OP_ORDER.index(op) if op in OP_ORDER else len(OP_ORDER))


def algorithms_for(op: str, unlisted: bool = False) -> list[str]:
    _load()
    return [name for name, spec in _REGISTRY.get(op, {}).items() if spec.listed or unlisted]


def algorithm_spec(op: str, name: str) -> AlgorithmSpec | None:
    _load()
    return _REGISTRY.get(op, {}).get(name)


def all_specs() -> list[AlgorithmSpec]:
    """Every registered algorithm's record, ops in ``OP_ORDER``."""
    return [_REGISTRY[op][name] for op in ops() for name in _REGISTRY[op]]


def backend_algorithms() -> dict[str, dict[str, tuple[str, str]]]:
    """backend -> torch.distributed op -> (op, algorithm) of the record that models it, from
    the records' ``runs``."""
    table: dict[str, dict[str, tuple[str, str]]] = {}
    for spec in all_specs():
        for backend, real_op in spec.runs:
            table.setdefault(backend, {})[real_op] = (spec.op, spec.name)
    return table
