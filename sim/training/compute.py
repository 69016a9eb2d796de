"""What a training step computes and holds besides its gradients: precision, compute times from
FLOPs at a stated MFU, and activation memory (docs/ddp.md, docs/fsdp.md).

- precision: ``fp32``, ``bf16`` or ``fp16`` parameters and gradients (bytes per gradient element in
  every bucket and collective); with bf16/fp16 an fp32 master copy of the weights
  (``master_weights``, as mixed-precision training keeps it) adds 4 bytes per element, sharded as
  the optimizer state is.
- compute from FLOPs: a tensor's forward is 2 x tokens x numel FLOPs, its backward 4 x tokens x
  numel (an embedding's backward is a scatter-add, tokens x width, and its forward a lookup), run
  at ``mfu`` x the GPU's dense peak at the step's precision (``gpu_peak_tflops`` of a hardware
  preset, cited in sim/hardware/presets/*.yaml).
- activations: Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
  Models", eq. 1, no tensor or sequence parallelism): a transformer layer stores
  ``s b h (34 + 5 a s / h)`` bytes at 16-bit activations (scaled by element bytes / 2); with
  activation checkpointing every layer keeps only its input (``2 s b h`` at 16 bit) and one
  layer's activations are live again while it recomputes; plus the fp32 logits (s b V x 4).
  Known for the transformer presets only (their d_model, layers, heads, context, vocab).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sim.errors import CollsimError
from sim.training.params import CS336_CONTEXT, CS336_SIZES, CS336_VOCAB, Param

__all__ = [
    "PRECISIONS",
    "PRECISION_BYTES",
    "DEFAULT_MFU",
    "with_precision",
    "peak_flops",
    "forward_flops",
    "Shape",
    "transformer_shape",
    "activation_bytes",
    "parse_mfu",
]

PRECISIONS = ("fp32", "bf16", "fp16")
PRECISION_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
DEFAULT_MFU = 0.40  # a typical model FLOP utilisation of a well-tuned transformer step (the page states it)
MASTER_BYTES = 4  # fp32 master weights per element under bf16 / fp16


def with_precision(params: Sequence[Param], precision: str | None) -> list[Param]:
    """The parameters with ``precision``'s element size (None: as the list gives them)."""
    if precision is None:
        return list(params)
    size = PRECISION_BYTES[precision]
    return [param if param.element_bytes == size else replace(param, element_bytes=size) for param in params]


def peak_flops(gpu: str, precision: str | None) -> float:
    """Dense peak FLOP/s of one GPU of hardware preset ``gpu`` at ``precision`` (None: fp32)."""
    from sim.hardware.presets import load_preset

    preset = load_preset(gpu)
    key = precision or "fp32"
    if key not in preset.gpu_peak_tflops:
        raise CollsimError(
            f"mfu: hardware {gpu} ({preset.gpu_model}) has no {key} GPU peak; pick a GPU preset "
            "(collsim hardware list) or give the backward time (--backward-time) or --flops-per-s"
        )
    return preset.gpu_peak_tflops[key] * 1e12


def _embedding(param: Param) -> bool:
    return "embed" in param.name or param.name.endswith(("wte.weight", "wpe.weight"))


def forward_flops(param: Param, tokens: int) -> float:
    """Forward FLOPs of one tensor: 2 x tokens x numel (a matmul); an embedding is a lookup (0)."""
    return 0.0 if _embedding(param) else 2.0 * tokens * param.numel


@dataclass(frozen=True)
class Shape:
    """A transformer's activation-relevant sizes."""

    d_model: int
    layers: int
    heads: int
    context: int
    vocab: int


def transformer_shape(preset: str | None) -> Shape | None:
    """d_model, layers, heads, context and vocab of a transformer preset; None for any other model."""
    if preset in CS336_SIZES:
        d_model, _, layers, heads = CS336_SIZES[preset]
        return Shape(d_model, layers, heads, CS336_CONTEXT, CS336_VOCAB)
    if preset == "gpt2":
        return Shape(768, 12, 12, 1024, 50257)
    return None


def activation_bytes(preset: str | None, tokens: int | None, element_bytes: int, checkpointing: bool) -> int | None:
    """Activation bytes one rank holds at the end of forward (Korthikanti et al. 2022, eq. 1;
    module docstring); None when the model is not a transformer preset or ``tokens`` is unknown.
    ``tokens`` per micro-batch are ``b`` sequences of ``s = min(context, tokens)``."""
    shape = transformer_shape(preset)
    if shape is None or not tokens:
        return None
    s = min(shape.context, tokens)
    b = tokens / s
    h, a = shape.d_model, shape.heads
    scale = element_bytes / 2
    layer = s * b * h * (34 + 5 * a * s / h) * scale
    logits = tokens * shape.vocab * 4
    if checkpointing:
        return int(math.ceil(shape.layers * 2 * s * b * h * scale + layer + logits))
    return int(math.ceil(shape.layers * layer + logits))


def parse_mfu(value: Any, what: str = "mfu") -> float:
    """A fraction 0 < mfu <= 1 from 0.4, "0.4" or "40%"."""
    text = str(value).strip()
    try:
        number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise CollsimError(f"{what}: expected a fraction of the GPU's peak such as 0.4 or 40%, got {value!r}") from None
    if not (0 < number <= 1):
        raise CollsimError(f"{what}: must be above 0 and at most 1 (100%), got {value!r}")
    return number
