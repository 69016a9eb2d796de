"""``collsim real ...``, ``collsim fit`` and ``collsim compare`` (loaded lazily by ``sim.cli``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from sim.errors import CollsimError
from sim.units import format_size, format_time, parse_size_list

DEFAULT_DB = "results.sqlite"
DB_HELP = f"SQLite results store (default {DEFAULT_DB}; results are appended as they are measured)"


def _is_rank_zero() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=1, default=str))


@contextmanager
def _progress(total: int, what: str) -> Iterator[Callable[[], None]]:
    """A tqdm bar on stderr (silent when stderr is not a terminal)."""
    from tqdm import tqdm

    # Always on rank 0 (also when stderr is a log file): a long run must show where it is.
    with tqdm(total=total, desc=what, unit="pt", file=sys.stderr, disable=not _is_rank_zero(), leave=False, mininterval=0.5) as bar:
        yield lambda: bar.update(1)


def _store(db: str | None, no_db: bool) -> Any:
    if no_db or not _is_rank_zero():
        return None
    from real.store import open_store

    return open_store(db or DEFAULT_DB)


def _run_meta(config: Any, command: str, label: str | None) -> dict[str, Any]:
    from real.bench import now_utc, system_info

    meta = system_info(config.backend, config.device)
    meta.update(
        backend=config.backend, device=config.device, world_size=config.world_size, command=command, started_at=now_utc(), label=label or ""
    )
    return meta


def _measured_launches(
    store: Any, kind: str, meta: dict[str, Any], launches: int, measure: Callable[[dict[str, Any], Callable], list]
) -> list:
    """Run ``measure`` ``launches`` times, each a run in the store, rows appended as they come."""
    from real.store import new_run_id, recorded_run

    if launches < 1:
        raise CollsimError(f"--launches: must be >= 1, got {launches}")
    results: list = []
    for index in range(launches):
        run_meta = {**meta, "run_id": new_run_id(), "launch": index}
        if store is not None:
            store.add_run(kind, run_meta)
        try:
            results += recorded_run(store, run_meta, measure, run_meta, lambda row: None)
        except KeyboardInterrupt:
            if store is not None:
                click.echo(f"\n# interrupted: rows measured so far are kept in {store.path}", err=True)
            raise
    return results


@click.group("real")
def real() -> None:
    """Run collectives and DDP steps for real on torch.distributed (gloo on CPU, NCCL on GPUs).

    One host: ranks are spawned here and bind to 127.0.0.1. Many hosts: start the same command
    under torchrun (it then uses env://, and rank 0 writes the store).
    """


def _launch_options(function: Callable) -> Callable:
    options = [
        click.option("--backend", default="gloo", type=click.Choice(["gloo", "nccl"]), show_default=True),
        click.option("--device", default=None, type=click.Choice(["cpu", "cuda"]), help="default: cuda for nccl, cpu for gloo"),
        click.option("--ranks", default=2, type=int, show_default=True, help="processes on this host (ignored under torchrun)"),
        click.option("--timeout", "timeout_s", default=900.0, type=float, show_default=True, help="limit on the whole launch, s"),
        click.option("--op-timeout", "op_timeout_s", default=60.0, type=float, show_default=True, help="limit on every collective, s"),
        click.option("--threads", default=1, type=int, show_default=True, help="torch threads per rank (CPU)"),
        click.option(
            "--launches",
            default=1,
            type=int,
            show_default=True,
            help="repeat the whole measurement in fresh processes (spread between launches)",
        ),
        click.option("--db", default=None, help=DB_HELP),
        click.option("--no-db", is_flag=True, help="do not record to a store"),
        click.option("--label", default=None, help="free text stored with the run"),
        click.option("--json", "as_json", is_flag=True, help="print a JSON list of rows"),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _config(backend: str, device: str | None, ranks: int, timeout_s: float, op_timeout_s: float, threads: int) -> Any:
    from real.launcher import LaunchConfig

    if ranks < 1:
        raise CollsimError(f"--ranks: must be >= 1, got {ranks}")
    device = device or ("cuda" if backend == "nccl" else "cpu")
    under_torchrun = "WORLD_SIZE" in os.environ and "RANK" in os.environ
    world_size = int(os.environ["WORLD_SIZE"]) if under_torchrun else ranks
    if not under_torchrun and device == "cpu":
        warn_oversubscribed(ranks, threads)
    return LaunchConfig(world_size, backend, device, timeout_s, op_timeout_s, threads)


def warn_oversubscribed(ranks: int, threads: int) -> bool:
    """Warn on stderr when the ranks (times threads) exceed this host's cores; True if it warned."""
    from real.bench import _cpu_count

    cores = _cpu_count()
    if ranks * threads <= cores:
        return False
    click.echo(
        f"warning: {ranks} ranks x {threads} thread(s) on {cores} core(s): ranks will share cores, times measure the "
        f"scheduler more than the network, and memory grows with every rank; use --ranks {cores} or fewer for timings",
        err=True,
    )
    return True


@real.command("bench")
@click.option(
    "--ops",
    default="all_reduce",
    show_default=True,
    help="comma list, or 'all': all_reduce, broadcast, reduce, all_gather, reduce_scatter, send_recv, barrier",
)
@click.option("--sizes", default="4KiB:64MiB:x4", show_default=True, help="comma list or START:STOP:xFACTOR")
@click.option("--iters", default=20, type=int, show_default=True)
@click.option("--warmup", default=5, type=int, show_default=True)
@click.option("--dtype", default="float", show_default=True, help="float, half, bfloat16, double")
@click.option(
    "--rounds", default=1, type=int, show_default=True, help="interleave the points round-robin over this many rounds (noisy hosts)"
)
@_launch_options
def bench(ops: str, sizes: str, iters: int, warmup: int, dtype: str, rounds: int, backend: str, device: str | None, ranks: int, timeout_s: float,
          op_timeout_s: float, threads: int, launches: int, db: str | None, no_db: bool, label: str | None, as_json: bool) -> None:  # fmt: skip
    """Time collectives nccl-tests style: size, count, type, redop, root, time, algbw, busbw."""
    from real.bench import OPS, BenchSpec, run_bench

    op_list = list(OPS) if ops.strip() == "all" else [op.strip() for op in ops.split(",") if op.strip()]
    spec = BenchSpec(tuple(op_list), tuple(parse_size_list(sizes, "--sizes")), iters, warmup, dtype, rounds=rounds)
    config = _config(backend, device, ranks, timeout_s, op_timeout_s, threads)
    store = _store(db, no_db)
    meta = _run_meta(config, "collsim real bench " + " ".join(sys.argv[3:]), label)
    with _progress(len(spec.points(config.world_size)) * launches, "bench") as tick:

        def measure(run_meta: dict[str, Any], _: Callable) -> list:
            def on_result(row: dict[str, Any]) -> None:
                if store is not None:
                    store.add_collective(row)
                tick()

            return run_bench(spec, config, run_meta, on_result)

        rows = _measured_launches(store, "bench", meta, launches, measure)
    if not _is_rank_zero():
        return
    if as_json:
        _echo_json(rows)
    else:
        click.echo(format_bench_table(rows, meta, spec))
        if store is not None:
            click.echo(f"# {len(rows)} row(s) appended to {store.path}")


def format_bench_table(rows: list[dict[str, Any]], meta: dict[str, Any], spec: Any) -> str:
    """nccl-tests-like text: one line per (launch, op, size), times in us."""
    where = meta.get("gpu_model") or meta.get("cpu_model")
    lines = [
        f"# collsim real bench: {meta['backend']}/{meta['device']}, {meta['world_size']} ranks, {meta['host']} ({where}), torch {meta['torch_version']}",
        f"# warmup {spec.warmup}, iters {spec.iters}, rounds {spec.rounds}; time = mean over iterations of the max over ranks; GB = 1e9 bytes",
        f"# {'op':>14} {'size':>11} {'count':>11} {'type':>8} {'redop':>5} {'root':>4} {'time(us)':>10} {'median':>10} {'p10':>10} {'p90':>10} {'algbw':>7} {'busbw':>7}",
    ]
    for row in rows:
        us = [f"{row[key] * 1e6:10.1f}" for key in ("time_s", "median_s", "p10_s", "p90_s")]
        lines.append(
            f"  {row['op']:>14} {row['size_bytes']:>11} {row['count']:>11} {row['type']:>8} {row['redop']:>5} {row['root']:>4} {' '.join(us)} "
            f"{row['algbw_GBps']:7.3f} {row['busbw_GBps']:7.3f}"
        )
    return "\n".join(lines)


def _ddp_configs(strategies: str, bucket_sizes: str) -> list[tuple[str, int | None]]:
    from real.ddp import STRATEGIES

    names = [name.strip() for name in strategies.split(",") if name.strip()]
    unknown = [name for name in names if name not in STRATEGIES]
    if unknown or not names:
        raise CollsimError(f"--strategies: unknown {', '.join(unknown) or '(empty)'}; allowed: {', '.join(STRATEGIES)}")
    sizes = parse_size_list(bucket_sizes, "--bucket-sizes")
    configs: list[tuple[str, int | None]] = []
    for name in names:
        configs += [(name, size) for size in sizes] if name == "bucketed" else [(name, None)]
    return configs


def summarize_ddp(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per config: step time and paired overhead statistics over the measured rounds."""
    from real.bench import time_stats
    from real.fit import compute_slowdown

    slowdown = {row["config"]: row for row in compute_slowdown(steps)}
    by_config: dict[tuple, list[dict[str, Any]]] = {}
    for step in steps:
        by_config.setdefault((step["config"], step["world_size"], step["backend"]), []).append(step)
    rows = []
    for (config, world_size, backend), members in by_config.items():
        first = members[0]
        stats = time_stats([m["step_s"] for m in members])
        overhead = time_stats([m["overhead_s"] for m in members])
        rows.append({
            "op": "ddp_step", "model": first["model"], "strategy": first["strategy"], "config": config, "bucket_bytes": first["bucket_bytes"],
            "world_size": world_size, "backend": backend, "size_bytes": first["comm_bytes"], "comm_calls": first["comm_calls"], "rounds": len(members),
            **stats, "overhead_s": overhead["time_s"], "overhead_median_s": overhead["median_s"], "overhead_p10_s": overhead["p10_s"],
            "overhead_p90_s": overhead["p90_s"], "backward_median_s": time_stats([m["backward_s"] for m in members])["median_s"],
            "backward_slowdown": slowdown.get(config, {}).get("median"), "algbw_GBps": None, "busbw_GBps": None,
        })  # fmt: skip
    return rows


@real.command("ddp")
@click.option(
    "--model", default="small", show_default=True, help="built-in torch model: small (GPT-style LM, 16.1 MiB of gradients) or mlp (tiny)"
)
@click.option("--strategies", default="naive,flat,overlap,bucketed", show_default=True)
@click.option("--bucket-sizes", default="1MiB,4MiB,16MiB", show_default=True, help="caps for the bucketed strategy")
@click.option("--rounds", default=10, type=int, show_default=True, help="measured rounds (each: no-comm step, then every config)")
@click.option("--warmup-rounds", default=2, type=int, show_default=True)
@click.option("--profile-dir", default=None, help="also write each config's measured profile (collsim-ddp-profile JSON) here")
@click.option("--params", "params_path", default=None, help="also write the model's parameter list (for collsim sim ddp --params)")
@_launch_options
def ddp(model: str, strategies: str, bucket_sizes: str, rounds: int, warmup_rounds: int, profile_dir: str | None, params_path: str | None,
        backend: str, device: str | None, ranks: int, timeout_s: float, op_timeout_s: float, threads: int, launches: int, db: str | None,
        no_db: bool, label: str | None, as_json: bool) -> None:  # fmt: skip
    """Time DDP training steps per strategy, round-robin and paired with a no-communication step."""
    from real.ddp import model_spec, run_ddp_bench

    spec = model_spec(model)
    configs = _ddp_configs(strategies, bucket_sizes)
    if rounds < 1 or warmup_rounds < 0:
        raise CollsimError("--rounds must be >= 1 and --warmup-rounds >= 0")
    if launches < 1:
        raise CollsimError(f"--launches: must be >= 1, got {launches}")
    if profile_dir:
        check_output_dir(profile_dir, "--profile-dir")
    if params_path:
        check_output_file(params_path, "--params")
    config = _config(backend, device, ranks, timeout_s, op_timeout_s, threads)
    store = _store(db, no_db)
    meta = _run_meta(config, "collsim real ddp " + " ".join(sys.argv[3:]), label)
    meta["model"] = f"{model}: {spec.description}"
    profiles: list[dict[str, Any]] = []
    with _progress(rounds * (len(configs) + 1) * launches, "ddp") as tick:

        def measure(run_meta: dict[str, Any], _: Callable) -> list:
            def on_result(row: dict[str, Any]) -> None:
                table = row.pop("_table")
                if table == "ddp_profiles":
                    profiles.append(row)
                    if store is not None:
                        store.add_ddp_profile(run_meta["run_id"], row["model"], row["config"], row["profile"])
                    return
                if store is not None:
                    store.add_ddp_step(row)
                tick()

            return run_ddp_bench(model, configs, config, run_meta, rounds, warmup_rounds, on_result=on_result)

        results = _measured_launches(store, "ddp", meta, launches, measure)
    if not _is_rank_zero():
        return
    _write_ddp_files(profiles, profile_dir, params_path, model)
    summary = summarize_ddp([row for row in results if row.get("_table", "ddp_steps") == "ddp_steps" and "step_s" in row])
    if as_json:
        _echo_json(summary)
        return
    click.echo(format_ddp_table(summary, meta, spec))
    if store is not None:
        click.echo(f"# {sum(row['rounds'] for row in summary)} step row(s) and {len(profiles)} profile(s) appended to {store.path}")


def _write_ddp_files(profiles: list[dict[str, Any]], profile_dir: str | None, params_path: str | None, model: str) -> None:
    from pathlib import Path

    if profile_dir:
        Path(profile_dir).mkdir(parents=True, exist_ok=True)
        for row in profiles:
            name = row["config"].replace(":", "-")
            (Path(profile_dir) / f"{model}-{name}.json").write_text(json.dumps(row["profile"], indent=1))
    if params_path:
        from real.ddp import _fresh_model, model_spec, save_params

        save_params(_fresh_model(model_spec(model), 0), params_path)


def format_ddp_table(summary: list[dict[str, Any]], meta: dict[str, Any], spec: Any) -> str:
    lines = [
        f"# collsim real ddp: {spec.name} ({spec.description})",
        f"# {meta['backend']}/{meta['device']}, {meta['world_size']} ranks, {meta['host']} ({meta.get('gpu_model') or meta['cpu_model']}), torch {meta['torch_version']}",
        "# step = max over ranks; overhead = step - no-communication step of the same round; median [p10, p90] over rounds",
        f"# {'config':>16} {'calls':>5} {'grad bytes':>11} {'step median':>12} {'[p10, p90]':>22} {'overhead median':>16} {'[p10, p90]':>22} {'bwd slowdown':>12}",
    ]
    for row in summary:
        slowdown = "-" if row["backward_slowdown"] is None else f"{row['backward_slowdown']:.2f}x"
        lines.append(
            f"  {row['config']:>16} {row['comm_calls']:>5} {format_size(row['size_bytes']):>11} {format_time(row['median_s']):>12} "
            f"{'[' + format_time(row['p10_s']) + ', ' + format_time(row['p90_s']) + ']':>22} {format_time(row['overhead_median_s']):>16} "
            f"{'[' + format_time(row['overhead_p10_s']) + ', ' + format_time(row['overhead_p90_s']) + ']':>22} {slowdown:>12}"
        )
    return "\n".join(lines)


@real.command("fsdp")
@click.option("--model", default="small", show_default=True, help="built-in torch model: small (GPT-style LM) or mlp (tiny)")
@click.option("--strategies", default="ddp,zero1,full_shard,shard_grad_op", show_default=True,
              help="ddp, zero1, full_shard, shard_grad_op, no_shard, hybrid_shard")  # fmt: skip
@click.option("--shard-size", default=None, type=int, help="hybrid_shard: ranks per shard group (default all ranks)")
@click.option("--rounds", default=10, type=int, show_default=True, help="measured rounds (each: no-comm step, then every strategy)")
@click.option("--warmup-rounds", default=2, type=int, show_default=True)
@click.option("--check", is_flag=True, help="instead of timing: train 3 steps per strategy and compare weights with one process")
@click.option("--save", "save_path", default=None, help="write the measured rows (every launch) to this JSON file for collsim compare (kind: fsdp)")
@_launch_options
def fsdp(model: str, strategies: str, shard_size: int | None, rounds: int, warmup_rounds: int, check: bool, save_path: str | None, backend: str,
         device: str | None, ranks: int, timeout_s: float, op_timeout_s: float, threads: int, launches: int, db: str | None, no_db: bool,
         label: str | None, as_json: bool) -> None:  # fmt: skip
    """Time FSDP2 / ZeRO training steps per strategy beside sim fsdp (replaying the measured
    no-communication phases, o and w fitted to all-reduces measured in the same launch)."""
    from real.ddp import model_spec
    from real.fsdp import STRATEGIES, check_equality, run_bench, summarize

    model_spec(model)
    names = [name.strip() for name in strategies.split(",") if name.strip()]
    unknown = [name for name in names if name not in STRATEGIES]
    if unknown or not names:
        raise CollsimError(f"--strategies: unknown {', '.join(unknown) or '(empty)'}; allowed: {', '.join(STRATEGIES)}")
    if rounds < 1 or warmup_rounds < 0:
        raise CollsimError("--rounds must be >= 1 and --warmup-rounds >= 0")
    if launches < 1:
        raise CollsimError(f"--launches: must be >= 1, got {launches}")
    if shard_size is not None and shard_size < 1:
        raise CollsimError(f"--shard-size: must be >= 1 (ranks per shard group), got {shard_size}")
    if save_path:
        check_output_file(save_path, "--save")
    config = _config(backend, device, ranks, timeout_s, op_timeout_s, threads)
    if shard_size is not None and config.world_size % shard_size:
        raise CollsimError(f"--shard-size: must divide the world size {config.world_size}, got {shard_size}")
    store = None if check else _store(db, no_db)
    if check:
        rows = check_equality(config, model=model, strategies=tuple(names), shard_size=shard_size)
        if as_json:
            _echo_json(rows)
        else:
            for row in rows:
                click.echo(f"{row['strategy']:<14} max |w - w_single| {row['max_abs_diff']:.3g}  allclose {row['allclose']}")
        if not all(row["allclose"] for row in rows):
            raise SystemExit(1)
        return
    meta = _run_meta(config, "collsim real fsdp " + " ".join(sys.argv[3:]), label)

    def measure(run_meta: dict[str, Any], _: Callable) -> list:
        return [run_bench(model, names, config, rounds, warmup_rounds, shard_size=shard_size)]

    per_launch = _measured_launches(store, "fsdp", meta, launches, measure)  # each launch a run in the store
    if not _is_rank_zero():
        return
    rows = [row for launch_rows in per_launch for row in launch_rows]
    summary = summarize(rows, model, config.world_size, shard_size)
    if save_path:
        _save_fsdp_rows(save_path, per_launch, model, config, shard_size, label)
    if as_json:
        _echo_json(summary)
        return
    click.echo(f"# collsim real fsdp: {model}, {config.backend}/{config.device}, {config.world_size} ranks; step = max over ranks, median [p10, p90]")
    click.echo(f"# sim: sim fsdp --comm ow, o {format_time(summary[0]['o_s'])}, w {summary[0]['w_Bps'] / 1e9:.3g} GB/s (fitted to this launch's all-reduces)")
    for row in summary:
        sim_text = "-" if row["simulated_s"] is None else format_time(row["simulated_s"])
        spread = f"[{format_time(row['p10_s'])}, {format_time(row['p90_s'])}]"
        click.echo(f"  {row['strategy']:<14} measured {format_time(row['median_s']):>10} {spread:>24}  simulated {sim_text}")
    if save_path:
        click.echo(f"# wrote {save_path}; compare per strategy with: collsim compare SPEC (kind: fsdp, measured: {save_path})")
    if store is not None:
        click.echo(f"# {launches} fsdp run(s) recorded in {store.path} (the step rows are in --save files; the store keeps the runs)")


def _save_fsdp_rows(path: str, per_launch: list[list[dict[str, Any]]], model: str, config: Any, shard_size: int | None, label: str | None) -> None:
    """The rows of every launch, the parameter list and the run facts, for ``collsim compare`` (kind: fsdp)."""
    from pathlib import Path

    from real.compare import fsdp_document
    from real.ddp import _fresh_model, export_params, model_spec

    meta = _run_meta(config, "collsim real fsdp " + " ".join(sys.argv[3:]), label)
    params = export_params(_fresh_model(model_spec(model), 0))
    Path(path).write_text(json.dumps(fsdp_document(per_launch, model, config.world_size, params, meta, shard_size), indent=1))


@real.command("import-trace")
@click.argument("trace")
@click.option("--params", "params_path", default=None, help="parameter list (collsim real params / --params) to name the gradients")
@click.option("--model", default=None, help="a built-in model (small, mlp) whose parameter list names the gradients")
@click.option("-o", "--out", default=None, help="write the profile here (default: print it)")
@click.option("--record", is_flag=True, help="first record TRACE: one profiled DDP step of --model (default small) on 2 gloo ranks")
@click.option("--json", "as_json", is_flag=True, help="print the whole profile JSON (default: a summary, or the profile without --out)")
def import_trace_command(trace: str, params_path: str | None, model: str | None, out: str | None, record: bool, as_json: bool) -> None:
    """Read a torch.profiler (Kineto) Chrome trace of a training step and write a profile that
    collsim sim ddp --profile and collsim sim fsdp --profile replay (what-if)."""
    from real.trace import import_trace

    if params_path and model:
        raise CollsimError("--params and --model both name the parameters; give one")
    if out:
        check_output_file(out, "--out")
    if record:
        from real.launcher import LaunchConfig
        from real.trace import record_ddp_trace

        record_ddp_trace(trace, LaunchConfig(2, timeout_s=300.0), model or "small")
    params = None
    if params_path:
        from sim.training.params import load_params

        params = [param.to_dict() for param in load_params(params_path)]
    elif model:
        from real.ddp import _fresh_model, export_params, model_spec

        params = export_params(_fresh_model(model_spec(model), 0))
    profile = import_trace(trace, params, model)
    if out:
        from pathlib import Path

        Path(out).write_text(json.dumps(profile, indent=1))
    if as_json or not out:
        click.echo(json.dumps(profile))
        return
    info, ow = profile["trace"], profile["trace"]["ow"]
    click.echo(f"# {trace}: {info['step']}, step {format_time(info['step_s'])}; forward {format_time(profile['forward_s'])}, backward compute "
               f"{format_time(profile['backward_s'])}, optimizer {format_time(profile['optimizer_s'])}; {len(profile['params'])} gradients, "
               f"{len(info['collectives'])} collective(s)")  # fmt: skip
    if ow:
        click.echo(f"# replay: collsim sim ddp --profile {out} --o {format_time(ow['o_s']).replace(' ', '')} --w {ow['w_Bps'] / 1e6:.4g}MB/s")


def _read_store(db: str | None) -> Any:
    """--db FILE, else ./results.sqlite when present, else the bundled sample data (read-only)."""
    from real.store import open_store, read_only_copy

    if db:
        click.echo(f"# results store: {db} (--db)", err=True)
        return read_only_copy(db)
    if os.path.isfile(DEFAULT_DB):
        click.echo(f"# results store: {os.path.abspath(DEFAULT_DB)} (found ./{DEFAULT_DB}; pass --db to choose another)", err=True)
        return read_only_copy(DEFAULT_DB)
    click.echo("# no --db and no ./results.sqlite: using the bundled sample data", err=True)
    return open_store(None)


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
    from real.fit import compute_slowdown, fit_alpha_beta, fit_bucket_overhead, fit_groups, fit_ow_piecewise, group_rows, write_calibration

    if not 0 < confidence < 1:
        raise CollsimError(f"--confidence: must be between 0 and 1, got {confidence}")
    store = _read_store(db)
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
        write_calibration(document, calibration)
    if as_json:
        from real.fit import plain

        _echo_json(plain(document))
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
            raise CollsimError(f"{flag}: no measurements with {column[flag]} {value!r} in {store.path or 'the bundled sample data'}; present: {listed}")
    raise CollsimError(f"no measurements match {' '.join(f'{flag} {value}' for flag, value in given.items())} together")


def check_output_file(path: str, what: str) -> None:
    """An output file that cannot be written is refused before the measurement, not after it."""
    from pathlib import Path

    target = Path(path)
    if target.is_dir():
        raise CollsimError(f"{what}: {path!r} is a directory; give a file name")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        what_is = "is a file, not a directory" if parent.exists() else "does not exist"
        raise CollsimError(f"{what}: cannot write {path!r}: {str(parent)!r} {what_is}")
    if not os.access(parent, os.W_OK):
        raise CollsimError(f"{what}: cannot write {path!r}: no permission to write in {str(parent)!r}")


def check_output_dir(path: str, what: str) -> None:
    """A directory that will be created (or written into), checked before the measurement."""
    from pathlib import Path

    target = Path(path)
    if target.exists() and not target.is_dir():
        raise CollsimError(f"{what}: {path!r} is a file; give a directory")
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise CollsimError(f"{what}: cannot create {path!r}: {str(existing)!r} is a file")
    if not os.access(existing, os.W_OK):
        raise CollsimError(f"{what}: cannot create {path!r}: no permission to write in {str(existing)!r}")


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
            lines.append(f"{head}: o and w not identifiable from these points (the formula explains {max(0.0, overhead['r2']):.0%} of the variance)")
    return "\n".join(lines)


@click.command("compare")
@click.argument("scenario_file")
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
def compare(scenario_file: str, db: str | None, calibration: str | None, stat: str | None, holdout: bool | None, run_now: bool, launches: int,
            iters: int, rounds: int, as_json: bool) -> None:  # fmt: skip
    """Simulated vs measured per point: error, the measurement's own spread, and whether the error is within it."""
    from real.compare import _compare, format_report, split_file

    fields, extra = split_file(scenario_file)
    if run_now and extra.get("kind") == "fsdp":
        raise CollsimError("--run: not for kind: fsdp; measure with collsim real fsdp --launches 3 --save FILE and name FILE under 'measured'")
    if extra.get("kind") == "fsdp":
        store = None  # the spec names its rows file
    elif run_now:
        store = _store(db, False)
        extra["run_ids"] = _measure_for_compare(fields, extra, store, launches, iters, rounds)
    else:
        store = _read_store(db)
    report = _compare(fields, extra, store, calibration, stat, holdout)
    if as_json:
        from real.fit import plain

        _echo_json(plain(report))
    else:
        click.echo(format_report(report))


def _measure_for_compare(fields: dict[str, Any], extra: dict[str, Any], store: Any, launches: int, iters: int, rounds: int) -> list[str]:
    """Measure what a comparison file describes; returns the new run ids."""
    from real.compare import scenario_sizes

    config = _config(extra.get("backend", "gloo"), extra.get("device"), int(fields.get("ranks", 2)), 900.0, 60.0, 1)
    meta = _run_meta(config, f"collsim compare --run {' '.join(sys.argv[2:])}", "compare --run")
    if extra.get("kind") == "ddp":
        from real.ddp import run_ddp_bench

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
        _measured_launches(store, "ddp", meta, launches, measure_ddp)
    else:
        from real.bench import BenchSpec, run_bench

        spec = BenchSpec((fields["op"],), tuple(scenario_sizes(fields, extra)), iters, 5, rounds=min(rounds, iters))
        before = {run["run_id"] for run in store.runs()}
        _measured_launches(store, "bench", meta, launches, lambda run_meta, _: run_bench(spec, config, run_meta, store.add_collective))
    return [run["run_id"] for run in store.runs() if run["run_id"] not in before]


@real.command("import")
@click.argument("path")
@click.option("--op", default=None, help="op when the file does not say (all_reduce, all_gather, ...)")
@click.option("--world-size", default=None, type=int, help="ranks when the file does not say")
@click.option("--backend", default="nccl", show_default=True)
@click.option("--device", default="cuda", show_default=True, help="device the measured tensors lived on")
@click.option("--in-place", is_flag=True, help="take nccl-tests' in-place columns instead of out-of-place")
@click.option("--label", default=None, help="e.g. the cluster and GPU model")
@click.option("--db", default=None, help=DB_HELP)
@click.option("--json", "as_json", is_flag=True)
def import_command(
    path: str,
    op: str | None,
    world_size: int | None,
    backend: str,
    device: str,
    in_place: bool,
    label: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Import nccl-tests output (stdout text or the -J JSON file), or a collsim results JSON."""
    from real import nccl_tests
    from real.bench import now_utc
    from real.store import open_store

    store = open_store(db or DEFAULT_DB)
    if path.endswith(".json") and '"collsim-results"' in open(path).read(200):
        store.load(json.load(open(path)))
        click.echo(f"# loaded {path} into {store.path}")
        return
    parsed = nccl_tests.read(path, op, world_size, in_place)
    if not parsed["rows"][0]["world_size"]:
        raise CollsimError("cannot tell the number of ranks from this file; pass --world-size")
    devices = parsed["meta"].get("devices") or []
    run_id = store.add_run("import", {"source": "nccl-tests", "label": label or path, "backend": backend, "device": device, "world_size": parsed["rows"][0]["world_size"],
                                      "host": ",".join(sorted({d.get("hostname", "") for d in devices})), "gpu_model": devices[0].get("device_info", "") if devices else "",
                                      "backend_version": parsed["meta"].get("nccl_version", ""), "started_at": now_utc(), "command": f"collsim real import {path}"})  # fmt: skip
    rows = [{**row, "backend": backend, "device": device, "run_id": run_id, "measured_at": now_utc()} for row in parsed["rows"]]
    for row in rows:
        store.add_collective(row)
    store.finish_run(run_id)
    if as_json:
        _echo_json(rows)
    else:
        click.echo(
            f"# imported {len(rows)} {parsed['meta']['op']} row(s), p = {rows[0]['world_size']}, from {path} into {store.path} (run {run_id})"
        )


@real.command("export")
@click.option("--db", default=None, help=f"results store (default ./{DEFAULT_DB}, else the bundled sample data)")
@click.option(
    "--table", default="collectives", show_default=True, type=click.Choice(["runs", "collectives", "ddp_steps", "ddp_profiles", "all"])
)
@click.option("--csv", "csv_path", default=None, help="write this table as CSV")
@click.option("--json", "json_path", default=None, help="write the whole store (or --run ids) as collsim-results JSON")
@click.option("--nccl-tests", "nccl_path", default=None, help="write the collectives as nccl-tests text tables")
@click.option("--run", "run_ids", multiple=True, help="only these runs (JSON export)")
def export(
    db: str | None, table: str, csv_path: str | None, json_path: str | None, nccl_path: str | None, run_ids: tuple[str, ...]
) -> None:
    """Export the store: a table as CSV, everything as JSON, or collectives as nccl-tests text."""
    if not (csv_path or json_path or nccl_path):
        raise CollsimError("give --csv FILE, --json FILE or --nccl-tests FILE")
    for path, what in ((csv_path, "--csv"), (json_path, "--json"), (nccl_path, "--nccl-tests")):
        if path:
            check_output_file(path, what)
    store = _read_store(db)
    if csv_path:
        if table == "all":
            raise CollsimError("--csv writes one table; choose --table")
        click.echo(f"# {store.export_csv(table, csv_path)} row(s) written to {csv_path}")
    if json_path:
        with open(json_path, "w") as handle:
            json.dump(store.dump(list(run_ids) or None), handle, indent=1)
        click.echo(f"# store written to {json_path}")
    if nccl_path:
        from real.fit import group_rows
        from real.nccl_tests import to_text

        groups = group_rows(store.collectives())
        with open(nccl_path, "w") as handle:
            for key, rows in groups.items():
                handle.write(
                    f"# collsim export: source {key[0]}, backend {key[1]}, device {key[2]}, world size {key[4]}\n" + to_text(rows) + "\n"
                )
        click.echo(f"# {len(groups)} table(s) written to {nccl_path}")


@real.command("runs")
@click.option("--db", default=None, help=f"results store (default ./{DEFAULT_DB}, else the bundled sample data)")
@click.option("--json", "as_json", is_flag=True)
def runs(db: str | None, as_json: bool) -> None:
    """List the runs in a store: when, where, what, and whether they finished."""
    store = _read_store(db)
    rows = store.runs()
    if as_json:
        _echo_json(rows)
        return
    for row in rows:
        where = row.get("gpu_model") or row.get("cpu_model") or ""
        click.echo(
            f"{row['run_id']}  {row['kind']:>9} {row['source']:>10} {row['status']:>7}  {row['backend']}/{row['device']} p={row['world_size']}  {row['host']} ({where})  torch {row['torch_version']}  {row.get('label') or ''}"
        )
        if row.get("error"):
            click.echo(f"    error: {row['error']}")


@real.command("params")
@click.option("--model", default="small", show_default=True, help="built-in model (small, mlp) or module:factory returning an nn.Module")
@click.option("--output", "-o", required=True, help="parameter list file (JSON, or YAML for .yaml/.yml)")
def params(model: str, output: str) -> None:
    """Export a torch model's parameter list (registration order) for collsim sim ddp --params."""
    import importlib

    from real.ddp import MODELS, _fresh_model, save_params

    if model in MODELS:
        module = _fresh_model(MODELS[model], 0)
    elif ":" in model:
        name, attribute = model.split(":", 1)
        module = getattr(importlib.import_module(name), attribute)()
    else:
        raise CollsimError(f"--model: {model!r} is neither a built-in model ({', '.join(MODELS)}) nor module:factory")
    check_output_file(output, "--output")
    save_params(module, output)
    click.echo(f"# {sum(1 for p in module.parameters() if p.requires_grad)} parameter tensors written to {output}")


@click.command("validate")
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
def validate(backend: str, ranks: str, quick: bool, out_dir: str, db: str | None, sizes: str | None, launches: int | None, no_ddp: bool,
             no_fsdp: bool, plotlyjs: str, threads: int, op_timeout_s: float) -> None:  # fmt: skip
    """Measure collectives and DDP steps, fit o and w, predict held-out points and the best bucket size; write a report."""
    from dataclasses import replace
    from pathlib import Path

    from real.validate import analyse, check_plan, format_text, make_plan, mark_folder, measure, prepare_folder, summary_document
    from real.validate import write_outputs

    world_sizes = _world_sizes(ranks)
    plan = make_plan(backend, world_sizes, quick)
    if sizes:
        plan = replace(plan, sizes=tuple(parse_size_list(sizes, "--sizes")))
    if launches is not None:
        if launches < 1:
            raise CollsimError(f"--launches: must be >= 1, got {launches}")
        plan = replace(plan, launches=launches, ddp_launches=min(plan.ddp_launches, launches), fsdp_launches=min(plan.fsdp_launches, launches))
    if no_ddp:
        plan = replace(plan, ddp_launches=0, fsdp_launches=0)
    if no_fsdp:
        plan = replace(plan, fsdp_launches=0)
    check_plan(plan)  # everything checkable is checked before the first measurement
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise CollsimError(f"--out {out_dir!r} is a file; give a directory")
    if db:
        check_output_file(db, "--db")
    command = "collsim validate " + " ".join(sys.argv[2:])
    store = None
    if _is_rank_zero():
        from real.store import open_store

        previous = prepare_folder(out, command)
        if previous is not None:
            click.echo(f"# the previous run's report and files moved to {previous}", err=True)
        try:
            store = open_store(db or out / "results.sqlite")
        except CollsimError as error:
            mark_folder(out, "failed", error=str(error))
            raise
    try:
        configs = {p: _config(backend, None, p, 3600.0, op_timeout_s, threads) for p in plan.world_sizes}
        meta = _run_meta(configs[plan.world_sizes[0]], command, "validate")
        with _progress(plan.total_points(), "validate") as tick:
            measured = measure(plan, store, configs.__getitem__, meta, tick)
        if not _is_rank_zero():
            return
        if not measured.collectives:
            raise CollsimError("interrupted before any point was measured; nothing to analyse")
        meta.update(world_sizes=list(plan.world_sizes), quick=plan.quick, interrupted=measured.interrupted, seconds=measured.seconds,
                    store=str(store.path) if store else None, run_ids=measured.run_ids, sizes=list(plan.sizes), launches=plan.launches)  # fmt: skip
        summary = analyse(measured.collectives, measured.ddp_steps, measured.profiles, backend, meta, fsdp=measured.fsdp)
        paths = write_outputs(summary, out, plotlyjs)
    except BaseException as error:
        if _is_rank_zero():
            interrupted = isinstance(error, KeyboardInterrupt) or "interrupted" in str(error)
            mark_folder(out, "interrupted" if interrupted else "failed", error=str(error) or type(error).__name__)
        raise
    click.echo(format_text(summary_document(summary), paths, measured))
    if measured.interrupted:
        mark_folder(out, "interrupted", error="interrupted (Ctrl-C): the report covers the points measured before", run_ids=measured.run_ids)
        click.echo("# interrupted: the report above is partial (status.json: interrupted); exit status 130", err=True)
        sys.exit(130)
    mark_folder(out, "complete", run_ids=measured.run_ids, seconds=measured.seconds)


def _world_sizes(ranks: str) -> list[int]:
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:
        return [int(os.environ["WORLD_SIZE"])]
    try:
        return [int(part) for part in ranks.split(",") if part.strip()]
    except ValueError:
        raise CollsimError(f"--ranks: expected a number or a comma list such as 2,3,4, got {ranks!r}") from None
