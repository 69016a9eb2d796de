"""Transformer sizes, FLOPs and memory.

FLOPs follow Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", SC21, eq. 3): a layer's forward is 24 b s h^2 (1 + s / (6 h))
multiply-adds x2 for a GPT layer (ffn = 4h), the logit layer 2 b s h V, backward twice forward,
so 72 b s l h^2 (1 + s/(6h) + V/(16 l h)) per iteration. The layer terms are written out by
weight (query/key/value with grouped-query heads, gated MLPs, MoE top-k) so Llama and Mixtral
count alike. Recomputation adds FLOPs the model does not count (hardware FLOPs): ``full`` a
whole forward of every layer, ``selective`` the attention core (Korthikanti et al. 2022,
"Reducing Activation Recomputation in Large Transformer Models", Sec. 5).

Activation memory per layer is derived term by term from the model's shapes
(:func:`activation_terms`); for a GPT layer (ffn = 4h, full heads, dropout) it is Korthikanti et
al. 2022 Table 2 exactly. Model states are mixed-precision
Adam's 16 bytes per parameter (Rajbhandari et al. 2020, ZeRO, Sec. 3.1): 2 weights, 2 gradients,
12 optimizer (fp32 master, momentum, variance); ZeRO stage 1/2/3 shards the 12, +2, +2 over data
parallel ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.errors import CollsimError

__all__ = ["MODELS", "ModelSpec", "activation_bytes_per_layer", "activation_terms", "model_preset"]


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer: ``ffn_hidden`` 0 means 4 x hidden; ``gated`` a SwiGLU MLP
    (three weight matrices); ``experts`` > 0 makes every layer's MLP a mixture of experts with
    ``top_k`` experts per token; ``kv_heads`` 0 means as many as ``heads``; ``dropout`` whether
    the layer applies dropout (GPT does; Llama 3 and Mixtral train without it)."""

    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    ffn_hidden: int = 0
    kv_heads: int = 0
    gated: bool = False
    experts: int = 0
    top_k: int = 1
    dropout: bool = True

    @property
    def ffn(self) -> int:
        return self.ffn_hidden or 4 * self.hidden

    @property
    def kv_dim(self) -> int:
        return self.hidden * (self.kv_heads or self.heads) // self.heads

    def attention_params(self) -> int:
        h = self.hidden
        return h * (h + 2 * self.kv_dim) + h * h + 4 * h  # q, k, v, output; two layer norms

    def mlp_params(self) -> int:
        """One MLP (one expert): two or three weight matrices."""
        return (3 if self.gated else 2) * self.hidden * self.ffn

    def layer_params(self) -> int:
        experts = max(self.experts, 1)
        return self.attention_params() + experts * self.mlp_params() + (self.hidden * self.experts if self.experts else 0)

    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    def total_params(self) -> int:
        return self.layers * self.layer_params() + self.embedding_params()

    def layer_forward_flops(self, micro_batch: int) -> tuple[float, float, float]:
        """(linear, attention core, MLP) forward FLOPs of one layer for one micro-batch."""
        b, s, h = micro_batch, self.seq_len, self.hidden
        linear = 2.0 * b * s * (h * (h + 2 * self.kv_dim) + h * h)
        core = 4.0 * b * s * s * h  # Q K^T and attention x V, as Megatron counts them (no causal halving)
        mlp = 2.0 * b * s * self.mlp_params() * (self.top_k if self.experts else 1)
        return linear, core, mlp

    def logit_forward_flops(self, micro_batch: int) -> float:
        return 2.0 * micro_batch * self.seq_len * self.hidden * self.vocab

    def model_flops(self, batch: int) -> float:
        """Model FLOPs of one iteration over ``batch`` sequences (forward + backward, no recompute)."""
        return 3.0 * batch * (self.layers * sum(self.layer_forward_flops(1)) + self.logit_forward_flops(1))


# Published sizes. GPT-3: Brown et al. 2020 Table 2.1 (vocab 51,200 as Megatron pads it); the 22B
# of Korthikanti et al. 2022;
# Llama 3: Llama Team 2024, "The Llama 3 Herd of Models", Table 3; Mixtral: Jiang et al. 2024,
# "Mixtral of Experts", Table 1; the CS336 sizes as sim.training.params lists them.
MODELS: dict[str, ModelSpec] = {
    "gpt3-175b": ModelSpec(96, 12288, 96, 2048, 51200),
    "megatron-22b": ModelSpec(48, 6144, 64, 2048, 51200),  # Korthikanti et al. 2022 Table 3
    "llama3-8b": ModelSpec(32, 4096, 32, 8192, 128256, 14336, 8, True, dropout=False),
    "llama3-70b": ModelSpec(80, 8192, 64, 8192, 128256, 28672, 8, True, dropout=False),
    "llama3-405b": ModelSpec(126, 16384, 128, 8192, 128256, 53248, 8, True, dropout=False),
    "mixtral-8x7b": ModelSpec(32, 4096, 32, 4096, 32000, 14336, 8, True, 8, 2, dropout=False),
}


