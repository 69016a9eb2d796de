"""``collsim fit``, ``collsim compare`` and ``collsim validate`` (loaded lazily by ``sim.cli``): fits,
simulated vs measured, and the whole measure-fit-predict loop."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import click

from real.cli_common import (
    DEFAULT_DB,
    check_output_file,
    echo_json,
    is_rank_zero,
    launch_config,
    measured_launches,
    open_store,
    progress_bar,
    read_store,
    run_meta,
    write_output,
)
from real.validate_nccl_report import nccl_tests_command
from sim.errors import CollsimError
from sim.units import format_size, parse_size_list


@click.command("fit")
@click.option("--db", default=None, help=f"results store (default ./{DEFAULT_DB}, else the bundled sample data)")
@click.option("--stat", default="mean", show_default=True, type=click.Choice(["mean", "median", "p10", "p90", "min"]))
@click.option("--op", default=None, help="only this op")
@click.option("--backend", default=None, help="only this backend")
@click.option("--world-size", default=None, type=int, help="only this world size")
@click.option("--source", default=None, help="only measured | nccl-tests | published")
@click.option("--confidence", default=0.95, show_default=True, type=float)
@click.option("--piecewise", is_flag=True, help="also fit two (o, w) pieces with a size breakpoint")
@click.option(
    "--calibration", default=None, help="write a calibration file (YAML for .yaml/.yml, else JSON) for collsim sim ... --calibration"
)
@click.option("--json", "as_json", is_flag=True)
def fit(db: str | None, stat: str, op: str | None, backend: str | None, world_size: int | None, source: str | None, confidence: float,
        piecewise: bool, calibration: str | None, as_json: bool) -> None:  # fmt: skip
    """Fit t = o + n/w (with confidence intervals) per backend, op and world size; (a, B) across world sizes; DDP overhead."""
    from real.fit import calibration as make_calibration
    from real.fit import calibration_text, compute_slowdown, fit_alpha_beta, fit_bucket_overhead, fit_groups, fit_ow_piecewise, group_rows

    if not 0 < confidence < 1:
        raise CollsimError(f"--confidence: must be between 0 and 1, got {confidence}")
    store = read_store(db)
    if calibration:
        check_output_file(calibration, "--calibration")
    rows = store.collectives(op=op, backend=backend, world_size=world_size, source=source)
    rows = [row for row in rows if row.get("run_status") != "running"]
    _check_filters_match(store, rows, {"--op": op, "--backend": backend, "--world-size": world_size, "--source": source})
    fits = fit_groups(rows, stat, confidence)
    steps = store.ddp_steps()
    if not fits and not steps:
        raise CollsimError(
            "nothing to fit: need a (backend, op, world size) measured at 2 or more sizes, or DDP steps; run collsim real bench first"
        )
    alpha_beta = fit_alpha_beta(fits)
    pieces = []
    if piecewise:
        for key, members in group_rows(rows).items():
            result = fit_ow_piecewise(members, stat)
            if result:
                pieces.append({**dict(zip(("source", "backend", "device", "op", "world_size"), key)), **result})
    ddp_fit = {"compute_slowdown": compute_slowdown(steps), "bucket_overhead": fit_bucket_overhead(steps)} if steps else {}
    document = make_calibration(
        fits, alpha_beta, ddp_fit, {"db": store.path or "bundled sample data", "stat": stat, "confidence": confidence}
    )
    if piecewise:
        document["piecewise"] = pieces
    if calibration:
        write_output(calibration, "--calibration", lambda handle: handle.write(calibration_text(document, calibration)))
    if as_json:
        from real.fit import plain

        echo_json(plain(document))
        return
    click.echo(format_fits(fits, alpha_beta, pieces, ddp_fit, stat, confidence))
    if calibration:
        click.echo(f"# calibration written to {calibration}")


def _check_filters_match(store: Any, rows: list[dict[str, Any]], filters: dict[str, Any]) -> None:
    """A filter that matches no row is an error naming the values the store has (``fit --op
    nonexistent`` printed headers and exited 0)."""
    given = {flag: value for flag, value in filters.items() if value is not None}
    if rows or not given:
        return
    everything = store.collectives()
    column = {"--op": "op", "--backend": "backend", "--world-size": "world_size", "--source": "source"}
    for flag, value in given.items():
        present = sorted({row.get(column[flag]) for row in everything if row.get(column[flag]) is not None}, key=str)
        if value not in present:
            listed = ", ".join(map(str, present)) or "none"
            raise CollsimError(
                f"{flag}: no measurements with {column[flag]} {value!r} in {store.path or 'the bundled sample data'}; present: {listed}"
            )
    raise CollsimError(f"no measurements match {' '.join(f'{flag} {value}' for flag, value in given.items())} together")


def _num(value: float | None, scale: float = 1.0, digits: str = ".3f") -> str:
    """A number for tables: None, inf and nan (an undetermined fit) print as 'inf' / 'n/a'."""
    if value is None or value != value:
        return "inf" if value is None else "n/a"
    if value in (float("inf"), float("-inf")):
        return "inf"
    return format(value * scale, digits)


def _interval(low: float, high: float, scale: float, digits: str = ".3g") -> str:
    def text(value: float) -> str:
        return "inf" if value in (float("inf"), float("-inf")) or value != value else format(value * scale, digits)

    return f"[{text(low)}, {text(high)}]"


def format_fits(
    fits: list[Any], alpha_beta: list[dict[str, Any]], pieces: list[dict[str, Any]], ddp_fit: dict[str, Any], stat: str, confidence: float
) -> str:
    level = f"{confidence:.0%}"
    lines = [
        f"# t(n) = o + n/w fitted to the {stat} time per call, relative least squares; {level} intervals (bootstrap over iterations and launches, or WLS t)",
        f"# {'source':>10} {'backend':>8} {'op':>14} {'p':>3} {'o (us)':>9} {level + ' interval':>22} {'w (GB/s)':>9} {level + ' interval':>20} {'busbw':>7} {'pts':>4} {'rms resid':>9}",
    ]
    for fit in fits:
        key = fit.key
        busbw = fit.busbw_Bps
        if not fit.identifiable:
            lines.append(
                f"  {str(key.get('source')):>10} {str(key.get('backend')):>8} {str(key.get('op')):>14} {key.get('world_size')!s:>3} "
                f"  o and w not identifiable from these points (time does not grow with size over {fit.points} points)"
            )
            continue
        lines.append(
            f"  {str(key.get('source')):>10} {str(key.get('backend')):>8} {str(key.get('op')):>14} {key.get('world_size')!s:>3} {fit.o_s * 1e6:9.1f} "
            f"{_interval(*fit.o_ci_s, 1e6):>22} {_num(fit.w_Bps, 1e-9):>9} {_interval(*fit.w_ci_Bps, 1e-9):>20} {_num(busbw, 1e-9):>7} {fit.points:>4} {fit.rms_relative_residual:9.1%}"
        )
    for entry in alpha_beta:
        if len(entry["world_sizes"]) >= 2 and entry.get("latency_identifiable", True):
            lines.append(
                f"# {entry['source']} {entry['backend']} {entry['op']}/{entry['algorithm']} over p = {entry['world_sizes']}: call overhead {entry['call_overhead_s'] * 1e6:.1f} us, "
                f"latency a = {entry['latency_s'] * 1e6:.2f} us, link bandwidth B = {entry['bandwidth_Bps'] / 1e9:.3f} GB/s"
            )
    for piece in pieces:
        lines.append(
            f"# two pieces {piece['source']} {piece['backend']} {piece['op']} p={piece['world_size']}: below {format_size(piece['breakpoint_bytes'])} "
            f"o={_num(piece['below']['o_s'], 1e6, '.1f')} us w={_num(piece['below']['w_Bps'], 1e-9)} GB/s; from there o={_num(piece['above']['o_s'], 1e6, '.1f')} us "
            f"w={_num(piece['above']['w_Bps'], 1e-9)} GB/s; squared relative error one piece / two pieces = {piece['improvement']:.2f}"
        )
    for row in ddp_fit.get("compute_slowdown", []):
        if row["config"] != "none":
            lines.append(
                f"# DDP backward slowdown {row['config']}: {row['median']:.2f}x [p10 {row['p10']:.2f}, p90 {row['p90']:.2f}] over {row['rounds']} rounds"
            )
    overhead = ddp_fit.get("bucket_overhead")
    if overhead:
        best = (
            f", optimum {overhead['optimal_buckets']:.1f} buckets of {format_size(overhead['optimal_bucket_bytes'])}"
            if "optimal_bucket_bytes" in overhead
            else ""
        )
        head = f"# DDP overhead(n_b) = n_b o + s/(n_b w) over {len(overhead['points'])} bucket sizes"
        if overhead.get("identifiable", True):
            lines.append(
                f"{head}: o = {_num(overhead['o_s'], 1e3, '.2f')} ms {_interval(*overhead['intervals']['o'], 1e3)}, "
                f"w = {_num(overhead['w_Bps'], 1e-9)} GB/s, r2 = {overhead['r2']:.2f}{best}"
            )
        else:
            lines.append(
                f"{head}: o and w not identifiable from these points (the formula explains {max(0.0, overhead['r2']):.0%} of the variance)"
            )
    return "\n".join(lines)


@click.command("compare")
@click.argument("scenario_file", metavar="SCENARIO_FILE|train")
@click.argument("profile", required=False, metavar="[PROFILE]")
@click.option("--db", default=None, help=f"results store (default ./{DEFAULT_DB}, else the bundled sample data)")
@click.option("--calibration", default=None, help="take overhead/latency/bandwidth from this calibration file")
@click.option(
    "--stat",
    default=None,
    type=click.Choice(["mean", "median", "p10", "p90", "min"]),
    help="statistic compared (default: the file's, else mean)",
)
@click.option("--holdout", is_flag=True, default=None, help="fit o, w leaving each launch out in turn (out-of-sample; needs 3+ launches)")
@click.option("--run", "run_now", is_flag=True, help="measure the scenario now (into --db) and compare with just those launches")
@click.option(
    "--launches", default=3, show_default=True, type=int, help="--run: fresh launches (the spread between them is the one judged)"
)
@click.option("--iters", default=50, show_default=True, type=int, help="--run: timed iterations per size (collectives)")
@click.option(
    "--rounds",
    default=5,
    show_default=True,
    type=int,
    help="--run: round-robin rounds (collectives: interleaved sizes; DDP: measured rounds)",
)
@click.option("--json", "as_json", is_flag=True)
def compare(scenario_file: str, profile: str | None, db: str | None, calibration: str | None, stat: str | None, holdout: bool | None,
            run_now: bool, launches: int, iters: int, rounds: int, as_json: bool) -> None:  # fmt: skip
    """Simulated vs measured per point: error, the measurement's own spread, and whether the error is within it.

    collsim compare train PROFILE: a saved `collsim real train --out` profile beside `collsim sim
    train` fed its measured compute and collective times (as `real train --compare` prints it)."""
    from real.compare import compare_fields, format_report, split_file

    if scenario_file == "train" or profile is not None:
        given = [name for name, value in (("--db", db), ("--calibration", calibration), ("--stat", stat), ("--holdout", holdout),
                                          ("--run", run_now or None)) if value is not None]  # fmt: skip
        return _compare_train(scenario_file, profile, given, as_json)
    fields, extra = split_file(scenario_file)
    if run_now and extra.get("kind") == "fsdp":
        raise CollsimError(
            "--run: not for kind: fsdp; measure with collsim real fsdp --launches 3 --save FILE and name FILE under 'measured'"
        )
    if extra.get("kind") == "fsdp":
        store = None  # the spec names its rows file
    elif run_now:
        store = open_store(db, False)
        extra["run_ids"] = _measure_for_compare(fields, extra, store, launches, iters, rounds)
    else:
        store = read_store(db)
    report = compare_fields(fields, extra, store, calibration, stat, holdout)
    if as_json:
        from real.fit import plain

        echo_json(plain(report))
    else:
        click.echo(format_report(report))


def _compare_train(word: str, profile: str | None, given: list[str], as_json: bool) -> None:
    """``collsim compare train PROFILE`` (:func:`real.train_compare.compare` with :func:`real.train_sim.simulate_train`)."""
    from real.train_compare import compare, format_compare
    from real.train_sim import simulate_train
    from sim.files import load_mapping, shown

    if word != "train" or profile is None:
        raise CollsimError("compare: give one scenario file, or `collsim compare train PROFILE` (a collsim real train --out file)")
    if given:
        raise CollsimError(f"compare train: {', '.join(given)} not allowed; it takes a profile and --json only")
    measured = load_mapping(profile, "profile")
    try:
        comparison = compare(measured, simulate_train)
    except CollsimError:
        raise
    except (KeyError, TypeError, IndexError, ValueError) as error:
        raise CollsimError(
            f"profile {shown(profile)}: not a complete collsim-train-profile ({type(error).__name__}: {error}); "
            "write one with collsim real train --out FILE"
        ) from None
    if as_json:
        from real.fit import plain

        echo_json(plain(comparison))
    else:
        click.echo(format_compare(comparison))


def _measure_for_compare(fields: dict[str, Any], extra: dict[str, Any], store: Any, launches: int, iters: int, rounds: int) -> list[str]:
    """Measure what a comparison file describes; returns the new run ids."""
    from real.compare import scenario_sizes

    config = launch_config(extra.get("backend", "gloo"), extra.get("device"), int(fields.get("ranks", 2)), 900.0, 60.0, 1)
    meta = run_meta(config, f"collsim compare --run {' '.join(sys.argv[2:])}", "compare --run")
    if extra.get("kind") == "ddp":
        from real.ddp_bench import run_ddp_bench

        configs = [
            (name.split(":")[0], parse_size_list(name.split(":")[1])[0] if ":" in name else None)
            for name in extra.get("configs") or ["naive", "flat", "overlap", "bucketed:4MiB"]
        ]

        def measure_ddp(run_meta: dict[str, Any], _: Callable) -> list:
            def on_result(row: dict[str, Any]) -> None:
                table = row.pop("_table")
                if table == "ddp_profiles":
                    store.add_ddp_profile(run_meta["run_id"], row["model"], row["config"], row["profile"])
                else:
                    store.add_ddp_step(row)

            return run_ddp_bench(extra.get("model", "small"), configs, config, run_meta, rounds, 2, on_result=on_result)

        before = {run["run_id"] for run in store.runs()}
        measured_launches(store, "ddp", meta, launches, measure_ddp)
    else:
        from real.bench import BenchSpec, run_bench

        spec = BenchSpec((fields["op"],), tuple(scenario_sizes(fields, extra)), iters, 5, rounds=min(rounds, iters))
        before = {run["run_id"] for run in store.runs()}
        measured_launches(store, "bench", meta, launches, lambda run_meta, _: run_bench(spec, config, run_meta, store.add_collective))
    return [run["run_id"] for run in store.runs() if run["run_id"] not in before]


def _validate_plan(backend: str, ranks: str, quick: bool, sizes: str | None, launches: int | None, no_ddp: bool, no_fsdp: bool) -> Any:
    """validate's plan from its flags, checked whole before the first measurement."""
    from dataclasses import replace

    from real.validate import check_plan, make_plan

    plan = make_plan(backend, _world_sizes(ranks), quick)
    if sizes:
        plan = replace(plan, sizes=tuple(parse_size_list(sizes, "--sizes")))
    if launches is not None:
        if launches < 1:
            raise CollsimError(f"--launches: must be >= 1, got {launches}")
        plan = replace(
            plan, launches=launches, ddp_launches=min(plan.ddp_launches, launches), fsdp_launches=min(plan.fsdp_launches, launches)
        )
    if no_ddp:
        plan = replace(plan, ddp_launches=0, fsdp_launches=0)
    if no_fsdp:
        plan = replace(plan, fsdp_launches=0)
    check_plan(plan)  # everything checkable is checked before the first measurement
    return plan


