"""``collsim validate``: measure, fit, predict held-out points and the bucket optimum, in one command.

The chain (issue 12), each step a plain function so tests can feed it synthetic rows:

1. ``measure``: collectives (all_reduce, all_gather, reduce_scatter, broadcast) over a size grid,
   several fresh launches per world size, points interleaved round-robin inside each launch; then
   DDP steps of the built-in ``small`` model (the four strategies, bucketed at a grid of caps),
   each round paired with a no-communication step. Rows go to the store as they are measured;
   Ctrl-C stops measuring and the analysis runs on what was kept.
2. ``analyse``: (o, w) per (op, world size), bounded to be >= 0 with bootstrap intervals; a link
   model (o_call, a, b, g) per op for the algorithm the backend runs (its record, ``backend_choice``,
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
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from real.validate_analysis import MiB
from sim.errors import CollsimError
from sim.units import format_size

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")

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
    from real.model_names import check_model_name

    check_model_name(plan.model)  # without torch (real.models imports it): a refusal after this one stays quick
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
    from real.ddp_bench import run_ddp_bench
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
    from real.compare_fsdp import fsdp_document
    from real.ddp import export_params
    from real.fsdp import run_bench
    from real.models import fresh_model, model_spec

    started = time.monotonic()
    params = export_params(fresh_model(model_spec(plan.model), 0))
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


__all__ = ["Plan", "make_plan", "check_plan", "prepare_folder", "mark_folder", "Measured", "measure", "summary_document", "write_outputs",
           "load_validate", "format_text"]  # fmt: skip
