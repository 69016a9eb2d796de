"""Measurements beside the model, as data to draw: fittable groups of a results store, an (o, w)
fit with its band and residuals, simulated vs measured per size, measured vs simulated DDP steps,
and a measured DDP timeline beside its simulated replay.

The explorer's Sim vs measured page draws these; they are plain functions of a results store
(:mod:`real.store`) and return plain dicts and lists, so a notebook can call them too.
"""

from __future__ import annotations

import json
import math
from typing import Any

from sim.errors import CollsimError
from sim.files import own_temporary_folder
from sim.units import format_bandwidth, format_time

__all__ = [
    "STATS",
    "algorithms_for_op",
    "ddp_comparison",
    "ddp_configs",
    "ddp_overlay",
    "fit_curve",
    "fittable_groups",
    "group_rows",
    "held_out",
    "held_out_splits",
    "open_results",
    "sim_vs_measured",
    "stats_available",
]

STATS = ("mean", "median", "p10", "min")


def open_results(db_path: str | None) -> Any:
    """The results store at ``db_path`` read-only, or the bundled sample data (None)."""
    from real.store import open_store, read_only_copy

    try:
        return read_only_copy(db_path) if db_path else open_store(None)
    except FileNotFoundError as error:
        raise CollsimError(f"the bundled sample data is incomplete ({error.filename}); reinstall collsim or pass --db") from None


def fittable_groups(store: Any) -> list[dict[str, Any]]:
    """Groups of collective rows with two or more sizes (barriers have none), all-reduce first."""
    rows = [g for g in store.groups() if (g.get("sizes") or 0) >= 2 and g.get("op") != "barrier"]
    return sorted(rows, key=lambda g: (g["op"] != "all_reduce", str(g["source"]), str(g["backend"]), g["world_size"] or 0))


def group_rows(store: Any, group: dict[str, Any]) -> list[dict[str, Any]]:
    """The measured rows of one group (source, backend, device, op, world_size) that have a size."""
    rows = store.collectives(
        op=group["op"],
        backend=group["backend"],
        world_size=int(group["world_size"]),
        device=group.get("device"),
        source=group.get("source"),
    )
    return [row for row in rows if row.get("size_bytes")]


def stats_available(rows: list[dict[str, Any]]) -> list[str]:
    """The statistics the rows carry at two or more sizes (published rows often give only a mean)."""
    from real.fit import row_time

    return [stat for stat in STATS if len({row["size_bytes"] for row in rows if row_time(row, stat) is not None}) >= 2]


def _dense(sizes: list[int], steps: int = 40) -> list[float]:
    low, high = min(sizes), max(sizes)
    return [low * (high / low) ** (k / steps) for k in range(steps + 1)] if high > low else [low]


def _curve(result: Any, sizes: list[int]) -> list[tuple[float, float, float, float]]:
    """(size, fit, low, high) over the sizes: the fitted line and the band of its 95 % intervals."""
    (o_lo, o_hi), (w_lo, w_hi) = result.o_ci_s, result.w_ci_Bps
    return [
        (n, result.predict(n), max(o_lo, 0.0) + n / w_hi if w_hi else math.nan, o_hi + n / w_lo if w_lo else math.nan)
        for n in _dense(sizes)
    ]


def _measured_points(result: Any, rows: list[dict[str, Any]], stat: str, role: str | None = None) -> list[dict[str, Any]]:
    """Each row's time with its residual against the fit; ``role`` fitted or predicted (held out)."""
    from real.fit import row_time

    label = {None: f"measured ({stat})", "fitted": f"measured ({stat}), fitted on", "predicted": f"measured ({stat}), held out"}[role]
    points = []
    for row in rows:
        value = row_time(row, stat)
        if value is not None:
            residual = value / result.predict(row["size_bytes"]) - 1
            points.append({"size_bytes": row["size_bytes"], "time_s": value, "label": label, "residual": residual, "role": role})
    return points


def _fit_label(result: Any) -> str:
    return f"fit: o = {format_time(result.o_s)}, w = {format_bandwidth(result.w_Bps)}"


def fit_curve(rows: list[dict[str, Any]], stat: str, replicates: int = 200) -> dict[str, Any]:
    """(o, w) with intervals (:func:`real.fit.fit_ow`), the fitted curve over the sizes with its
    band ((size, fit, low, high) tuples), each point with its residual, and a label."""
    from real.fit import fit_ow

    result = fit_ow(rows, stat, replicates=replicates)
    curve = _curve(result, sorted({row["size_bytes"] for row in rows}))
    return {"fit": result, "curve": curve, "points": _measured_points(result, rows, stat), "label": _fit_label(result)}


