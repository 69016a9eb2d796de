"""Parameter lists: presets match what the PyTorch modules register; files round-trip and fail clearly."""

import json

import pytest

from sim.errors import CollsimError
from sim.training.params import CS336_SIZES, CS336_VOCAB, PRESETS, Param, load_params, params_from_bytes, preset, save_params


def cs336_count(d_model: int, d_ff: int, layers: int, vocab: int = CS336_VOCAB) -> int:
    """Embedding + per block (q, k, v, out: 4 d^2; SwiGLU w1, w2, w3: 3 d d_ff; two RMSNorms: 2 d)
    + final RMSNorm + untied lm_head."""
    return vocab * d_model + layers * (4 * d_model**2 + 3 * d_model * d_ff + 2 * d_model) + d_model + vocab * d_model


@pytest.mark.parametrize("name", list(CS336_SIZES))
def test_cs336_presets_count_matches_formula(name):
    d_model, d_ff, layers, _ = CS336_SIZES[name]
    params = preset(name)
    assert sum(p.numel for p in params) == cs336_count(d_model, d_ff, layers)
    assert len(params) == 1 + 9 * layers + 2
    assert len({p.name for p in params}) == len(params)


def test_cs336_registration_order_and_shapes():
    params = preset("cs336-tiny")
    d_model, d_ff = 512, 1344
    assert params[0].name == "token_embeddings.weight" and params[0].shape == (CS336_VOCAB, d_model)
    block = [(p.name.removeprefix("layers.0."), p.shape) for p in params[1:10]]
    assert block == [
        ("attn.q_proj.weight", (d_model, d_model)),
        ("attn.k_proj.weight", (d_model, d_model)),
        ("attn.v_proj.weight", (d_model, d_model)),
        ("attn.output_proj.weight", (d_model, d_model)),
        ("ffn.w1.weight", (d_ff, d_model)),
        ("ffn.w2.weight", (d_model, d_ff)),
        ("ffn.w3.weight", (d_ff, d_model)),
        ("ln1.weight", (d_model,)),
        ("ln2.weight", (d_model,)),
    ]
    assert [p.name for p in params[-2:]] == ["ln_final.weight", "lm_head.weight"]
    assert params[-1].shape == (CS336_VOCAB, d_model)


def test_gpt2_count_matches_formula():
    vocab, context, d, layers = 50257, 1024, 768, 12
    # per block: c_attn 3d^2+3d, c_proj d^2+d, c_fc 4d^2+4d, mlp c_proj 4d^2+d, two LayerNorms 4d
    expected = vocab * d + context * d + layers * (12 * d * d + 13 * d) + 2 * d
    params = preset("gpt2")
    assert sum(p.numel for p in params) == expected
    assert params[0].name == "transformer.wte.weight" and not any(p.name.startswith("lm_head") for p in params)


def test_resnet18_count_matches_formula():
    def block(cin, cout, downsample):
        convs = 9 * cin * cout + 9 * cout * cout + (cin * cout if downsample else 0)
        return convs + 2 * 2 * cout + (2 * cout if downsample else 0)

    stages = [(64, 64), (128, 128), (256, 256), (512, 512)]
    expected = 3 * 64 * 49 + 2 * 64 + 512 * 1000 + 1000
    cin = 64
    for cout, _ in stages:
        expected += block(cin, cout, cin != cout) + block(cout, cout, False)
        cin = cout
    params = preset("resnet18")
    assert sum(p.numel for p in params) == expected
    assert len(params) == 62


def test_resnet18_matches_torchvision():
    torchvision = pytest.importorskip("torchvision", reason="torchvision not installed: the formula test covers the count")
    model = torchvision.models.resnet18()
    assert [(n, tuple(p.shape)) for n, p in model.named_parameters()] == [(p.name, p.shape) for p in preset("resnet18")]


def test_unknown_preset_lists_the_allowed_ones():
    with pytest.raises(CollsimError, match="allowed: .*xl"):
        preset("huge")
    assert set(PRESETS) >= {"small", "medium", "large", "xl", "2.7B", "cs336-tiny", "resnet18", "gpt2"}


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_save_and_load_round_trip(tmp_path, suffix):
    params = preset("cs336-tiny")[:5] + [Param("half", (3, 4), 12, 2)]
    path = tmp_path / f"params{suffix}"
    save_params(params, path)
    assert load_params(path) == params


def test_shape_or_numel_and_default_element_bytes(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"params": [{"name": "a", "shape": [2, 3]}, {"name": "b", "numel": 5, "element_bytes": 2}]}))
    a, b = load_params(path)
    assert (a.numel, a.nbytes, b.shape, b.nbytes) == (6, 24, (), 10)


@pytest.mark.parametrize(
    "content, message",
    [
        ("{", "not valid JSON/YAML"),
        ('{"weights": []}', "'params' list"),
        ('{"params": []}', "non-empty list"),
        ('{"params": [{"shape": [2]}]}', "'name' must be a string"),
        ('{"params": [{"name": "a"}]}', "give 'numel' or 'shape'"),
        ('{"params": [{"name": "a", "numel": 0}]}', "numel must be >= 1"),
        ('{"params": [{"name": "a", "numel": 2.5}]}', "whole number"),
        ('{"params": [{"name": "a", "shape": [2, 3], "numel": 7}]}', "has 6 elements but numel is 7"),
        ('{"params": [{"name": "a", "numel": 2}, {"name": "a", "numel": 2}]}', "appears twice"),
        ('{"params": [{"name": "a", "numel": 2, "dtype": "f32"}]}', "unknown field"),
    ],
)
def test_malformed_files_name_the_problem(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CollsimError, match=message):
        load_params(path)


def test_missing_file_and_bad_param_bytes(tmp_path):
    with pytest.raises(CollsimError, match="not found"):
        load_params(tmp_path / "nope.json")
    with pytest.raises(CollsimError, match="multiple of the element size"):
        params_from_bytes([6], element_bytes=4)
    with pytest.raises(CollsimError, match="empty list"):
        params_from_bytes([])
