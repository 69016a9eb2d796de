"""Torch modules of the model presets in ``sim.training.params``: the same parameter names, shapes
and registration order (a test checks each against the preset), so measured step times belong to
exactly the gradients the simulation synchronises.

- ``cs336-tiny`` ... ``2.7B``: ``cs336_basics.model.BasicsTransformerLM`` (RMSNorm, RoPE, causal
  attention, SwiGLU feed-forward, untied head), context 256, vocab 10,000;
- ``gpt2``: Hugging Face ``GPT2LMHeadModel`` (124M; Conv1D weights stored (in, out), LayerNorm with
  bias, GELU (tanh), head tied to the token embedding), context 1,024;
- ``resnet18``: ``torchvision.models.resnet18()`` (needs torchvision).

``batch(name, tokens)`` makes a random batch of ``tokens`` per micro-batch (whole sequences of the
preset's context; images of 224 x 224 for ResNet-18, where ``tokens`` counts images).
"""

from __future__ import annotations

import torch
from torch import nn

from sim.errors import CollsimError
from sim.training.params import CS336_CONTEXT, CS336_SIZES, CS336_VOCAB, PRESETS

__all__ = ["build", "batch", "loss", "sequence_length"]

GPT2_CONTEXT, GPT2_VOCAB = 1024, 50257


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _linear(out_features: int, in_features: int) -> nn.Linear:
    return nn.Linear(in_features, out_features, bias=False)


def _rope(x: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding over the last dimension of (batch, heads, length, head_dim)."""
    length, dim = x.shape[-2], x.shape[-1]
    inv = theta ** (-torch.arange(0, dim, 2, device=x.device, dtype=torch.float32) / dim)
    angles = torch.outer(torch.arange(length, device=x.device, dtype=torch.float32), inv)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.output_proj = (_linear(d_model, d_model) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, length, self.heads, width // self.heads).transpose(1, 2)

        q, k, v = _rope(heads(self.q_proj(x))), _rope(heads(self.k_proj(x))), heads(self.v_proj(x))
        attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.output_proj(attended.transpose(1, 2).reshape(batch, length, width))


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w1, self.w2, self.w3 = _linear(d_ff, d_model), _linear(d_model, d_ff), _linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


class CS336Block(nn.Module):
    def __init__(self, d_model: int, d_ff: int, heads: int) -> None:
        super().__init__()
        self.attn = Attention(d_model, heads)
        self.ffn = SwiGLU(d_model, d_ff)
        self.ln1, self.ln2 = RMSNorm(d_model), RMSNorm(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class CS336LM(nn.Module):
    """``BasicsTransformerLM``: embeddings, pre-norm blocks, final RMSNorm, untied head."""

    def __init__(self, d_model: int, d_ff: int, layers: int, heads: int, vocab: int = CS336_VOCAB) -> None:
        super().__init__()
        self.token_embeddings = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList(CS336Block(d_model, d_ff, heads) for _ in range(layers))
        self.ln_final = RMSNorm(d_model)
        self.lm_head = _linear(vocab, d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.token_embeddings(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_final(x))


class Conv1D(nn.Module):
    """Hugging Face's Conv1D: a linear layer whose weight is stored (in, out)."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


class GPT2Attention(nn.Module):
    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.c_attn, self.c_proj = Conv1D(d_model, 3 * d_model), Conv1D(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        qkv = self.c_attn(x).view(batch, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        attended = nn.functional.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        return self.c_proj(attended.transpose(1, 2).reshape(batch, length, width))


class GPT2MLP(nn.Module):
    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.c_fc, self.c_proj = Conv1D(d_model, 4 * d_model), Conv1D(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(nn.functional.gelu(self.c_fc(x), approximate="tanh"))


class GPT2Block(nn.Module):
    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = GPT2Attention(d_model, heads)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = GPT2MLP(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Body(nn.Module):
    def __init__(self, layers: int, d_model: int, heads: int, vocab: int, context: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(context, d_model)
        self.h = nn.ModuleList(GPT2Block(d_model, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)


class GPT2LM(nn.Module):
    """``GPT2LMHeadModel``: the head reuses ``transformer.wte.weight`` (tied, registered once)."""

    def __init__(self, layers: int = 12, d_model: int = 768, heads: int = 12, vocab: int = GPT2_VOCAB, context: int = GPT2_CONTEXT) -> None:
        super().__init__()
        self.transformer = GPT2Body(layers, d_model, heads, vocab, context)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        body = self.transformer
        x = body.wte(tokens) + body.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in body.h:
            x = block(x)
        return nn.functional.linear(body.ln_f(x), body.wte.weight)


def build(name: str) -> nn.Module:
    """The torch module of preset ``name`` (float32, on the CPU)."""
    if name in CS336_SIZES:
        return CS336LM(*CS336_SIZES[name])
    if name == "gpt2":
        return GPT2LM()
    if name == "resnet18":
        try:
            import torchvision
        except ImportError:
            raise CollsimError("preset resnet18: needs torchvision (pip install torchvision)") from None
        return torchvision.models.resnet18()
    raise CollsimError(f"preset: unknown {name!r}; allowed: {', '.join(PRESETS)}")


def sequence_length(name: str) -> int:
    """Tokens per sequence of a language-model preset (1 for ResNet-18: one image per 'token')."""
    if name in CS336_SIZES:
        return CS336_CONTEXT
    return GPT2_CONTEXT if name == "gpt2" else 1


def batch(
    name: str, tokens: int, device: str | torch.device = "cpu", generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """A random (inputs, targets) micro-batch of ``tokens`` tokens (whole sequences) or images."""
    length = sequence_length(name)
    if tokens < length or tokens % length:
        raise CollsimError(f"tokens: {name} takes whole sequences of {length} tokens; got {tokens}")
    count = tokens // length
    if name == "resnet18":
        images = torch.randn(count, 3, 224, 224, generator=generator)
        return images.to(device), torch.randint(0, 1000, (count,), generator=generator).to(device)
    vocab = GPT2_VOCAB if name == "gpt2" else CS336_VOCAB
    ids = torch.randint(0, vocab, (count, length + 1), generator=generator)
    return ids[:, :-1].to(device), ids[:, 1:].to(device)


def loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the model's output (logits over the vocabulary or the 1,000 classes)."""
    out = model(inputs)
    return nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(), targets.reshape(-1))
