"""A DDP communication hook on the data-parallel gradients of ``sim train`` (``--comm-hook``).

Each chunk's gradients are bucketed as torch's DDP buckets them (parameters in reverse order, a
bucket closed once it holds ``bucket_mb``; a tensor never split), and each bucket's all-reduces
are :func:`sim.training.hooks.hook_allreduce_calls`'s for its tensors' shapes: fp16/bf16 one
all-reduce of 2 bytes an element, PowerSGD the uncompressed tensors, P and Q.

A layer's tensors on one GPU are its TP shares, Megatron-style: QKV and the MLP's first matrix
(two when gated, one per local expert) split by rows, the output projection and the MLP's last
matrix by columns, the router whole; the two layer norms as one vector of ``4 h / tp`` elements,
as :mod:`sim.training.parallel.model` counts every parameter over tp (a vector: PowerSGD never
compresses it).
"""

from __future__ import annotations

from sim.training.hooks import CommHook, hook_allreduce_calls
from sim.training.parallel.scenario import TrainScenario

__all__ = ["chunk_shapes", "hooked_buckets"]


def layer_shapes(scenario: TrainScenario) -> list[tuple[int, ...]]:
    """One layer's parameter shapes on one GPU, in the layer's order."""
    spec, tp = scenario.spec(), scenario.tp
    h, ffn = spec.hidden, spec.ffn
    shapes: list[tuple[int, ...]] = [(4 * h // tp,), ((h + 2 * spec.kv_dim) // tp, h), (h, h // tp)]
    if spec.experts:
        shapes.append((spec.experts, h // tp))  # the router
    mlp = [(ffn // tp, h)] * (2 if spec.gated else 1) + [(h, ffn // tp)]
    shapes += mlp * (spec.experts // scenario.ep if spec.experts else 1)
    return shapes


def chunk_shapes(scenario: TrainScenario, layers: int) -> list[tuple[int, ...]]:
    """The shapes of a chunk of ``layers`` layers, in parameter order."""
    return layer_shapes(scenario) * layers


def _buckets(shapes: list[tuple[int, ...]], element: int, cap_bytes: float) -> list[list[tuple[int, ...]]]:
    """torch DDP's assignment: reverse parameter order, a bucket closed once it reaches the cap."""
    buckets: list[list[tuple[int, ...]]] = [[]]
    size = 0
    for shape in reversed(shapes):
        buckets[-1].append(shape)
        size += _numel(shape) * element
        if size >= cap_bytes:
            buckets.append([])
            size = 0
    return [bucket for bucket in buckets if bucket]


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def hooked_buckets(scenario: TrainScenario, layers: int, element: int) -> tuple[tuple[float, tuple[float, ...]], ...]:
    """Per bucket of a chunk: (its gradient bytes, the bytes of each all-reduce the hook issues)."""
    hook = CommHook(scenario.comm_hook, scenario.powersgd_rank, scenario.powersgd_warmup)
    out = []
    for bucket in _buckets(chunk_shapes(scenario, layers), element, scenario.bucket_mb * 1e6):
        calls = hook_allreduce_calls(bucket, hook, scenario.iteration, element_bytes=element)
        out.append((float(sum(_numel(shape) for shape in bucket) * element), tuple(float(call.nbytes) for call in calls)))
    return tuple(out)
