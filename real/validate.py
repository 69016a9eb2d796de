"""``collsim validate``: measure, fit, predict held-out points and the bucket optimum, in one command.

The chain (issue 12), each step a plain function so tests can feed it synthetic rows:

1. ``measure``: collectives (all_reduce, all_gather, reduce_scatter, broadcast) over a size grid,
   several fresh launches per world size, points interleaved round-robin inside each launch; then
   DDP steps of the built-in ``small`` model (the four strategies, bucketed at a grid of caps),
   each round paired with a no-communication step. Rows go to the store as they are measured;
   Ctrl-C stops measuring and the analysis runs on what was kept.
2. ``analyse``: (o, w) per (op, world size), bounded to be >= 0 with bootstrap intervals; a link
   model (o_call, a, b, g) per op for the algorithm the backend runs (``BACKEND_ALGORITHMS``,
   sources in docs/real.md); **held-out** predictions only: by size (fit on alternate sizes,
   predict the others), by launch (leave one launch out) and by world size (fit the link model on
   the smallest, predict the rest). DDP: the overhead formula fitted to the measured overheads,
   its optimum, and the simulator's step time per strategy and cap with (o, w) from the bench.
3. ``write_outputs``: ``summary.json`` (stable keys, see ``SUMMARY_KEYS``), ``calibration.yaml``
   (``collsim sim ... --calibration``) and ``report.html`` (``real.report``).

The measured value of a point is the median per-iteration time of each launch, then the median
over launches; its spread is the range over launches. ``error`` is (predicted - measured) /
measured; ``within_spread`` says whether the prediction lies inside that range.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim.algorithms.registry import backend_algorithms
from sim.collective.analytic import closed_form
from sim.errors import CollsimError
from sim.units import format_size

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
STAT = "median"
MiB = 1 << 20

# What each backend runs per op: backend -> op -> (op, algorithm), from the algorithms' records
# (``runs``, beside each @register; sources in docs/real.md); their closed forms model the time.
BACKEND_ALGORITHMS = backend_algorithms()
NCCL_CHUNK_BYTES = 128 * 1024  # pipelined-chain chunk for NCCL broadcast (an approximation)

COLLECTIVE_KEYS = (
    "op",
    "world_size",
    "size_bytes",
    "measured_s",
    "spread_low_s",
    "spread_high_s",
    "predicted_s",
    "error",
    "within_spread",
    "held_out",
)
FIT_KEYS = ("op", "world_size", "o_s", "o_low_s", "o_high_s", "w_Bps", "w_low_Bps", "w_high_Bps")
DDP_KEYS = ("bucket_bytes", "overhead_s", "fitted_o_s", "fitted_w_Bps", "best_measured_bytes", "best_formula_bytes", "best_sim_bytes")
SUMMARY_KEYS = {"collectives": COLLECTIVE_KEYS, "fits": FIT_KEYS, "ddp": DDP_KEYS}
# Added after the three above (older summaries lack it): measured vs simulated FSDP / ZeRO step per strategy.
FSDP_KEYS = ("strategy", "measured_s", "spread_low_s", "spread_high_s", "predicted_s", "error", "within_spread")
FSDP_STRATEGIES = ("ddp", "zero1", "shard_grad_op", "full_shard", "no_shard", "hybrid_shard")
HELD_OUT = ("size", "launch", "world_size")


# ----------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class Plan:
    """What ``measure`` runs; ``make_plan`` fills it for --quick or the full run."""

    backend: str
    world_sizes: tuple[int, ...]
    sizes: tuple[int, ...]
    ops: tuple[str, ...] = OPS
    iters: int = 20
    warmup: int = 3
    rounds: int = 4
    launches: int = 3
    model: str = "small"
    strategies: tuple[str, ...] = ("naive", "flat", "overlap")
    bucket_caps: tuple[int, ...] = ()
    ddp_rounds: int = 6
    ddp_warmup: int = 1
    ddp_launches: int = 3
    fsdp_strategies: tuple[str, ...] = FSDP_STRATEGIES
    fsdp_rounds: int = 5
    fsdp_warmup: int = 1
    fsdp_launches: int = 2
    quick: bool = False
    op_timeout_s: float = 120.0
    extra: dict[str, Any] = field(default_factory=dict)

    def ddp_configs(self) -> list[tuple[str, int | None]]:
        return [(name, None) for name in self.strategies] + [("bucketed", cap) for cap in self.bucket_caps]

    def total_points(self) -> int:
        collectives = len(self.ops) * len(self.sizes) * self.launches
        ddp = (len(self.ddp_configs()) + 1) * self.ddp_rounds * self.ddp_launches
        fsdp = (len(self.fsdp_strategies) + 1) * self.fsdp_rounds * self.fsdp_launches  # smallest world size only
        return (collectives + ddp) * len(self.world_sizes) + fsdp


def geometric(start: int, stop: int, factor: int) -> tuple[int, ...]:
    sizes, size = [], start
    while size <= stop:
        sizes.append(size)
        size *= factor
    return tuple(sizes)


def make_plan(backend: str, world_sizes: Iterable[int], quick: bool) -> Plan:
    """Full: 4 KiB..256 MiB (x4), 3 launches, 8+ caps 256 KiB..128 MiB; --quick: up to 16 MiB, fewer rounds."""
    world_sizes = tuple(sorted(set(world_sizes)))
    if not world_sizes or min(world_sizes) < 2:
        raise CollsimError(f"--ranks: need world sizes >= 2 (e.g. 2 or 2,3,4), got {','.join(map(str, world_sizes)) or 'none'}")
    caps = geometric(256 * 1024, 128 * MiB, 2)  # 10 caps
    if quick:
        return Plan(backend, world_sizes, geometric(4096, 16 * MiB, 4), iters=12, rounds=3, launches=3, bucket_caps=caps,
                    ddp_rounds=4, ddp_launches=2, fsdp_rounds=3, fsdp_launches=1, quick=True)  # fmt: skip
    return Plan(backend, world_sizes, geometric(4096, 256 * MiB, 4), iters=20, rounds=4, launches=3, bucket_caps=caps,
                ddp_rounds=8, ddp_launches=3)  # fmt: skip


def check_plan(plan: Plan) -> None:
    """Everything about a plan that can be checked before the first measurement (the issue's
    full validate failed on 3 ranks after 641 s): the model, every world size, every stage's
    parameters. Raises CollsimError naming the flag."""
    from real.ddp import model_spec

    model_spec(plan.model)
    if len(plan.sizes) < 4:
        raise CollsimError(f"--sizes: need 4 or more sizes to hold alternate sizes out, got {len(plan.sizes)}")
    if min(plan.sizes) < 4:
        raise CollsimError(f"--sizes: every size must hold at least one float32 element (4 B), got {min(plan.sizes)} B")
    if plan.launches < 1 or plan.iters < 1 or plan.rounds < 1 or plan.rounds > plan.iters:
        raise CollsimError(f"--launches: need launches >= 1 and 1 <= rounds <= iters, got {plan.launches}, {plan.rounds}, {plan.iters}")
    for world_size in plan.world_sizes:
        if world_size < 2:
            raise CollsimError(f"--ranks: need world sizes >= 2, got {world_size}")


OUTPUT_FILES = ("summary.json", "calibration.yaml", "report.html", "fsdp_measured.json")
STATUS_FILE = "status.json"


def prepare_folder(out: Path, command: str) -> Path | None:
    """Before measuring: move the previous run's outputs into ``OUT/previous/`` (so no report
    is left looking like this run's) and write ``OUT/status.json`` with state ``running``;
    returns the folder they were moved to (None when there were none)."""
    import shutil

    out.mkdir(parents=True, exist_ok=True)
    probe = out / ".collsim-write-test"
    try:
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise CollsimError(f"--out: cannot write in {str(out)!r}: {error.strerror or error}") from None
    stale = [out / name for name in OUTPUT_FILES if (out / name).exists()]
    previous = None
    if stale:
        previous = out / "previous"
        shutil.rmtree(previous, ignore_errors=True)
        previous.mkdir()
        for path in stale:
            path.rename(previous / path.name)
        if (out / STATUS_FILE).exists():
            (out / STATUS_FILE).rename(previous / STATUS_FILE)
    mark_folder(out, "running", command=command)
    return previous


def mark_folder(out: Path, state: str, **facts: Any) -> None:
    """``OUT/status.json``: running, complete, interrupted (a partial report) or failed (no report)."""
    from real.bench import now_utc

    path = out / STATUS_FILE
    document: dict[str, Any] = {}
    if path.exists():
        try:
            document = json.loads(path.read_text())
        except ValueError:
            document = {}
    document.update(facts, state=state, updated_at=now_utc())
    path.write_text(json.dumps(document, indent=1, default=str))


# ----------------------------------------------------------------------------- measure


@dataclass
class Measured:
    """What one validate run measured (rows as in the store), and whether it was cut short."""

    collectives: list[dict[str, Any]] = field(default_factory=list)
    ddp_steps: list[dict[str, Any]] = field(default_factory=list)
    profiles: list[dict[str, Any]] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    fsdp: dict[str, Any] | None = None  # real.compare.fsdp_document of the FSDP launches
    interrupted: bool = False
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


def measure(plan: Plan, store: Any, config_for: Callable[[int], Any], meta: dict[str, Any], tick: Callable[[], None]) -> Measured:
    """Run the plan; every row goes to ``store`` (may be None) as it arrives. Ctrl-C keeps what came."""
    from real.bench import BenchSpec, run_bench
    from real.ddp import run_ddp_bench
    from real.store import new_run_id, recorded_run

    measured = Measured(meta=dict(meta))
    started = time.monotonic()
    spec = BenchSpec(plan.ops, plan.sizes, plan.iters, plan.warmup, rounds=plan.rounds)
    try:
        for world_size in plan.world_sizes:
            config = config_for(world_size)
            for launch in range(plan.launches):
                run_meta = _new_run(store, "bench", meta, world_size, launch, new_run_id(), measured)
                recorded_run(store, run_meta, run_bench, spec, config, run_meta, _bench_sink(store, measured, tick))
            for launch in range(plan.ddp_launches):
                run_meta = _new_run(store, "ddp", {**meta, "model": plan.model}, world_size, launch, new_run_id(), measured)
                sink = _ddp_sink(store, run_meta, measured, tick)
                recorded_run(
                    store,
                    run_meta,
                    run_ddp_bench,
                    plan.model,
                    plan.ddp_configs(),
                    config,
                    run_meta,
                    plan.ddp_rounds,
                    plan.ddp_warmup,
                    0,
                    sink,
                )
        if plan.fsdp_launches and plan.fsdp_strategies:
            _measure_fsdp(plan, config_for(plan.world_sizes[0]), meta, measured, tick)
    except KeyboardInterrupt:
        measured.interrupted = True
    measured.seconds = time.monotonic() - started
    return measured


def _measure_fsdp(plan: Plan, config: Any, meta: dict[str, Any], measured: Measured, tick: Callable[[], None]) -> None:
    """FSDP / ZeRO steps (``real.fsdp.run_bench``) at the smallest world size, one fresh launch at a
    time; ``measured.fsdp`` always holds the launches completed so far (Ctrl-C keeps them)."""
    from real.compare import fsdp_document
    from real.ddp import _fresh_model, export_params, model_spec
    from real.fsdp import run_bench

    started = time.monotonic()
    params = export_params(_fresh_model(model_spec(plan.model), 0))
    launches: list[list[dict[str, Any]]] = []
    for _ in range(plan.fsdp_launches):
        rows = run_bench(plan.model, list(plan.fsdp_strategies), config, plan.fsdp_rounds, plan.fsdp_warmup)
        if not rows:  # not rank 0 under torchrun
            continue
        launches.append(rows)
        seconds = time.monotonic() - started  # what the FSDP section adds to the run
        measured.fsdp = fsdp_document(
            launches, plan.model, config.world_size, params, {**meta, "world_size": config.world_size, "seconds": seconds}
        )
        for row in rows:
            if row.get("kind") == "step":
                tick()


def _new_run(store: Any, kind: str, meta: dict[str, Any], world_size: int, launch: int, run_id: str, measured: Measured) -> dict[str, Any]:
    run_meta = {**meta, "run_id": run_id, "launch": launch, "world_size": world_size}
    measured.run_ids.append(run_id)
    if store is not None:
        store.add_run(kind, run_meta)
    return run_meta


def _bench_sink(store: Any, measured: Measured, tick: Callable[[], None]) -> Callable[[dict[str, Any]], None]:
    def on_row(row: dict[str, Any]) -> None:
        measured.collectives.append(row)
        if store is not None:
            store.add_collective(row)
        tick()

    return on_row


def _ddp_sink(store: Any, run_meta: dict[str, Any], measured: Measured, tick: Callable[[], None]) -> Callable[[dict[str, Any]], None]:
    def on_result(row: dict[str, Any]) -> None:
        table = row.pop("_table")
        if table == "ddp_profiles":
            measured.profiles.append({**row, "run_id": run_meta["run_id"], "world_size": run_meta["world_size"]})
            if store is not None:
                store.add_ddp_profile(run_meta["run_id"], row["model"], row["config"], row["profile"])
            return
        measured.ddp_steps.append(row)
        if store is not None:
            store.add_ddp_step(row)
        tick()

    return on_result


# ----------------------------------------------------------------------------- points


def _median_time(row: dict[str, Any]) -> float:
    times = row.get("times_s")
    return float(np.median(times)) if times else float(row["median_s"])


def points(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Per (op, world size, size): launch medians (by run), measured value, spread over launches."""
    by_point: dict[tuple[str, int, int], dict[str, float]] = defaultdict(dict)
    for row in rows:
        if row.get("size_bytes"):
            by_point[(row["op"], int(row["world_size"]), int(row["size_bytes"]))][row.get("run_id") or "run"] = _median_time(row)
    table = {}
    for key, per_launch in sorted(by_point.items()):
        values = list(per_launch.values())
        table[key] = {
            "per_launch": per_launch,
            "measured_s": statistics.median(values),
            "spread_low_s": min(values),
            "spread_high_s": max(values),
        }
    return table


