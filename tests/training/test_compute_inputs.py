"""Compute and memory inputs of the DDP / FSDP step models: forward and optimizer time,
precision, FLOP-derived compute at an MFU, activation memory and checkpointing, the near-best
bucket range."""

import pytest
from click.testing import CliRunner

from sim.errors import CollsimError
from sim.hardware.presets import list_presets, load_preset
from sim.training import compute
from sim.training.ddp import DDPScenario, run_ddp
from sim.training.explain import near_best_caps
from sim.training.fsdp import FSDPScenario, run_fsdp
from sim.training.params import preset

OW = {"o_s": 50e-6, "w_Bps": 10e9, "ranks": 8}


def test_bf16_halves_gradient_bytes_and_bucket_bytes():
    fp32 = run_ddp(DDPScenario(preset="gpt2", backward_time_s=0.1, **OW)).summary()
    bf16 = run_ddp(DDPScenario(preset="gpt2", backward_time_s=0.1, precision="bf16", **OW)).summary()
    assert bf16["grad_bytes"] * 2 == fp32["grad_bytes"]
    assert sum(b["bytes"] for b in bf16["buckets"]) == bf16["grad_bytes"]
    assert bf16["comm_busy_s"] < fp32["comm_busy_s"]
    explicit = run_ddp(DDPScenario(preset="gpt2", backward_time_s=0.1, precision="fp32", **OW)).summary()
    assert explicit["step_time_s"] == fp32["step_time_s"]  # gpt2's list is fp32 already


def test_mfu_derives_backward_and_forward_from_flops_and_the_gpu_peak():
    tokens, mfu = 8192, 0.4
    summary = run_ddp(DDPScenario(preset="small", mfu=mfu, gpu="dgx-h100", tokens=tokens, precision="bf16", **OW)).summary()
    params = preset("small")
    rate = mfu * 989.4e12
    flops_back = sum(4 * tokens * p.numel if "embed" not in p.name else tokens * p.shape[-1] for p in params)
    flops_fwd = sum(2 * tokens * p.numel for p in params if "embed" not in p.name)
    assert summary["backward_time_s"] == pytest.approx(flops_back / rate, rel=1e-9)
    assert summary["forward_time_s"] == pytest.approx(flops_fwd / rate, rel=1e-9)
    fp32 = run_ddp(DDPScenario(preset="small", mfu=mfu, gpu="dgx-h100", tokens=tokens, precision="fp32", **OW)).summary()
    assert fp32["backward_time_s"] == pytest.approx(summary["backward_time_s"] * 989.4 / 66.9)
    typed = run_ddp(DDPScenario(preset="small", mfu=mfu, gpu="dgx-h100", tokens=tokens, forward_time_s=0.01, **OW)).summary()
    assert typed["forward_time_s"] == 0.01


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"mfu": 0.4, "tokens": 100}, "mfu: needs a GPU"),
        ({"mfu": 0.4, "gpu": "dgx-h100"}, "tokens"),
        ({"mfu": 0.4, "gpu": "cpu-ethernet-25g", "tokens": 100}, "no fp32 GPU peak"),
        ({"mfu": 1.5, "gpu": "dgx-h100", "tokens": 100}, "at most 1"),
        ({"backward_time_s": 0.1, "precision": "fp8"}, "precision: unknown"),
        ({"backward_time_s": 0.1, "mfu": 0.4, "tokens": 100, "gpu": "h100"}, "gpu: unknown hardware preset 'h100'; allowed: "),
    ],
)
def test_compute_inputs_are_validated(fields, message):
    with pytest.raises(CollsimError, match=message):
        DDPScenario(preset="gpt2", **{**OW, **fields})


def test_forward_time_hides_full_shard_forward_all_gathers():
    base = FSDPScenario(preset="small", backward_time_s=0.1, sharding="full_shard", **OW)
    zero = run_fsdp(base)
    forward = run_fsdp(base.replace(forward_time_s=0.05))
    # forward = 0 leaves every forward all-gather exposed; a real forward hides most of them
    assert forward.exposed_comm_s < zero.exposed_comm_s
    assert forward.step_time_s < zero.step_time_s + 0.05


def test_optimizer_time_is_sharded_under_full_shard_and_whole_under_ddp():
    base = FSDPScenario(preset="small", backward_time_s=0.1, **OW)
    for sharding, share in (("full_shard", 1 / 8), ("ddp", 1.0)):
        without = run_fsdp(base.replace(sharding=sharding)).step_time_s
        with_opt = run_fsdp(base.replace(sharding=sharding, optimizer_time_s=0.016)).step_time_s
        assert with_opt - without == pytest.approx(0.016 * share)


