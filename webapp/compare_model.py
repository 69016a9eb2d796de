"""Plain functions behind the sim-vs-measured page: groups in the results store, (o, w) fits,
simulated vs measured points, the DDP comparison.

``real`` is imported inside the functions: without it (or without sample data) the page says
what is missing instead of failing.
"""

from __future__ import annotations

import importlib.util
import math
from collections import defaultdict
from typing import Any

from sim.errors import CollsimError
from sim.units import format_bandwidth, format_time

STATS = ("mean", "median", "p10", "min")
GROUP_KEYS = ("source", "backend", "device", "op", "world_size")


def missing() -> list[str]:
    return [name for name in ("real.store", "real.fit", "real.compare") if importlib.util.find_spec(name) is None]


def open_results(db_path: str | None) -> Any:
    """The results store at ``db_path`` read-only, or the bundled sample data."""
    from real.store import open_store, read_only_copy

    try:
        return read_only_copy(db_path) if db_path else open_store(None)
    except FileNotFoundError as error:
        raise CollsimError(f"the bundled sample data is incomplete ({error.filename}); reinstall collsim or pass --db") from None


def group_id(group: dict[str, Any]) -> str:
    return "|".join(str(group.get(key)) for key in GROUP_KEYS)


def group_label(group: dict[str, Any]) -> str:
    return f"{group['op']} · {group['backend']}/{group['device']} · {group['world_size']} ranks · {group['source']} ({group['sizes']} sizes, {group['runs']} runs)"


def groups(store: Any) -> list[dict[str, Any]]:
    """Fittable groups (two or more sizes), all-reduce first."""
    rows = [g for g in store.groups() if (g.get("sizes") or 0) >= 2 and g.get("op") != "barrier"]
    return sorted(rows, key=lambda g: (g["op"] != "all_reduce", str(g["source"]), str(g["backend"]), g["world_size"] or 0))


def group_rows(store: Any, key: str) -> list[dict[str, Any]]:
    source, backend, device, op, world_size = key.split("|")
    rows = store.collectives(
        op=op,
        backend=backend,
        world_size=int(world_size),
        device=None if device == "None" else device,
        source=None if source == "None" else source,
    )
    return [row for row in rows if row.get("size_bytes")]


def fit(rows: list[dict[str, Any]], stat: str) -> dict[str, Any]:
    """(o, w) with intervals, the fitted curve with its band, and each point's residual."""
    from real.fit import _value, fit_ow

    result = fit_ow(rows, stat, replicates=200)
    sizes = sorted({row["size_bytes"] for row in rows})
    (o_lo, o_hi), (w_lo, w_hi) = result.o_ci_s, result.w_ci_Bps
    curve = [
        (n, result.predict(n), max(o_lo, 0.0) + n / w_hi if w_hi else math.nan, o_hi + n / w_lo if w_lo else math.nan)
        for n in _dense(sizes)
    ]
    points = []
    for row in rows:
        value = _value(row, stat)
        if value is not None:
            points.append(
                {
                    "size_bytes": row["size_bytes"],
                    "time_s": value,
                    "label": f"measured ({stat})",
                    "residual": value / result.predict(row["size_bytes"]) - 1,
                }
            )
    return {
        "fit": result,
        "curve": curve,
        "points": points,
        "label": f"fit: o = {format_time(result.o_s)}, w = {format_bandwidth(result.w_Bps)}",
    }


def stats_for(rows: list[dict[str, Any]]) -> list[str]:
    """The statistics the rows carry at two or more sizes (published rows often give only a mean)."""
    from real.fit import _value

    available = []
    for stat in STATS:
        if len({row["size_bytes"] for row in rows if _value(row, stat) is not None}) >= 2:
            available.append(stat)
    return available


def _dense(sizes: list[int]) -> list[float]:
    low, high = min(sizes), max(sizes)
    steps = 40
    return [low * (high / low) ** (k / steps) for k in range(steps + 1)] if high > low else [low]