def _cs336() -> dict[str, ModelSpec]:
    from sim.training.params import CS336_CONTEXT, CS336_SIZES, CS336_VOCAB

    return {
        (name if name.startswith("cs336") else f"cs336-{name.lower()}"): ModelSpec(
            layers, d_model, heads, CS336_CONTEXT, CS336_VOCAB, d_ff, 0, True
        )
        for name, (d_model, d_ff, layers, heads) in CS336_SIZES.items()
    }


MODELS.update(_cs336())


def model_preset(name: str) -> ModelSpec:
    """The named model; one clear error listing the names otherwise."""
    if name not in MODELS:
        raise CollsimError(f"model: unknown {name!r}; allowed: {', '.join(MODELS)}", field="model")
    return MODELS[name]


def activation_bytes_per_layer(
    spec: ModelSpec, micro_batch: int, tp: int, sequence_parallel: bool, recompute: str, attention_kernel: str = "standard"
) -> float:
    """Bytes of activations one layer keeps for backward, one micro-batch, one GPU: the sum of
    :func:`activation_terms`."""
    return sum(activation_terms(spec, micro_batch, tp, sequence_parallel, recompute, attention_kernel).values())


def activation_terms(
    spec: ModelSpec, micro_batch: int, tp: int, sequence_parallel: bool, recompute: str, attention_kernel: str = "standard"
) -> dict[str, float]:
    """One layer's stored activations (16-bit, bytes) by tensor, after Korthikanti et al. 2022
    Sec. 4.1, whose GPT sum is Table 2's s b h (34 + 5 a s / h) (t = 1):

    - ``norms``: the two layer-norm inputs, 2 x 2sbh;
    - ``qkv_input``: the attention's input, 2sbh; ``mlp_input``: the MLP's, 2sbh;
    - ``query`` 2sbh, ``key_value`` 2 x 2sbh x kv/h (grouped-query attention keeps
      kv = kv_heads x head_dim: Llama 3 405B's 8 of 128 heads save 3.75 sbh);
    - ``projection_input``: the attention output fed to the output projection, 2sbh;
    - ``scores``: softmax output 2as^2b, with dropout its mask as^2b and output 2as^2b (5as^2b,
      else 2as^2b); none with FlashAttention (Dao et al. 2022) or selective recomputation;
    - ``mlp``: GeLU (f = ffn/h): first linear's output and GeLU's output, 2 x 2fsbh (16sbh at
      f = 4); SwiGLU: gate and up outputs 2 x 2fsbh and their product 2fsbh, 6fsbh (Llama 3
      405B's f = 3.25: 19.5, +3.5 sbh); a MoE layer stores the dispatched input and these for
      each of a token's top-k experts (the router's logits, s b E, neglected);
    - ``dropout_masks``: the attention and MLP output masks, sbh each (1 byte), none without dropout.

    Tensor parallelism divides the head- and ffn-sharded terms by t; the norms, inputs and masks
    stay whole unless sequence parallelism shards them too (Table 2's 10 + 24/t and 34/t).
    ``full`` recomputation keeps the layer's input alone, 2sbh (/t with sequence parallelism)."""
    s, b, h = spec.seq_len, micro_batch, spec.hidden
    sbh = float(s * b * h)
    whole = tp if sequence_parallel else 1
    if recompute == "full":
        return {"layer_input": 2.0 * sbh / whole}
    k = spec.top_k if spec.experts else 1
    f = spec.ffn / h
    mlp = (6.0 if spec.gated else 4.0) * f * sbh
    no_scores = recompute == "selective" or attention_kernel == "flash"
    scores = 0.0 if no_scores else (5.0 if spec.dropout else 2.0) * spec.heads * s * s * b
    return {
        "norms": 4.0 * sbh / whole,
        "qkv_input": 2.0 * sbh / whole,
        "query": 2.0 * sbh / tp,
        "key_value": 4.0 * sbh * spec.kv_dim / h / tp,
        "scores": scores / tp,
        "projection_input": 2.0 * sbh / tp,
        "mlp_input": 2.0 * sbh / whole + (2.0 * sbh * k / tp if spec.experts else 0.0),
        "mlp": k * mlp / tp,
        "dropout_masks": (2.0 * sbh if spec.dropout else 0.0) / whole,
    }
