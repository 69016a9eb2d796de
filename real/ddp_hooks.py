"""torch's DDP communication hooks, registered by the names ``sim ddp --comm-hook`` takes, and the
bytes they pass to ``dist.all_reduce``, measured on real ranks (gloo on CPU in the tests).

:func:`register_hook` puts a :class:`sim.training.hooks.CommHook` on a
``DistributedDataParallel`` model; :func:`hook_bytes_worker` trains a small model under a hook
and reports, per step, the tensor shapes of every bucket torch handed the hook and the bytes of
every all-reduce the hook issued, so tests can compare them with
:func:`sim.training.hooks.hook_allreduce_calls`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from sim.training.hooks import CommHook

__all__ = ["HookProbe", "register_hook", "counting_all_reduce", "count_all_reduces", "hook_bytes_worker"]


class HookProbe(nn.Module):
    """A small CNN whose tensors cover PowerSGD's cases: a 4-D conv weight (viewed 8 x 36),
    matrices worth compressing, a 4 x 64 matrix only rank 1 compresses, and 1-D biases."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Linear(128, 64)
        self.fc2 = nn.Linear(64, 64)
        self.head = nn.Linear(64, 4)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.conv(images)).flatten(1)
        return self.head(torch.relu(self.fc2(torch.relu(self.fc1(hidden)))))


def _hook_function(hook: CommHook) -> tuple[Any, Callable]:
    """(state, hook function) of torch's hook for ``hook``."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

    if hook.name == "powersgd":
        state = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=hook.powersgd_rank, start_powerSGD_iter=hook.start_iter,
            min_compression_rate=hook.min_compression_rate, use_error_feedback=hook.use_error_feedback, warm_start=hook.warm_start,
        )  # fmt: skip
        return state, powerSGD_hook.powerSGD_hook
    functions = {"none": default_hooks.allreduce_hook, "fp16": default_hooks.fp16_compress_hook, "bf16": default_hooks.bf16_compress_hook}
    return None, functions[hook.name]


def register_hook(
    model: nn.parallel.DistributedDataParallel, hook: CommHook, buckets: list | None = None, on_bucket: Callable[[Any], None] | None = None
) -> Any:
    """Register torch's hook for ``hook`` on ``model``; with ``buckets``, append the tensor
    shapes of every bucket the hook receives; ``on_bucket(bucket)`` is called with torch's
    ``GradBucket`` before the hook runs on it. Returns the hook state (PowerSGDState or None)."""
    state, function = _hook_function(hook)

    def recording(hook_state, bucket):  # noqa: ANN001, ANN202 (torch checks the annotations; postponed ones fail its check)
        if buckets is not None:
            buckets.append([list(gradient.shape) for gradient in bucket.gradients()])
        if on_bucket is not None:
            on_bucket(bucket)
        return function(hook_state, bucket)

    model.register_comm_hook(state, recording)
    return state


def counting_all_reduce(original: Callable, on_call: Callable[[int, Any], None], wait: bool = True) -> Callable:
    """``original`` (``dist.all_reduce``) that calls ``on_call(nbytes, work)`` for every call (under a
    lock: futures' callbacks run on other threads). With ``wait`` each call is waited for before
    it returns: PowerSGD issues P and Q from futures' callbacks, which with several buckets on gloo
    run in a different order on each rank (a collective mismatch); completed futures run their
    callbacks at once, in the caller's order. The bytes do not change."""
    lock = threading.Lock()

    def counting(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        work = original(tensor, *args, **kwargs)
        with lock:
            on_call(tensor.numel() * tensor.element_size(), work)
        if wait and work is not None:
            work.wait()
        return work

    return counting


@contextmanager
def count_all_reduces() -> Iterator[list[int]]:
    """Within the block, the bytes of every ``dist.all_reduce`` call, each waited for
    (:func:`counting_all_reduce`)."""
    original, sizes = dist.all_reduce, []
    dist.all_reduce = counting_all_reduce(original, lambda nbytes, _: sizes.append(nbytes))
    try:
        yield sizes
    finally:
        dist.all_reduce = original


def hook_bytes_worker(ctx: Any, payload: dict[str, Any]) -> None:
    """Train :class:`HookProbe` under DDP with ``payload["hook"]`` (a CommHook's fields) for
    ``payload["steps"]`` steps; rank 0 reports per step the buckets' shapes and the all-reduce bytes.
    ``{"runs": [payload, ...]}`` measures several such runs one after the other on the same ranks
    (a fresh model, hook and seed each: the rows equal separate launches'), without a start-up
    each; every row carries its run's index as ``run``."""
    for index, run in enumerate(payload.get("runs", [payload])):
        _hook_bytes_run(ctx, run, index)


def _hook_bytes_run(ctx: Any, payload: dict[str, Any], index: int) -> None:
    hook = CommHook(**payload["hook"])
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(HookProbe(), bucket_cap_mb=payload.get("bucket_cap_mb", 25))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(ctx.rank)
    buckets: list[list[list[int]]] = []
    register_hook(model, hook, buckets)
    for step in range(payload["steps"]):
        ctx.status(f"DDP step {step} with comm hook {hook.name}")
        del buckets[:]
        with count_all_reduces() as sizes:
            loss = model(torch.randn(8, 4, 6, 6, generator=generator)).square().mean()
            loss.backward()  # returns once every bucket's future (the hook's last all-reduce) is done
        optimizer.step()
        optimizer.zero_grad()
        if ctx.rank == 0:
            ctx.report({"run": index, "step": step, "buckets": [list(shapes) for shapes in buckets], "all_reduce_bytes": list(sizes)})
