"""Data-parallel training by hand: four gradient-synchronisation strategies as ``nn.Module``
wrappers, hook timestamps in collsim's event schema, and parameter-list export.

Strategies (DESIGN §5; the same names and rules as ``sim.training.ddp``):

- ``NaiveDDP``: after backward, one blocking all-reduce per parameter, registration order;
- ``FlatDDP``: after backward, one all-reduce of every gradient flattened into one buffer;
- ``OverlapDDP``: an async all-reduce per parameter from ``register_post_accumulate_grad_hook``,
  i.e. as soon as its gradient is accumulated; waited for before the optimizer step;
- ``BucketedDDP``: parameters in reverse registration order filled into buckets by
  ``torch.distributed``'s own rule (``sim.training.ddp.compute_bucket_assignment_by_size``: a bucket closes
  once it reaches the cap), a bucket's async all-reduce starts when all its gradients are ready
  and every earlier bucket has started (so every rank issues the same collectives in the same
  order), waited for before the optimizer step.

Each wrapper broadcasts the module's parameters and buffers from rank 0 when built, averages
gradients (sum, then divide by the world size) and exposes ``finish_gradient_synchronization()``,
to be called between ``loss.backward()`` and ``optimizer.step()``.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

from sim.errors import CollsimError

STRATEGIES = ("naive", "flat", "overlap", "bucketed")


# ----------------------------------------------------------------------------- timestamps


@dataclass
class CommRecord:
    name: str
    bucket: int
    nbytes: int
    issued_s: float
    done_s: float | None = None


@dataclass
class Recorder:
    """Hook timestamps of one step (``perf_counter`` seconds); ``events`` turns them into rows."""

    enabled: bool = True
    backward_start: float = 0.0
    ready: dict[str, float] = field(default_factory=dict)
    comms: list[CommRecord] = field(default_factory=list)
    phases: dict[str, tuple[float, float]] = field(default_factory=dict)

    def start_step(self) -> None:
        self.ready, self.comms, self.phases = {}, [], {}

    def grad_ready(self, name: str) -> None:
        if self.enabled:
            self.ready[name] = time.perf_counter()

    def issued(self, name: str, bucket: int, nbytes: int, work: Any = None) -> CommRecord:
        """Record a collective's issue; its completion comes from the work's future (async)
        or from ``record.done_s = ...`` (blocking calls)."""
        record = CommRecord(name, bucket, nbytes, time.perf_counter())
        if self.enabled:
            self.comms.append(record)
            if work is not None:
                work.get_future().add_done_callback(lambda _: setattr(record, "done_s", time.perf_counter()))
        return record

    def events(self, rank: int, params: list[tuple[str, int]], buckets: dict[str, int] | None = None) -> list[dict[str, Any]]:
        """Rows in ``sim.collective.results.EVENT_COLUMNS``, seconds since backward start (forward is negative)."""
        origin = self.backward_start
        buckets = buckets or {}
        rows = []
        for kind, (start, end) in self.phases.items():
            rows.append(_event(rank, f"compute:{rank}", kind, start - origin, end - origin, 0, -1, kind))
        sizes = dict(params)
        for name, _ in params:
            if name in self.ready:
                at = self.ready[name] - origin
                rows.append(_event(rank, f"compute:{rank}", "grad_ready", at, at, sizes[name], buckets.get(name, -1), name))
        for record in self.comms:
            end = record.done_s if record.done_s is not None else record.issued_s
            rows.append(
                _event(rank, f"comm:{rank}", "comm", record.issued_s - origin, end - origin, record.nbytes, record.bucket, record.name)
            )
        rows.sort(key=lambda row: (row["start_s"], row["kind"]))
        return rows


def _event(rank: int, resource: str, kind: str, start: float, end: float, nbytes: int, bucket: int, name: str) -> dict[str, Any]:
    from sim.collective.results import event_row

    return event_row(rank, -1, resource, kind, start, end, nbytes, -1, -1, bucket, name)


# ----------------------------------------------------------------------------- wrappers


class _DataParallel(nn.Module):
    """Common part: broadcast from rank 0, parameter bookkeeping, gradient averaging."""

    def __init__(self, module: nn.Module, process_group: Any = None, recorder: Recorder | None = None) -> None:
        super().__init__()
        if not dist.is_initialized():
            raise CollsimError("DDP wrappers need an initialised process group (torch.distributed.init_process_group)")
        self.module = module
        self.group = process_group
        self.world_size = dist.get_world_size(process_group)
        self.recorder = recorder or Recorder(enabled=False)
        self.named = [(name, param) for name, param in module.named_parameters() if param.requires_grad]
        with torch.no_grad():
            for tensor in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(tensor, src=dist.get_global_rank(process_group, 0) if process_group else 0, group=process_group)
        self.calls = 0  # collectives issued in the last step
        self.comm_bytes = 0

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _all_reduce(self, tensor: torch.Tensor, name: str, bucket: int, async_op: bool) -> Any:
        self.calls += 1
        self.comm_bytes += tensor.numel() * tensor.element_size()
        work = dist.all_reduce(tensor, group=self.group, async_op=async_op)
        record = self.recorder.issued(name, bucket, tensor.numel() * tensor.element_size(), work if async_op else None)
        if not async_op:
            record.done_s = time.perf_counter()
        return work

    def start_step(self) -> None:
        """Reset per-step counters (called by the training loop before forward)."""
        self.calls, self.comm_bytes = 0, 0
        self.recorder.start_step()

    def finish_gradient_synchronization(self) -> None:
        raise NotImplementedError

    def param_sizes(self) -> list[tuple[str, int]]:
        return [(name, param.numel() * param.element_size()) for name, param in self.named]

    def bucket_of(self) -> dict[str, int]:
        return {}


def _grad(param: nn.Parameter) -> torch.Tensor:
    if param.grad is None:  # an unused parameter: contribute zeros, as DDP does
        param.grad = torch.zeros_like(param)
    return param.grad


class NaiveDDP(_DataParallel):
    """After backward: one blocking all-reduce per parameter, in registration order."""

    def finish_gradient_synchronization(self) -> None:
        for name, param in self.named:
            grad = _grad(param)
            self._all_reduce(grad, name, -1, async_op=False)
            grad.div_(self.world_size)


class FlatDDP(_DataParallel):
    """After backward: one all-reduce of all gradients flattened into one buffer."""

    def finish_gradient_synchronization(self) -> None:
        grads = [_grad(param) for _, param in self.named]
        flat = _flatten_dense_tensors(grads)
        self._all_reduce(flat, "flat", 0, async_op=False)
        flat.div_(self.world_size)
        for grad, synced in zip(grads, _unflatten_dense_tensors(flat, grads)):
            grad.copy_(synced)


class OverlapDDP(_DataParallel):
    """An async all-reduce per parameter as soon as its gradient is accumulated."""

    def __init__(self, module: nn.Module, process_group: Any = None, recorder: Recorder | None = None) -> None:
        super().__init__(module, process_group, recorder)
        self.pending: list[tuple[nn.Parameter, Any]] = []
        for name, param in self.named:
            param.register_post_accumulate_grad_hook(self._hook(name))

    def _hook(self, name: str) -> Callable[[nn.Parameter], None]:
        def hook(param: nn.Parameter) -> None:
            self.recorder.grad_ready(name)
            self.pending.append((param, self._all_reduce(param.grad, name, -1, async_op=True)))

        return hook

    def finish_gradient_synchronization(self) -> None:
        launched = {id(param) for param, _ in self.pending}
        for name, param in self.named:  # parameters whose hook never fired (unused)
            if id(param) not in launched:
                self.pending.append((param, self._all_reduce(_grad(param), name, -1, async_op=True)))
        for param, work in self.pending:
            work.wait()
            param.grad.div_(self.world_size)
        self.pending = []


class BucketedDDP(_DataParallel):
    """Buckets in reverse registration order up to ``bucket_bytes``; async all-reduce per bucket.

    ``first_bucket_bytes`` gives the first bucket its own (usually smaller) cap, as PyTorch's
    Reducer does with ``dist._DEFAULT_FIRST_BUCKET_BYTES``; None (default) uses one cap throughout.
    """

    def __init__(self, module: nn.Module, bucket_bytes: int, process_group: Any = None, recorder: Recorder | None = None,
                 first_bucket_bytes: int | None = None) -> None:  # fmt: skip
        super().__init__(module, process_group, recorder)
        if bucket_bytes <= 0:
            raise CollsimError(f"bucket size must be > 0 bytes, got {bucket_bytes}")
        self.bucket_bytes = bucket_bytes
        self.buckets = self._assign(bucket_bytes, first_bucket_bytes)
        self._bucket_index = {index: b for b, members in enumerate(self.buckets) for index in members}
        for index, (name, param) in enumerate(self.named):
            param.register_post_accumulate_grad_hook(self._hook(index, name))
        self._reset()

    def _assign(self, bucket_bytes: int, first_bucket_bytes: int | None) -> list[list[int]]:
        from sim.training.ddp import compute_bucket_assignment_by_size

        order = list(reversed(range(len(self.named))))
        sizes = [self.named[i][1].numel() * self.named[i][1].element_size() for i in order]
        keys = [(self.named[i][1].dtype, self.named[i][1].device) for i in order]
        limits = [first_bucket_bytes, bucket_bytes] if first_bucket_bytes else [bucket_bytes]
        buckets, _ = compute_bucket_assignment_by_size(sizes, limits, keys, order)
        return buckets

    def _reset(self) -> None:
        self.missing = [len(members) for members in self.buckets]
        self.works: list[tuple[int, torch.Tensor, Any]] = []
        self.next_bucket = 0

    def _hook(self, index: int, name: str) -> Callable[[nn.Parameter], None]:
        def hook(param: nn.Parameter) -> None:
            self.recorder.grad_ready(name)
            self.missing[self._bucket_index[index]] -= 1
            self._launch_ready()

        return hook

    def _launch_ready(self, force: bool = False) -> None:
        while self.next_bucket < len(self.buckets) and (force or self.missing[self.next_bucket] == 0):
            b = self.next_bucket
            grads = [_grad(self.named[i][1]) for i in self.buckets[b]]
            flat = _flatten_dense_tensors(grads)
            self.works.append((b, flat, self._all_reduce(flat, f"bucket{b}", b, async_op=True)))
            self.next_bucket += 1

    def finish_gradient_synchronization(self) -> None:
        self._launch_ready(force=True)
        for b, flat, work in self.works:
            work.wait()
            flat.div_(self.world_size)
            grads = [self.named[i][1].grad for i in self.buckets[b]]
            for grad, synced in zip(grads, _unflatten_dense_tensors(flat, grads)):
                grad.copy_(synced)
        self._reset()

    def bucket_of(self) -> dict[str, int]:
        return {self.named[i][0]: b for b, members in enumerate(self.buckets) for i in members}


def wrap(module: nn.Module, strategy: str, bucket_bytes: int | None = None, recorder: Recorder | None = None, process_group: Any = None,
         first_bucket_bytes: int | None = None) -> _DataParallel:  # fmt: skip
    """The wrapper for ``strategy`` (naive, flat, overlap, bucketed)."""
    if strategy == "naive":
        return NaiveDDP(module, process_group, recorder)
    if strategy == "flat":
        return FlatDDP(module, process_group, recorder)
    if strategy == "overlap":
        return OverlapDDP(module, process_group, recorder)
    if strategy == "bucketed":
        if not bucket_bytes:
            raise CollsimError("strategy bucketed needs a bucket size (--bucket-sizes)")
        return BucketedDDP(module, bucket_bytes, process_group, recorder, first_bucket_bytes)
    raise CollsimError(f"strategy: unknown {strategy!r}; allowed: {', '.join(STRATEGIES)}")


# ----------------------------------------------------------------------------- parameter export


def export_params(module: nn.Module) -> list[dict[str, Any]]:
    """The module's trainable parameters in registration order, in ``sim.training.params``' file format."""
    return [
        {"name": name, "shape": list(param.shape), "numel": param.numel(), "element_bytes": param.element_size()}
        for name, param in module.named_parameters()
        if param.requires_grad
    ]


def save_params(module: nn.Module, path: str) -> None:
    """Write ``{"params": [...]}`` (JSON, or YAML for .yaml/.yml) that ``sim.training.params.load_params`` reads."""
    from sim.training.params import params_from_list
    from sim.training.params import save_params as save

    save(params_from_list(export_params(module)), path)


# ----------------------------------------------------------------------------- built-in models


class TinyMLP(nn.Module):
    """32 -> 64 -> 64 -> 10 with ReLU: 6,922 parameters, for tests."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(32, 64), nn.Linear(64, 64), nn.Linear(64, 10)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(inputs)))))


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention and a GELU MLP (no biases)."""

    def __init__(self, d_model: int, heads: int, d_ff: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)
        self.ln2 = nn.LayerNorm(d_model)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(batch, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, length, width))
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x))))


class SmallLM(nn.Module):
    """A small GPT-style language model (token + position embeddings, blocks, final norm, head)."""

    def __init__(self, vocab: int = 2048, context: int = 64, d_model: int = 256, layers: int = 4, heads: int = 4, d_ff: int = 1024) -> None:
        super().__init__()
        self.context = context
        self.vocab = vocab
        self.token = nn.Embedding(vocab, d_model)
        self.position = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads, d_ff) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.token(tokens) + self.position(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


@dataclass(frozen=True)
class ModelSpec:
    """A built-in model: how to build it, make a global batch, and compute the loss."""

    name: str
    description: str
    build: Callable[[], nn.Module]
    batch: Callable[[torch.Generator, int], tuple[torch.Tensor, torch.Tensor]]
    loss: Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]
    batch_size: int  # global batch (split evenly across ranks)


def _mlp_batch(generator: torch.Generator, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(size, 32, generator=generator), torch.randint(0, 10, (size,), generator=generator)


def _lm_batch(generator: torch.Generator, size: int, vocab: int = 2048, context: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = torch.randint(0, vocab, (size, context + 1), generator=generator)
    return tokens[:, :-1], tokens[:, 1:]


def _classification_loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(model(inputs), targets)


def _lm_loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits = model(inputs)
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


MODELS = {
    "mlp": ModelSpec(
        "mlp",
        "MLP 32-64-64-10 with biases (6,922 float32 parameters, 6 tensors); global batch 16",
        TinyMLP,
        _mlp_batch,
        _classification_loss,
        16,
    ),
    "small": ModelSpec(
        "small",
        "GPT-style LM: vocab 2048, context 64, d_model 256, 4 layers, 4 heads, d_ff 1024, no biases in blocks "
        "(4,215,296 float32 parameters = 16.1 MiB of gradients, 37 tensors); global batch 8 sequences",
        SmallLM,
        _lm_batch,
        _lm_loss,
        8,
    ),
}


def model_spec(name: str) -> ModelSpec:
    if name not in MODELS:
        raise CollsimError(f"--model: unknown {name!r}; built-in models: {', '.join(MODELS)}")
    return MODELS[name]


def shard(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """This rank's contiguous, equal share of the global batch."""
    if tensor.shape[0] % world_size:
        raise CollsimError(f"global batch {tensor.shape[0]} does not split evenly over {world_size} ranks")
    per_rank = tensor.shape[0] // world_size
    return tensor[rank * per_rank : (rank + 1) * per_rank]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


