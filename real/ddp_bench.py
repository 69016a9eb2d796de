"""Measuring the DDP strategies of :mod:`real.ddp` on the built-in models (:mod:`real.models`):
``check_equality`` (weights match single-process training), ``run_ddp_bench`` (timed steps,
each paired with a no-communication step, and the median round's hook timeline as a
``collsim-ddp-profile``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from real.ddp import DataParallel, Recorder, export_params, wrap
from real.models import ModelSpec, fresh_model, global_batch, model_spec, shard
from sim.errors import CollsimError


def equality_worker(ctx: Any, payload: dict[str, Any]) -> None:
    """Train each strategy for a few steps and compare with single-process full-batch training.

    Every rank starts from a *different* initialisation (seed + rank), so the broadcast from
    rank 0 is part of what is checked. Rank 0 reports one row per strategy with the largest
    absolute weight difference from the reference and whether ``torch.allclose`` holds.
    """
    spec = model_spec(payload["model"])
    steps, seed, lr = payload["steps"], payload["seed"], payload["lr"]
    device = ctx.torch_device()
    reference = fresh_model(spec, seed, device)
    optimizer = torch.optim.SGD(reference.parameters(), lr=lr)
    for step in range(steps):
        inputs, targets = global_batch(spec, seed, step, device, ctx.world_size)
        optimizer.zero_grad(set_to_none=True)
        spec.loss(reference, inputs, targets).backward()
        optimizer.step()
    for strategy, bucket_bytes in payload["configs"]:
        ctx.status(f"ddp {strategy} training")
        model = wrap(fresh_model(spec, seed + ctx.rank, device), strategy, bucket_bytes)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        for step in range(steps):
            inputs, targets = global_batch(spec, seed, step, device, ctx.world_size)
            optimizer.zero_grad(set_to_none=True)
            model.start_step()
            spec.loss(model, shard(inputs, ctx.rank, ctx.world_size), shard(targets, ctx.rank, ctx.world_size)).backward()
            model.finish_gradient_synchronization()
            optimizer.step()
        pairs = [(mine.detach(), theirs.detach()) for mine, theirs in zip(model.module.parameters(), reference.parameters())]
        difference = max(float((mine - theirs).abs().max()) for mine, theirs in pairs)
        close = all(torch.allclose(mine, theirs, rtol=payload["rtol"], atol=payload["atol"]) for mine, theirs in pairs)
        moved = max(
            float((theirs.detach() - initial.detach()).abs().max())
            for theirs, initial in zip(reference.parameters(), fresh_model(spec, seed, device).parameters())
        )
        if ctx.rank == 0:
            ctx.report(
                {
                    "strategy": strategy,
                    "bucket_bytes": bucket_bytes,
                    "max_abs_diff": difference,
                    "allclose": close,
                    "reference_moved": moved,
                    "calls_per_step": model.calls,
                }
            )


@dataclass
class _Config:
    """One measured configuration of a DDP benchmark (or the no-communication baseline)."""

    name: str
    strategy: str
    bucket_bytes: int | None
    model: nn.Module
    optimizer: torch.optim.Optimizer
    recorder: Recorder
    events: list[list[dict[str, Any]]] = field(default_factory=list)
    buckets: list[list[dict[str, Any]]] = field(default_factory=list)  # torch: per round, each bucket's all-reduce bytes


def config_name(strategy: str, bucket_bytes: int | None, hook: dict[str, Any] | None = None) -> str:
    """``bucketed:4MiB``, ``torch:4MiB``, ``torch:4MiB:fp16``, ``torch:32KiB:powersgd-r1``."""
    from sim.units import format_size

    if strategy not in ("bucketed", "torch"):
        return strategy
    name = f"{strategy}:{format_size(bucket_bytes).replace(' ', '')}"
    if strategy == "torch" and hook and hook.get("name", "none") != "none":
        name += f":{hook['name']}" + (f"-r{hook['powersgd_rank']}" if hook["name"] == "powersgd" else "")
    return name


def _comm_hook(payload: dict[str, Any]) -> Any:
    from sim.training.hooks import CommHook

    return CommHook(**payload.get("comm_hook", {}))


def _build_configs(spec: ModelSpec, payload: dict[str, Any], device: Any) -> list[_Config]:
    seed, lr = payload["seed"], payload["lr"]
    baseline_model = fresh_model(spec, seed, device)
    configs = [_Config("none", "none", None, baseline_model, torch.optim.SGD(baseline_model.parameters(), lr=lr), Recorder())]
    for name, param in baseline_model.named_parameters():
        param.register_post_accumulate_grad_hook(lambda _p, name=name: configs[0].recorder.grad_ready(name))
    for strategy, bucket_bytes in payload["configs"]:
        recorder = Recorder()
        model = wrap(fresh_model(spec, seed, device), strategy, bucket_bytes, recorder, hook=_comm_hook(payload))
        name = config_name(strategy, bucket_bytes, payload.get("comm_hook"))
        configs.append(_Config(name, strategy, bucket_bytes, model, torch.optim.SGD(model.parameters(), lr=lr), recorder))
    return configs


def _clock(cuda: bool) -> float:
    """Now, after the GPU has finished queued work (phase times of an asynchronous device)."""
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter()


def _timed_step(config: _Config, spec: ModelSpec, inputs: torch.Tensor, targets: torch.Tensor) -> list[float]:
    """One training step; returns [step, forward, backward, sync, optimizer] seconds and comm counts.

    On GPU every phase boundary synchronises the device, so phases are attributed correctly at
    the cost of one synchronisation per phase (DDP itself synchronises before the optimizer).
    """
    model, recorder = config.model, config.recorder
    cuda = inputs.is_cuda
    wrapped = isinstance(model, DataParallel)
    if wrapped:
        model.start_step()
    else:
        recorder.start_step()
    start = _clock(cuda)
    loss = spec.loss(model, inputs, targets)
    forward_end = _clock(cuda)
    recorder.backward_start = forward_end
    loss.backward()
    backward_end = _clock(cuda)
    if wrapped:
        model.finish_gradient_synchronization()
    sync_end = _clock(cuda)
    config.optimizer.step()
    config.optimizer.zero_grad(set_to_none=True)
    end = _clock(cuda)
    recorder.phases = {
        "forward": (start, forward_end),
        "backward": (forward_end, backward_end),
        "sync": (backward_end, sync_end),
        "optimizer": (sync_end, end),
    }
    calls, nbytes = (model.calls, model.comm_bytes) if wrapped else (0, 0)
    return [
        end - start,
        forward_end - start,
        backward_end - forward_end,
        sync_end - backward_end,
        end - sync_end,
        float(calls),
        float(nbytes),
    ]


def ddp_bench_worker(ctx: Any, payload: dict[str, Any]) -> None:
    """Round-robin DDP benchmark: each round runs the no-communication step, then every config
    (rotated each round), each step preceded by a barrier; each time (the step and each phase on its own) is the max over ranks.
    Rank 0 reports one row per (round, config) after each round, and one profile per config at the end.
    """
    spec = model_spec(payload["model"])
    device = ctx.torch_device()
    configs = _build_configs(spec, payload, device)
    warmup, rounds = payload["warmup_rounds"], payload["rounds"]
    for round_index in range(warmup + rounds):
        inputs, targets = global_batch(spec, payload["seed"], round_index, device, ctx.world_size)
        inputs, targets = shard(inputs, ctx.rank, ctx.world_size), shard(targets, ctx.rank, ctx.world_size)
        shift = round_index % (len(configs) - 1) if len(configs) > 1 else 0
        order = [configs[0]] + configs[1:][shift:] + configs[1:][:shift]
        measured = {}
        for config in order:
            ctx.status(f"ddp round {round_index} {config.name}")
            dist.barrier()
            measured[config.name] = _timed_step(config, spec, inputs, targets)
            config.events.append(config.recorder.events(ctx.rank, _param_sizes(config.model), _buckets(config.model)))
            config.buckets.append(list(getattr(config.model, "step_buckets", [])))
        ctx.status(f"ddp round {round_index}: gathering times")
        worst = _max_over_ranks([measured[config.name] for config in configs], ctx)
        if round_index >= warmup and ctx.rank == 0:
            for config, values in zip(configs, worst):
                ctx.report(_step_row(config, values, worst[0], round_index - warmup, payload))
    _report_profiles(ctx, spec, configs, warmup, payload)


def _param_sizes(model: nn.Module) -> list[tuple[str, int]]:
    module = model.module if isinstance(model, DataParallel) else model
    return [(name, param.numel() * param.element_size()) for name, param in module.named_parameters() if param.requires_grad]


def _buckets(model: nn.Module) -> dict[str, int]:
    return model.bucket_of() if isinstance(model, DataParallel) else {}


def _max_over_ranks(values: list[list[float]], ctx: Any) -> list[list[float]]:
    mine = torch.tensor(values, dtype=torch.float64, device=ctx.torch_device())
    everyone = [torch.empty_like(mine) for _ in range(ctx.world_size)]
    dist.all_gather(everyone, mine)
    return torch.stack(everyone).max(dim=0).values.cpu().tolist()


def _step_row(config: _Config, values: list[float], baseline: list[float], round_index: int, payload: dict[str, Any]) -> dict[str, Any]:
    step, forward, backward, sync, optimizer, calls, nbytes = values
    meta = payload["meta"]
    return {
        "_table": "ddp_steps", "run_id": meta.get("run_id"), "launch": meta.get("launch", 0), "model": payload["model"], "strategy": config.strategy,
        "config": config.name, "bucket_bytes": config.bucket_bytes, "world_size": meta["world_size"], "backend": meta["backend"], "device": meta["device"],
        "round": round_index, "step_s": step, "forward_s": forward, "backward_s": backward, "sync_s": sync, "optimizer_s": optimizer,
        "baseline_step_s": baseline[0], "baseline_backward_s": baseline[2], "overhead_s": step - baseline[0], "comm_calls": int(calls),
        "comm_bytes": int(nbytes), "measured_at": _now(),
    }  # fmt: skip


def _now() -> str:
    from real.bench import now_utc

    return now_utc()


def _report_profiles(ctx: Any, spec: ModelSpec, configs: list[_Config], warmup: int, payload: dict[str, Any]) -> None:
    """Per config: the measured round whose backward is the median, with every rank's events."""
    ctx.status("ddp: gathering timelines")
    rounds = [_median_backward_round(config.events[warmup:]) for config in configs]  # None: no measured round
    chosen = [config.events[warmup + index] if index is not None else [] for config, index in zip(configs, rounds)]
    gathered: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(gathered, chosen)
    if ctx.rank != 0:
        return
    params = export_params(configs[0].model)
    for index, config in enumerate(configs):
        events = [row for per_rank in gathered for row in per_rank[index]]
        profile = make_profile(params, events, payload)
        if config.strategy == "torch" and rounds[index] is not None:
            profile.update(_hook_record(config, warmup + rounds[index], payload))
        ctx.report({"_table": "ddp_profiles", "model": payload["model"], "config": config.name, "profile": profile})


