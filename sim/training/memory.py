"""Whether a rank's memory fits its GPU: the GPU's capacity beside every memory figure.

A memory figure alone invites the choice that does not fit (issue 36: DDP at 82.32 GiB a rank
on 80 GB H100s, with step times equal to FSDP's). :func:`capacity` gives the GPU's memory (the
``gpu_memory`` of a hardware preset, sim/hardware/presets) and whether a peak fits in it; every
surface (``sim ddp``, ``sim fsdp`` and each strategy it compares, the DDP page) calls it.
"""

from __future__ import annotations

from typing import Any

from sim.units import format_size

__all__ = ["capacity", "gpu_preset", "peak_words"]


def gpu_preset(scenario: Any) -> str | None:
    """The hardware preset whose GPU holds the step: the machine it runs on (``hardware``), else
    the GPU whose peak the compute uses (``gpu``); None where the scenario names neither."""
    return getattr(scenario, "hardware", None) or getattr(scenario, "gpu", None)


def capacity(peak_bytes: int, scenario: Any) -> dict[str, Any]:
    """``gpu_memory_bytes`` (one GPU's memory, None: unknown), ``fits`` (peak <= it; None:
    unknown), ``gpu`` (the preset) and ``gpu_memory_note`` (one sentence saying which)."""
    from sim.hardware.presets import load_preset

    name = gpu_preset(scenario)
    preset = load_preset(name) if name else None
    total = preset.gpu_memory_bytes if preset is not None else None
    if total is None:
        why = f"{name} has no GPU memory figure ({preset.gpu_model})" if preset is not None else "no GPU preset (give --hardware or --gpu)"
        return {"gpu": name, "gpu_memory_bytes": None, "fits": None, "gpu_memory_note": f"whether it fits is unknown: {why}"}
    fits = peak_bytes <= total
    note = f"{'fits' if fits else 'does not fit'} in the {preset.gpu_model}'s {total / 1e9:g} GB ({format_size(total)}, {name})"
    if not fits:
        note += f": {format_size(peak_bytes - total)} over"
    return {"gpu": name, "gpu_memory_bytes": total, "fits": fits, "gpu_memory_note": note}


def peak_words(summary: dict[str, Any]) -> str:
    """A peak memory with the GPU's beside it, for a card: "35.41 GiB of 74.51 GiB: fits"."""
    peak, total = format_size(summary["peak_memory_bytes"]), summary.get("gpu_memory_bytes")
    if total is None:
        return f"{peak} (GPU memory unknown)"
    return f"{peak} of {format_size(total)}: " + ("fits" if summary["fits"] else "does not fit")
