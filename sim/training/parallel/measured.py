"""Measured seconds in place of the model's: a step replayed from a measured run.

``collsim real train`` measures each pipeline stage's forward and backward compute per
micro-batch (its TP all-reduces subtracted) and one call of each collective (a TP all-reduce, a
PP transfer, the DP gradient all-reduce, each with its bytes). :class:`MeasuredCosts` carries
them into :func:`sim.training.parallel.step.simulate`: an op's compute is its stage's measured
seconds instead of FLOPs at ``peak x mfu``, and a collective of ``nbytes`` costs its kind's
measured seconds scaled by ``nbytes / measured bytes`` (:class:`MeasuredCommCosts`) instead of
NCCL's pick on the preset. The scaling is exact where the sizes are equal (every TP all-reduce
and PP transfer of ``real train`` has the same ``b s h`` elements) and linear otherwise.
``dp_after_schedule`` replaces DDP's overlapped buckets by what ``real train`` runs: one flat
all-reduce of a rank's gradients (every chunk's) after its schedule has returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.errors import CollsimError
from sim.training.parallel.costs import CommCosts
from sim.training.parallel.layout import Layout

__all__ = ["MeasuredCosts", "MeasuredCommCosts"]

KINDS = ("tp", "pp", "dp", "ep")


@dataclass(frozen=True)
class MeasuredCosts:
    """Per virtual stage, one micro-batch's forward and backward compute seconds; per kind
    (tp, pp, dp, ep), one measured call's (seconds, bytes), a kind not given costs nothing; the
    compute at the step's end (the optimizer), after the gradients are reduced."""

    forward_s: tuple[float, ...]
    backward_s: tuple[float, ...]
    collectives: dict[str, tuple[float, float]] = field(default_factory=dict)
    step_end_s: float = 0.0  # compute at the step's end, after the DP gradient reduction (the optimizer step)
    # True: each rank's gradients (all its chunks) averaged in one flat DP all-reduce once its
    # schedule is done, as ``collsim real train`` does, instead of DDP's buckets overlapping the backward
    dp_after_schedule: bool = False

    def check(self, stages: int) -> None:
        """One error naming what is wrong: a stage count other than pp x vpp, a negative time."""
        for name in ("forward_s", "backward_s"):
            values = getattr(self, name)
            if len(values) != stages:
                raise CollsimError(f"measured {name}: {len(values)} stages given, the layout has pp x vpp = {stages}", field=name)
            if any(value < 0 for value in values):
                raise CollsimError(f"measured {name}: seconds must be >= 0, got {list(values)}", field=name)
        if self.step_end_s < 0:
            raise CollsimError(f"measured step_end_s: seconds must be >= 0, got {self.step_end_s}", field="step_end_s")
        for kind, (seconds, nbytes) in self.collectives.items():
            if kind not in KINDS or seconds < 0 or nbytes < 0:
                raise CollsimError(f"measured collectives: {kind!r} ({seconds}, {nbytes}); allowed kinds {', '.join(KINDS)}, "
                                   "seconds and bytes >= 0", field="collectives")  # fmt: skip

    def compute_s(self, kind: str, stage: int) -> float:
        """One op's compute: F the stage's forward, B its backward (I and W: half the backward each)."""
        backward = self.backward_s[stage]
        return {"F": self.forward_s[stage], "B": backward, "I": backward / 2, "W": backward / 2}[kind]

    def seconds(self, kind: str, nbytes: float) -> float:
        """A ``kind`` call of ``nbytes``: the measured call's seconds scaled by its bytes."""
        seconds, measured_bytes = self.collectives.get(kind, (0.0, 0.0))
        if nbytes <= 0 or seconds <= 0:
            return 0.0
        return seconds * nbytes / measured_bytes if measured_bytes > 0 else seconds


class MeasuredCommCosts(CommCosts):
    """:class:`CommCosts` answering from :class:`MeasuredCosts` (no preset, no DES)."""

    def __init__(self, layout: Layout, element_bytes: int, measured: MeasuredCosts) -> None:
        super().__init__("measured", layout, element_bytes)
        self.measured = measured
        self.notes["measured"] = "compute and collective times measured (collsim real train), not modelled"

    def collective_s(self, kind: str, op: str, nbytes: float) -> float:
        if len(self.layout.group(kind, 0)) < 2:
            return 0.0
        return self.measured.seconds("dp" if kind == "dense_dp" else kind, nbytes)

    def send_s(self, src: int, dst: int, nbytes: float) -> float:
        return 0.0 if src == dst else self.measured.seconds("pp", nbytes)
