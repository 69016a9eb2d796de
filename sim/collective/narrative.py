"""The step narrative of an algorithm: its phases, the phase each step belongs to, and one
sentence per step (what the phase's ranks do, and the sizes that moved), all read from the
algorithm's record (sim.algorithms.registry). The step player draws what these return."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sim.algorithms.registry import Phase, algorithm_spec
from sim.units import format_size

__all__ = ["description", "phase_of", "phase_starts", "step_phases", "step_sentence", "step_sentences"]


def phase_starts(op: str, algorithm: str, p: int) -> list[tuple[int, str]]:
    """(first step, name) of each phase of an algorithm on p ranks, in order, from its record."""
    spec = algorithm_spec(op, algorithm)
    return [(phase.start(p), phase.name) for phase in spec.phases] if spec else []


def _phase_at(op: str, algorithm: str, p: int, step: int) -> Phase | None:
    spec = algorithm_spec(op, algorithm)
    found = None
    for phase in spec.phases if spec else ():
        if step >= phase.start(p):
            found = phase
    return found


def phase_of(op: str, algorithm: str, p: int, step: int) -> str:
    """The name of the phase ``step`` belongs to ("" when the algorithm names none)."""
    phase = _phase_at(op, algorithm, p, step)
    return phase.name if phase else ""


def description(op: str, algorithm: str) -> str:
    """The algorithm's own one-paragraph description (its docstring's first paragraph)."""
    spec = algorithm_spec(op, algorithm)
    text = (spec.program.__doc__ or "").strip() if spec else ""
    return plain(" ".join(text.split("\n\n")[0].split()))


def plain(text: str) -> str:
    """Docstring markup out of a sentence a person reads: ``node_ranks`` -> node_ranks,
    :func:`x` -> x, *word* -> word; parenthetical asides that only name code are dropped."""
    text = re.sub(r"\s*\(``[^`]+``:[^)]*\)", "", text)  # "(``node_ranks``: each node's ranks ...)": code detail
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    text = text.replace("``", "")
    return re.sub(r"(?<!\w)\*([^*\s][^*]*)\*(?!\w)", r"\1", text)


def step_sentence(move: str, sizes: Sequence[int]) -> str:
    """One sentence for a step: the phase's move in words (may be ""), and the sizes of the
    ``sizes`` messages that moved."""
    low, high = format_size(min(sizes)), format_size(max(sizes))
    size = low if low == high else f"{low} to {high}"
    count = f"{len(sizes)} message{'s' if len(sizes) != 1 else ''} of {size}"
    return f"{move[0].upper() + move[1:]}: {count}." if move else f"{count[0].upper() + count[1:]}."


def step_phases(scenario: Any, steps: Sequence[int]) -> list[str]:
    """The phase name of each of ``steps`` of the scenario's algorithm."""
    s = scenario
    return [phase_of(s.op, s.algorithm, s.ranks, step) for step in steps]


def step_sentences(scenario: Any, steps: Sequence[int], sizes: Sequence[Sequence[int]]) -> list[str]:
    """One sentence per step of the scenario's algorithm: ``sizes[i]`` are the bytes of the
    messages of ``steps[i]``."""
    s = scenario
    sentences = []
    for step, nbytes in zip(steps, sizes):
        phase = _phase_at(s.op, s.algorithm, s.ranks, step)
        sentences.append(step_sentence(phase.sentence if phase else "", nbytes))
    return sentences