def _row(
    op: str, world_size: int, size: int, point: dict[str, Any], predicted: float, held_out: str, error: float | None = None
) -> dict[str, Any]:
    measured = point["measured_s"]
    return {
        "op": op, "world_size": world_size, "size_bytes": size, "measured_s": measured, "spread_low_s": point["spread_low_s"],
        "spread_high_s": point["spread_high_s"], "predicted_s": predicted,
        "error": error if error is not None else (predicted - measured) / measured, "within_spread": point["spread_low_s"] <= predicted <= point["spread_high_s"],
        "held_out": held_out,
    }  # fmt: skip


def _fit(rows: list[dict[str, Any]], replicates: int = 0) -> Any:
    from real.fit import fit_ow

    return fit_ow(rows, STAT, replicates=replicates)


def held_out_by_size(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One (op, world size): fit o, w on every other size, predict the sizes left out (both halves)."""
    table = points(rows)
    sizes = sorted({size for (_, _, size) in table})
    if len(sizes) < 4:
        return []
    halves = (sizes[0::2], sizes[1::2])
    result = []
    for fitted, predicted in (halves, halves[::-1]):
        fit = _fit([row for row in rows if row["size_bytes"] in fitted])
        for (op, world_size, size), point in table.items():
            if size in predicted:
                result.append(_row(op, world_size, size, point, fit.predict(size), "size"))
    return sorted(result, key=lambda row: row["size_bytes"])


def held_out_by_launch(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One (op, world size): for each launch, fit o, w on the other launches and predict its points.

    A row's ``predicted_s`` is the median of the per-launch predictions and ``error`` the median of
    (prediction - that launch's value) / that launch's value.
    """
    table = points(rows)
    launches = sorted({row.get("run_id") for row in rows})
    if len(launches) < 2:
        return []
    fits = {}
    for launch in launches:  # a launch cut short by Ctrl-C may leave the others with too few sizes
        others = [row for row in rows if row.get("run_id") != launch]
        if len({row["size_bytes"] for row in others}) >= 2:
            fits[launch] = _fit(others)
    result = []
    for (op, world_size, size), point in table.items():
        predictions = {launch: fits[launch].predict(size) for launch in point["per_launch"] if launch in fits}
        if not predictions:
            continue
        errors = [(predictions[launch] - value) / value for launch, value in point["per_launch"].items() if launch in predictions]
        result.append(_row(op, world_size, size, point, statistics.median(predictions.values()), "launch", statistics.median(errors)))
    return result


# ----------------------------------------------------------------------------- link model


def link_columns(backend: str, op: str, world_size: int, size_bytes: int) -> np.ndarray:
    """(1, d/da, d/db, d/dg) of the backend's algorithm time: closed forms are linear in a, b, g."""
    form_op, algorithm = BACKEND_ALGORITHMS[backend][op]
    chunks = max(1, math.ceil(size_bytes / NCCL_CHUNK_BYTES)) if algorithm == "pipelined_chain" else 1

    def form(a: float, b: float, g: float) -> float:
        value = closed_form(form_op, algorithm, world_size, size_bytes, a, b, g, chunks)
        if value is None:
            raise CollsimError(f"no closed form for {form_op}/{algorithm} at p={world_size} (power-of-two only?)")
        return value

    return np.array([1.0, form(1, 0, 0), form(0, 1, 0), form(0, 0, 1)])


LINK_NAMES = ("o_call_s", "latency_s", "inverse_bandwidth_s_per_B", "inverse_reduce_bandwidth_s_per_B")


def fit_link_model(rows: list[dict[str, Any]], backend: str) -> dict[str, Any]:
    """Per-call o, latency a, 1/B and 1/gamma (all >= 0) for one op over its world sizes.

    Relative least squares on the point medians. Columns that the points cannot separate (a from
    o with one world size; g from b for ring, whose terms are both proportional to n) are dropped,
    i.e. fixed at 0, and listed in ``not_identifiable``.
    """
    from real.fit import bounded_lstsq

    table = points(rows)
    op = next(iter(table))[0]
    design = np.array([link_columns(backend, op, p, size) for (_, p, size) in table])
    times = np.array([point["measured_s"] for point in table.values()])
    scaled = design / times[:, None]
    kept: list[int] = []
    for column in (0, 2, 1, 3):  # o, b first: they are always there
        trial = kept + [column]
        if np.linalg.norm(scaled[:, column]) > 0 and np.linalg.matrix_rank(
            scaled[:, trial] / np.linalg.norm(scaled[:, trial], axis=0), tol=1e-8
        ) == len(trial):
            kept = trial
    coefficients = np.zeros(4)
    coefficients[kept] = bounded_lstsq(scaled[:, kept], np.ones_like(times))
    residuals = scaled @ coefficients - 1.0
    world_sizes = sorted({p for (_, p, _) in table})
    return {"op": op, "backend": backend, "algorithm": "/".join(BACKEND_ALGORITHMS[backend][op]), "world_sizes": world_sizes,
            **{name: float(value) for name, value in zip(LINK_NAMES, coefficients)},
            "not_identifiable": [LINK_NAMES[i] for i in range(4) if i not in kept],
            "rms_relative_residual": float(np.sqrt(np.mean(residuals**2))), "in_sample": True}  # fmt: skip


def predict_link(model: dict[str, Any], world_size: int, size_bytes: int) -> float:
    coefficients = np.array([model[name] for name in LINK_NAMES])
    return float(link_columns(model["backend"], model["op"], world_size, size_bytes) @ coefficients)


def held_out_by_world_size(rows: list[dict[str, Any]], backend: str) -> list[dict[str, Any]]:
    """One op: fit the link model on the smallest world size, predict every larger one."""
    world_sizes = sorted({int(row["world_size"]) for row in rows})
    if len(world_sizes) < 2:
        return []
    model = fit_link_model([row for row in rows if row["world_size"] == world_sizes[0]], backend)
    table = points(row for row in rows if row["world_size"] != world_sizes[0])
    return [_row(op, p, size, point, predict_link(model, p, size), "world_size") for (op, p, size), point in table.items()]


# ----------------------------------------------------------------------------- noise


def noise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Stall rate (calls > 3x their point's median) and launch-to-launch spread (relative range)."""
    calls = stalls = 0
    for row in rows:
        times = np.asarray(row.get("times_s") or [], dtype=float)
        if times.size:
            calls += times.size
            stalls += int(np.sum(times > 3 * np.median(times)))
    spreads = [(p["spread_high_s"] - p["spread_low_s"]) / p["measured_s"] for p in points(rows).values() if len(p["per_launch"]) >= 2]
    large = [
        (p["spread_high_s"] - p["spread_low_s"]) / p["measured_s"]
        for (_, _, n), p in points(rows).items()
        if n >= MiB and len(p["per_launch"]) >= 2
    ]
    return {
        "calls": calls, "stall_rate": stalls / calls if calls else None,
        "median_launch_spread": statistics.median(spreads) if spreads else None,
        "median_launch_spread_at_1MiB_up": statistics.median(large) if large else None,
    }  # fmt: skip


def resolution_sentence(summary_noise: dict[str, Any], host: dict[str, Any]) -> str:
    large = summary_noise.get("median_launch_spread_at_1MiB_up")
    spread = large if large is not None else summary_noise.get("median_launch_spread")
    where = ">= 1 MiB" if large is not None else "all sizes"
    stall = summary_noise.get("stall_rate")
    if spread is None:
        return "One launch only: launch-to-launch spread unknown, so no error can be told apart from noise."
    return (
        f"On {host.get('host', 'this host')} ({host.get('cpu_count', '?')} cores) repeated launches of the same point differ by "
        f"{spread:.0%} (median range over launches, {where}) and {stall or 0:.1%} of calls stall (> 3x their median): "
        f"model errors smaller than about {spread / 2:.0%} cannot be resolved here, larger ones can."
    )


# ----------------------------------------------------------------------------- DDP


def ddp_analysis(steps: list[dict[str, Any]], profiles: list[dict[str, Any]], bench_ow: tuple[float, float] | None) -> dict[str, Any]:
    """Overhead per cap (measured), the formula fit, its optimum, the simulator's best cap and step times."""
    from real.fit import compute_slowdown, fit_bucket_overhead

    if not steps:
        return {}
    per_config = _per_config(steps)
    bucketed = sorted((row for row in per_config.values() if row["strategy"] == "bucketed"), key=lambda row: row["bucket_bytes"])
    formula = fit_bucket_overhead(steps) or {}
    total = float(next(iter(per_config.values()))["grad_bytes"] or 0)
    simulated = _simulate_configs(per_config, profiles, bench_ow) if bench_ow and profiles else {}
    for config, row in per_config.items():
        row["simulated_step_s"] = simulated.get(config)
    best_measured = min(bucketed, key=lambda row: row["overhead_s"])["bucket_bytes"] if bucketed else None
    sim_bucketed = [row for row in bucketed if row.get("simulated_step_s") is not None]
    best_sim = min(sim_bucketed, key=lambda row: row["simulated_step_s"])["bucket_bytes"] if sim_bucketed else None
    slowdown = {row["config"]: row for row in compute_slowdown(steps)}
    best_formula = formula.get("optimal_bucket_bytes")
    bench_formula = math.sqrt(total * bench_ow[1] * bench_ow[0]) if bench_ow and bench_ow[0] > 0 and math.isfinite(bench_ow[1]) else None
    return {
        "bucket_bytes": [row["bucket_bytes"] for row in bucketed], "overhead_s": [row["overhead_s"] for row in bucketed],
        "fitted_o_s": formula.get("o_s") if formula.get("identifiable") else None,
        "fitted_w_Bps": formula.get("w_Bps") if formula.get("identifiable") else None,
        "best_measured_bytes": best_measured, "best_formula_bytes": best_formula, "best_sim_bytes": best_sim,
        "extra": {"configs": list(per_config.values()), "formula": formula, "bench_o_s": bench_ow[0] if bench_ow else None,
                  "bench_w_Bps": bench_ow[1] if bench_ow else None, "best_formula_bytes_from_bench": bench_formula, "grad_bytes": total,
                  "backward_slowdown": slowdown, "grid_steps_best_measured_vs_sim": _grid_steps([r["bucket_bytes"] for r in bucketed], best_measured, best_sim)},
    }  # fmt: skip


def _grid_steps(grid: list[int], first: int | None, second: int | None) -> int | None:
    if first is None or second is None:
        return None
    return abs(grid.index(first) - grid.index(second))


def _per_config(steps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    from real.compare import _ddp_measured

    by_config: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for step in steps:
        if step["config"] != "none":
            by_config[step["config"]].append(step)
    table = {}
    for config, members in by_config.items():
        step = _ddp_measured(members, "step_s")
        overhead = _ddp_measured(members, "overhead_s")
        table[config] = {
            "config": config, "strategy": members[0]["strategy"], "bucket_bytes": members[0]["bucket_bytes"], "num_buckets": members[0]["comm_calls"],
            "grad_bytes": members[0]["comm_bytes"], "step_s": step["measured_s"], "step_low_s": step["spread_low_s"], "step_high_s": step["spread_high_s"],
            "overhead_s": overhead["measured_s"], "overhead_low_s": overhead["spread_low_s"], "overhead_high_s": overhead["spread_high_s"],
            "rounds": len(members),
        }  # fmt: skip
    return table


def _simulate_configs(
    per_config: dict[str, dict[str, Any]], profiles: list[dict[str, Any]], bench_ow: tuple[float, float]
) -> dict[str, float]:
    """sim.training.ddp step time per config, replaying the measured no-communication profile with bench (o, w)."""
    import tempfile

    from sim.training.ddp import DDPScenario, run_ddp

    baseline = [row for row in profiles if row["config"] == "none"]
    if not baseline:
        return {}
    profile = baseline[-1]["profile"]
    o_s, w_Bps = bench_ow
    result = {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "profile.json"
        path.write_text(json.dumps(profile))
        for config, row in per_config.items():
            data = {"profile_file": str(path), "strategy": row["strategy"], "ranks": int(profile.get("world_size") or 2), "comm": "ow",
                    "o_s": o_s, "w_Bps": w_Bps}  # fmt: skip
            if row["strategy"] == "bucketed":
                data.update(bucket_cap_bytes=row["bucket_bytes"], first_bucket_bytes=None)
            result[config] = run_ddp(DDPScenario.from_dict(data)).summary()["step_time_s"]
    return result


# ----------------------------------------------------------------------------- analyse


def analyse(collectives: list[dict[str, Any]], ddp_steps: list[dict[str, Any]], profiles: list[dict[str, Any]], backend: str,
            meta: dict[str, Any] | None = None, replicates: int = 200, fsdp: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Everything the report and summary.json hold, from measured rows (pure: no torch, no store)."""
    from real.fit import fit_ow

    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in collectives:
        if row.get("size_bytes"):
            groups[(row["op"], int(row["world_size"]))].append(row)
    rows, fits, owfits = [], [], []
    for (op, world_size), members in sorted(groups.items()):
        rows += held_out_by_size(members) + held_out_by_launch(members)
        if len({row["size_bytes"] for row in members}) >= 2:
            fit = fit_ow(members, STAT, replicates=replicates, key={"source": "measured", "backend": backend, "device": members[0].get("device", "cpu"), "op": op, "world_size": world_size})  # fmt: skip
            owfits.append(fit)
            fits.append(_fit_row(op, world_size, fit))
    by_op: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in collectives:
        if row.get("size_bytes"):
            by_op[row["op"]].append(row)
    rows += [row for op in sorted(by_op) for row in held_out_by_world_size(by_op[op], backend)]
    links = [fit_link_model(members, backend) for op, members in sorted(by_op.items())]
    smallest = min((p for (_, p) in groups), default=None)
    bench = next((fit for fit in owfits if fit.key["op"] == "all_reduce" and fit.key["world_size"] == smallest), None)
    ddp = ddp_analysis(
        [s for s in ddp_steps if s.get("world_size") in (None, smallest)], profiles, (bench.o_s, bench.w_Bps) if bench else None
    )
    summary = {"collectives": rows, "fits": fits, "ddp": ddp, "noise": noise(collectives), "link_models": links, "meta": meta or {}}
    summary["noise"]["sentence"] = resolution_sentence(summary["noise"], meta or {})
    summary["targets"] = targets(summary)
    summary["_owfits"] = owfits
    summary["fsdp"], summary["fsdp_detail"] = fsdp_analysis(fsdp)
    summary["_fsdp_document"] = fsdp
    return summary


def fsdp_analysis(document: dict[str, Any] | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows {strategy, measured_s, spread, predicted_s, error, within_spread} of the FSDP launches
    (``real.compare.fsdp_points``: sim fsdp replaying the measured no-communication step with (o, w)
    from the all-reduces of the same launches, so every prediction is out of sample), and the detail
    (o, w, the replayed phases, the spread's kind, rankings). No FSDP data: ([], {})."""
    from real.compare import fsdp_points

    if not document:
        return [], {}
    try:
        points, model = fsdp_points(document)
    except CollsimError as error:  # e.g. interrupted before a baseline round: say so, keep the rest
        return [], {"error": str(error)}
    rows = [{"strategy": p["strategy"], "measured_s": p["measured_s"], "spread_low_s": p["spread_low_s"], "spread_high_s": p["spread_high_s"],
             "predicted_s": p["simulated_s"], "error": p["relative_error"], "within_spread": p["within_spread"]} for p in points]  # fmt: skip
    detail = {**model, "spread": points[0]["spread"] if points else None, "world_size": document.get("world_size"),
              "seconds": (document.get("meta") or {}).get("seconds"),
              "ranking_measured": [r["strategy"] for r in sorted(rows, key=lambda r: r["measured_s"])],
              "ranking_simulated": [r["strategy"] for r in sorted(rows, key=lambda r: r["predicted_s"])]}  # fmt: skip
    return rows, detail


def _fit_row(op: str, world_size: int, fit: Any) -> dict[str, Any]:
    return {"op": op, "world_size": world_size, "o_s": fit.o_s, "o_low_s": fit.o_ci_s[0], "o_high_s": fit.o_ci_s[1], "w_Bps": fit.w_Bps,
            "w_low_Bps": fit.w_ci_Bps[0], "w_high_Bps": fit.w_ci_Bps[1]}  # fmt: skip


def targets(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 12's targets, each with the figure it is judged on and whether it was met (None: not measured)."""
    rows = summary["collectives"]
    large = [abs(row["error"]) for row in rows if row["size_bytes"] >= MiB and row["held_out"] in ("size", "launch")]
    spread = summary["noise"].get("median_launch_spread_at_1MiB_up")
    error = statistics.median(large) if large else None
    ddp = summary["ddp"] or {}
    extra = ddp.get("extra", {})
    configs = [
        row for row in extra.get("configs", []) if row["strategy"] != "bucketed" or row["bucket_bytes"] == ddp.get("best_measured_bytes")
    ]
    ranking_measured = [row["config"] for row in sorted(configs, key=lambda row: row["step_s"])]
    ranking_sim = [row["config"] for row in sorted(configs, key=lambda row: row.get("simulated_step_s") or math.inf)]
    steps = extra.get("grid_steps_best_measured_vs_sim")
    return [
        {"target": "every prediction held out", "value": {"predictions": len(rows), "in_sample": sum(1 for row in rows if row["held_out"] not in HELD_OUT)},
         "met": all(row["held_out"] in HELD_OUT for row in rows) if rows else None},
        {"target": "median |error| at >= 1 MiB <= median launch spread", "value": {"median_abs_error": error, "median_launch_spread": spread},
         "met": None if error is None or spread is None else error <= spread},
        {"target": "strategy ranking measured = simulated", "value": {"measured": ranking_measured, "simulated": ranking_sim},
         "met": None if not configs or any(row.get("simulated_step_s") is None for row in configs) else ranking_measured == ranking_sim},
        {"target": "best cap measured vs simulated within one grid step", "value": {"measured": ddp.get("best_measured_bytes"), "simulated": ddp.get("best_sim_bytes"), "grid_steps": steps},
         "met": None if steps is None else steps <= 1},
    ]  # fmt: skip


# ----------------------------------------------------------------------------- outputs


def summary_document(summary: dict[str, Any]) -> dict[str, Any]:
    """summary.json: the three stable tables (``SUMMARY_KEYS``, in that order) plus noise, targets, link models, meta."""
    from real.fit import plain

    ddp = summary["ddp"] or {}
    document = {
        "collectives": [{key: row[key] for key in COLLECTIVE_KEYS} for row in summary["collectives"]],
        "fits": [{key: row[key] for key in FIT_KEYS} for row in summary["fits"]],
        "ddp": {key: ddp.get(key) for key in DDP_KEYS},
        "ddp_detail": ddp.get("extra", {}),
        "noise": summary["noise"], "targets": summary["targets"], "link_models": summary["link_models"], "meta": summary["meta"],
        "fsdp": [{key: row[key] for key in FSDP_KEYS} for row in summary.get("fsdp") or []], "fsdp_detail": summary.get("fsdp_detail") or {},
    }  # fmt: skip
    return plain(document)


def write_outputs(summary: dict[str, Any], out: Path, plotlyjs: str = "inline") -> dict[str, Path]:
    """summary.json, calibration.yaml and report.html in ``out``; returns their paths."""
    from real.fit import calibration, fit_alpha_beta, write_calibration
    from real.report import write_report

    out.mkdir(parents=True, exist_ok=True)
    paths = {"summary": out / "summary.json", "calibration": out / "calibration.yaml", "report": out / "report.html"}
    document = summary_document(summary)
    paths["summary"].write_text(json.dumps(document, indent=1))
    owfits = summary.get("_owfits", [])
    formula = (summary["ddp"] or {}).get("extra", {}).get("formula")
    write_calibration(
        calibration(owfits, fit_alpha_beta(owfits), {"bucket_overhead": formula} if formula else {}, {"validate": str(out)}),
        str(paths["calibration"]),
    )
    if summary.get("_fsdp_document"):  # the rows, so collsim compare (kind: fsdp, measured: this file) can read them again
        paths["fsdp"] = out / "fsdp_measured.json"
        paths["fsdp"].write_text(json.dumps(summary["_fsdp_document"], indent=1))
    write_report(document, paths["report"], plotlyjs)
    return paths


def load_validate(path: str | Path) -> dict[str, Any]:
    """Load a validate output (its directory, report.html or summary.json) for the webapp.

    Returns the summary.json document: ``collectives`` rows (op, world_size, size_bytes,
    measured_s, spread_low_s, spread_high_s, predicted_s, error, within_spread, held_out),
    ``fits`` rows (op, world_size, o_s, o_low_s, o_high_s, w_Bps, w_low_Bps, w_high_Bps), ``ddp``
    (bucket_bytes and overhead_s lists, fitted_o_s, fitted_w_Bps, best_*_bytes), ``ddp_detail``
    (per-config measured and simulated step times), ``noise``, ``targets``, ``link_models``, ``meta``.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "summary.json"
    elif path.suffix == ".html":
        path = path.with_name("summary.json")
    if not path.is_file():
        raise CollsimError(f"validate output {str(path)!r} not found; give the --out directory of collsim validate or its summary.json")
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise CollsimError(f"{str(path)!r} is not a validate summary (invalid JSON: {error})") from None
    missing = [key for key in SUMMARY_KEYS if key not in document]
    if missing:
        raise CollsimError(f"{str(path)!r} is not a validate summary: no {', '.join(missing)}")
    return document


def format_text(document: dict[str, Any], paths: dict[str, Path], measured: Measured | None = None) -> str:
    """The few lines the command prints: where the files are, and the targets."""
    lines = []
    if measured is not None:
        state = "interrupted (Ctrl-C): analysed what was measured" if measured.interrupted else "done"
        lines.append(
            f"# collsim validate {state} in {measured.seconds:.0f} s: {len(measured.collectives)} collective rows, {len(measured.ddp_steps)} DDP steps"
        )
    rows = document["collectives"]
    for kind in ("size", "launch", "world_size"):
        members = [row for row in rows if row["held_out"] == kind]
        if members:
            errors = sorted(abs(row["error"]) for row in members)
            within = sum(1 for row in members if row["within_spread"])
            lines.append(
                f"# held out by {kind:<10}: {len(members)} points, median |error| {statistics.median(errors):.1%}, {within}/{len(members)} within the launch spread"
            )
    for target in document["targets"]:
        verdict = {True: "met", False: "NOT met", None: "not measured"}[target["met"]]
        lines.append(f"# target: {target['target']}: {verdict} ({json.dumps(target['value'], default=str)})")
    ddp = document["ddp"]
    if ddp.get("best_measured_bytes"):
        formula = format_size(ddp["best_formula_bytes"]) if ddp.get("best_formula_bytes") else "not identifiable"
        sim = format_size(ddp["best_sim_bytes"]) if ddp.get("best_sim_bytes") else "n/a"
        lines.append(
            f"# best bucket cap: measured {format_size(ddp['best_measured_bytes'])}, formula sqrt(s w o) {formula}, simulator {sim}"
        )
    fsdp, detail = document.get("fsdp") or [], document.get("fsdp_detail") or {}
    if fsdp:
        within = sum(1 for row in fsdp if row["within_spread"])
        lines.append(
            f"# fsdp/zero step, sim vs measured ({detail.get('spread')}): {within}/{len(fsdp)} within the spread, median |error| "
            f"{statistics.median(abs(row['error']) for row in fsdp):.1%}; ranking measured {', '.join(detail['ranking_measured'])}, "
            f"simulated {', '.join(detail['ranking_simulated'])}"
        )
    elif detail.get("error"):
        lines.append(f"# fsdp/zero: not analysed: {detail['error']}")
    lines.append(f"# {document['noise']['sentence']}")
    lines += [f"# wrote {path}" for path in paths.values()]
    return "\n".join(lines)


__all__ = ["Plan", "make_plan", "measure", "analyse", "write_outputs", "load_validate", "held_out_by_size", "held_out_by_launch",
           "held_out_by_world_size", "fit_link_model", "noise"]  # fmt: skip
