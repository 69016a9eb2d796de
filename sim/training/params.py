"""Parameter lists: the gradient tensors DDP synchronises, in registration order.

A list comes from a JSON/YAML file, from a preset, or (in ``real``) from a live ``nn.Module``.
File format::

    {"params": [{"name": "fc.weight", "shape": [1000, 512], "numel": 512000, "element_bytes": 4}, ...]}

``shape`` is optional when ``numel`` is given, ``numel`` optional when ``shape`` is given,
``element_bytes`` defaults to 4 (float32). Order is ``model.parameters()`` order.

Presets reproduce what the PyTorch module registers (names, shapes, order); see docs/ddp.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sim.errors import CollsimError
from sim.scenario import parse_data


@dataclass(frozen=True)
class Param:
    """One parameter tensor: its gradient has ``nbytes`` bytes."""

    name: str
    shape: tuple[int, ...]
    numel: int
    element_bytes: int = 4

    def __post_init__(self) -> None:
        if not self.name:
            raise CollsimError("params: every parameter needs a non-empty name")
        if self.numel < 1:
            raise CollsimError(f"params: {self.name}: numel must be >= 1, got {self.numel}")
        if self.element_bytes < 1:
            raise CollsimError(f"params: {self.name}: element_bytes must be >= 1, got {self.element_bytes}")
        if self.shape and math.prod(self.shape) != self.numel:
            raise CollsimError(
                f"params: {self.name}: shape {list(self.shape)} has {math.prod(self.shape)} elements but numel is {self.numel}"
            )

    @property
    def nbytes(self) -> int:
        return self.numel * self.element_bytes

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "numel": self.numel, "element_bytes": self.element_bytes}


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise CollsimError(f"{what}: expected a whole number, got {value!r}")
    return int(value)


def param_from_dict(entry: Any, index: int) -> Param:
    """One file entry; names the entry and the field when something is wrong."""
    where = f"params[{index}]"
    if not isinstance(entry, dict):
        raise CollsimError(f"{where}: expected a mapping with name, shape/numel, element_bytes, got {entry!r}")
    unknown = set(entry) - {"name", "shape", "numel", "element_bytes"}
    if unknown:
        raise CollsimError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: name, shape, numel, element_bytes")
    if not isinstance(entry.get("name"), str):
        raise CollsimError(f"{where}: 'name' must be a string, got {entry.get('name')!r}")
    shape_raw = entry.get("shape") or []
    if not isinstance(shape_raw, (list, tuple)):
        raise CollsimError(f"{where}: 'shape' must be a list of whole numbers, got {shape_raw!r}")
    shape = tuple(_whole(size, f"{where}.shape") for size in shape_raw)
    if "numel" not in entry and not shape:
        raise CollsimError(f"{where} ({entry['name']}): give 'numel' or 'shape'")
    numel = _whole(entry["numel"], f"{where}.numel") if "numel" in entry else math.prod(shape)
    element_bytes = _whole(entry.get("element_bytes", 4), f"{where}.element_bytes")
    return Param(entry["name"], shape, numel, element_bytes)


def params_from_list(entries: Any, source: str = "params") -> list[Param]:
    """Validate a list of entries: non-empty, unique names."""
    if not isinstance(entries, list) or not entries:
        raise CollsimError(f"{source}: expected a non-empty list of parameters under 'params'")
    params = [entry if isinstance(entry, Param) else param_from_dict(entry, i) for i, entry in enumerate(entries)]
    seen: set[str] = set()
    for param in params:
        if param.name in seen:
            raise CollsimError(f"{source}: parameter name {param.name!r} appears twice; names must be unique")
        seen.add(param.name)
    return params


def load_params(path: str | Path) -> list[Param]:
    """A parameter list file (JSON or YAML) with a top-level ``params`` list."""
    from sim.files import read_text, shown, user_file

    path = user_file(path, "params", "a JSON or YAML file with a 'params' list", label="params file")
    name = f"params file {shown(str(path))}"
    try:
        data = parse_data(read_text(path, "params file"), path.suffix)
    except yaml.YAMLError as error:
        raise CollsimError(f"{name} is not valid JSON/YAML: {' '.join(str(error).split())[:300]}") from None
    except CollsimError as error:
        raise CollsimError(f"{name}: {error}") from None
    if not isinstance(data, dict) or "params" not in data:
        raise CollsimError(f"{name}: expected a mapping with a 'params' list at the top level")
    return params_from_list(data["params"], name)


def save_params(params: Iterable[Param], path: str | Path) -> None:
    """Write the file format ``load_params`` reads (JSON, or YAML for .yaml/.yml)."""
    data = {"params": [param.to_dict() for param in params]}
    path = Path(path)
    text = yaml.safe_dump(data, sort_keys=False) if path.suffix in (".yaml", ".yml") else json.dumps(data, indent=1)
    from sim.cli_fields import writing_to  # a full disk is one error line naming the file

    with writing_to(path, "parameter list file"):
        path.write_text(text)


def params_from_bytes(sizes_nbytes: Iterable[int], element_bytes: int = 4) -> list[Param]:
    """Anonymous tensors ``p0, p1, ...`` of the given sizes (``--param-bytes``)."""
    params = []
    for index, nbytes in enumerate(sizes_nbytes):
        if nbytes <= 0 or nbytes % element_bytes:
            raise CollsimError(
                f"param-bytes: entry {index} is {nbytes} bytes; each must be > 0 and a multiple of the element size ({element_bytes} B)"
            )
        params.append(Param(f"p{index}", (nbytes // element_bytes,), nbytes // element_bytes, element_bytes))
    if not params:
        raise CollsimError("param-bytes: empty list; give sizes such as 4MiB,4MiB")
    return params


# --- presets ----------------------------------------------------------------------------

CS336_VOCAB = 10_000
CS336_CONTEXT = 256
# name: (d_model, d_ff, layers, heads), the CS336 assignment sizes (vocab 10,000)
CS336_SIZES = {
    "cs336-tiny": (512, 1344, 4, 16),
    "small": (768, 3072, 12, 12),
    "medium": (1024, 4096, 24, 16),
    "large": (1280, 5120, 36, 20),
    "xl": (1600, 6400, 48, 25),
    "2.7B": (2560, 10240, 32, 32),
}


def _p(name: str, *shape: int) -> Param:
    return Param(name, tuple(shape), math.prod(shape))


def cs336_lm(d_model: int, d_ff: int, layers: int, heads: int, vocab: int = CS336_VOCAB) -> list[Param]:
    """``cs336_basics.model.BasicsTransformerLM``: registration order as in its ``__init__``
    (a block registers attn, ffn, ln1, ln2); Linear weights are (out, in), no biases, no tying.
    RoPE holds buffers only, so ``heads`` and the context length add no parameters."""
    if d_model % heads:
        raise CollsimError(f"preset: d_model {d_model} must be divisible by heads {heads}")
    params = [_p("token_embeddings.weight", vocab, d_model)]
    for layer in range(layers):
        prefix = f"layers.{layer}."
        params += [_p(prefix + f"attn.{proj}.weight", d_model, d_model) for proj in ("q_proj", "k_proj", "v_proj", "output_proj")]
        params += [
            _p(prefix + "ffn.w1.weight", d_ff, d_model),
            _p(prefix + "ffn.w2.weight", d_model, d_ff),
            _p(prefix + "ffn.w3.weight", d_ff, d_model),
        ]
        params += [_p(prefix + "ln1.weight", d_model), _p(prefix + "ln2.weight", d_model)]
    return params + [_p("ln_final.weight", d_model), _p("lm_head.weight", vocab, d_model)]


def resnet18(classes: int = 1000) -> list[Param]:
    """``torchvision.models.resnet18()``: conv weights (out, in, k, k) without bias, BatchNorm
    weight and bias (running stats are buffers), downsample in the first block of layers 2-4."""
    params = [_p("conv1.weight", 64, 3, 7, 7), _p("bn1.weight", 64), _p("bn1.bias", 64)]
    in_channels = 64
    for stage, channels in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            prefix = f"layer{stage}.{block}."
            first_in = in_channels if block == 0 else channels
            params += [
                _p(prefix + "conv1.weight", channels, first_in, 3, 3),
                _p(prefix + "bn1.weight", channels),
                _p(prefix + "bn1.bias", channels),
            ]
            params += [
                _p(prefix + "conv2.weight", channels, channels, 3, 3),
                _p(prefix + "bn2.weight", channels),
                _p(prefix + "bn2.bias", channels),
            ]
            if block == 0 and first_in != channels:
                params += [
                    _p(prefix + "downsample.0.weight", channels, first_in, 1, 1),
                    _p(prefix + "downsample.1.weight", channels),
                    _p(prefix + "downsample.1.bias", channels),
                ]
        in_channels = channels
    return params + [_p("fc.weight", classes, 512), _p("fc.bias", classes)]


def gpt2(layers: int = 12, d_model: int = 768, vocab: int = 50257, context: int = 1024) -> list[Param]:
    """Hugging Face ``GPT2LMHeadModel`` (124M): Conv1D weights are (in, out); ``lm_head.weight``
    is tied to ``wte`` so ``parameters()`` yields it once, as ``transformer.wte.weight``."""
    params = [_p("transformer.wte.weight", vocab, d_model), _p("transformer.wpe.weight", context, d_model)]
    for layer in range(layers):
        prefix = f"transformer.h.{layer}."
        params += [_p(prefix + "ln_1.weight", d_model), _p(prefix + "ln_1.bias", d_model)]
        params += [_p(prefix + "attn.c_attn.weight", d_model, 3 * d_model), _p(prefix + "attn.c_attn.bias", 3 * d_model)]
        params += [_p(prefix + "attn.c_proj.weight", d_model, d_model), _p(prefix + "attn.c_proj.bias", d_model)]
        params += [_p(prefix + "ln_2.weight", d_model), _p(prefix + "ln_2.bias", d_model)]
        params += [_p(prefix + "mlp.c_fc.weight", d_model, 4 * d_model), _p(prefix + "mlp.c_fc.bias", 4 * d_model)]
        params += [_p(prefix + "mlp.c_proj.weight", 4 * d_model, d_model), _p(prefix + "mlp.c_proj.bias", d_model)]
    return params + [_p("transformer.ln_f.weight", d_model), _p("transformer.ln_f.bias", d_model)]


_BUILDERS: dict[str, Callable[[], list[Param]]] = {name: (lambda size=size: cs336_lm(*size)) for name, size in CS336_SIZES.items()}
_BUILDERS["resnet18"] = resnet18
_BUILDERS["gpt2"] = gpt2
PRESETS: tuple[str, ...] = tuple(_BUILDERS)


def preset(name: str) -> list[Param]:
    """The parameter list of a preset model (see ``PRESETS``)."""
    builder = _BUILDERS.get(name)
    if builder is None:
        raise CollsimError(f"preset: unknown {name!r}; allowed: {', '.join(PRESETS)}")
    return builder()


def total_nbytes(params: Iterable[Param]) -> int:
    return sum(param.nbytes for param in params)