@click.group("validate", invoke_without_command=True)
@click.option("--backend", default="gloo", type=click.Choice(["gloo", "nccl"]), show_default=True)
@click.option("--ranks", default="2", show_default=True, help="world size, or a comma list (2,3,4); under torchrun: WORLD_SIZE")
@click.option("--quick", is_flag=True, help="sizes up to 16 MiB, fewer rounds (about 3 minutes for 2 ranks on 2 cores)")
@click.option("--out", "out_dir", default="validate", show_default=True, help="directory for report.html, summary.json, calibration.yaml")
@click.option("--db", default=None, help="results store the rows are appended to (default OUT/results.sqlite)")
@click.option("--sizes", default=None, help="override the size grid (comma list or START:STOP:xFACTOR; 4 or more sizes)")
@click.option("--launches", default=None, type=int, help="override the fresh launches per world size (>= 2 for the launch hold-out)")
@click.option("--no-ddp", is_flag=True, help="collectives only (no DDP or FSDP steps, no bucket-size optimum)")
@click.option("--no-fsdp", is_flag=True, help="no FSDP / ZeRO steps (measured vs sim fsdp per strategy, smallest world size)")
@click.option("--plotlyjs", default="inline", show_default=True, type=click.Choice(["inline", "cdn"]),
              help="inline: report.html opens offline (~5 MB); cdn: small file that loads plotly.js from the web")  # fmt: skip
