"""One collective on a hardware preset, timed the way every surface times it: NCCL's pick in the DES.

With a hardware preset and no explicit algorithm, ``collsim sim collective``, ``sim ddp``,
``sim fsdp``, the DDP page's network comm model and the FSDP step all ask :func:`pick_time`:
NCCL's choice for the op and size (:func:`sim.nccl.model.predict`) mapped to a
scenario by :func:`sim.collective.pick.scenario_for_pick` (Ring as ``nccl_ring`` and Tree as
``nccl_tree`` on NCCL's channels) and simulated on the preset's network with its NIC rails.
Where the DES has no counterpart of the pick yet (NVLS, NVLSTree, ...), NCCL's own model's time
answers and ``why`` says so. A preset without NCCL (gloo on CPUs) runs ``ring``.

:func:`hardware_ow` derives the ``ow`` comm model's o and w from the same times: the line
``o + n / w`` closest, in relative error, to :func:`pick_time` at a step's bucket sizes (each
all-reduce one point), so the two comm models answer alike (docs/ddp.md, "Hardware presets").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from sim.collective.pick import NCCL, NCCL_OPS  # "nccl": the algorithm meaning what NCCL would pick, on its channels
from sim.errors import CollsimError

OW_SIZES = tuple(2**k for k in range(20, 31))  # 1 MiB .. 1 GiB: the all-reduces DDP issues
PICK_OPS = NCCL_OPS  # NCCL tunes these (sim.nccl.rooted: broadcast, reduce)

__all__ = ["NCCL", "OW_SIZES", "PickTime", "OwFit", "pick_time", "hardware_ow", "uses_nccl"]


@dataclass(frozen=True)
class PickTime:
    """One call's time and how it was found: ``algorithm`` is what the DES ran (``nccl_ring``,
    ``nccl_tree``, ``ring``) on ``chunks`` channels, or None where NCCL's model answered."""

    time_s: float
    nccl_pick: str  # NCCL's algorithm/protocol, "" for a preset without NCCL
    algorithm: str | None
    chunks: int
    why: str = ""  # why NCCL's model answered instead of the DES


@dataclass(frozen=True)
class OwFit:
    """o and w fitted to the network comm model's times over ``sizes``; ``worst_error`` is the
    largest relative gap between the line and those times."""

    o_s: float
    w_Bps: float
    sizes: tuple[int, ...]
    times_s: tuple[float, ...]
    worst_error: float
    how: str

    def to_dict(self) -> dict[str, Any]:
        return {"o_s": self.o_s, "w_Bps": self.w_Bps, "sizes": list(self.sizes), "times_s": list(self.times_s),
                "worst_error": self.worst_error, "how": self.how}  # fmt: skip


def uses_nccl(hardware: str | None) -> bool:
    """Whether a preset runs NCCL (its pick is the default algorithm there)."""
    if not hardware:
        return False
    from sim.hardware.presets import load_preset

    return load_preset(hardware).nccl is not None


def pick_time(
    hardware: str, nodes: int, op: str, nbytes: int, fields: tuple[tuple[str, Any], ...] = (), mode: str = "collapsed"
) -> PickTime:
    """Seconds of one ``op`` of ``nbytes`` on ``nodes`` nodes of ``hardware`` as NCCL would run
    it; ``fields`` override the preset's scenario fields (link rates, element_bytes, ...);
    ``mode`` collapsed (one cached simulation) or full (message by message, same time)."""
    return _pick_time(hardware, nodes, op, int(nbytes), tuple(sorted(fields)), mode)


@lru_cache(maxsize=4096)
def _pick_time(hardware: str, nodes: int, op: str, nbytes: int, fields: tuple[tuple[str, Any], ...], mode: str) -> PickTime:
    from sim.collective.pick import scenario_for_pick
    from sim.hardware.presets import load_preset, scenario_fields
    from sim.nccl.model import predict
    from sim.scenario import CollectiveScenario

    if not uses_nccl(hardware) or op not in PICK_OPS:
        algorithm = "ring"
        scenario = CollectiveScenario.from_dict(
            {**scenario_fields(hardware, nodes), "op": op, "algorithm": algorithm, "size_bytes": nbytes, **dict(fields)}
        )
        return PickTime(_run(scenario, mode), "", algorithm, scenario.chunks)
    pick = predict(load_preset(hardware), nodes, op, nbytes)
    name = f"{pick.nccl_algorithm}/{pick.nccl_protocol}"
    scenario, why = scenario_for_pick(hardware, nodes, op, nbytes, **dict(fields))
    if scenario is None:
        return PickTime(pick.time_s, name, None, 0, f"{why.split('; ', 1)[-1]}; NCCL's own model's time is used")
    return PickTime(_run(scenario, mode), name, scenario.algorithm, scenario.chunks)


def _run(scenario: Any, mode: str) -> float:
    if mode == "full":
        from sim.collective.runner import run_collective

        return run_collective(scenario).time_s
    from sim.collective.collapsed import collective_time

    return collective_time(scenario).time_s


