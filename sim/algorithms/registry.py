"""Algorithms registered by (op, algorithm), each with one record of everything collsim knows
about it: the rank program, what it needs of a scenario, its closed form (or why there is none),
its message counts, its phases and the sentence for each, and what real backends run as it.

The record is declared in the ``@register`` call above the rank program; sim.collective.analytic,
sim.collective.explore, sim.collective.narrative, real.fit and real.validate read it (what a
backend runs for an op: :func:`backend_choice`, also the gloo preset's default answer), and
tests/algorithms/test_records.py fails on any algorithm missing a part.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, NamedTuple

from sim.errors import CollsimError

__all__ = [
    "AlgorithmSpec",
    "BackendChoice",
    "Form",
    "OP_ORDER",
    "Phase",
    "Run",
    "Shape",
    "algorithm_spec",
    "algorithms_for",
    "fill_only_algorithm",
    "all_specs",
    "busbw_factor",
    "backend_algorithms",
    "backend_choice",
    "backend_table_markdown",
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


class Run(NamedTuple):
    """A real backend running one torch.distributed op (real.bench's name) as a record's algorithm.

    ``note``: said with collsim's default answer on a preset of that backend where the algorithm
    it runs for ``op`` is not the backend's own (a stand-in, or the record's op is not ``op``);
    "" where it is. ``chunk_bytes``: the backend pipelines chunks of this size (the record's k is
    ceil(n / chunk_bytes)); 0 where k is 1."""

    backend: str
    op: str
    note: str = ""
    chunk_bytes: int = 0


# Shape -> (point-to-point messages of one call, distinct sender-receiver pairs or a bound on them)
Counts = Callable[[Shape], tuple[int, int]]


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm's record: a per-rank generator function, its requirements, and what
    collsim knows about it (see the module docstring). ``form`` is the closed form, or the
    reason in words why there is none; ``whole_cells`` (True, or a test on the scenario) says
    when every split the ranks make of ``ranks * chunks`` cells falls on whole cells, so that
    one scaled run records the buffer frames (sim.collective.explore.same_run_scale); ``runs``
    lists the :class:`Run` entries, (backend, torch.distributed op[, note, chunk_bytes]), that
    real backends run as this algorithm (sources in docs/real.md)."""

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
    runs: tuple[Run, ...] = ()
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
        runs = tuple(Run(*entry) for entry in record.get("runs", ()))
        _REGISTRY.setdefault(op, {})[name] = AlgorithmSpec(op, name, program, **{**record, "runs": runs})
        return program

    return wrap


# The registry's one plugin hook: packages whose import registers algorithms. sim.algorithms holds
# the textbook ones; sim.nccl (above this layer: it runs NCCL's data path on sim.network with
# these records' Phase and Shape) registers nccl_ring, nccl_tree, ... and nccl_p2p. Named here as
# data, imported on the first query, so the registry never imports a layer above it
# (tests/architecture/test_layers.py: sim has no import cycle).
PLUGINS = ("sim.algorithms", "sim.nccl")


_loaded: list[str] = []  # the plugins imported so far


def _load() -> None:
    if len(_loaded) < len(PLUGINS):
        for package in PLUGINS[len(_loaded) :]:
            importlib.import_module(package)
            _loaded.append(package)


OP_ORDER = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "gather", "scatter", "barrier", "send_recv")


def busbw_factor(op: str, p: int) -> float:
    """nccl-tests' bus bandwidth factor: busbw = algbw * factor (0 for a barrier, which moves no
    data). The one place it is defined: real.bench, NCCL's model and the explorer read it
    here (sim.collective.analytic re-exports it)."""
    if op == "all_reduce":
        return 2 * (p - 1) / p
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (p - 1) / p
    if op == "barrier":
        return 0.0
    return 1.0


def ops() -> list[str]:
    _load()
    return sorted(_REGISTRY, key=lambda op: OP_ORDER.index(op) if op in OP_ORDER else len(OP_ORDER))


def algorithms_for(op: str, unlisted: bool = False) -> list[str]:
    _load()
    return [name for name, spec in _REGISTRY.get(op, {}).items() if spec.listed or unlisted]


def fill_only_algorithm(data: dict[str, Any]) -> None:
    """An op with exactly one algorithm (gather, scatter, barrier, send_recv) needs none named:
    set it in ``data`` (CLI flags, scenario files, from_dict) when none is given."""
    op = data.get("op")
    if "algorithm" not in data and isinstance(op, str) and op in ops():
        names = algorithms_for(op)
        if len(names) == 1:
            data["algorithm"] = names[0]


def algorithm_spec(op: str, name: str) -> AlgorithmSpec | None:
    _load()
    return _REGISTRY.get(op, {}).get(name)


def all_specs() -> list[AlgorithmSpec]:
    """Every registered algorithm's record, ops in ``OP_ORDER``."""
    return [_REGISTRY[op][name] for op in ops() for name in _REGISTRY[op]]