def sim_vs_measured(store: Any, key: str, stat: str, algorithm: str) -> dict[str, Any]:
    """``real.compare.compare_collective`` at every measured size (o, w fitted in-sample)."""
    from real.compare import compare_collective

    source, backend, device, op, world_size = key.split("|")
    sizes = sorted({row["size_bytes"] for row in group_rows(store, key)})
    fields = {"op": op, "algorithm": algorithm, "ranks": int(world_size)}
    extra = {
        "sizes": [str(size) for size in sizes],
        "backend": backend,
        "device": None if device == "None" else device,
        "source": "any" if source == "None" else source,  # the group's own rows: published, nccl-tests or measured
    }
    report = compare_collective(fields, extra, store, stat)
    rows = [
        {
            "size_bytes": p["size_bytes"],
            "measured_s": p["measured_s"],
            "measured_lo_s": p["spread_low_s"],
            "measured_hi_s": p["spread_high_s"],
            "simulated_s": p["simulated_s"],
            "relative_error": p["relative_error"],
            "within": p["within_spread"],
        }
        for p in report["points"]
    ]
    return {"rows": rows, "calibration": report["calibration"], "summary": report["summary"]}


def ddp_comparison(store: Any) -> list[dict[str, Any]]:
    """Measured vs simulated DDP step per (model, config), for every model with DDP steps."""
    from real.compare import compare_ddp

    models = sorted({row["model"] for row in store.ddp_steps()})
    points = []
    for model in models:
        try:
            report = compare_ddp({}, {"model": model}, store)
        except CollsimError:
            continue
        points += [{**point, "model": model} for point in report["points"]]
    return points


def algorithms_for_group(key: str) -> list[str]:
    from real.fit import ALGORITHM_TERMS

    op = key.split("|")[3]
    names = [algorithm for (o, algorithm) in ALGORITHM_TERMS if o == op]
    return names or ["ring"]


def by_size(rows: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[row["size_bytes"]].append(row)
    return grouped


def ddp_configs(store: Any) -> list[str]:
    """Configs with a measured timeline (profile) besides the no-communication baseline."""
    return list(dict.fromkeys(row["config"] for row in store.ddp_profiles() if row["config"] != "none"))


def _aligned(rows: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """Rows shifted so backward starts at 0, their kind prefixed with where they come from."""
    starts = [row["start_s"] for row in rows if row["kind"] == "backward"]
    origin = min(starts) if starts else 0.0
    return [
        {**row, "start_s": row["start_s"] - origin, "end_s": row["end_s"] - origin, "kind": f"{source} {row['kind']}"}
        for row in rows
        if row.get("rank", 0) == 0
    ]


def ddp_overlay(store: Any, config: str) -> dict[str, Any]:
    """The measured timeline of one DDP config beside ``sim.training.ddp`` replaying the measured
    no-communication profile with (o, w) fitted to the store's all-reduces (mean)."""
    import json
    import tempfile
    from pathlib import Path

    from real.fit import fit_ow
    from sim.training.ddp import DDPScenario, run_ddp

    measured = [row for row in store.ddp_profiles(config=config)]
    baseline = [row for row in store.ddp_profiles(config="none") if measured and row["model"] == measured[-1]["model"]]
    if not measured or not baseline:
        raise CollsimError(f"no measured timeline for DDP config {config!r} and its no-communication baseline")
    profile, base = measured[-1]["profile"], baseline[-1]["profile"]
    ranks, backend = int(base.get("world_size") or 2), base.get("backend", "gloo")
    rows = store.collectives(op="all_reduce", backend=backend, world_size=ranks)
    if not rows:
        raise CollsimError(f"no all_reduce measurements for {backend} with {ranks} ranks to fit o and w")
    fitted = fit_ow(rows, "mean", replicates=50)
    strategy, _, bucket = config.partition(":")
    data: dict[str, Any] = {"strategy": strategy, "ranks": ranks, "comm": "ow", "o_s": max(fitted.o_s, 0.0), "w_Bps": fitted.w_Bps}
    if strategy == "bucketed":
        data.update(bucket_size=bucket or "25MiB", first_bucket="none")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "profile.json"
        path.write_text(json.dumps(base))
        simulated = run_ddp(DDPScenario.from_dict({**data, "profile_file": str(path)}))
    return {
        "rows": _aligned(profile["events"], "measured") + _aligned(simulated.events(), "simulated"),
        "note": f"{measured[-1]['model']} {config}: o = {format_time(fitted.o_s)}, w = {format_bandwidth(fitted.w_Bps)} fitted to {len(rows)} all-reduce rows",
    }
