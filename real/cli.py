"""``collsim real ...``: bench, ddp, fsdp, import, export, import-trace, runs, params (loaded lazily by
``sim.cli``); ``fit``, ``compare`` and ``validate`` are in :mod:`real.cli_analysis`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from real.cli_common import (
    DB_HELP,
    DEFAULT_DB,
    check_output_dir,
    check_output_file,
    echo_json,
    is_rank_zero,
    launch_config,
    launch_options,
    measured_launches,
    open_store,
    output_errors,
    progress_bar,
    read_store,
    run_meta,
    write_output,
)
from sim.cli_fields import field_options
from sim.errors import CollsimError
from sim.units import format_size, format_time, parse_size_list

PROGRESS_BYTES = 8 << 20  # import: a progress bar from this file size on


@click.group("real")
def real() -> None:
    """Run collectives and DDP steps for real on torch.distributed (gloo on CPU, NCCL on GPUs).

    One host: ranks are spawned here and bind to 127.0.0.1. Many hosts: start the same command
    under torchrun (it then uses env://, and rank 0 writes the store).
    """


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
@launch_options
def bench(ops: str, sizes: str, iters: int, warmup: int, dtype: str, rounds: int, backend: str, device: str | None, ranks: int, timeout_s: float,
          op_timeout_s: float, threads: int, launches: int, db: str | None, no_db: bool, label: str | None, as_json: bool) -> None:  # fmt: skip
    """Time collectives nccl-tests style: size, count, type, redop, root, time, algbw, busbw."""
    from real.bench import OPS, BenchSpec, run_bench

    if launches < 1:  # before the progress bar, like ddp and fsdp
        raise CollsimError(f"--launches: must be >= 1, got {launches}")
    op_list = list(OPS) if ops.strip() == "all" else [op.strip() for op in ops.split(",") if op.strip()]
    if not op_list:
        raise CollsimError(f"--ops: empty; give a comma list of {', '.join(OPS)}, or all")
    spec = BenchSpec(tuple(op_list), tuple(parse_size_list(sizes, "--sizes")), iters, warmup, dtype, rounds=rounds)
    config = launch_config(backend, device, ranks, timeout_s, op_timeout_s, threads)
    store = open_store(db, no_db)
    meta = run_meta(config, "collsim real bench " + " ".join(sys.argv[3:]), label)
    with progress_bar(len(spec.points(config.world_size)) * launches, "bench") as tick:

        def measure(run_meta: dict[str, Any], _: Callable) -> list:
            def on_result(row: dict[str, Any]) -> None:
                if store is not None:
                    store.add_collective(row)
                tick()

            return run_bench(spec, config, run_meta, on_result)

        rows = measured_launches(store, "bench", meta, launches, measure)
    if not is_rank_zero():
        return
    if as_json:
        echo_json(rows)
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
        configs += [(name, size) for size in sizes] if name in ("bucketed", "torch") else [(name, None)]
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
            "backward_slowdown": None if first["strategy"] == "torch" else slowdown.get(config, {}).get("median"),  # torch: backward holds the sync
            "algbw_GBps": None, "busbw_GBps": None,
        })  # fmt: skip
    return rows


@real.command("ddp")
@click.option(
    "--model", default="small", show_default=True, help="built-in torch model: small (GPT-style LM, 16.1 MiB of gradients) or mlp (tiny)"
)
@click.option("--strategies", default="naive,flat,overlap,bucketed", show_default=True,
              help="naive, flat, overlap, bucketed (by hand), torch (torch's DistributedDataParallel, with --comm-hook)")  # fmt: skip
@click.option("--bucket-sizes", default="1MiB,4MiB,16MiB", show_default=True, help="caps for the bucketed and torch strategies")
@click.option("--rounds", default=10, type=int, show_default=True, help="measured rounds (each: no-comm step, then every config)")
@click.option("--warmup-rounds", default=2, type=int, show_default=True)
@click.option("--profile-dir", default=None, help="also write each config's measured profile (collsim-ddp-profile JSON) here")
@click.option("--params", "params_path", default=None, help="also write the model's parameter list (for collsim sim ddp --params)")
@field_options("ddp", "comm_hook", "powersgd_rank", "powersgd_warmup", notes={"comm_hook": "strategy torch only; default none"})
@launch_options
def ddp(model: str, strategies: str, bucket_sizes: str, rounds: int, warmup_rounds: int, profile_dir: str | None, params_path: str | None,
        comm_hook: str | None, powersgd_rank: int | None, powersgd_warmup: int | None, backend: str, device: str | None, ranks: int,
        timeout_s: float, op_timeout_s: float, threads: int, launches: int, db: str | None, no_db: bool, label: str | None, as_json: bool) -> None:  # fmt: skip
    """Time DDP training steps per strategy, round-robin and paired with a no-communication step."""
    from real.model_names import check_model_name

    check_model_name(model)  # before torch's import (seconds)
    from real.ddp_bench import check_torch_configs, run_ddp_bench
    from real.models import model_spec

    spec = model_spec(model)
    configs = _ddp_configs(strategies, bucket_sizes)
    if rounds < 1 or warmup_rounds < 0:
        raise CollsimError("--rounds must be >= 1 and --warmup-rounds >= 0")
    hook = _hook_fields(comm_hook, powersgd_rank, powersgd_warmup)
    check_torch_configs(model, configs, hook, backend, warmup_rounds)
    if launches < 1:
        raise CollsimError(f"--launches: must be >= 1, got {launches}")
    if profile_dir:
        check_output_dir(profile_dir, "--profile-dir")
    if params_path:
        check_output_file(params_path, "--params")
    config = launch_config(backend, device, ranks, timeout_s, op_timeout_s, threads)
    store = open_store(db, no_db)
    meta = run_meta(config, "collsim real ddp " + " ".join(sys.argv[3:]), label)
    meta["model"] = f"{model}: {spec.description}"
    profiles: list[dict[str, Any]] = []
    with progress_bar(rounds * (len(configs) + 1) * launches, "ddp") as tick:

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

            return run_ddp_bench(model, configs, config, run_meta, rounds, warmup_rounds, on_result=on_result, comm_hook=hook)

        results = measured_launches(store, "ddp", meta, launches, measure)
    if not is_rank_zero():
        return
    _write_ddp_files(profiles, profile_dir, params_path, model)
    summary = summarize_ddp([row for row in results if row.get("_table", "ddp_steps") == "ddp_steps" and "step_s" in row])
    if as_json:
        echo_json(summary)
        return
    click.echo(format_ddp_table(summary, meta, spec))
    if store is not None:
        click.echo(f"# {sum(row['rounds'] for row in summary)} step row(s) and {len(profiles)} profile(s) appended to {store.path}")


def _hook_fields(comm_hook: str | None, powersgd_rank: int | None, powersgd_warmup: int | None) -> dict[str, Any]:
    """``sim.training.hooks.CommHook``'s fields from the options (checked by ``check_torch_configs``)."""
    hook: dict[str, Any] = {"name": comm_hook or "none"}
    if powersgd_rank is not None:
        hook["powersgd_rank"] = powersgd_rank
    if powersgd_warmup is not None:
        hook["start_iter"] = powersgd_warmup
    return hook


def _write_ddp_files(profiles: list[dict[str, Any]], profile_dir: str | None, params_path: str | None, model: str) -> None:
    from pathlib import Path

    if profile_dir:
        with output_errors(profile_dir, "--profile-dir"):
            Path(profile_dir).mkdir(parents=True, exist_ok=True)
        for row in profiles:
            name = Path(profile_dir) / f"{model}-{row['config'].replace(':', '-')}.json"
            write_output(str(name), "--profile-dir", lambda handle, row=row: json.dump(row["profile"], handle, indent=1))
    if params_path:
        from real.ddp import save_params
        from real.models import fresh_model, model_spec

        with output_errors(params_path, "--params"):
            save_params(fresh_model(model_spec(model), 0), params_path)


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
@click.option(
    "--save", "save_path", default=None, help="write the measured rows (every launch) to this JSON file for collsim compare (kind: fsdp)"
)
@launch_options
def fsdp(model: str, strategies: str, shard_size: int | None, rounds: int, warmup_rounds: int, check: bool, save_path: str | None, backend: str,
         device: str | None, ranks: int, timeout_s: float, op_timeout_s: float, threads: int, launches: int, db: str | None, no_db: bool,
         label: str | None, as_json: bool) -> None:  # fmt: skip
    """Time FSDP2 / ZeRO training steps per strategy beside sim fsdp (replaying the measured
    no-communication phases, o and w fitted to all-reduces measured in the same launch)."""
    from real.model_names import check_model_name

    check_model_name(model)  # before torch's import (seconds)
    from real.fsdp import STRATEGIES, check_equality, run_bench, summarize

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
    config = launch_config(backend, device, ranks, timeout_s, op_timeout_s, threads)
    if shard_size is not None and config.world_size % shard_size:
        raise CollsimError(f"--shard-size: must divide the world size {config.world_size}, got {shard_size}")
    store = None if check else open_store(db, no_db)
    if check:
        rows = check_equality(config, model=model, strategies=tuple(names), shard_size=shard_size)
        if as_json:
            echo_json(rows)
        else:
            for row in rows:
                click.echo(f"{row['strategy']:<14} max |w - w_single| {row['max_abs_diff']:.3g}  allclose {row['allclose']}")
        if not all(row["allclose"] for row in rows):
            raise SystemExit(1)
        return
    meta = run_meta(config, "collsim real fsdp " + " ".join(sys.argv[3:]), label)

    def measure(run_meta: dict[str, Any], _: Callable) -> list:
        return [run_bench(model, names, config, rounds, warmup_rounds, shard_size=shard_size)]

    per_launch = measured_launches(store, "fsdp", meta, launches, measure)  # each launch a run in the store
    if not is_rank_zero():
        return
    rows = [row for launch_rows in per_launch for row in launch_rows]
    summary = summarize(rows, model, config.world_size, shard_size)
    if save_path:
        _save_fsdp_rows(save_path, per_launch, model, config, shard_size, label)
    if as_json:
        echo_json(summary)
        return
    click.echo(
        f"# collsim real fsdp: {model}, {config.backend}/{config.device}, {config.world_size} ranks; step = max over ranks, median [p10, p90]"
    )
    click.echo(
        f"# sim: sim fsdp --comm ow, o {format_time(summary[0]['o_s'])}, w {summary[0]['w_Bps'] / 1e9:.3g} GB/s (fitted to this launch's all-reduces)"
    )
    for row in summary:
        sim_text = "-" if row["simulated_s"] is None else format_time(row["simulated_s"])
        spread = f"[{format_time(row['p10_s'])}, {format_time(row['p90_s'])}]"
        click.echo(f"  {row['strategy']:<14} measured {format_time(row['median_s']):>10} {spread:>24}  simulated {sim_text}")
    if save_path:
        click.echo(f"# wrote {save_path}; compare per strategy with: collsim compare SPEC (kind: fsdp, measured: {save_path})")
    if store is not None:
        click.echo(f"# {launches} fsdp run(s) recorded in {store.path} (the step rows are in --save files; the store keeps the runs)")


def _save_fsdp_rows(
    path: str, per_launch: list[list[dict[str, Any]]], model: str, config: Any, shard_size: int | None, label: str | None
) -> None:
    """The rows of every launch, the parameter list and the run facts, for ``collsim compare`` (kind: fsdp)."""
    from real.compare_fsdp import fsdp_document
    from real.ddp import export_params
    from real.models import fresh_model, model_spec

    meta = run_meta(config, "collsim real fsdp " + " ".join(sys.argv[3:]), label)
    params = export_params(fresh_model(model_spec(model), 0))
    document = fsdp_document(per_launch, model, config.world_size, params, meta, shard_size)
    write_output(path, "--save", lambda handle: json.dump(document, handle, indent=1))


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
        from real.ddp import export_params
        from real.models import fresh_model, model_spec

        params = export_params(fresh_model(model_spec(model), 0))
    profile = import_trace(trace, params, model)
    if out:
        write_output(out, "--out", lambda handle: json.dump(profile, handle, indent=1))
    if as_json or not out:
        click.echo(json.dumps(profile))
        return
    info, ow = profile["trace"], profile["trace"]["ow"]
    click.echo(f"# {trace}: {info['step']}, step {format_time(info['step_s'])}; forward {format_time(profile['forward_s'])}, backward compute "
               f"{format_time(profile['backward_s'])}, optimizer {format_time(profile['optimizer_s'])}; {len(profile['params'])} gradients, "
               f"{len(info['collectives'])} collective(s)")  # fmt: skip
    if ow:
        click.echo(
            f"# replay: collsim sim ddp --profile {out} --o {format_time(ow['o_s']).replace(' ', '')} --w {ow['w_Bps'] / 1e6:.4g}MB/s"
        )


@real.command("import")
@click.argument("path")
@click.option("--op", default=None, help="op when the file does not say (all_reduce, all_gather, ...)")
@click.option("--world-size", default=None, type=int, help="ranks when the file does not say")
@click.option("--backend", default=None, help="default: the file's own (tables of collsim real export), else nccl")
@click.option("--device", default=None, help="device the measured tensors lived on (default: the file's own, else cuda)")
@click.option("--in-place", is_flag=True, help="take nccl-tests' in-place columns instead of out-of-place")
@click.option("--label", default=None, help="e.g. the cluster and GPU model")
@click.option("--db", default=None, help=DB_HELP)
@click.option("--json", "as_json", is_flag=True)
def import_command(
    path: str,
    op: str | None,
    world_size: int | None,
    backend: str | None,
    device: str | None,
    in_place: bool,
    label: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Import nccl-tests output (stdout text or the -J JSON file), or a collsim results JSON."""
    from pathlib import Path

    from real.store import open_store

    if not Path(path).is_file():
        raise CollsimError(f"PATH: {path!r} not found (give an nccl-tests log or -J JSON file, or a collsim results JSON)")
    store = open_store(db or DEFAULT_DB)
    if path.endswith(".json") and '"collsim-results"' in Path(path).read_text(errors="replace")[:200]:
        store.load(json.loads(Path(path).read_text()))
        click.echo(f"# loaded {path} into {store.path}")
        return
    rows, log, run_id = _import_log(store, path, op, world_size, backend, device, in_place, label, keep=as_json)
    for warning in log.checks.warnings():
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        echo_json(rows)
    else:
        click.echo(
            f"# imported {log.meta['rows']} {log.meta['op']} row(s), p = {log.meta['world_size']}, from {path} into {store.path} (run {run_id})"
        )


def _import_log(store: Any, path: str, op: str | None, world_size: int | None, backend: str | None, device: str | None, in_place: bool, label: str | None,
                keep: bool) -> tuple[list[dict[str, Any]], Any, str]:  # fmt: skip
    """An nccl-tests output read line by line into the store as one run, in one transaction (a
    refused log leaves the store as it was); a progress bar for large files. Returns the rows
    (when ``keep``, for --json), the log read and the run id."""
    import os

    from tqdm import tqdm

    from real import nccl_tests
    from real.bench import now_utc
    from real.store import new_run_id

    run_id, kept, now = new_run_id(), [], now_utc()
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    with tqdm(total=size, desc="import", unit="B", unit_scale=True, file=sys.stderr, leave=False, mininterval=0.5,
              disable=size < PROGRESS_BYTES) as bar:  # fmt: skip
        log = nccl_tests.stream(path, op, world_size, in_place, on_bytes=bar.update)

        def rows() -> Any:
            for row in log.rows:
                if not row["world_size"]:
                    raise CollsimError("cannot tell the number of ranks from this file; pass --world-size")
                log.meta.setdefault("world_size", row["world_size"])
                row.update(backend=backend or row["backend"], device=device or row["device"], run_id=run_id, measured_at=now)
                log.meta.setdefault("where", (row["backend"], row["device"]))
                if keep:
                    kept.append(row)
                yield row

        def run_meta() -> dict[str, Any]:
            devices = log.meta.get("devices") or []
            return {"run_id": run_id, "source": "nccl-tests", "label": label or path, "backend": log.meta["where"][0], "device": log.meta["where"][1],
                    "world_size": log.meta["world_size"], "host": ",".join(sorted({d.get("hostname", "") for d in devices})),
                    "gpu_model": devices[0].get("device_info", "") if devices else "", "backend_version": log.meta.get("nccl_version", ""),
                    "started_at": now, "finished_at": now_utc(), "command": f"collsim real import {path}"}  # fmt: skip

        log.meta["rows"] = store.add_import("import", rows(), run_meta)
    return kept, log, run_id


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
    if run_ids and not json_path:
        raise CollsimError("--run: chooses the runs of a --json export; give --json FILE (--csv and --nccl-tests write everything)")
    if csv_path and table == "all":
        raise CollsimError("--csv writes one table; choose --table")
    for path, what in ((csv_path, "--csv"), (json_path, "--json"), (nccl_path, "--nccl-tests")):
        if path:
            check_output_file(path, what)
    store = read_store(db)
    _check_run_ids(store, run_ids, db)
    if csv_path:
        count = write_output(csv_path, "--csv", lambda handle: store.export_csv(table, handle))
        click.echo(f"# {count} row(s) written to {csv_path}")
    if json_path:
        write_output(json_path, "--json", lambda handle: json.dump(store.dump(list(run_ids) or None), handle, indent=1))
        click.echo(f"# store written to {json_path}" + (f" ({len(run_ids)} run(s))" if run_ids else ""))
    if nccl_path:
        from real.fit import group_rows
        from real.nccl_tests import to_text

        groups = group_rows(store.collectives())

        def write_tables(handle: Any) -> None:
            for key, rows in groups.items():
                handle.write(
                    f"# collsim export: source {key[0]}, backend {key[1]}, device {key[2]}, world size {key[4]}\n" + to_text(rows) + "\n"
                )

        write_output(nccl_path, "--nccl-tests", write_tables)
        click.echo(f"# {len(groups)} table(s) written to {nccl_path}")


def _check_run_ids(store: Any, run_ids: tuple[str, ...], db: str | None) -> None:
    """--run ids the store does not have are refused, naming them and how to list the runs."""
    if not run_ids:
        return
    present = {run["run_id"] for run in store.runs()}
    unknown = [run_id for run_id in run_ids if run_id not in present]
    if unknown:
        listing = "collsim real runs" + (f" --db {db}" if db else "")
        raise CollsimError(f"--run: no run {', '.join(map(repr, unknown))} in {store.path or 'the bundled sample data'} "
                           f"({len(present)} run(s) there); list them with: {listing}")  # fmt: skip


@real.command("runs")
@click.option("--db", default=None, help=f"results store (default ./{DEFAULT_DB}, else the bundled sample data)")
@click.option("--json", "as_json", is_flag=True)
def runs(db: str | None, as_json: bool) -> None:
    """List the runs in a store: when, where, what, and whether they finished."""
    store = read_store(db)
    rows = store.runs()
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        where = row.get("gpu_model") or row.get("cpu_model") or ""
        click.echo(
            f"{row['run_id']}  {row['kind']:>9} {row['source']:>10} {row['status']:>7}  {row['backend']}/{row['device']} p={row['world_size']}  {row['host']} ({where})  torch {row['torch_version']}  {row.get('label') or ''}"
        )
        if row.get("error"):
            click.echo(f"    error: {row['error']}")


from real.params_cli import params  # noqa: E402  (its own module; torch loads only when it runs)

real.add_command(params)  # collsim real params: a torch model's parameter list for sim ddp --params

from real.train_cli import train as _train_command  # noqa: E402  (its own module; click only at import)

real.add_command(_train_command)  # collsim real train: TP x PP x DP on gloo ranks, per-rank timelines

from real.hang_check import hang_check  # noqa: E402 - torch loads only when it runs

real.add_command(hang_check)
