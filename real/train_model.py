"""The small transformer of ``collsim real train``, split Megatron-style over tensor-parallel ranks.

Each block is pre-norm attention then a pre-norm MLP, no biases. Both halves are a
column-parallel layer (attention: the QKV projection, heads split over the TP ranks; MLP: the
``h -> 4h`` projection) followed by a row-parallel one (the output projection; ``4h -> h``), so
one TP all-reduce per half and direction:

- ``f`` (:class:`CopyToTensorParallel`) before the column-parallel layer: identity forward,
  all-reduce of the input gradient backward;
- ``g`` (:class:`ReduceFromTensorParallel`) after the row-parallel layer: all-reduce forward,
  identity backward.

That is 2 all-reduces of ``micro_batch * seq_len * hidden`` float32 values per layer forward and 2
backward. Weights are drawn full-size from one seed and sliced, so every TP split of a model holds
the same numbers as the unsplit one. :class:`Timeline` (in :mod:`real.train_timeline`) times each
all-reduce and each layer's forward and backward.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

__all__ = ["Block", "CopyToTensorParallel", "ReduceFromTensorParallel", "StageModule", "Marker"]


def _timed_all_reduce(tensor: torch.Tensor, group: Any, timeline: Any, label: str) -> torch.Tensor:
    start = time.perf_counter()
    dist.all_reduce(tensor, group=group)
    timeline.tp_all_reduce(label, start, time.perf_counter(), tensor.numel() * tensor.element_size())
    return tensor


class CopyToTensorParallel(torch.autograd.Function):
    """Megatron's ``f``: identity forward, all-reduce of the gradient over the TP group backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, group: Any, timeline: Any, label: str) -> torch.Tensor:
        ctx.group, ctx.timeline, ctx.label = group, timeline, label
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        return _timed_all_reduce(grad.contiguous().clone(), ctx.group, ctx.timeline, ctx.label), None, None, None


class ReduceFromTensorParallel(torch.autograd.Function):
    """Megatron's ``g``: all-reduce over the TP group forward, identity backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, group: Any, timeline: Any, label: str) -> torch.Tensor:
        return _timed_all_reduce(x.contiguous().clone(), group, timeline, label)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        return grad, None, None, None


class Marker(torch.autograd.Function):
    """Identity both ways; its backward notes the time (the start or end of a layer's backward)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, timeline: Any, layer: int, edge: str) -> torch.Tensor:
        ctx.timeline, ctx.layer, ctx.edge = timeline, layer, edge
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        ctx.timeline.backward_edge(ctx.layer, ctx.edge, time.perf_counter())
        return grad, None, None, None


def _full_weights(layer: int, hidden: int, seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed * 1000 + layer)
    scale = 1.0 / math.sqrt(hidden)
    shapes = {"qkv": (3 * hidden, hidden), "proj": (hidden, hidden), "up": (4 * hidden, hidden), "down": (hidden, 4 * hidden)}
    return {name: torch.randn(shape, generator=generator) * scale for name, shape in shapes.items()}


class Block(nn.Module):
    """One transformer layer's share on TP rank ``tp_rank`` of ``tp`` (heads and MLP columns split)."""

    def __init__(self, layer: int, hidden: int, heads: int, tp: int, tp_rank: int, group: Any, timeline: Any, seed: int = 0) -> None:
        super().__init__()
        self.layer, self.tp, self.group, self.timeline = layer, tp, group, timeline
        self.local_heads, self.head_dim = heads // tp, hidden // heads
        full = _full_weights(layer, hidden, seed)
        local = self.local_heads * self.head_dim
        rows = torch.arange(tp_rank * local, (tp_rank + 1) * local)
        qkv_rows = torch.cat([rows, rows + hidden, rows + 2 * hidden])  # this rank's heads of q, k and v
        ffn = 4 * hidden // tp
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv = nn.Parameter(full["qkv"][qkv_rows].clone())  # column-parallel
        self.proj = nn.Parameter(full["proj"][:, rows].clone())  # row-parallel
        self.up = nn.Parameter(full["up"][tp_rank * ffn : (tp_rank + 1) * ffn].clone())  # column-parallel
        self.down = nn.Parameter(full["down"][:, tp_rank * ffn : (tp_rank + 1) * ffn].clone())  # row-parallel

    def _f(self, x: torch.Tensor, half: str) -> torch.Tensor:
        return CopyToTensorParallel.apply(x, self.group, self.timeline, f"L{self.layer}.{half}") if self.tp > 1 else x

    def _g(self, x: torch.Tensor, half: str) -> torch.Tensor:
        return ReduceFromTensorParallel.apply(x, self.group, self.timeline, f"L{self.layer}.{half}") if self.tp > 1 else x

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        q, k, v = F.linear(self._f(self.ln1(x), "attn"), self.qkv).chunk(3, dim=-1)
        q, k, v = (t.view(batch, seq, self.local_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(batch, seq, -1)
        return self._g(F.linear(out, self.proj), "attn")

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        return self._g(F.linear(F.gelu(F.linear(self._f(self.ln2(x), "mlp"), self.up)), self.down), "mlp")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        start = time.perf_counter()
        x = Marker.apply(x, self.timeline, self.layer, "end")  # its backward runs last: the layer's backward ends
        x = x + self.attention(x)
        x = x + self.mlp(x)
        self.timeline.layer_forward(self.layer, start, time.perf_counter())
        return Marker.apply(x, self.timeline, self.layer, "start")


class StageModule(nn.Module):
    """The consecutive blocks of one pipeline stage."""

    def __init__(self, blocks: list[Block]) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.requires_grad:  # first stage: so that the first layer's backward-end marker fires
            x = x.detach().requires_grad_()
        for block in self.blocks:
            x = block(x)
        return x
