"""The torch modules of the model presets register exactly the tensors the simulation synchronises,
and train: the measured step times in sim/training/data belong to these gradients."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from real import presets  # noqa: E402
from sim.errors import CollsimError  # noqa: E402
from sim.training.params import preset  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _same_tensors(name: str) -> None:
    module = presets.build(name)
    built = [(n, tuple(p.shape)) for n, p in module.named_parameters()]
    assert built == [(p.name, p.shape) for p in preset(name)]


@pytest.mark.parametrize("name", ["cs336-tiny", "small", "gpt2"])
def test_modules_register_the_presets_tensors_in_order(name):
    _same_tensors(name)


def test_resnet18_module_matches_its_preset():
    pytest.importorskip("torchvision", reason="torchvision not installed: the preset's own formula test covers ResNet-18")
    _same_tensors("resnet18")


def test_a_step_fills_every_gradient_and_the_tied_head_is_one_tensor():
    torch.manual_seed(0)
    model = presets.build("cs336-tiny")
    inputs, targets = presets.batch("cs336-tiny", 256, generator=torch.Generator().manual_seed(0))
    value = presets.loss(model, inputs, targets)
    value.backward()
    assert torch.isfinite(value) and all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    gpt2 = presets.build("gpt2")
    assert gpt2.transformer.wte.weight.data_ptr() not in [p.data_ptr() for n, p in gpt2.named_parameters() if n != "transformer.wte.weight"]


def test_batches_are_whole_sequences():
    with pytest.raises(CollsimError, match="whole sequences of 256 tokens"):
        presets.batch("small", 300)
    with pytest.raises(CollsimError, match="unknown 'nope'"):
        presets.build("nope")


@pytest.mark.slow
def test_the_step_time_bench_runs_on_the_cpu(tmp_path):
    """The documented smoke command of bench/gpu_step_times.py (the GPU figures come from its CUDA run)."""
    out = tmp_path / "times.json"
    command = [sys.executable, "bench/gpu_step_times.py", "--device", "cpu", "--presets", "cs336-tiny", "--tokens", "256",
               "--steps", "1", "--warmup", "1", "--precision", "fp32", "--out", str(out)]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    import json

    row = json.loads(out.read_text())["rows"][0]
    assert row["preset"] == "cs336-tiny" and row["tokens"] == 256 and row["backward_s"] > 0 and 0 < row["mfu_backward"]
    assert "cs336-tiny  fp32" in done.stdout