# ----------------------------------------------------------------------------- rank programs


def _fresh_model(spec: ModelSpec, seed: int, device: Any = "cpu") -> nn.Module:
    torch.manual_seed(seed)  # initialise on the CPU generator: the same weights on any device
    return spec.build().to(device)


def batch_for(spec: ModelSpec, world_size: int) -> int:
    """The global batch on ``world_size`` ranks: the model's own when it splits evenly, else the
    next multiple of the world size (small's 8 sequences on 3 ranks: 9, 3 per rank), so every
    world size runs (``collsim validate --ranks 2,3,4`` failed on 3 after minutes of work)."""
    per_rank = -(-spec.batch_size // max(1, world_size))
    return per_rank * max(1, world_size)


def _global_batch(spec: ModelSpec, seed: int, step: int, device: Any = "cpu", world_size: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed * 100_003 + step)
    inputs, targets = spec.batch(generator, batch_for(spec, world_size))
    return inputs.to(device), targets.to(device)


def equality_worker(ctx: Any, payload: dict[str, Any]) -> None:
    """Train each strategy for a few steps and compare with single-process full-batch training.

    Every rank starts from a *different* initialisation (seed + rank), so the broadcast from
    rank 0 is part of what is checked. Rank 0 reports one row per strategy with the largest
    absolute weight difference from the reference and whether ``torch.allclose`` holds.
    """
    spec = model_spec(payload["model"])
    steps, seed, lr = payload["steps"], payload["seed"], payload["lr"]
    device = ctx.torch_device()
    reference = _fresh_model(spec, seed, device)
    optimizer = torch.optim.SGD(reference.parameters(), lr=lr)
    for step in range(steps):
        inputs, targets = _global_batch(spec, seed, step, device, ctx.world_size)
        optimizer.zero_grad(set_to_none=True)
        spec.loss(reference, inputs, targets).backward()
        optimizer.step()
    for strategy, bucket_bytes in payload["configs"]:
        ctx.status(f"ddp {strategy} training")
        model = wrap(_fresh_model(spec, seed + ctx.rank, device), strategy, bucket_bytes)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        for step in range(steps):
            inputs, targets = _global_batch(spec, seed, step, device, ctx.world_size)
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
            for theirs, initial in zip(reference.parameters(), _fresh_model(spec, seed, device).parameters())
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


def config_name(strategy: str, bucket_bytes: int | None) -> str:
    from sim.units import format_size

    return f"bucketed:{format_size(bucket_bytes).replace(' ', '')}" if strategy == "bucketed" else strategy


def _build_configs(spec: ModelSpec, payload: dict[str, Any], device: Any) -> list[_Config]:
    seed, lr = payload["seed"], payload["lr"]
    baseline_model = _fresh_model(spec, seed, device)
    configs = [_Config("none", "none", None, baseline_model, torch.optim.SGD(baseline_model.parameters(), lr=lr), Recorder())]
    for name, param in baseline_model.named_parameters():
        param.register_post_accumulate_grad_hook(lambda _p, name=name: configs[0].recorder.grad_ready(name))
    for strategy, bucket_bytes in payload["configs"]:
        recorder = Recorder()
        model = wrap(_fresh_model(spec, seed, device), strategy, bucket_bytes, recorder)
        configs.append(
            _Config(
                config_name(strategy, bucket_bytes), strategy, bucket_bytes, model, torch.optim.SGD(model.parameters(), lr=lr), recorder
            )
        )
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
    wrapped = isinstance(model, _DataParallel)
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
    (rotated each round), each step preceded by a barrier; per-step times are the max over ranks.
    Rank 0 reports one row per (round, config) after each round, and one profile per config at the end.
    """
    spec = model_spec(payload["model"])
    device = ctx.torch_device()
    configs = _build_configs(spec, payload, device)
    warmup, rounds = payload["warmup_rounds"], payload["rounds"]
    for round_index in range(warmup + rounds):
        inputs, targets = _global_batch(spec, payload["seed"], round_index, device, ctx.world_size)
        inputs, targets = shard(inputs, ctx.rank, ctx.world_size), shard(targets, ctx.rank, ctx.world_size)
        shift = round_index % (len(configs) - 1) if len(configs) > 1 else 0
        order = [configs[0]] + configs[1:][shift:] + configs[1:][:shift]
        measured = {}
        for config in order:
            ctx.status(f"ddp round {round_index} {config.name}")
            dist.barrier()
            measured[config.name] = _timed_step(config, spec, inputs, targets)
            config.events.append(config.recorder.events(ctx.rank, _param_sizes(config.model), _buckets(config.model)))
        ctx.status(f"ddp round {round_index}: gathering times")
        worst = _max_over_ranks([measured[config.name] for config in configs], ctx)
        if round_index >= warmup and ctx.rank == 0:
            for config, values in zip(configs, worst):
                ctx.report(_step_row(config, values, worst[0], round_index - warmup, payload))
    _report_profiles(ctx, spec, configs, warmup, payload)


def _param_sizes(model: nn.Module) -> list[tuple[str, int]]:
    module = model.module if isinstance(model, _DataParallel) else model
    return [(name, param.numel() * param.element_size()) for name, param in module.named_parameters() if param.requires_grad]


def _buckets(model: nn.Module) -> dict[str, int]:
    return model.bucket_of() if isinstance(model, _DataParallel) else {}


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
    chosen = []
    for config in configs:
        kept = config.events[warmup:]
        backward = [next((row["end_s"] - row["start_s"] for row in events if row["kind"] == "backward"), 0.0) for events in kept]
        order = sorted(range(len(kept)), key=lambda index: backward[index])
        chosen.append(kept[order[len(order) // 2]] if kept else [])
    gathered: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(gathered, chosen)
    if ctx.rank != 0:
        return
    params = export_params(configs[0].model)
    for index, config in enumerate(configs):
        events = [row for per_rank in gathered for row in per_rank[index]]
        ctx.report(
            {"_table": "ddp_profiles", "model": payload["model"], "config": config.name, "profile": make_profile(params, events, payload)}
        )


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
                  seed: int = 0, on_result: Callable[[dict[str, Any]], None] | None = None, launcher: Callable | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Measure DDP steps of the built-in ``model`` for each (strategy, bucket bytes) config."""
    from real.launcher import launch, run_torchrun, under_torchrun

    model_spec(model)  # an unknown model is refused before any launch
    payload = {"model": model, "configs": configs, "rounds": rounds, "warmup_rounds": warmup_rounds, "seed": seed, "lr": 1e-3,
               "meta": {**meta, "backend": launch_config.backend, "device": launch_config.device, "world_size": launch_config.world_size}}  # fmt: skip
    run = launcher or (run_torchrun if under_torchrun() else launch)
    return run(ddp_bench_worker, payload, launch_config, on_result)


def check_equality(launch_config: Any, model: str = "mlp", configs: list[tuple[str, int | None]] | None = None, steps: int = 3, seed: int = 0,
                   rtol: float = 1e-5, atol: float = 1e-6) -> list[dict[str, Any]]:  # fmt: skip
    """Run ``equality_worker`` on ``launch_config``'s ranks; one row per strategy."""
    from real.launcher import launch

    configs = configs or [("naive", None), ("flat", None), ("overlap", None), ("bucketed", 1024)]
    payload = {"model": model, "configs": configs, "steps": steps, "seed": seed, "lr": 0.1, "rtol": rtol, "atol": atol}
    return launch(equality_worker, payload, launch_config)