class BackendChoice(NamedTuple):
    """What ``run.backend`` runs for the torch.distributed op ``run.op``: the record ``spec``.

    What the measured size means: every op's measured size is its largest buffer (nccl-tests'
    convention, real.bench), and a record whose op is not ``run.op`` runs on that same buffer
    (gloo's reduce_scatter all-reduces the whole input, then keeps this rank's chunk), so the
    record's closed form takes the measured size n as it is. A fitted t = o + n / w then gives the
    link bandwidth B = w F, F the record's bandwidth factor (:meth:`line`): for gloo's
    reduce_scatter F = 2(p-1)/p (all_reduce/ring), twice the (p-1)/p of a ring reduce-scatter,
    so reading reduce_scatter/ring there would report half the link's bandwidth."""

    spec: AlgorithmSpec
    run: Run

    @property
    def model(self) -> str:
        """The record's "op/algorithm"."""
        return f"{self.spec.op}/{self.spec.name}"

    def chunks(self, size_bytes: float) -> int:
        """The record's k for a call of ``size_bytes``: the backend's chunks, else 1."""
        chunk = self.run.chunk_bytes
        return max(1, -(-int(size_bytes) // chunk)) if chunk else 1

    def line(self, p: int) -> tuple[float, float] | None:
        """(latency terms L, bandwidth factor F) of the line t = o + L a + F n b that the record's
        closed form follows on p ranks; None without a closed form. Unchunked: the closed form
        itself (:meth:`AlgorithmSpec.terms`). Chunked (k = n / chunk_bytes): the line it follows at
        sizes of many chunks, read off two of them; the per-chunk latency's a / chunk_bytes per
        byte is left out of F (a fit reads it as bandwidth: small beside b for 128 KiB chunks)."""
        form, chunk = self.spec.closed_form, self.run.chunk_bytes
        if form is None or not chunk:
            return self.spec.terms(p)
        small, large = 1024 * chunk, 2048 * chunk
        latency = [form.time(p, n, 1.0, 0.0, 0.0, n // chunk) for n in (small, large)]
        transfer = [form.time(p, n, 0.0, 1.0, 0.0, n // chunk) for n in (small, large)]
        slope = (latency[1] - latency[0]) / (large - small)
        return latency[0] - slope * small, (transfer[1] - transfer[0]) / (large - small)

    def link_bandwidth(self, p: int, w_Bps: float) -> float | None:
        """The link bandwidth B that gives the fitted algorithm bandwidth w (see the class doc)."""
        terms = self.line(p)
        return None if terms is None else w_Bps * terms[1]

    @property
    def simulated_algorithm(self) -> str | None:
        """The algorithm collsim runs for ``run.op`` on this backend: the record's, or where the
        record's op is another, the algorithm of that name for ``run.op`` (gloo's reduce_scatter:
        reduce_scatter/ring, with the record's note); None where there is none."""
        return self.spec.name if self.run.op in _REGISTRY and self.spec.name in _REGISTRY[self.run.op] else None


def backend_choice(backend: str, op: str) -> BackendChoice | None:
    """What ``backend`` runs for the torch.distributed ``op``, from the records' ``runs``; None
    where no record says. The one answer the default algorithm on a gloo preset
    (sim.hardware.gloo), real.fit and real.validate's link model read."""
    for spec in all_specs():
        for run in spec.runs:
            if (run.backend, run.op) == (backend, op):
                return BackendChoice(spec, run)
    return None


def backend_algorithms() -> dict[str, dict[str, tuple[str, str]]]:
    """backend -> torch.distributed op -> (op, algorithm) of the record that models it, from
    the records' ``runs``."""
    table: dict[str, dict[str, tuple[str, str]]] = {}
    for spec in all_specs():
        for run in spec.runs:
            table.setdefault(run.backend, {})[run.op] = (spec.op, spec.name)
    return table


def backend_table_markdown(p: int = 8) -> str:
    """docs/real.md's table of what gloo and NCCL run per torch op, from the records: the record
    (op/algorithm), its chunks, and B / w at ``p`` ranks (the bandwidth factor a fit multiplies
    by); the records' notes follow as footnotes."""
    backends = ("gloo", "nccl")
    rows = [f"| op (torch call) | {' | '.join(f'{b} runs | B / w at p = {p}' for b in backends)} |", "|---" * (1 + 2 * len(backends)) + "|"]
    notes: list[str] = []
    for op in ops():
        choices = [backend_choice(backend, op) for backend in backends]
        if not any(choices):
            continue
        cells = [op]
        for choice in choices:
            cells += _backend_cells(choice, p, notes)
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows + [""] + [f"{i}. {note}" for i, note in enumerate(notes, 1)]) + "\n"


def _backend_cells(choice: BackendChoice | None, p: int, notes: list[str]) -> list[str]:
    if choice is None:
        return ["(no record)", ""]
    cell = f"{choice.model}" + (f", {choice.run.chunk_bytes // 1024} KiB chunks" if choice.run.chunk_bytes else "")
    if choice.run.note:
        notes.append(f"{choice.run.backend} {choice.run.op}: {choice.run.note}")
        cell += f" ({len(notes)})"
    terms = choice.line(p)
    return [cell, "no closed form" if terms is None else f"{terms[1]:.4g}"]
