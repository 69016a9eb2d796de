"""Calibration files: constants fitted from real runs (written by ``collsim fit --calibration``).

Format (YAML or JSON): ``kind: collsim-calibration``, ``version: 1``, ``collectives`` (one entry
per backend/device/op/world size with ``o_s``, ``w_Bps`` and a ``scenario`` of CollectiveScenario
fields that reproduce ``o + n/w`` on ring/switch), ``alpha_beta`` (latency and bandwidth fitted
across world sizes), ``ddp`` and, from ``--piecewise``, ``piecewise`` (read by people, not by
the simulator). The simulator reads it with ``--calibration FILE``.
"""

from __future__ import annotations

from typing import Any

from sim.collective.analytic import ow_for_ring
from sim.errors import CollsimError
from sim.scenario import load_mapping, unknown_key

# piecewise: two (o, w) pieces per group from `collsim fit --piecewise`, kept for the record
TOP_LEVEL_KEYS = ("kind", "version", "created_at", "source", "collectives", "alpha_beta", "ddp", "piecewise")


def load_calibration(path: str) -> dict[str, Any]:
    """Read a calibration file; a misspelt key is an error naming the nearest valid one."""
    from sim.scenario import CollectiveScenario, check_keys

    document = load_mapping(path, "calibration file")
    if document.get("kind") != "collsim-calibration":
        raise CollsimError(f"{path}: not a calibration file (expected kind: collsim-calibration)")
    for key in document:
        if key not in TOP_LEVEL_KEYS:
            raise unknown_key(key, TOP_LEVEL_KEYS, f"calibration file {path!r}", "key")
    for entry in document.get("collectives") or []:
        if isinstance(entry, dict) and isinstance(entry.get("scenario"), dict):
            check_keys(CollectiveScenario, entry["scenario"])
    return document


def _matches(entry: dict[str, Any], op: str, backend: str | None, device: str | None) -> bool:
    return (
        entry.get("op") == op and (backend is None or entry.get("backend") == backend) and (device is None or entry.get("device") == device)
    )


def _need(entry: Any, key: str, where: str) -> Any:
    """entry[key], or one error line naming what the calibration file lacks (canonical keys:
    the file is written by ``collsim fit``, numbers in seconds and bytes per second)."""
    if not isinstance(entry, dict) or key not in entry:
        raise CollsimError(f"calibration file: {where} has no {key!r}; write it with 'collsim fit --calibration FILE'")
    return entry[key]


def _held(document: dict[str, Any]) -> str:
    held = sorted({f"{e.get('backend')}/{e.get('op')}/p={e.get('world_size')}" for e in document.get("collectives", [])})
    return ", ".join(held) or "no entries"


def calibrated_fields(
    document: dict[str, Any], op: str, world_size: int, backend: str | None = None, device: str | None = None
) -> dict[str, Any]:
    """Scenario fields (algorithm, overhead_s, latency_s, bandwidth_Bps) for one (op, p[, backend]).

    Uses the (o, w) entry for exactly this world size if there is one, else the alpha-beta fit
    across world sizes. Raises CollsimError naming what the file holds when nothing matches.
    """
    for entry in document.get("collectives", []):
        if _matches(entry, op, backend, device) and entry.get("world_size") == world_size and "scenario" in entry:
            scenario = entry["scenario"]
            return {
                key: _need(scenario, key, "a collectives entry's scenario")
                for key in ("algorithm", "overhead_s", "latency_s", "bandwidth_Bps")
            }
    for entry in document.get("alpha_beta", []):
        if _matches(entry, op, backend, device):
            return {
                "algorithm": _need(entry, "algorithm", "an alpha_beta entry"),
                "overhead_s": _need(entry, "call_overhead_s", "an alpha_beta entry"),
                "latency_s": _need(entry, "latency_s", "an alpha_beta entry"),
                "bandwidth_Bps": _need(entry, "bandwidth_Bps", "an alpha_beta entry"),
            }
    raise CollsimError(f"calibration has nothing for {backend or 'any backend'}/{op}/p={world_size}; it holds {_held(document)}")


def calibrated_ow(document: dict[str, Any], world_size: int, backend: str | None = None, device: str | None = None) -> tuple[float, float]:
    """(o, w) of all_reduce at this world size: the fitted pair, else ring on the alpha-beta fit."""
    for entry in document.get("collectives", []):
        if _matches(entry, "all_reduce", backend, device) and entry.get("world_size") == world_size and entry.get("w_Bps"):
            return float(_need(entry, "o_s", "a collectives entry")), float(entry["w_Bps"])
    fields = calibrated_fields(document, "all_reduce", world_size, backend, device)
    return ow_for_ring(world_size, fields["latency_s"], fields["bandwidth_Bps"], fields["overhead_s"])


def calibration_note(document: dict[str, Any], path: str, op: str, ranks: int, backend: str | None) -> dict[str, Any]:
    """Where a calibration's figures come from for (op, ranks): measured at this world size, or
    extrapolated from the world sizes it was fitted at (stated in text and JSON, never silent)."""
    measured = sorted(
        {
            int(entry["world_size"])
            for entry in document.get("collectives", [])
            if entry.get("op") == op and (backend is None or entry.get("backend") == backend) and entry.get("world_size") is not None
        }
    )
    extrapolated = ranks not in measured
    note = {"file": path, "op": op, "ranks": ranks, "fitted_world_sizes": measured, "extrapolated": extrapolated}
    if extrapolated:
        sizes = ", ".join(map(str, measured)) or "none for this op"
        note["note"] = f"calibration fitted at p = {sizes}, applied at p = {ranks}: extrapolated across world sizes (alpha-beta fit)"
    return note
