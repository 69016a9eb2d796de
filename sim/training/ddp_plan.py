"""What one DDP step is built from (:mod:`sim.training.ddp` builds them, :mod:`sim.training.ddp_result`
reads them): the backward profile as work segments (:class:`Backward`), the comm model
(:class:`CommModel`), what every bucket size of a scenario shares (:class:`Prepared`) and one
all-reduce on the comm stream (:class:`Call`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sim.training import comm
from sim.training import overhead as formula
from sim.training.ddp_scenario import DDPScenario
from sim.training.hooks import HookCall
from sim.training.params import Param

__all__ = ["Backward", "Call", "CommModel", "Prepared"]


@dataclass(frozen=True)
class Backward:
    """Backward as work segments: ``segments[k] = (parameter indices ready at its end, work s)``."""

    segments: tuple[tuple[tuple[int, ...], float], ...]
    tail_s: float  # compute after the last gradient (measured profiles)

    @property
    def total_s(self) -> float:
        return sum(work for _, work in self.segments) + self.tail_s

    @cached_property
    def order(self) -> tuple[int, ...]:
        """Parameter indices in gradient-ready order."""
        return tuple(index for indices, _ in self.segments for index in indices)


class CommModel:
    """Seconds one all-reduce of n bytes takes; ``network`` results are cached by size. On a GPU
    preset without an explicit algorithm each all-reduce is NCCL's pick on its channels, and
    ``ow`` without w takes o and w fitted to those times (:mod:`sim.training.comm`)."""

    def __init__(self, scenario: DDPScenario, element_bytes: int) -> None:
        self.scenario = scenario
        self.element_bytes = element_bytes
        self._cache: dict[int, float] = {}
        self.picks: dict[int, comm.PickTime] = {}  # NCCL's pick per all-reduce size (algorithm nccl)
        self.buckets: tuple[tuple[int, int], ...] | None = None  # (size, calls) of the step: where ow's line is fitted
        self.last_bytes: int | None = None  # the step's last all-reduce

    @cached_property
    def ow_fit(self) -> comm.OwFit | None:
        if self.scenario.comm != "ow":
            return None
        return self.scenario.ow_fit(self.element_bytes, self.buckets, self.last_bytes)

    def cost_s(self, nbytes: int) -> float:
        s = self.scenario
        if s.comm == "ow":
            if self.ow_fit is not None:
                return self.ow_fit.o_s + nbytes / self.ow_fit.w_Bps
            return s.o_s + nbytes / s.w_Bps
        cached = self._cache.get(nbytes)
        if cached is None:
            if s.algorithm == comm.NCCL:
                pick = comm.pick_time(s.hardware, s.nodes, "all_reduce", nbytes, s.pick_fields(self.element_bytes), s.mode)
                self.picks[nbytes] = pick
                cached = pick.time_s
            else:
                cached = self._simulate(s.collective(nbytes, self.element_bytes))
            self._cache[nbytes] = cached
        return cached

    def _simulate(self, collective: Any) -> float:
        if self.scenario.mode == "collapsed":
            from sim.collective.collapsed import collective_time

            return collective_time(collective).time_s
        from sim.collective.runner import run_collective

        return run_collective(collective).time_s

    def ow(self, total_nbytes: int) -> tuple[float, float]:
        """(o, w) of this model: exact for ow, a least-squares line through simulated sizes for network."""
        s = self.scenario
        if s.comm == "ow":
            return (self.ow_fit.o_s, self.ow_fit.w_Bps) if self.ow_fit is not None else (s.o_s, s.w_Bps)
        step = self.element_bytes * max(1, s.ranks)
        sizes = sorted({max(step, (total_nbytes >> shift) // step * step) for shift in range(0, 12)})
        if len(sizes) < 2:
            sizes = [step, 2 * step]
        return formula.fit_ow(sizes, [self.cost_s(size) for size in sizes])


@dataclass(frozen=True)
class Prepared:
    """What every bucket size of one scenario shares: parameters, profile, comm model."""

    params: tuple[Param, ...]
    backward: Backward
    forward_s: float
    optimizer_s: float
    comm: CommModel

    @property
    def grad_bytes(self) -> int:
        return sum(param.nbytes for param in self.params)


@dataclass(frozen=True)
class Call:
    """One bucket's gradient sync on the comm stream: ``nbytes`` of gradients, sent as the
    communication hook's all-reduces ``parts`` (one plain all-reduce without a hook)."""

    index: int
    name: str
    params: tuple[int, ...]
    nbytes: int
    parts: tuple[HookCall, ...] = ()

    @property
    def wire_nbytes(self) -> int:
        """Bytes the hook's all-reduces carry (``nbytes`` without a hook)."""
        return sum(part.nbytes for part in self.parts) if self.parts else self.nbytes
