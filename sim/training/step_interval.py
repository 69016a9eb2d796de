"""The 80 % interval of a training step's time on a hardware preset (issue 33, item 2).

The compute side of a step is the user's input (a profile, FLOPs, given times); what the model
does not know is how a real cluster's collectives spread around it. So the step is run twice
more, with every collective at the low and then the high end of its own 80 % interval
(:func:`sim.hardware.uncertainty.spread` for its op's size on the preset: a small call as
uncertain as small calls are on other clusters, a bucket-sized one as bucket-sized ones), and
the two step times are the interval's ends. Overlap is simulated again at each end, so comm
hidden behind backward widens the step's interval less than exposed comm does. Taking every
collective at the same end at once is the pessimistic reading (their errors on one cluster are
correlated: one network, one NCCL), which is what a step on a cluster of that kind sees.

Without a preset (links or o and w typed by hand, or a calibration file) the model is exact for
its inputs and there is no measured spread to draw on: the fields are None and say why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim.hardware.uncertainty import LEVEL, spread

__all__ = ["ENDS", "ScaledComm", "at_end", "interval_fields", "no_interval"]

ENDS = (-1, 1)  # each collective's time divided (-1) or multiplied (+1) by its interval's factor
NO_PRESET = "no hardware preset: the links (or o and w) are taken as exact; no measured spread to draw on"


def at_end(scenario: Any, nbytes: int, time_s: float, end: int) -> float:
    """``time_s`` of one collective of ``nbytes`` at ``end`` of its 80 % interval (0: as modelled)."""
    found = spread(scenario.hardware, scenario.ranks, nbytes) if end else None
    return time_s if found is None else time_s * found[0] ** end


class ScaledComm:
    """A DDP comm model (``sim.training.ddp.CommModel``) with every all-reduce at one end of its
    interval; the exact times come from (and are cached by) the model it wraps."""

    def __init__(self, base: Any, scenario: Any, end: int) -> None:
        self.base, self.scenario, self.end = base, scenario, end
        self.element_bytes = base.element_bytes

    def cost_s(self, nbytes: int) -> float:
        return at_end(self.scenario, nbytes, self.base.cost_s(nbytes), self.end)


def no_interval() -> dict[str, Any]:
    return {"step_time_interval_s": None, "step_interval_level": None, "step_interval_basis": NO_PRESET}


def interval_fields(step_time_s: float, ends_s: Sequence[float], comm: str = "every collective") -> dict[str, Any]:
    """The summary keys from the step times at the two ends (each step time lies between them:
    a step is never faster with slower collectives); ``comm``: what was scaled, for the basis."""
    low, high = min(step_time_s, *ends_s), max(step_time_s, *ends_s)
    basis = (f"the step re-run with {comm} at the low, then the high end of its own 80 % interval "
             "on this preset (sim.hardware.uncertainty); compute as given")  # fmt: skip
    return {"step_time_interval_s": [low, high], "step_interval_level": LEVEL, "step_interval_basis": basis}


def ddp_interval(result: Any) -> dict[str, Any]:
    """:func:`interval_fields` of a DDP step (``sim.training.ddp.DDPResult``): two more runs of the
    same step, the comm model scaled (:class:`ScaledComm`); None without a preset."""
    import dataclasses

    from sim.training.ddp import run_ddp

    s, prepared = result.scenario, result.prepared
    if not s.hardware:
        return no_interval()
    ends = [run_ddp(s, dataclasses.replace(prepared, comm=ScaledComm(prepared.comm, s, end))).step_time_s for end in ENDS]
    return interval_fields(result.step_time_s, ends)
