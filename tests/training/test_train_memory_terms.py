"""Activation memory derived per architecture (issue 34 follow-up): GPT exactly Korthikanti et
al. 2022 Table 2; Llama 3 and Mixtral by their own terms."""

from __future__ import annotations

import itertools

import pytest

from sim.training.parallel.model import MODELS, ModelSpec, activation_bytes_per_layer, activation_terms
from sim.training.parallel.scenario import TrainScenario


def table2(spec: ModelSpec, b: int, t: int, sp: bool, recompute: str, kernel: str) -> float:
    """Korthikanti et al. 2022 Table 2, written out as the paper prints it (the old formula)."""
    s, h, a = spec.seq_len, spec.hidden, spec.heads
    if recompute == "full":
        return 2.0 * s * b * h / (t if sp else 1)
    scores = 0.0 if recompute == "selective" or kernel == "flash" else 5.0 * a * s / (h * t)
    return s * b * h * ((34.0 / t if sp else 10.0 + 24.0 / t) + scores)


GPTS = (MODELS["gpt3-175b"], MODELS["megatron-22b"], ModelSpec(24, 2048, 16, 1024, 51200))


@pytest.mark.parametrize("spec", GPTS, ids=lambda s: f"h{s.hidden}")
def test_gpt_layers_keep_table_2_exactly(spec: ModelSpec) -> None:
    for t, sp, recompute, kernel in itertools.product((1, 2, 8), (False, True), ("none", "selective", "full"), ("standard", "flash")):
        if sp and t == 1:
            continue
        got = activation_bytes_per_layer(spec, 2, t, sp, recompute, kernel)
        assert got == pytest.approx(table2(spec, 2, t, sp, recompute, kernel), rel=1e-12), (t, sp, recompute, kernel)


def test_llama_405b_drops_masks_shrinks_kv_and_grows_the_swiglu_mlp() -> None:
    spec, t = MODELS["llama3-405b"], 8
    sbh = spec.seq_len * spec.hidden  # one sequence
    terms = {k: v * t / sbh for k, v in activation_terms(spec, 1, t, True, "none", "flash").items()}
    assert terms["dropout_masks"] == 0.0  # GPT: 2 sbh
    assert terms["key_value"] == pytest.approx(4.0 * 8 / 128)  # 4 sbh with full heads: -3.75
    assert terms["mlp"] == pytest.approx(6.0 * 53248 / 16384)  # 19.5 sbh, GeLU at 4h: 16
    assert terms["scores"] == 0.0
    assert sum(terms.values()) == pytest.approx(34.0 - 2.0 - 3.75 + 3.5)  # 31.75 sbh/t, -6.6 %


def test_llama_without_dropout_keeps_only_the_softmax_output_of_the_scores() -> None:
    spec = MODELS["llama3-8b"]
    standard = activation_terms(spec, 1, 1, False, "none", "standard")["scores"]
    assert standard == pytest.approx(2.0 * spec.heads * spec.seq_len**2)  # GPT's dropout: 5 a s^2 b


def test_mixtral_stores_each_tokens_mlp_in_its_top_k_experts() -> None:
    spec = MODELS["mixtral-8x7b"]
    dense = ModelSpec(spec.layers, spec.hidden, spec.heads, spec.seq_len, spec.vocab, spec.ffn_hidden, 8, True, dropout=False)
    moe, one = activation_terms(spec, 1, 2, True, "none", "flash"), activation_terms(dense, 1, 2, True, "none", "flash")
    assert moe["mlp"] == pytest.approx(2 * one["mlp"])
    sbh = spec.seq_len * spec.hidden
    assert moe["mlp_input"] - one["mlp_input"] == pytest.approx(2 * 2.0 * sbh / 2)  # the dispatched copies
    assert moe["dropout_masks"] == 0.0


def test_the_scenario_passes_the_presets_dropout_and_a_custom_model_keeps_it() -> None:
    llama = TrainScenario.from_dict(dict(hardware="dgx-h100", nodes=1, model="llama3-8b", tp=8, global_batch=8))
    assert llama.spec().dropout is False and llama.spec().kv_heads == 8
    custom = TrainScenario.from_dict(dict(hardware="dgx-h100", nodes=1, layers=2, hidden=64, heads=8, seq_len=32, tp=8))
    assert custom.spec().dropout is True
