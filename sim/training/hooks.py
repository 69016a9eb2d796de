"""DDP communication hooks: the all-reduces a bucket's hook issues, as torch's hooks issue them.

- ``none``: torch's default, one all-reduce of the bucket (``allreduce_hook``).
- ``fp16`` / ``bf16``: ``fp16_compress_hook`` / ``bf16_compress_hook``: the bucket is cast to 16
  bits, all-reduced and cast back: one all-reduce of 2 bytes an element (the casts are not timed).
- ``powersgd``: ``powerSGD_hook`` (torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py).
  Before ``start_powerSGD_iter`` iterations have run it is the plain all-reduce. After, each
  gradient of the bucket is viewed as a matrix ``n x m`` (``tensor.view(shape[0], -1)``) with rank
  ``r = min(n, m, matrix_approximation_rank)``; it is compressed when ``_should_compress`` says so,
  ``(n + m) r min_compression_rate < n m``, else all-reduced as it is. Three all-reduces per bucket,
  each issued even when empty: the uncompressed tensors gathered into one flat tensor, P
  (``sum n r`` elements), Q (``sum m r``), all in the bucket's dtype. ``use_error_feedback`` and
  ``warm_start`` change memory (an error buffer per bucket, P and Q kept), not the bytes.

:func:`hook_allreduce_calls` is the one place these counts are made; the DDP step
(:mod:`sim.training.ddp`) and any other data-parallel gradient sync call it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sim.errors import CollsimError

__all__ = [
    "HOOKS",
    "DEFAULT_START_POWERSGD_ITER",
    "DEFAULT_MIN_COMPRESSION_RATE",
    "CommHook",
    "HookCall",
    "matrix_view",
    "should_compress",
    "hook_allreduce_calls",
]

HOOKS = ("none", "fp16", "bf16", "powersgd")
DEFAULT_START_POWERSGD_ITER = 1_000  # PowerSGDState(start_powerSGD_iter=1_000)
DEFAULT_MIN_COMPRESSION_RATE = 2.0  # PowerSGDState(min_compression_rate=2)
HALF_BYTES = 2  # torch.float16 and torch.bfloat16


@dataclass(frozen=True)
class HookCall:
    """One all-reduce a hook issues for a bucket: its bytes and what it carries."""

    nbytes: int
    label: str


@dataclass(frozen=True)
class CommHook:
    """A DDP communication hook and its settings (torch's ``PowerSGDState`` fields for powersgd)."""

    name: str = "none"
    powersgd_rank: int | None = None  # matrix_approximation_rank
    start_iter: int = DEFAULT_START_POWERSGD_ITER  # start_powerSGD_iter: plain all-reduce before it
    min_compression_rate: float = DEFAULT_MIN_COMPRESSION_RATE
    use_error_feedback: bool = True
    warm_start: bool = True

    def __post_init__(self) -> None:
        if self.name not in HOOKS:
            raise CollsimError(f"comm_hook: unknown {self.name!r}; allowed: {', '.join(HOOKS)}")
        if self.name != "powersgd":
            if self.powersgd_rank is not None:
                raise CollsimError(f"powersgd_rank: only with comm_hook powersgd, got comm_hook {self.name}")
            return
        if self.powersgd_rank is None:
            raise CollsimError("powersgd_rank: comm_hook powersgd needs the approximation rank r >= 1 (--powersgd-rank 4)")
        if isinstance(self.powersgd_rank, bool) or not isinstance(self.powersgd_rank, int) or self.powersgd_rank < 1:
            raise CollsimError(
                f"powersgd_rank: must be a whole number >= 1 (torch's matrix_approximation_rank), got {self.powersgd_rank!r}"
            )
        if isinstance(self.start_iter, bool) or not isinstance(self.start_iter, int) or self.start_iter < 0:
            raise CollsimError(f"powersgd_warmup: must be a whole number of iterations >= 0 (start_powerSGD_iter), got {self.start_iter!r}")
        if (self.use_error_feedback or self.warm_start) and self.start_iter <= 1:
            raise CollsimError(
                f"powersgd_warmup: torch requires start_powerSGD_iter > 1 with error feedback or warm start, got {self.start_iter}"
            )
        if not (self.min_compression_rate > 0 and math.isfinite(self.min_compression_rate)):
            raise CollsimError(f"min_compression_rate: must be a positive number, got {self.min_compression_rate!r}")

    def calls(self, shapes: Sequence[Sequence[int]], iteration: int | None = None, element_bytes: int = 4) -> list[HookCall]:
        """The all-reduces of one bucket at ``iteration`` (None: after the warm-up)."""
        return hook_allreduce_calls(shapes, self, iteration, element_bytes=element_bytes)


def matrix_view(shape: Sequence[int]) -> tuple[int, int]:
    """(n, m) of ``tensor.view(tensor.shape[0], -1)``; a 1-D tensor is n x 1."""
    if not shape:
        return 1, 1
    return int(shape[0]), math.prod(shape[1:])


def should_compress(num_rows: int, num_cols: int, rank: int, min_compression_rate: float) -> bool:
    """torch's ``_should_compress``: worth compressing when compressed x rate < uncompressed."""
    return (num_rows + num_cols) * rank * min_compression_rate < num_rows * num_cols


def hook_allreduce_calls(
    bucket_tensor_shapes: Sequence[Sequence[int]], hook: CommHook | str, iteration: int | None = None, *, element_bytes: int = 4
) -> list[HookCall]:
    """The all-reduces ``hook`` issues for one bucket holding tensors of these shapes (in bucket
    order) at 0-based training ``iteration`` (None: a step after the warm-up), as (bytes, label).
    ``element_bytes``: the bucket's dtype size."""
    hook = CommHook(hook) if isinstance(hook, str) else hook
    numel = sum(math.prod(shape) for shape in bucket_tensor_shapes)
    if hook.name in ("fp16", "bf16"):
        return [HookCall(numel * HALF_BYTES, f"{hook.name} all-reduce")]
    if hook.name == "none" or (iteration is not None and iteration < hook.start_iter):
        return [HookCall(numel * element_bytes, "all-reduce")]
    uncompressed = p_numel = q_numel = 0
    for shape in bucket_tensor_shapes:
        n, m = matrix_view(shape)
        rank = min(n, m, hook.powersgd_rank)
        if should_compress(n, m, rank, hook.min_compression_rate):
            p_numel, q_numel = p_numel + n * rank, q_numel + m * rank
        else:
            uncompressed += n * m
    return [
        HookCall(uncompressed * element_bytes, "powersgd uncompressed"),
        HookCall(p_numel * element_bytes, "powersgd P"),
        HookCall(q_numel * element_bytes, "powersgd Q"),
    ]