def hardware_ow(
    hardware: str,
    nodes: int,
    fields: tuple[tuple[str, Any], ...] = (),
    buckets: tuple[tuple[int, int], ...] | None = None,
    last: int | None = None,
) -> OwFit:
    """o and w of the all-reduce on ``nodes`` nodes of ``hardware`` from :func:`pick_time`.

    With a step's ``buckets`` ((size, number of calls) pairs) and the size of the call issued
    ``last``: the line that gives the same total comm time over the step's calls and the same
    time for the last call (so ``ow`` and ``network`` keep the comm stream equally busy and end
    alike once backward is over). Otherwise, or where that line has o < 0 or w <= 0: the line
    closest in relative error (each call one point; :data:`OW_SIZES` without buckets), o >= 0."""
    buckets = tuple(sorted(buckets)) if buckets else tuple((size, 1) for size in OW_SIZES)
    return _hardware_ow(hardware, nodes, tuple(sorted(fields)), buckets, last)


@lru_cache(maxsize=256)
def _hardware_ow(
    hardware: str, nodes: int, fields: tuple[tuple[str, Any], ...], buckets: tuple[tuple[int, int], ...], last: int | None
) -> OwFit:
    from sim.units import format_bandwidth, format_size, format_time

    element = dict(fields).get("element_bytes", 1)
    step = element * nodes * _gpus_per_node(hardware)
    sizes = tuple(max(step, size // step * step) for size, _ in buckets)
    counts = np.array([count for _, count in buckets], dtype=float)
    picks = [pick_time(hardware, nodes, "all_reduce", size, fields) for size in sizes]
    times = np.array([pick.time_s for pick in picks])
    if not np.all(times > 0):
        return OwFit(0.0, math.inf, sizes, tuple(times), 0.0, "one rank: communication is free")
    if len(set(sizes)) == 1:  # one bucket size: the line through it with the DES's own latency
        o_s = pick_time(hardware, nodes, "all_reduce", step, fields).time_s
        o_s, w_Bps = (o_s, sizes[0] / (times[0] - o_s)) if times[0] > o_s else (0.0, sizes[0] / times[0])
    else:
        kept = _total_and_last_fit(np.array(sizes, dtype=float), times, counts, last)
        o_s, w_Bps = kept or _relative_fit(np.array(sizes, dtype=float), times, counts)
    worst = float(np.max(np.abs(o_s + np.array(sizes) / w_Bps - times) / times))
    ran = sorted(
        {f"{pick.algorithm} on {pick.chunks} channel(s)" if pick.algorithm else f"NCCL's model ({pick.nccl_pick})" for pick in picks}
    )
    how = (
        f"o + n / w fitted to the network comm model's all-reduce times on {nodes} x {hardware} at "
        f"{len(sizes)} bucket size(s), {format_size(min(sizes))} to {format_size(max(sizes))} ({', '.join(ran)}): "
        f"o = {format_time(o_s)}, w = {format_bandwidth(w_Bps)}"
    )
    if len(set(sizes)) > 1 and kept:
        how += "; the line keeps the step's total comm time and its last all-reduce's time exactly"
    if worst > 0.10:
        how += (
            f"; at single sizes it is off by up to {worst:.0%}: NCCL picks another algorithm or protocol per size, "
            "and no one line follows every pick"
        )
    return OwFit(o_s, w_Bps, sizes, tuple(float(t) for t in times), worst, how)


def _gpus_per_node(hardware: str) -> int:
    from sim.hardware.presets import load_preset

    return load_preset(hardware).gpus_per_node


def _total_and_last_fit(sizes: np.ndarray, times: np.ndarray, counts: np.ndarray, last: int | None) -> tuple[float, float] | None:
    """(o, w) with sum(count (o + n/w)) = sum(count t) and o + n_last/w = t_last; None when
    there is no last call among the sizes or the line has o < 0 or w <= 0."""
    if last is None:
        return None
    index = int(np.argmin(np.abs(sizes - last)))
    system = np.array([[counts.sum(), (counts * sizes).sum()], [1.0, sizes[index]]])
    try:
        o_s, inverse_w = np.linalg.solve(system, np.array([(counts * times).sum(), times[index]]))
    except np.linalg.LinAlgError:
        return None
    return (float(o_s), float(1.0 / inverse_w)) if o_s >= 0 and inverse_w > 0 else None


def _relative_fit(sizes: np.ndarray, times: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """(o, w) minimising sum(count ((o + n/w) - t) / t)^2), o >= 0."""
    weights = np.sqrt(counts) / times
    design = np.column_stack([np.ones_like(sizes), sizes]) * weights[:, None]
    (o_s, inverse_w), *_ = np.linalg.lstsq(design, times * weights, rcond=None)
    if o_s < 0:
        x = sizes * weights
        o_s, inverse_w = 0.0, float(np.sum(x * times * weights) / np.sum(x**2))
    if inverse_w <= 0:
        raise CollsimError(f"hardware: the all-reduce times do not grow with size ({times.tolist()}); no o + n / w fits them")
    return float(o_s), float(1.0 / inverse_w)
