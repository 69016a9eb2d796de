"""``collsim real train``: a small transformer trained with tensor, pipeline and data parallelism on
spawned gloo ranks, every rank's timeline recorded.

Ranks are laid out as Megatron-LM does, TP fastest, then DP, then PP:
``rank = pp_index * dp * tp + dp_index * tp + tp_index``. Each rank holds the TP share
(:mod:`real.train_model`) of its stage's ``layers / pp`` blocks; the stages run under a
``torch.distributed.pipelining`` schedule (GPipe, 1F1B, interleaved 1F1B with two stages per
rank) over ``global_batch / (dp * micro_batch)`` micro-batches; with ``dp > 1`` each rank's
gradients are then averaged over its DP group in one flat all-reduce, then an SGD step.

The result (:func:`run_train`) is a ``collsim-train-profile`` document: the layout, the step
times of every measured step (the slowest rank's), the rows of every rank
(:mod:`real.train_timeline`), and the measured compute: each layer's forward and backward
seconds (medians, TP all-reduces subtracted), summed per stage; each stage's whole micro-batch
forward and backward (its compute rows); the step's end after the rank's last op or wait (the
schedule's return, the gradient copies, the optimizer). :mod:`real.train_compare` sets it
beside a simulation of the same layout.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from sim.errors import CollsimError

__all__ = ["SCHEDULES", "TrainConfig", "PROFILE_KIND", "check_tensor_parallel", "run_train", "train_worker"]

SCHEDULES = ("gpipe", "1f1b", "interleaved")
PROFILE_KIND = "collsim-train-profile"
MAX_RANKS = 8
# Bounds that keep a CPU run small: activations of micro_batch * seq_len * hidden float32 values.
LIMITS = {"layers": (1, 64), "hidden": (8, 4096), "heads": (1, 64), "seq_len": (1, 4096), "micro_batch": (1, 1024),
          "global_batch": (1, 65536), "steps": (1, 1000), "warmup": (0, 100)}  # fmt: skip


@dataclass(frozen=True)
class TrainConfig:
    """The layout and model of one ``real train`` run; refused here, before any rank starts."""

    tp: int = 2
    pp: int = 1
    dp: int = 1
    layers: int = 4
    hidden: int = 64
    heads: int = 4
    seq_len: int = 32
    micro_batch: int = 2
    global_batch: int = 8
    schedule: str = "1f1b"
    steps: int = 5
    warmup: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        for name, value in (("tp", self.tp), ("pp", self.pp), ("dp", self.dp)):
            if not 1 <= value <= MAX_RANKS:
                raise CollsimError(f"--{name}: must be between 1 and {MAX_RANKS}, got {value}")
        if not 2 <= self.world_size <= MAX_RANKS:
            raise CollsimError(
                f"--tp x --pp x --dp: {self.tp} x {self.pp} x {self.dp} = {self.world_size} ranks; allowed 2 to {MAX_RANKS} (gloo on this CPU)"
            )
        for name, (low, high) in LIMITS.items():
            if not low <= getattr(self, name) <= high:
                raise CollsimError(f"--{name.replace('_', '-')}: must be between {low} and {high}, got {getattr(self, name)}")
        if self.schedule not in SCHEDULES:
            raise CollsimError(f"--schedule: unknown {self.schedule!r}; allowed: {', '.join(SCHEDULES)}")
        self._check_divisions()

    def _check_divisions(self) -> None:
        if self.hidden % self.heads:
            raise CollsimError(f"--hidden {self.hidden} is not a multiple of --heads {self.heads}")
        if self.heads % self.tp:
            raise CollsimError(f"--heads {self.heads} is not a multiple of --tp {self.tp} (each TP rank holds whole heads)")
        if self.layers % self.stages:
            raise CollsimError(f"--layers {self.layers} does not split into {self.stages} equal pipeline stages ({self.stages_text})")
        if self.global_batch % (self.dp * self.micro_batch):
            raise CollsimError(
                f"--global-batch {self.global_batch} is not a multiple of --dp x --micro-batch = {self.dp * self.micro_batch}"
            )
        self._check_schedule()

    def _check_schedule(self) -> None:
        """torch.distributed.pipelining's own rules, said before any rank starts."""
        if self.schedule == "1f1b" and self.micro_batches < self.pp:
            raise CollsimError(
                f"--schedule 1f1b: {self.micro_batches} micro-batches for {self.pp} stages; it needs at least one per stage (raise --global-batch or use gpipe)"
            )
        if self.schedule == "interleaved" and self.pp < 2:
            raise CollsimError("--schedule interleaved needs --pp >= 2")
        rounds = max(1, self.micro_batches // self.pp)
        if self.schedule == "interleaved" and self.micro_batches % rounds:
            raise CollsimError(
                f"--schedule interleaved: {self.micro_batches} micro-batches is not a multiple of {rounds} rounds (micro-batches // pp); change --global-batch"
            )

    @property
    def world_size(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def stages_per_rank(self) -> int:
        return 2 if self.schedule == "interleaved" else 1

    @property
    def stages(self) -> int:
        return self.pp * self.stages_per_rank

    @property
    def stages_text(self) -> str:
        return f"--pp {self.pp} x 2 virtual stages (interleaved)" if self.stages_per_rank == 2 else f"--pp {self.pp}"

    @property
    def micro_batches(self) -> int:
        return self.global_batch // (self.dp * self.micro_batch)

    def coordinates(self, rank: int) -> tuple[int, int, int]:
        """(tp_index, dp_index, pp_index) of a global rank."""
        return rank % self.tp, rank // self.tp % self.dp, rank // (self.tp * self.dp)

    def rank_of(self, tp_index: int, dp_index: int, pp_index: int) -> int:
        return pp_index * self.dp * self.tp + dp_index * self.tp + tp_index

    def groups(self, kind: str) -> list[list[int]]:
        """Every TP, DP or PP group (global ranks), in one order all ranks agree on."""
        ranks = range(self.world_size)
        axis = {"tp": 0, "dp": 1, "pp": 2}[kind]
        keys = sorted({tuple(c for i, c in enumerate(self.coordinates(r)) if i != axis) for r in ranks})
        return [[r for r in ranks if tuple(c for i, c in enumerate(self.coordinates(r)) if i != axis) == key] for key in keys]

    def activation_bytes(self) -> int:
        """Bytes of one micro-batch's activation (one TP all-reduce, one PP send): b * s * h * 4."""
        return self.micro_batch * self.seq_len * self.hidden * 4


# ----------------------------------------------------------------------------- one rank


def _new_groups(config: TrainConfig, rank: int) -> dict[str, Any]:
    import torch.distributed as dist

    mine = {}
    for kind in ("tp", "dp", "pp"):
        for members in config.groups(kind):  # every rank creates every group, same order
            group = dist.new_group(members, backend="gloo")
            if rank in members:
                mine[kind], mine[kind + "_ranks"] = group, members
    return mine


def _build_stages(config: TrainConfig, rank: int, groups: dict[str, Any], timeline: Any) -> list[Any]:
    import torch

    from real.train_model import Block, StageModule
    from real.train_timeline import TimedStage

    tp_index, _, pp_index = config.coordinates(rank)
    per_stage = config.layers // config.stages
    example = torch.zeros(config.micro_batch, config.seq_len, config.hidden)
    stages = []
    for local in range(config.stages_per_rank):
        stage_index = pp_index + local * config.pp  # interleaved: rank i holds stages i and i + pp
        layers = range(stage_index * per_stage, (stage_index + 1) * per_stage)
        blocks = [Block(layer, config.hidden, config.heads, config.tp, tp_index, groups["tp"], timeline, config.seed) for layer in layers]
        # the shapes given, so no shape-inference round trip; requires_grad marks which gradients travel back
        inputs, outputs = example.clone().requires_grad_(stage_index > 0), example.clone().requires_grad_()
        stages.append(TimedStage()(StageModule(blocks), stage_index, config.stages, torch.device("cpu"), input_args=(inputs,),
                                   output_args=(outputs,), group=groups["pp"], timeline=timeline))  # fmt: skip
    return stages


def _schedule(config: TrainConfig, stages: list[Any]) -> Any:
    import torch.nn.functional as F
    from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B

    loss = F.mse_loss
    if config.schedule == "interleaved":
        return ScheduleInterleaved1F1B(stages, config.micro_batches, loss_fn=loss)
    kind = ScheduleGPipe if config.schedule == "gpipe" else Schedule1F1B
    return kind(stages[0], config.micro_batches, loss_fn=loss)


def _batch(config: TrainConfig, dp_index: int, step: int) -> tuple[Any, Any]:
    import torch

    generator = torch.Generator().manual_seed(config.seed * 100003 + step * 101 + dp_index)
    shape = (config.global_batch // config.dp, config.seq_len, config.hidden)
    return torch.randn(shape, generator=generator), torch.randn(shape, generator=generator)


def _dp_all_reduce(config: TrainConfig, stages: list[Any], groups: dict[str, Any], timeline: Any) -> float:
    """Average the gradients over the DP group in one flat all-reduce; its seconds (0 without DP)."""
    import torch
    import torch.distributed as dist

    params = [p for stage in stages for p in stage.submod.parameters() if p.grad is not None]
    if config.dp == 1 or not params:
        return 0.0
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    start = time.perf_counter()
    dist.all_reduce(flat, group=groups["dp"])
    end = time.perf_counter()
    timeline.micro_batch = -1
    timeline.add("dp", "all_reduce", "gradients", start, end, flat.numel() * flat.element_size(), group=groups["dp_ranks"])
    offset = 0
    for p in params:
        p.grad.copy_(flat[offset : offset + p.numel()].view_as(p.grad) / config.dp)
        offset += p.numel()
    return end - start


def _step_end_s(timeline: Any, schedule_end: float, end: float, dp_s: float) -> float:
    """The step's end on this rank after its last op or wait (its last compute, TP or PP row): the
    schedule's own return, the gradient flattening and copying, the optimizer; the DP all-reduce left out."""
    return end - timeline.origin - timeline.last_end_s(default=schedule_end - timeline.origin) - dp_s


def _one_step(ctx: Any, config: TrainConfig, step: int, parts: dict[str, Any]) -> float:
    import torch.distributed as dist

    stages, schedule, groups, timeline, optimizer = (parts[k] for k in ("stages", "schedule", "groups", "timeline", "optimizer"))
    _, dp_index, _ = config.coordinates(ctx.rank)
    inputs, target = _batch(config, dp_index, step)
    optimizer.zero_grad(set_to_none=True)
    ctx.status(f"train step {step} (barrier)")
    dist.barrier()
    timeline.start_step(step - config.warmup, recording=step >= config.warmup)
    ctx.status(f"train step {step} ({config.schedule} schedule)")
    is_first = any(stage.is_first for stage in stages)
    is_last = any(stage.is_last for stage in stages)
    schedule.step(*((inputs,) if is_first else ()), **({"target": target, "losses": []} if is_last else {}))
    ctx.status(f"train step {step} (dp all-reduce)")
    schedule_end = time.perf_counter()
    dp_s = _dp_all_reduce(config, stages, groups, timeline)
    optimizer.step()
    end = time.perf_counter()
    if timeline.recording:
        parts["step_end_s"].append(_step_end_s(timeline, schedule_end, end, dp_s))
    timeline.end_step()
    return end - timeline.origin


def train_worker(ctx: Any, payload: dict[str, Any]) -> None:
    """One rank of ``real train``: reports ``{"rank", "step_s", "rows", "layer_forward_s", "layer_backward_s"}``."""
    import torch

    from real.train_timeline import Timeline, record_pipeline_p2p

    config = TrainConfig(**payload)
    ctx.status("creating TP/DP/PP groups")
    groups = _new_groups(config, ctx.rank)
    timeline = Timeline(ctx.rank, groups["tp_ranks"], groups["dp_ranks"])
    stages = _build_stages(config, ctx.rank, groups, timeline)
    record_pipeline_p2p(stages)
    params = [p for stage in stages for p in stage.submod.parameters()]
    parts = {"stages": stages, "schedule": _schedule(config, stages), "groups": groups, "timeline": timeline,
             "optimizer": torch.optim.SGD(params, lr=1e-3), "step_end_s": []}  # fmt: skip
    times = [_one_step(ctx, config, step, parts) for step in range(config.warmup + config.steps)]
    ctx.report(
        {
            "rank": ctx.rank,
            "step_s": times[config.warmup :],
            "rows": timeline.rows,
            "layer_forward_s": {layer: statistics.median(v) for layer, v in timeline.layer_forward_s.items()},
            "layer_backward_s": {layer: statistics.median(v) for layer, v in timeline.layer_backward_s.items()},
            "step_end_s": statistics.median(parts["step_end_s"]),
        }
    )


def tensor_parallel_check_worker(ctx: Any, payload: dict[str, Any]) -> None:
    """One TP rank: the split layers against the whole ones built on this rank from the same seed,
    one micro-batch forward and backward; reports the largest differences (output, input
    gradient, this rank's share of the first MLP weight's gradient) and the output's scale."""
    import torch.nn.functional as F

    from real.train_model import Block, StageModule
    from real.train_timeline import Timeline

    config = TrainConfig(**payload)
    groups = _new_groups(config, ctx.rank)
    timeline = Timeline(ctx.rank, groups["tp_ranks"], groups["dp_ranks"])
    h, heads, seed = config.hidden, config.heads, config.seed
    split = StageModule([Block(i, h, heads, config.tp, ctx.rank, groups["tp"], timeline, seed) for i in range(config.layers)])
    whole = StageModule([Block(i, h, heads, 1, 0, None, timeline, seed) for i in range(config.layers)])
    inputs, target = (t[: config.micro_batch] for t in _batch(config, 0, 0))
    results = []
    for model in (split, whole):
        x = inputs.clone().requires_grad_()
        out = model(x)
        F.mse_loss(out, target).backward()
        results.append((out.detach(), x.grad))
    ffn = 4 * h // config.tp
    share = whole.blocks[0].up.grad[ctx.rank * ffn : (ctx.rank + 1) * ffn]
    ctx.report({"rank": ctx.rank, "output_diff": float((results[0][0] - results[1][0]).abs().max()),
                "input_grad_diff": float((results[0][1] - results[1][1]).abs().max()),
                "weight_grad_diff": float((split.blocks[0].up.grad - share).abs().max()),
                "output_scale": float(results[1][0].abs().max())})  # fmt: skip


def check_tensor_parallel(config: TrainConfig, timeout_s: float = 300.0) -> list[dict[str, Any]]:
    """Run :func:`tensor_parallel_check_worker` on ``config.tp`` ranks (``pp`` and ``dp`` 1)."""
    from real.launcher import LaunchConfig, launch

    if config.pp != 1 or config.dp != 1:
        raise CollsimError("the tensor-parallel check runs --pp 1 --dp 1")
    return sorted(
        launch(tensor_parallel_check_worker, asdict(config), LaunchConfig(config.tp, timeout_s=timeout_s)), key=lambda r: r["rank"]
    )


# ----------------------------------------------------------------------------- the parent


def run_train(config: TrainConfig, timeout_s: float = 600.0, op_timeout_s: float = 60.0, threads: int = 1) -> dict[str, Any]:
    """Spawn the ranks (gloo, CPU), wait at most ``timeout_s``, return the profile document."""
    from real.launcher import LaunchConfig, launch

    launch_config = LaunchConfig(config.world_size, "gloo", "cpu", timeout_s, op_timeout_s, threads)
    reports = sorted(launch(train_worker, asdict(config), launch_config), key=lambda r: r["rank"])
    if len(reports) != config.world_size:
        raise CollsimError(f"real train: {len(reports)} of {config.world_size} ranks reported a result")
    return profile(config, reports)


def profile(config: TrainConfig, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``collsim-train-profile`` document from every rank's report."""
    steps = [max(times) for times in zip(*(r["step_s"] for r in reports))]
    return {
        "kind": PROFILE_KIND,
        "version": 1,
        "config": asdict(config),
        "micro_batches": config.micro_batches,
        "step_time_s": steps,
        "step_time": step_summary(steps),
        "compute": measured_compute(config, reports),
        "rows": [row for r in reports for row in r["rows"]],
    }


def step_summary(steps: list[float]) -> dict[str, float]:
    """Median and spread (min, max, and max - min relative to the median) of the step times."""
    median = statistics.median(steps)
    return {"median_s": median, "min_s": min(steps), "max_s": max(steps), "spread": (max(steps) - min(steps)) / median if median else 0.0}


def measured_compute(config: TrainConfig, reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Per layer and per stage (the layers summed), forward and backward compute seconds (median
    over micro-batches and steps, slowest TP rank of the layer, TP all-reduces subtracted); per
    stage the whole micro-batch's (``op``: its compute rows, mean over micro-batches and steps,
    the layers' sum where a stage has none); the step's end after the rank's last op or wait
    (``step_end_s``: the schedule's return, the gradient copies and the optimizer, the DP
    all-reduce left out; the slowest rank's median)."""
    layers: dict[str, list[float]] = {"forward_s": [0.0] * config.layers, "backward_s": [0.0] * config.layers}
    for report in reports:
        for key, field_name in (("layer_forward_s", "forward_s"), ("layer_backward_s", "backward_s")):
            for layer, seconds in report[key].items():
                layers[field_name][int(layer)] = max(layers[field_name][int(layer)], seconds)
    per_stage = config.layers // config.stages
    stages = {name: [sum(values[s * per_stage : (s + 1) * per_stage]) for s in range(config.stages)] for name, values in layers.items()}
    rows = [row for report in reports for row in report["rows"]]
    ops = {name: [op_s.get((name, s), stages[name][s]) for s in range(config.stages)] for name, op_s in _op_compute(rows).items()}
    step_end = max((report.get("step_end_s", 0.0) for report in reports), default=0.0)
    return {"layer": layers, "stage": stages, "op": ops, "step_end_s": step_end}


def _op_compute(rows: list[dict[str, Any]]) -> dict[str, dict[tuple[str, int], float]]:
    """Per (phase, stage), one micro-batch's whole forward or backward compute (its ``compute`` rows,
    TP all-reduces between them left out): per stretch between TP all-reduces the slowest rank
    holding the stage, summed, the mean over micro-batches and steps (the simulator adds one
    for every micro-batch: their sum is the count times the mean)."""
    stretches: dict[tuple, dict[int, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row["stream"] == "compute":
            stretches[row["step"], row["name"]][row["rank"]].append((row["start_s"], row["end_s"]))
    per_op: dict[tuple[str, int], list[float]] = defaultdict(list)
    for (_, name), by_rank in stretches.items():
        phase, _, stage = name.split()
        spans = [[end - start for start, end in sorted(values)] for values in by_rank.values()]
        slowest = [max(span[i] for span in spans if i < len(span)) for i in range(max(map(len, spans)))]
        per_op["forward_s" if phase == "fwd" else "backward_s", int(stage.removeprefix("stage"))].append(sum(slowest))
    result: dict[str, dict[tuple[str, int], float]] = {"forward_s": {}, "backward_s": {}}
    for (name, stage), values in per_op.items():
        result[name][name, stage] = statistics.fmean(values)
    return result
