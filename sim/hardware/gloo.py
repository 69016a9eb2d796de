"""What gloo runs, for the default answer on a preset whose ranks are CPU hosts (``nccl: null``).

With ``--hardware cpu-ethernet-25g`` and no ``--algorithm``, each op runs the collsim algorithm
whose record says gloo runs it (``runs=(("gloo", op), ...)`` beside its ``@register``; read through
:func:`sim.algorithms.registry.backend_choice`, the answer real.fit and real.validate read too).
Where that is not gloo's own algorithm the record carries a note, printed with the answer:

- reduce: gloo's ring reduce-scatter then gather has no record; ``binomial`` stands in;
- reduce_scatter: gloo all-reduces the whole input (record all_reduce/ring); collsim runs
  reduce_scatter/``ring``, the algorithm of that name for the op asked.

Ops with one algorithm (gather, scatter, barrier, send_recv) take it anywhere
(``sim.scenario.fill_only_algorithm``).
"""

from __future__ import annotations

from sim.algorithms.registry import backend_choice

__all__ = ["gloo_default", "gloo_note"]


def gloo_default(op: str | None) -> str | None:
    """The algorithm the default answer runs for ``op`` on a gloo (CPU) preset, None where no
    record says what gloo runs (one-algorithm ops fill themselves)."""
    choice = backend_choice("gloo", op) if op else None
    return choice.simulated_algorithm if choice else None


def gloo_note(op: str | None, algorithm: str | None) -> str | None:
    """What the output says about the default run, where it is not gloo's own algorithm."""
    choice = backend_choice("gloo", op) if op else None
    if choice is None or algorithm is None or choice.simulated_algorithm != algorithm:
        return None
    return choice.run.note or None
