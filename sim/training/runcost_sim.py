"""Monte-Carlo simulation of a checkpointed run with exponential failures (seeded, bounded).

A run is a sequence of independent segments: ``interval_s`` of work then a checkpoint of
``delta_s``. A segment is tried until it completes without a failure; a failure after x
seconds loses those x seconds and costs a restart of ``restart_s``, which a failure may
interrupt too (then the restart begins again). The wall time of a run is the sum of its
segments', so the mean over many simulated segments, divided by ``interval_s``, is the wall
time per second of work: the quantity Daly's formula gives in closed form
(:func:`sim.training.runcost.daly_wall_factor`), found here by drawing the failures.

Bounded: ``samples`` segments (at most :data:`sim.training.runcost.MAX_SAMPLES`) and at most
``MAX_ROUNDS`` failures in a row per segment; a run that fails more often than that (a
checkpoint interval many MTBFs long) is refused with a message, not simulated forever.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.errors import CollsimError

__all__ = ["MAX_ROUNDS", "Simulated", "simulate", "simulated_optimum"]

MAX_ROUNDS = 2000


@dataclass(frozen=True)
class Simulated:
    """Mean wall time per segment, the failures per segment and the useful fraction."""

    interval_s: float
    mean_segment_s: float
    failures_per_segment: float
    goodput: float
    goodput_stderr: float  # the sampling error of goodput (one standard error)


def _retry(length_s: float, restart_s: float, mtbf_s: float, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Wall time and failures of ``count`` attempts at ``length_s`` uninterrupted seconds,
    each failure followed by a restart (itself repeated when a failure hits it)."""
    total, failures = np.zeros(count), np.zeros(count, dtype=np.int64)
    active = np.arange(count)
    for _ in range(MAX_ROUNDS):
        if active.size == 0:
            return total, failures
        survived = rng.exponential(mtbf_s, active.size)
        done = survived >= length_s
        total[active[done]] += length_s
        active, lost = active[~done], survived[~done]
        total[active] += lost
        failures[active] += 1
        if restart_s > 0 and active.size:
            restart, again = _retry(restart_s, 0.0, mtbf_s, active.size, rng)
            total[active] += restart
            failures[active] += again
    raise CollsimError(
        f"run-cost simulation: a segment of {length_s:.3g} s failed {MAX_ROUNDS} times in a row (MTBF {mtbf_s:.3g} s); "
        "the run would never finish: shorten the checkpoint interval or lower the failure rate"
    )


def simulate(interval_s: float, delta_s: float, restart_s: float, mtbf_s: float, samples: int, seed: int) -> Simulated:
    """``samples`` segments of one run, drawn with ``seed`` (the same seed, the same answer)."""
    rng = np.random.default_rng(seed)
    total, failures = _retry(interval_s + delta_s, restart_s, mtbf_s, samples, rng)
    mean = float(total.mean())
    stderr = float(total.std()) / math.sqrt(samples) * interval_s / mean**2
    return Simulated(interval_s, mean, float(failures.mean()), interval_s / mean, stderr)


def simulated_optimum(delta_s: float, restart_s: float, mtbf_s: float, samples: int, seed: int, around_s: float, points: int = 25) -> float:
    """The interval with the least simulated wall time per second of work, on a grid from a
    third to three times ``around_s``; every point draws with the same seed (common random
    numbers, so neighbours differ by the interval, not by the draw) and the minimum is the
    vertex of a parabola in log interval fitted to the grid's lowest points."""
    logs = np.linspace(math.log(around_s / 3), math.log(around_s * 3), points)
    cost = np.array([1.0 / simulate(math.exp(x), delta_s, restart_s, mtbf_s, samples, seed).goodput for x in logs])
    best = int(np.argmin(cost))
    window = slice(max(0, best - 8), min(points, best + 9))
    curve, slope, _ = np.polyfit(logs[window], cost[window], 2)
    if curve <= 0:  # flat or noisy: the grid's own minimum
        return float(math.exp(logs[best]))
    return float(math.exp(np.clip(-slope / (2 * curve), logs[0], logs[-1])))
