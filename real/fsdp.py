"""FSDP / ZeRO training steps for real, on torch.distributed (gloo on CPU, NCCL on GPUs).

Strategies, by the names of ``sim.training.fsdp``:

- ``full_shard`` / ``shard_grad_op``: FSDP2 ``fully_shard`` (torch.distributed.fsdp) on every
  block (``nn.Linear`` layers of the MLP, transformer blocks of the LM) and on the root, with
  ``reshard_after_forward`` True (ZeRO-3) or False (ZeRO-2). torch 2.13's FSDP2 runs on CPU with
  gloo (checked by the equality test).
- ``hybrid_shard``: the same on a 2-D device mesh (replicas x shard group of ``shard_size``).
- ``no_shard``: FSDP2 has no NO_SHARD; a 2-D mesh with shard groups of one rank is the same
  thing (parameters replicated, gradients all-reduced per unit).
- ``ddp``: ``DistributedDataParallel``.
- ``zero1``: DDP with ``ZeroRedundancyOptimizer`` (optimizer state sharded, updated parameters
  broadcast from their owners).

The optimizer is SGD with momentum 0.9 (it has state, so ZeRO-1's sharding matters).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from real.models import Block, fresh_model, global_batch, model_spec, shard
from sim.errors import CollsimError

STRATEGIES = ("ddp", "zero1", "full_shard", "shard_grad_op", "no_shard", "hybrid_shard")
MOMENTUM = 0.9


def _units(module: nn.Module) -> list[nn.Module]:
    """The FSDP units: transformer blocks, else the Linear layers."""
    blocks = [m for m in module.modules() if isinstance(m, Block)]
    return blocks or [m for m in module.modules() if isinstance(m, nn.Linear)]


def _mesh(strategy: str, world_size: int, shard_size: int | None, device: torch.device) -> Any:
    from torch.distributed.device_mesh import init_device_mesh

    kind = device.type
    if strategy in ("full_shard", "shard_grad_op"):
        return init_device_mesh(kind, (world_size,))
    size = 1 if strategy == "no_shard" else (shard_size or world_size)
    if world_size % size:
        raise CollsimError(f"--shard-size: must divide the world size {world_size}, got {size}")
    return init_device_mesh(kind, (world_size // size, size), mesh_dim_names=("replicate", "shard"))


def wrap(module: nn.Module, strategy: str, lr: float, device: torch.device, shard_size: int | None = None) -> tuple[nn.Module, Any]:
    """(model, optimizer) for ``strategy``; every rank must pass the same initial weights."""
    if strategy not in STRATEGIES:
        raise CollsimError(f"strategy: unknown {strategy!r}; allowed: {', '.join(STRATEGIES)}")
    if strategy in ("ddp", "zero1"):
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(module, device_ids=[device.index] if device.type == "cuda" else None)
        if strategy == "ddp":
            return model, torch.optim.SGD(model.parameters(), lr=lr, momentum=MOMENTUM)
        from torch.distributed.optim import ZeroRedundancyOptimizer

        return model, ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=lr, momentum=MOMENTUM)
    from torch.distributed.fsdp import fully_shard

    mesh = _mesh(strategy, dist.get_world_size(), shard_size, device)
    reshard = strategy != "shard_grad_op"
    for unit in _units(module):
        fully_shard(unit, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(module, mesh=mesh, reshard_after_forward=reshard)
    return module, torch.optim.SGD(module.parameters(), lr=lr, momentum=MOMENTUM)


def full_weights(model: nn.Module) -> list[torch.Tensor]:
    """Every parameter, unsharded (DTensors gathered), in registration order."""
    inner = model.module if hasattr(model, "module") else model
    return [p.full_tensor().detach() if hasattr(p, "full_tensor") else p.detach() for p in inner.parameters()]


def equality_worker(ctx: Any, payload: dict[str, Any]) -> None:
    """Train each strategy a few steps on this rank's batch shard; compare the gathered weights
    with single-process training on the whole batch (same init, SGD with momentum)."""
    spec = model_spec(payload["model"])
    steps, seed, lr = payload["steps"], payload["seed"], payload["lr"]
    device = ctx.torch_device()
    reference = fresh_model(spec, seed, device)
    optimizer = torch.optim.SGD(reference.parameters(), lr=lr, momentum=MOMENTUM)
    for step in range(steps):
        inputs, targets = global_batch(spec, seed, step, device, ctx.world_size)
        optimizer.zero_grad(set_to_none=True)
        spec.loss(reference, inputs, targets).backward()
        optimizer.step()
    expected = [p.detach() for p in reference.parameters()]
    moved = max(
        float((after - before.detach()).abs().max()) for after, before in zip(expected, fresh_model(spec, seed, device).parameters())
    )
    for strategy in payload["strategies"]:
        ctx.status(f"fsdp {strategy} training")
        model, optimizer = wrap(fresh_model(spec, seed, device), strategy, lr, device, payload.get("shard_size"))
        for step in range(steps):
            inputs, targets = global_batch(spec, seed, step, device, ctx.world_size)
            optimizer.zero_grad(set_to_none=True)
            spec.loss(model, shard(inputs, ctx.rank, ctx.world_size), shard(targets, ctx.rank, ctx.world_size)).backward()
            optimizer.step()
        ctx.status(f"fsdp {strategy} gathering weights")
        got = full_weights(model)
        difference = max(float((mine - theirs).abs().max()) for mine, theirs in zip(got, expected))
        close = all(torch.allclose(mine, theirs, rtol=payload["rtol"], atol=payload["atol"]) for mine, theirs in zip(got, expected))
        del model, optimizer
        if ctx.rank == 0:
            ctx.report(
                {"strategy": strategy, "max_abs_diff": difference, "allclose": close, "num_tensors": len(got), "reference_moved": moved}
            )


def check_equality(launch_config: Any, model: str = "mlp", strategies: tuple[str, ...] = STRATEGIES, steps: int = 3, seed: int = 0,
                   rtol: float = 1e-5, atol: float = 1e-6, shard_size: int | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Run ``equality_worker`` on ``launch_config``'s ranks; one row per strategy."""
    from real.launcher import launch

    payload = {"model": model, "strategies": list(strategies), "steps": steps, "seed": seed, "lr": 0.05, "rtol": rtol, "atol": atol,
               "shard_size": shard_size}  # fmt: skip
    return launch(equality_worker, payload, launch_config)


