"""Built-in models that ``collsim real ddp``, ``real fsdp``, ``validate`` and trace recording
train: a tiny MLP and a small GPT-style LM, each with its batch and loss (:class:`ModelSpec`);
:func:`fresh_model` builds one with the same weights on any device, :func:`global_batch` the
batch of a step, :func:`shard` a rank's share of it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from real.model_names import check_model_name
from sim.errors import CollsimError


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
    check_model_name(name)
    return MODELS[name]


def shard(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """This rank's contiguous, equal share of the global batch."""
    if tensor.shape[0] % world_size:
        raise CollsimError(f"global batch {tensor.shape[0]} does not split evenly over {world_size} ranks")
    per_rank = tensor.shape[0] // world_size
    return tensor[rank * per_rank : (rank + 1) * per_rank]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def fresh_model(spec: ModelSpec, seed: int, device: Any = "cpu") -> nn.Module:
    torch.manual_seed(seed)  # initialise on the CPU generator: the same weights on any device
    return spec.build().to(device)


def batch_for(spec: ModelSpec, world_size: int) -> int:
    """The global batch on ``world_size`` ranks: the model's own when it splits evenly, else the
    next multiple of the world size (small's 8 sequences on 3 ranks: 9, 3 per rank), so every
    world size runs (``collsim validate --ranks 2,3,4`` failed on 3 after minutes of work)."""
    per_rank = -(-spec.batch_size // max(1, world_size))
    return per_rank * max(1, world_size)


def global_batch(spec: ModelSpec, seed: int, step: int, device: Any = "cpu", world_size: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed * 100_003 + step)
    inputs, targets = spec.batch(generator, batch_for(spec, world_size))
    return inputs.to(device), targets.to(device)
