"""Every memory figure carries the GPU's capacity and whether it fits (issue 36): the --json of
`collsim sim ddp` and of `collsim sim fsdp` (one strategy, and each one --compare lists), and the
words of their tables. The case of the issue: GPT 2.7B on 2 x dgx-h100 in bf16, where DDP needs
82.32 GiB a rank and an H100 has 80 GB."""

from __future__ import annotations

import json

from click.testing import CliRunner

from sim.cli import cli
from sim.hardware.presets import load_preset
from sim.training.fsdp import FSDPScenario, run_fsdp

ISSUE = ["--preset", "2.7B", "--hardware", "dgx-h100", "--nodes", "2", "--mfu", "40%", "--tokens", "8192", "--precision", "bf16"]
NO_GPU = ["--preset", "gpt2", "--backward-time", "100ms", "--comm", "ow", "--o", "50us", "--w", "10GB/s"]
H100_BYTES = 80 * 10**9  # NVIDIA's H100 SXM datasheet: 80 GB (decimal), not 80 GiB


def _json(command: str, *args: str):
    result = CliRunner().invoke(cli, ["sim", command, *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_gpu_presets_carry_their_memory_in_decimal_gb_and_cite_it():
    h100 = load_preset("dgx-h100")
    assert h100.gpu_memory_bytes == H100_BYTES and "datasheet" in h100.sources["gpu_memory"]
    assert load_preset("hgx-h200").gpu_memory_bytes == 141 * 10**9
    assert load_preset("cpu-ethernet-25g").gpu_memory_bytes is None  # CPU ranks: no GPU memory


def test_sim_ddp_json_says_the_2_7b_step_does_not_fit_an_80_gb_h100():
    summary = _json("ddp", *ISSUE)
    assert summary["peak_memory_bytes"] > H100_BYTES  # 82.32 GiB
    assert summary["gpu_memory_bytes"] == H100_BYTES and summary["fits"] is False
    assert "does not fit" in summary["gpu_memory_note"]
    # the same figure as the ddp row of sim fsdp --compare: one memory model
    row = _json("fsdp", *ISSUE, "--compare", "ddp")[0]
    assert row["peak_memory_bytes"] == summary["peak_memory_bytes"]


def test_sim_fsdp_compare_json_marks_each_strategy_fits_or_not():
    rows = {row["sharding"]: row for row in _json("fsdp", *ISSUE, "--compare", "ddp,zero1,full_shard")}
    for row in rows.values():
        assert row["gpu_memory_bytes"] == H100_BYTES
        assert row["fits"] is (row["peak_memory_bytes"] <= H100_BYTES)
    assert rows["ddp"]["fits"] is False and rows["full_shard"]["fits"] is True
    table = CliRunner().invoke(cli, ["sim", "fsdp", *ISSUE, "--compare", "ddp,full_shard"]).output
    ddp_line = next(line for line in table.splitlines() if line.startswith("ddp "))
    shard_line = next(line for line in table.splitlines() if line.startswith("full_shard "))
    assert "does not fit" in ddp_line and "does not fit" not in shard_line
    assert "GPU memory: 74.51 GiB a rank" in table.splitlines()[0]


def test_sim_fsdp_single_run_json_carries_the_capacity_beside_the_peak():
    summary = _json("fsdp", *ISSUE, "--sharding", "full_shard")
    assert summary["gpu_memory_bytes"] == H100_BYTES and summary["fits"] is True


def test_without_a_gpu_preset_capacity_and_fits_are_null_and_said_so():
    for command in ("ddp", "fsdp"):
        summary = _json(command, *NO_GPU)
        assert summary["gpu_memory_bytes"] is None and summary["fits"] is None
        assert "no GPU preset" in summary["gpu_memory_note"]


def test_the_mfu_gpu_counts_as_the_gpu_without_a_hardware_preset():
    scenario = FSDPScenario.from_dict({"preset": "gpt2", "mfu": 0.4, "tokens": 8192, "gpu": "pcie-gen4-8gpu", "o": "50us", "w": "10GB/s"})
    summary = run_fsdp(scenario).summary()
    assert summary["gpu"] == "pcie-gen4-8gpu" and summary["gpu_memory_bytes"] == 24 * 10**9