def test_precision_memory_has_master_weights_and_half_size_params():
    base = FSDPScenario(preset="small", backward_time_s=0.1, sharding="full_shard", **OW)
    fp32 = run_fsdp(base).memory
    bf16 = run_fsdp(base.replace(precision="bf16")).memory
    no_master = run_fsdp(base.replace(precision="bf16", master_weights=False)).memory
    assert bf16["params_bytes"] * 2 == pytest.approx(fp32["params_bytes"], abs=2)
    assert fp32["master_bytes"] == 0 and no_master["master_bytes"] == 0
    numel = sum(p.numel for p in preset("small"))
    assert bf16["master_bytes"] == -(-numel * 4 // 8)
    assert bf16["peak_bytes"] - no_master["peak_bytes"] == bf16["master_bytes"]


def test_activation_memory_and_checkpointing():
    base = FSDPScenario(preset="gpt2", backward_time_s=0.1, forward_time_s=0.05, tokens=8192, precision="bf16", **OW)
    full = run_fsdp(base)
    ckpt = run_fsdp(base.replace(activation_checkpointing=True))
    # Korthikanti et al. eq. 1: s b h (34 + 5 a s / h) bytes a layer at 16 bit, plus fp32 logits
    s, b, h, a, layers = 1024, 8, 768, 12, 12
    expected = layers * s * b * h * (34 + 5 * a * s / h) + 8192 * 50257 * 4
    assert full.memory["activations_bytes"] == pytest.approx(expected, rel=1e-6)
    assert ckpt.memory["activations_bytes"] < full.memory["activations_bytes"] / 3
    assert full.memory["peak_bytes"] - full.memory["activations_bytes"] == ckpt.memory["peak_bytes"] - ckpt.memory["activations_bytes"]
    # checkpointing recomputes forward inside backward: compute grows by the forward time
    assert ckpt.compute_time_s == pytest.approx(full.compute_time_s + 0.05)
    ddp_full = run_ddp(DDPScenario(preset="gpt2", backward_time_s=0.1, forward_time_s=0.05, **OW)).summary()
    ddp_ckpt = run_ddp(DDPScenario(preset="gpt2", backward_time_s=0.1, forward_time_s=0.05, activation_checkpointing=True, **OW)).summary()
    assert ddp_ckpt["backward_time_s"] == pytest.approx(ddp_full["backward_time_s"] + 0.05)


def test_activations_unknown_for_a_non_transformer_model():
    assert compute.activation_bytes("resnet18", 1024, 2, False) is None
    memory = run_fsdp(FSDPScenario(preset="resnet18", backward_time_s=0.1, **OW)).memory
    assert memory["activations_bytes"] == 0


def test_near_best_caps_is_the_range_within_one_percent():
    rows = [{"bucket_cap_bytes": 2**k, "overhead_s": o} for k, o in zip(range(10, 18), [9, 5, 1.02, 1.005, 1.0, 1.009, 1.5, 3])]
    near = near_best_caps(rows)
    assert (near["low"], near["high"], near["count"]) == (2**13, 2**15, 3)
    assert near["best"]["bucket_cap_bytes"] == 2**14
    assert near_best_caps(rows, tolerance=0.05)["low"] == 2**12


def test_every_gpu_preset_has_cited_peaks():
    for name in list_presets():
        hardware = load_preset(name)
        if hardware.gpu_model.startswith("none"):
            assert hardware.gpu_peak_tflops == {}
            continue
        peaks = hardware.gpu_peak_tflops
        assert set(peaks) == {"bf16", "fp16", "fp32"} and peaks["bf16"] > peaks["fp32"] > 0
        assert "TFLOPS" in hardware.sources["gpu_peak_tflops"] or "PFLOPS" in hardware.sources["gpu_peak_tflops"]


def test_cli_takes_the_compute_options():
    from sim.training.ddp_cli import ddp
    from sim.training.fsdp_cli import fsdp

    args = ["--preset", "gpt2", "--o", "50us", "--w", "10GB/s", "--tokens", "8192", "--gpu", "dgx-h100", "--mfu", "40%"]
    result = CliRunner().invoke(ddp, [*args, "--precision", "bf16", "--forward", "3ms", "--optimizer", "2ms", "--json"])
    assert result.exit_code == 0, result.output
    import json

    summary = json.loads(result.output)
    assert (summary["forward_time_s"], summary["optimizer_time_s"], summary["grad_bytes"]) == (0.003, 0.002, 124439808 * 2)
    result = CliRunner().invoke(fsdp, [*args, "--activation-checkpointing", "--precision", "bf16"])
    assert result.exit_code == 0 and "activations" in result.output and "master weights" in result.output
    bad = CliRunner().invoke(ddp, [*args[:-2], "--mfu", "fast"])
    assert isinstance(bad.exception, CollsimError) and "mfu: expected a fraction" in str(bad.exception)


def test_mfu_fills_only_the_times_not_typed():
    typed = run_ddp(DDPScenario(preset="small", backward_time_s=0.1, mfu=0.4, gpu="dgx-h100", tokens=8192, **OW)).summary()
    derived = run_ddp(DDPScenario(preset="small", mfu=0.4, gpu="dgx-h100", tokens=8192, **OW)).summary()
    assert typed["backward_time_s"] == pytest.approx(0.1)
    assert typed["forward_time_s"] == derived["forward_time_s"] > 0


def test_overhead_curves_skip_a_fit_with_infinite_w():
    """A sweep the line fits with w = inf (fast bf16 compute on a preset) draws no fitted curve
    instead of failing the page."""
    from sim.training.explain import overhead_curves

    rows = [{"bucket_cap_bytes": 2**k, "overhead_s": 1e-3, "num_buckets": 30 - k} for k in range(20, 26)]
    optimum = {"sweep": rows, "fit": {"o_s": 1e-5, "w_Bps": float("inf")}, "formula_inputs": {"s_bytes": 2**28}}
    assert set(overhead_curves(optimum)) == {"simulated"}
