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
  order), waited for before the optimizer step;
- ``TorchDDP``: torch's own ``DistributedDataParallel`` (``bucket_cap_mb`` from the bucket size,
  ``gradient_as_bucket_view=True``) with a communication hook (:mod:`real.ddp_hooks`) on its
  buckets; it counts the bytes of every all-reduce the hook issues, per bucket.

Each wrapper broadcasts the module's parameters and buffers from rank 0 when built, averages
gradients (sum, then divide by the world size) and exposes ``finish_gradient_synchronization()``,
to be called between ``loss.backward()`` and ``optimizer.step()``. The built-in models live in
:mod:`real.models`; measuring the strategies on them in :mod:`real.ddp_bench`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

from sim.errors import CollsimError

STRATEGIES = ("naive", "flat", "overlap", "bucketed", "torch")
BUCKETED = ("bucketed", "torch")  # strategies that take --bucket-sizes


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


class DataParallel(nn.Module):
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


class NaiveDDP(DataParallel):
    """After backward: one blocking all-reduce per parameter, in registration order."""

    def finish_gradient_synchronization(self) -> None:
        for name, param in self.named:
            grad = _grad(param)
            self._all_reduce(grad, name, -1, async_op=False)
            grad.div_(self.world_size)


class FlatDDP(DataParallel):
    """After backward: one all-reduce of all gradients flattened into one buffer."""

    def finish_gradient_synchronization(self) -> None:
        grads = [_grad(param) for _, param in self.named]
        flat = _flatten_dense_tensors(grads)
        self._all_reduce(flat, "flat", 0, async_op=False)
        flat.div_(self.world_size)
        for grad, synced in zip(grads, _unflatten_dense_tensors(flat, grads)):
            grad.copy_(synced)


class OverlapDDP(DataParallel):
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


class BucketedDDP(DataParallel):
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


class TorchDDP(DataParallel):
    """torch's ``DistributedDataParallel`` with ``hook`` on every bucket. torch synchronises the
    gradients inside ``backward()``; between ``start_step()`` and
    ``finish_gradient_synchronization()`` ``dist.all_reduce`` is wrapped to count the bytes of
    every call, by bucket (``step_buckets``), and to time it on the recorder. PowerSGD's calls are
    waited for as issued (:func:`real.ddp_hooks.counting_all_reduce`: its P and Q come from
    futures' callbacks)."""

    def __init__(
        self, module: nn.Module, bucket_bytes: int, hook: Any, process_group: Any = None, recorder: Recorder | None = None
    ) -> None:
        from real.ddp_hooks import register_hook

        super().__init__(module, process_group, recorder)
        if bucket_bytes <= 0:
            raise CollsimError(f"bucket size must be > 0 bytes, got {bucket_bytes}")
        self.hook, self.bucket_bytes = hook, bucket_bytes
        self.ddp = nn.parallel.DistributedDataParallel(
            module, bucket_cap_mb=bucket_bytes / 2**20, gradient_as_bucket_view=True, process_group=process_group
        )
        self.step_buckets: list[dict[str, Any]] = []
        self._names = {id(param): name for name, param in self.named}
        self._original_all_reduce: Callable | None = None
        register_hook(self.ddp, hook, on_bucket=self._bucket_started)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.ddp(*args, **kwargs)

    def _bucket_started(self, bucket: Any) -> None:
        names = [self._names.get(id(param), "?") for param in bucket.parameters()]
        self.step_buckets.append({"index": bucket.index(), "params": names, "all_reduce_bytes": []})

    def _counted(self, nbytes: int, work: Any) -> None:
        bucket = self.step_buckets[-1] if self.step_buckets else {"index": -1, "all_reduce_bytes": []}
        bucket["all_reduce_bytes"].append(nbytes)
        self.calls, self.comm_bytes = self.calls + 1, self.comm_bytes + nbytes
        self.recorder.issued(f"bucket{bucket['index']}", bucket["index"], nbytes, work)

    def start_step(self) -> None:
        from real.ddp_hooks import counting_all_reduce

        super().start_step()
        self.step_buckets = []
        if self._original_all_reduce is None:
            self._original_all_reduce = dist.all_reduce
            dist.all_reduce = counting_all_reduce(dist.all_reduce, self._counted, wait=self.hook.name == "powersgd")

    def finish_gradient_synchronization(self) -> None:
        if self._original_all_reduce is not None:
            dist.all_reduce, self._original_all_reduce = self._original_all_reduce, None

    def bucket_of(self) -> dict[str, int]:
        return {name: bucket["index"] for bucket in self.step_buckets for name in bucket["params"]}


def wrap(module: nn.Module, strategy: str, bucket_bytes: int | None = None, recorder: Recorder | None = None, process_group: Any = None,
         first_bucket_bytes: int | None = None, hook: Any = None) -> DataParallel:  # fmt: skip
    """The wrapper for ``strategy`` (naive, flat, overlap, bucketed, torch); ``hook``: the
    ``sim.training.hooks.CommHook`` of the torch strategy (default: none)."""
    if strategy == "torch":
        from sim.training.ddp_scenario import DEFAULT_BUCKET_CAP_BYTES
        from sim.training.hooks import CommHook

        return TorchDDP(module, bucket_bytes or DEFAULT_BUCKET_CAP_BYTES, hook or CommHook(), process_group, recorder)
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