def held_out(store: Any, group: dict[str, Any], stat: str, algorithm: str, split: str | None = None) -> dict[str, Any]:
    """Simulated vs measured held out (:func:`real.heldout_ow.compare_split`): o and w fitted on the
    split's part, each size simulated; rows of fitted (in-sample) and predicted (held out, with the
    interval) points, the fit's curve over every size, the measured points with their role and
    residual, the split (name, what it means, what is fitted and predicted) and the summary."""
    from real.heldout_ow import DEFAULT_SPLIT, SPLITS, compare_split, splits_for

    rows = group_rows(store, group)
    compared = compare_split(store, group, rows, stat, algorithm, split or DEFAULT_SPLIT)
    result, chosen = compared["fit"], compared["split"]
    points = _measured_points(result, chosen.fitted, stat, "fitted") + _measured_points(result, chosen.predicted, stat, "predicted")
    split_shown = {
        "name": chosen.name, "text": SPLITS[chosen.name], "allowed": splits_for(rows),
        "fitted_sizes": chosen.fitted_sizes, "predicted_sizes": chosen.predicted_sizes,
        "fitted_runs": chosen.fitted_run_ids, "predicted_runs": chosen.predicted_run_ids,
    }  # fmt: skip
    return {**compared, "split": split_shown, "curve": _curve(result, sorted({row["size_bytes"] for row in rows})), "points": points,
            "label": _fit_label(result)}  # fmt: skip


def held_out_splits(rows: list[dict[str, Any]]) -> list[str]:
    """The splits :func:`held_out` can make of these rows, the held-out ones first (:func:`real.heldout_ow.splits_for`)."""
    from real.heldout_ow import splits_for

    return splits_for(rows)


def sim_vs_measured(store: Any, group: dict[str, Any], stat: str, algorithm: str) -> dict[str, Any]:
    """:func:`real.compare.compare_collective` at every measured size of ``group`` (o, w fitted in
    sample): rows of measured (with its spread) and simulated time, the calibration, a summary.
    The page shows :func:`held_out` instead; this is the in-sample reading ``collsim compare`` gives."""
    from real.compare import compare_collective

    sizes = sorted({row["size_bytes"] for row in group_rows(store, group)})
    fields = {"op": group["op"], "algorithm": algorithm, "ranks": int(group["world_size"])}
    extra = {
        "sizes": [str(size) for size in sizes],
        "backend": group["backend"],
        "device": group.get("device"),
        "source": group.get("source") or "any",  # the group's own rows: published, nccl-tests or measured
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

    points = []
    for model in sorted({row["model"] for row in store.ddp_steps()}):
        try:
            report = compare_ddp({}, {"model": model}, store)
        except CollsimError:
            continue
        points += [{**point, "model": model} for point in report["points"]]
    return points


def algorithms_for_op(op: str) -> list[str]:
    """The algorithms whose (o, w) <-> (a, B) terms are known for ``op`` (ring when none)."""
    from real.fit import ALGORITHM_TERMS

    return [algorithm for (o, algorithm) in ALGORITHM_TERMS if o == op] or ["ring"]


def ddp_configs(store: Any) -> list[str]:
    """Configs with a measured timeline (profile) besides the no-communication baseline."""
    return list(dict.fromkeys(row["config"] for row in store.ddp_profiles() if row["config"] != "none"))


def _aligned(rows: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """Rank 0's rows shifted so backward starts at 0, their kind prefixed with where they come from."""
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
    from real.fit import fit_ow
    from sim.training.ddp import DDPScenario, run_ddp

    measured = list(store.ddp_profiles(config=config))
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
    with own_temporary_folder() as folder:  # opens even in the explorer, which refuses paths a link names
        path = folder / "profile.json"
        path.write_text(json.dumps(base))
        simulated = run_ddp(DDPScenario.from_dict({**data, "profile_file": str(path)}))
    note = (
        f"{measured[-1]['model']} {config}: o = {format_time(fitted.o_s)}, w = {format_bandwidth(fitted.w_Bps)} "
        f"fitted to {len(rows)} all-reduce rows"
    )
    return {"rows": _aligned(profile["events"], "measured") + _aligned(simulated.events(), "simulated"), "note": note}