@click.option("--threads", default=1, type=int, show_default=True, help="torch threads per rank (CPU)")
@click.option("--op-timeout", "op_timeout_s", default=120.0, type=float, show_default=True, help="limit on every collective, s")
@click.pass_context
def validate(ctx: click.Context, backend: str, ranks: str, quick: bool, out_dir: str, db: str | None, sizes: str | None, launches: int | None,
             no_ddp: bool, no_fsdp: bool, plotlyjs: str, threads: int, op_timeout_s: float) -> None:  # fmt: skip
    """Measure collectives and DDP steps, fit o and w, predict held-out points and the best bucket size; write a report.

    'collsim validate nccl-tests LOG...' instead checks a hardware preset on your own nccl-tests logs."""
    if ctx.invoked_subcommand is not None:  # collsim validate nccl-tests ...: measure nothing here
        return
    from pathlib import Path

    from real.validate import format_text, mark_folder, measure, summary_document, write_outputs
    from real.validate_analysis import analyse

    plan = _validate_plan(backend, ranks, quick, sizes, launches, no_ddp, no_fsdp)
    out = Path(out_dir)
    command = "collsim validate " + " ".join(sys.argv[2:])
    store = _validate_folder_and_store(out_dir, db, command)
    _stop_on_sigterm()
    try:
        configs = {p: launch_config(backend, None, p, 3600.0, op_timeout_s, threads) for p in plan.world_sizes}
        meta = run_meta(configs[plan.world_sizes[0]], command, "validate")
        with progress_bar(plan.total_points(), "validate") as tick:
            measured = measure(plan, store, configs.__getitem__, meta, tick)
        if not is_rank_zero():
            return
        if not measured.collectives:
            raise CollsimError("interrupted before any point was measured; nothing to analyse")
        meta.update(world_sizes=list(plan.world_sizes), quick=plan.quick, interrupted=measured.interrupted, seconds=measured.seconds,
                    store=str(store.path) if store else None, run_ids=measured.run_ids, sizes=list(plan.sizes), launches=plan.launches)  # fmt: skip
        summary = analyse(measured.collectives, measured.ddp_steps, measured.profiles, backend, meta, fsdp=measured.fsdp)
        paths = write_outputs(summary, out, plotlyjs)
    except BaseException as error:
        if is_rank_zero():
            interrupted = isinstance(error, KeyboardInterrupt) or "interrupted" in str(error)
            mark_folder(out, "interrupted" if interrupted else "failed", error=str(error) or type(error).__name__)
        raise
    click.echo(format_text(summary_document(summary), paths, measured))
    if measured.interrupted:
        mark_folder(
            out, "interrupted", error="interrupted (Ctrl-C): the report covers the points measured before", run_ids=measured.run_ids
        )
        click.echo("# interrupted: the report above is partial (status.json: interrupted); exit status 130", err=True)
        sys.exit(130)
    mark_folder(out, "complete", run_ids=measured.run_ids, seconds=measured.seconds)