# --- timing -------------------------------------------------------------------------------


def _step(model: nn.Module, optimizer: Any, spec: Any, inputs: torch.Tensor, targets: torch.Tensor) -> list[float]:
    """[step, forward, backward (incl. its comm), optimizer (incl. ZeRO-1's broadcast)] seconds."""
    cuda = inputs.is_cuda
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sync()
    start = time.perf_counter()
    loss = spec.loss(model, inputs, targets)
    sync()
    forward_end = time.perf_counter()
    loss.backward()
    sync()
    backward_end = time.perf_counter()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    sync()
    end = time.perf_counter()
    return [end - start, forward_end - start, backward_end - forward_end, end - backward_end]


def _max_over_ranks(values: list[float]) -> list[float]:
    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.tolist()


def _allreduce_times(device: torch.device, sizes: list[int], iters: int) -> list[float]:
    """Median seconds of a float32 all-reduce of each size (max over ranks): the ow fit's input."""
    times = []
    for nbytes in sizes:
        tensor = torch.ones(max(1, nbytes // 4), device=device)
        samples = []
        for _ in range(iters):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(tensor)
            samples.append(time.perf_counter() - start)
        times.append(_max_over_ranks([statistics.median(samples)])[0])
    return times


def bench_worker(ctx: Any, payload: dict[str, Any]) -> None:
    """Round-robin: each round one step of the no-communication baseline (the plain module on
    this rank's shard) and one of every strategy; per-step times are the max over ranks. Rank 0
    reports one row per (round, strategy) and, at the end, the all-reduce times for the ow fit."""
    spec = model_spec(payload["model"])
    device = ctx.torch_device()
    lr = 1e-3
    baseline = fresh_model(spec, payload["seed"], device)
    configs = [("none", baseline, torch.optim.SGD(baseline.parameters(), lr=lr, momentum=MOMENTUM))]
    for strategy in payload["strategies"]:
        model, optimizer = wrap(fresh_model(spec, payload["seed"], device), strategy, lr, device, payload.get("shard_size"))
        configs.append((strategy, model, optimizer))
    warmup, rounds = payload["warmup_rounds"], payload["rounds"]
    for round_index in range(warmup + rounds):
        inputs, targets = global_batch(spec, payload["seed"], round_index, device, ctx.world_size)
        inputs, targets = shard(inputs, ctx.rank, ctx.world_size), shard(targets, ctx.rank, ctx.world_size)
        for name, model, optimizer in configs:
            ctx.status(f"fsdp round {round_index} {name}")
            dist.barrier()
            values = _max_over_ranks(_step(model, optimizer, spec, inputs, targets))
            if round_index >= warmup and ctx.rank == 0:
                ctx.report({"kind": "step", "strategy": name, "round": round_index - warmup, "step_s": values[0], "forward_s": values[1],
                            "backward_s": values[2], "optimizer_s": values[3]})  # fmt: skip
    grad_bytes = sum(p.numel() * p.element_size() for p in baseline.parameters())
    sizes = sorted({grad_bytes, *(size for size in (64 << 10, 1 << 20, 4 << 20) if size != grad_bytes)})
    ctx.status("fsdp all-reduce timing")
    times = _allreduce_times(device, sizes, payload.get("allreduce_iters", 10))
    if ctx.rank == 0:
        ctx.report({"kind": "allreduce", "sizes": sizes, "times_s": times})
    _release(configs)


def _release(objects: list) -> None:
    """Drop models and optimizers (their hooks, gloo work, FSDP state) while the process group is
    alive, everyone at once: tearing down with them alive aborted a rank once under load."""
    import gc

    objects.clear()
    gc.collect()
    dist.barrier()


def run_bench(model: str, strategies: list[str], launch_config: Any, rounds: int = 10, warmup_rounds: int = 2, seed: int = 0,
              shard_size: int | None = None) -> list[dict[str, Any]]:  # fmt: skip
    from real.launcher import launch

    payload = {
        "model": model,
        "strategies": strategies,
        "rounds": rounds,
        "warmup_rounds": warmup_rounds,
        "seed": seed,
        "shard_size": shard_size,
    }
    return launch(bench_worker, payload, launch_config)


def summarize(rows: list[dict[str, Any]], model: str, world_size: int, shard_size: int | None = None) -> list[dict[str, Any]]:
    """Per strategy: measured median step [p10, p90], and ``sim fsdp`` for the same strategy,
    replaying the measured no-communication phase times with (o, w) fitted to the measured
    all-reduces (the ow comm model)."""
    from real.ddp import export_params
    from real.models import fresh_model as fresh
    from sim.training.fsdp import FSDPScenario, run_fsdp
    from sim.training.overhead import fit_ow

    steps = [row for row in rows if row.get("kind") == "step"]
    ar = next((row for row in rows if row.get("kind") == "allreduce"), None)
    by: dict[str, list[dict[str, Any]]] = {}
    for row in steps:
        by.setdefault(row["strategy"], []).append(row)
    if "none" not in by:
        raise CollsimError("fsdp bench: no baseline rows were measured")
    base = {key: statistics.median(row[key] for row in by["none"]) for key in ("forward_s", "backward_s", "optimizer_s")}
    o_s, w_Bps = fit_ow(ar["sizes"], ar["times_s"]) if ar else (0.0, float("inf"))
    if ar and not (0 < w_Bps < float("inf") and o_s >= 0):  # noisy points: the mean rate, no fixed cost
        o_s, w_Bps = 0.0, sum(ar["sizes"]) / sum(ar["times_s"])
    params = export_params(fresh(model_spec(model), 0))
    out = []
    for name, group in by.items():
        values = sorted(row["step_s"] for row in group)
        row = {"strategy": name, "rounds": len(values), "median_s": statistics.median(values), "p10_s": _quantile(values, 0.1),
               "p90_s": _quantile(values, 0.9), "simulated_s": None}  # fmt: skip
        if name != "none" and w_Bps > 0 and w_Bps != float("inf"):
            scenario = FSDPScenario(params=tuple(_param(p) for p in params), sharding=name, ranks=world_size, comm="ow", o_s=max(0.0, o_s),
                                    w_Bps=w_Bps, forward_time_s=base["forward_s"], backward_time_s=base["backward_s"],
                                    optimizer_time_s=base["optimizer_s"], shard_size=shard_size or (world_size if name == "hybrid_shard" else None),
                                    units=_sim_units(model))  # fmt: skip
            row["simulated_s"] = run_fsdp(scenario).step_time_s
        out.append(row)
    for row in out:
        row.update({"o_s": o_s, "w_Bps": w_Bps, "baseline": base})
    return out


def _sim_units(model: str) -> str:
    return "blocks" if model != "mlp" else "fc1,fc2,fc3"


def _param(entry: dict[str, Any]) -> Any:
    from sim.training.params import param_from_dict

    return param_from_dict(entry, 0)


def _quantile(values: list[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, round(q * 100) - 1))]
