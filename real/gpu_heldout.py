"""The published nccl-tests logs shipped with collsim (``real/data/nccl-tests``), each preset with
two or more logs validated held out: fit on some of its logs, predict the others with the 80 %
interval (:func:`real.validate_nccl.validate`, the same code as ``collsim validate nccl-tests``).

The fits run the DES for tens of seconds, so the Sim vs measured page reads them precomputed from
:data:`SHIPPED_JSON`, written by ``python -m real.gpu_heldout`` (:data:`COMMAND`, recorded in the
file). Every split of a preset is there: the default (the logs of the smallest node count; where
all logs have the same count, the first by name), and each log alone as the fitted one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from sim.errors import CollsimError

SHIPPED_JSON = Path(__file__).parent / "data" / "nccl_tests_heldout.json"
COMMAND = "python -m real.gpu_heldout"

__all__ = [
    "COMMAND",
    "SHIPPED_JSON",
    "compute",
    "default_fit_on",
    "gpu_choices",
    "gpu_view",
    "load",
    "read_group",
    "shipped_groups",
    "write",
]


def shipped_groups() -> dict[str, list[str]]:
    """Preset -> the shipped logs that ran on it (:data:`sim.collective.nccl_fit.CALIBRATION`)."""
    from real.validate_nccl import SHIPPED
    from sim.collective.nccl_fit import CALIBRATION

    groups: dict[str, list[str]] = {}
    for name, (preset, *_) in sorted(CALIBRATION.items()):
        if (SHIPPED / name).exists():
            groups.setdefault(preset, []).append(name)
    return groups


def read_group(preset: str, names: list[str]) -> list[Any]:
    """The logs of one preset, read and checked (:func:`real.validate_nccl.read_logs`)."""
    from real.validate_nccl import SHIPPED, read_logs
    from sim.collective.nccl_fit import CALIBRATION

    settings = {CALIBRATION[name][2:] for name in names}
    if len(settings) > 1:
        raise CollsimError(f"{preset}: its shipped logs ran with different NCCL_PROTO / NCCL_ALGO; validate them one setting at a time")
    proto, algo = settings.pop()
    nodes = ",".join(str(CALIBRATION[name][1]) for name in names)
    return read_logs([SHIPPED / name for name in names], preset, nodes, proto, algo)


def default_fit_on(logs: list[Any]) -> str:
    """The default split's ``fit_on``: the logs of the smallest node count (each op), or, where every
    log has that count, the first log by name."""
    from real.validate_nccl import choose_fit_on

    try:
        fitted, _ = choose_fit_on(logs)
    except CollsimError:  # every log has the smallest node count: nothing would be held out
        return sorted(log.name for log in logs)[0]
    return ",".join(log.name for log in fitted)


def _splits(logs: list[Any]) -> list[str]:
    """The default split first, then each log alone as the fitted one."""
    first = default_fit_on(logs)
    return [first] + [log.name for log in logs if log.name != first]


def compute(stride: int = 1, progress: Any = None) -> dict[str, Any]:
    """Every split of every preset with two or more shipped logs, as :func:`real.validate_nccl.validate`'s
    documents; the presets with one log are listed as not validated."""
    from real.validate_nccl import validate

    groups, single = {}, []
    for preset, names in shipped_groups().items():
        if len(names) < 2:
            single += [{"log": name, "preset": preset} for name in names]
            continue
        logs = read_group(preset, names)
        splits = {fit_on: validate(logs, preset, fit_on, stride, progress) for fit_on in _splits(logs)}
        groups[preset] = {"logs": names, "default": next(iter(splits)), "splits": splits}
    return {"command": COMMAND + (f" --stride {stride}" if stride != 1 else ""), "stride": stride, "groups": groups, "single": single}


def write(path: Path = SHIPPED_JSON, stride: int = 1) -> None:
    document = compute(stride, progress=lambda message: print(f"  {message}", file=sys.stderr))
    path.write_text(json.dumps(document, indent=1, default=str) + "\n")


def load(path: Path = SHIPPED_JSON) -> dict[str, Any]:
    """The precomputed validations (:func:`compute`), or one message saying how to make them."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise CollsimError(f"no precomputed GPU validation at {path} ({error}); write it with: {COMMAND}") from None


def gpu_choices(document: dict[str, Any]) -> list[dict[str, str]]:
    """One option per (preset, split): value ``preset|fit_on``, the default split of each preset first."""
    options = []
    for preset, group in document["groups"].items():
        for fit_on, validated in group["splits"].items():
            fitted = ", ".join(
                f"{row['log']} ({row['nodes']} node{'s' if row['nodes'] > 1 else ''})" for row in validated["split"]["fitted"]
            )
            options.append({"label": f"{preset}: fit on {fitted}, predict the other log", "value": f"{preset}|{fit_on}"})
    return options


def gpu_view(document: dict[str, Any], choice: str | None) -> dict[str, Any]:
    """One split as rows to draw (role fitted or predicted; no spread: nccl-tests logs print one time
    a size), the split, the per-regime table and the overall coverage of the predicted points."""
    options = [option["value"] for option in gpu_choices(document)]
    if not options:
        raise CollsimError("no preset has two or more shipped nccl-tests logs: nothing to hold out")
    chosen = choice if choice in options else options[0]
    preset, fit_on = chosen.split("|", 1)
    validated = document["groups"][preset]["splits"][fit_on]
    rows = [
        {"series": f"{p['log']} ({p['nodes']} node{'s' if p['nodes'] > 1 else ''})", "role": p["role"], "size_bytes": p["size_bytes"],
         "measured_s": p["measured_s"], "measured_lo_s": None, "measured_hi_s": None, "simulated_s": p["predicted_s"],
         "low_s": p["low_s"], "high_s": p["high_s"], "busbw_error": p["error"], "covered": p["covered"]}
        for p in validated["points"]
    ]  # fmt: skip
    judged = [row for row in rows if row["role"] == "predicted"]
    covered = sum(1 for row in judged if row["covered"])
    return {
        "choice": chosen,
        "preset": preset,
        "split": validated["split"],
        "rows": rows,
        "regimes": validated["regimes"],
        "level": validated["interval"]["level"],
        "summary": {"predicted": len(judged), "covered": covered, "coverage": covered / len(judged) if judged else None},
        "single": document.get("single", []),
        "command": document.get("command", COMMAND),
    }


if __name__ == "__main__":  # python -m real.gpu_heldout [--stride N]
    write(stride=int(sys.argv[sys.argv.index("--stride") + 1]) if "--stride" in sys.argv else 1)