validate.add_command(nccl_tests_command)  # collsim validate nccl-tests LOG...: a preset checked on the user's own logs


def _validate_folder_and_store(out_dir: str, db: str | None, command: str) -> Any:
    """validate's --out folder made ready (a previous run's files moved aside) and its results
    store opened, on rank zero; None on the other ranks. --out and --db are checked first."""
    from pathlib import Path

    from real.validate import mark_folder, prepare_folder

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise CollsimError(f"--out {out_dir!r} is a file; give a directory")
    if db:
        check_output_file(db, "--db")
    if not is_rank_zero():
        return None
    from real.store import open_store

    try:
        previous = prepare_folder(out, command)
    except OSError as error:  # a read-only file system, /proc, ...: os.access cannot tell beforehand (root)
        raise CollsimError(f"--out: cannot create {out_dir!r}: {error.strerror or error}") from None
    if previous is not None:
        click.echo(f"# the previous run's report and files moved to {previous}", err=True)
    try:
        return open_store(db or out / "results.sqlite")
    except CollsimError as error:
        mark_folder(out, "failed", error=str(error))
        raise


def _stop_on_sigterm() -> None:
    """SIGTERM (``timeout``, a batch scheduler, ``kill``) stops validate as Ctrl-C does: ranks
    ended, the partial report written, status.json and the store say interrupted, non-zero exit
    (killed by ``timeout`` it stayed 'running' in both)."""
    import signal

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def _world_sizes(ranks: str) -> list[int]:
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:
        return [int(os.environ["WORLD_SIZE"])]
    try:
        return [int(part) for part in ranks.split(",") if part.strip()]
    except ValueError:
        raise CollsimError(f"--ranks: expected a number or a comma list such as 2,3,4, got {ranks!r}") from None