def _median_backward_round(kept: list[list[dict[str, Any]]]) -> int | None:
    """Index of the round whose backward is the median."""
    backward = [next((row["end_s"] - row["start_s"] for row in events if row["kind"] == "backward"), 0.0) for events in kept]
    order = sorted(range(len(kept)), key=lambda index: backward[index])
    return order[len(order) // 2] if kept else None


def _hook_record(config: _Config, iteration: int, payload: dict[str, Any]) -> dict[str, Any]:
    """What a torch-DDP profile adds: the hook, the bucket cap, the 0-based training iteration of the
    recorded round and rank 0's buckets (index, parameter names, the bytes of each all-reduce)."""
    return {
        "strategy": "torch", "bucket_cap_bytes": config.bucket_bytes, "comm_hook": dict(payload.get("comm_hook") or {"name": "none"}),
        "iteration": iteration, "buckets": sorted(config.buckets[iteration], key=lambda bucket: bucket["index"]),
    }  # fmt: skip


def make_profile(params: list[dict[str, Any]], events: list[dict[str, Any]], payload: dict[str, Any]) -> dict[str, Any]:
    """A ``collsim-ddp-profile`` document ``sim.training.ddp`` replays; phase times are the max over ranks."""

    def phase(kind: str) -> float:
        return max((row["end_s"] - row["start_s"] for row in events if row["kind"] == kind), default=0.0)

    return {
        "kind": "collsim-ddp-profile", "model": payload["model"], "params": params, "forward_s": phase("forward"),
        "backward_s": phase("backward"), "optimizer_s": phase("optimizer"), "sync_s": phase("sync"), "time_origin": "backward start",
        "world_size": payload["meta"]["world_size"], "backend": payload["meta"]["backend"], "events": events,
    }  # fmt: skip


def run_ddp_bench(model: str, configs: list[tuple[str, int | None]], launch_config: Any, meta: dict[str, Any], rounds: int = 10, warmup_rounds: int = 2,
                  seed: int = 0, on_result: Callable[[dict[str, Any]], None] | None = None, launcher: Callable | None = None,
                  comm_hook: dict[str, Any] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Measure DDP steps of the built-in ``model`` for each (strategy, bucket bytes) config;
    ``comm_hook`` (``sim.training.hooks.CommHook``'s fields) goes on the torch strategy's buckets."""
    from real.launcher import launch, run_torchrun, under_torchrun

    model_spec(model)  # an unknown model is refused before any launch
    hook = check_torch_configs(model, configs, comm_hook or {}, launch_config.backend, warmup_rounds)
    payload = {"model": model, "configs": configs, "rounds": rounds, "warmup_rounds": warmup_rounds, "seed": seed, "lr": 1e-3, "comm_hook": hook,
               "meta": {**meta, "backend": launch_config.backend, "device": launch_config.device, "world_size": launch_config.world_size}}  # fmt: skip
    run = launcher or (run_torchrun if under_torchrun() else launch)
    return run(ddp_bench_worker, payload, launch_config, on_result)


def check_torch_configs(
    model: str, configs: list[tuple[str, int | None]], comm_hook: dict[str, Any], backend: str, warmup_rounds: int
) -> dict[str, Any]:
    """Refuse, before any rank starts, a hook the run cannot measure; returns the hook's fields.

    A hook needs the torch strategy; PowerSGD's warm-up must end within the warm-up rounds (every
    measured step compressed, as ``sim ddp`` simulates it); on gloo PowerSGD needs one bucket: with
    several, torch 2.13 issues P and Q from futures' callbacks in a different order on each rank
    (a collective mismatch, or a hang, at the first compressed step)."""
    from sim.training.ddp_scenario import DEFAULT_BUCKET_CAP_BYTES
    from sim.training.hooks import CommHook
    from sim.units import format_size

    hook = CommHook(**comm_hook)  # checks name, rank and warm-up
    buckets = [bucket_bytes for strategy, bucket_bytes in configs if strategy == "torch"]
    if hook.name != "none" and not buckets:
        raise CollsimError(f"--comm-hook {hook.name}: torch's hooks run on torch's DistributedDataParallel; add torch to --strategies")
    if hook.name != "powersgd":
        return comm_hook
    if hook.start_iter > warmup_rounds:
        raise CollsimError(
            f"--powersgd-warmup {hook.start_iter}{'' if 'start_iter' in comm_hook else ' (the default)'}: PowerSGD compresses from that "
            f"iteration on; give --warmup-rounds >= {hook.start_iter} "
            f"so every measured step is compressed (got {warmup_rounds})"
        )
    grad_bytes = sum(entry["numel"] * entry["element_bytes"] for entry in export_params(fresh_model(model_spec(model), 0)))
    small = [size for size in buckets if (size or DEFAULT_BUCKET_CAP_BYTES) < grad_bytes]
    if backend == "gloo" and small:
        raise CollsimError(
            f"--comm-hook powersgd on gloo needs one bucket: --bucket-sizes >= the model's {format_size(grad_bytes)} of gradients "
            f"(got {', '.join(format_size(size or DEFAULT_BUCKET_CAP_BYTES) for size in small)}): "
            "with several buckets torch's PowerSGD issues P and Q from futures' callbacks in a different order on each rank "
            "(a collective mismatch or a hang at the first compressed step)"
        )
    return comm_hook


def check_equality(launch_config: Any, model: str = "mlp", configs: list[tuple[str, int | None]] | None = None, steps: int = 3, seed: int = 0,
                   rtol: float = 1e-5, atol: float = 1e-6) -> list[dict[str, Any]]:  # fmt: skip
    """Run ``equality_worker`` on ``launch_config``'s ranks; one row per strategy."""
    from real.launcher import launch

    configs = configs or [("naive", None), ("flat", None), ("overlap", None), ("bucketed", 1024)]
    payload = {"model": model, "configs": configs, "steps": steps, "seed": seed, "lr": 0.1, "rtol": rtol, "atol": atol}
    return launch(equality_worker, payload, launch_config)
