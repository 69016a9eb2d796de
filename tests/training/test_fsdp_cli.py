"""collsim sim fsdp: JSON contract, --compare, --hardware, bad input, and the sim.* aliases."""

from __future__ import annotations

import json

from click.testing import CliRunner

from sim.cli import cli

COMMON = ["--backward-time", "300ms", "--forward-time", "150ms", "--optimizer-time", "20ms"]


def run(*args: str):
    return CliRunner().invoke(cli, ["sim", "fsdp", *args], catch_exceptions=False)


def test_json_has_the_contract_keys():
    result = run("--preset", "xl", "--sharding", "full_shard", "--ranks", "64", "--comm", "ow", "--w", "10GB/s", *COMMON, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in ("step_time_s", "exposed_comm_s", "peak_memory_bytes", "units", "memory", "no_overlap_bound_s", "perfect_overlap_bound_s"):
        assert key in data
    assert data["num_units"] == 49 and data["units"][0]["name"] == "root"
    assert data["perfect_overlap_bound_s"] <= data["step_time_s"] <= data["no_overlap_bound_s"]


def test_compare_side_by_side_with_hardware():
    result = run("--preset", "xl", "--hardware", "dgx-h100", "--nodes", "2", *COMMON, "--compare", "ddp,zero1,shard_grad_op,full_shard")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["ddp", "zero1", "shard_grad_op", "full_shard"]
    rows = json.loads(
        run("--preset", "xl", "--hardware", "dgx-h100", "--nodes", "2", *COMMON, "--compare", "ddp,full_shard", "--json").output
    )
    assert rows[0]["ranks"] == 16 and rows[1]["peak_memory_bytes"] < rows[0]["peak_memory_bytes"]


def test_hybrid_shard_with_hierarchical_runs_on_the_presets_network():
    """hybrid_shard's all-reduces across replica groups used to run on a switch, where hierarchical
    cannot run; the scenario keeps the preset, so every strategy runs on its NIC rails."""
    preset = ["--preset", "small", "--hardware", "dgx-h100", "--nodes", "2", "--algorithm", "hierarchical", *COMMON]
    result = run(*preset, "--sharding", "hybrid_shard", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["scenario"]["hardware"] == "dgx-h100" and data["shard_group"] == 8 and data["notes"] == []
    assert data["comm_by_kind_s"]["all_reduce"] > 0
    rows = {row["sharding"]: row for row in json.loads(run(*preset, "--compare", "ddp,no_shard,hybrid_shard", "--json").output)}
    assert rows["hybrid_shard"]["comm_busy_s"] == data["comm_busy_s"]
    from sim.hardware.presets import scenario_fields
    from sim.training.fsdp import FSDPScenario, run_fsdp

    times = {"backward_time": "300ms", "forward_time": "150ms", "optimizer_time": "20ms"}
    fields = {**scenario_fields("dgx-h100", 2), "preset": "small", "comm": "network", "algorithm": "hierarchical", **times}
    for name in ("ddp", "no_shard"):  # the CLI's scenario is the preset's (the flag used to be dropped: no NIC rails)
        alone = run_fsdp(FSDPScenario.from_dict({**fields, "sharding": name})).summary()
        assert rows[name]["comm_busy_s"] == alone["comm_busy_s"]


def test_a_group_the_algorithm_cannot_split_runs_ring_and_says_so():
    args = ["--preset", "small", "--hardware", "dgx-h100", "--nodes", "3", "--algorithm", "hierarchical", *COMMON]
    result = run(*args, "--sharding", "hybrid_shard", "--shard-size", "3")
    assert result.exit_code == 0, result.output
    assert "note: all_reduce in replica groups of 8 ranks: ring instead of hierarchical" in result.output


def test_trace_and_csv(tmp_path):
    trace, table = tmp_path / "t.json", tmp_path / "t.csv"
    result = run("--preset", "small", "--ranks", "8", "--w", "10GB/s", *COMMON, "--trace", str(trace), "--csv", str(table))
    assert result.exit_code == 0, result.output
    assert any(event.get("cat") == "all_gather" for event in json.loads(trace.read_text())["traceEvents"])
    assert table.read_text().splitlines()[0].startswith("rank,peer,resource,kind")


def test_bad_input_is_one_error_line():
    for args in (
        ["--preset", "xl", "--compare", "ddp,zero9", "--w", "1GB/s", "--backward-time", "1s"],
        ["--preset", "xl", "--sharding", "hybrid_shard", "--ranks", "6", "--shard-size", "4", "--w", "1GB/s", "--backward-time", "1s"],
        ["--preset", "nope", "--w", "1GB/s", "--backward-time", "1s"],
        ["--preset", "xl", "--w", "1GB/s", "--backward-time", "1s", "--hardware", "no-such-box"],
    ):
        result = CliRunner().invoke(cli, ["sim", "fsdp", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output and "error" in result.output


def test_old_module_names_are_the_moved_modules():
    import sim.training.ddp
    import sim.training.ddp_cli
    import sim.training.overhead
    import sim.training.params

    assert sim.training.ddp is sim.training.ddp and sim.training.params is sim.training.params
    assert sim.training.overhead is sim.training.overhead and sim.training.ddp_cli is sim.training.ddp_cli
    from sim.training.ddp import DDPScenario
    from sim.training.ddp import DDPScenario as moved

    assert DDPScenario is moved


def test_calibration_fills_o_and_w():
    from pathlib import Path

    calibration = Path(__file__).resolve().parents[2] / "real" / "data" / "validate_example" / "calibration.yaml"
    result = run("--preset", "small", "--backward-time", "100ms", "--calibration", str(calibration), "--json")
    assert result.exit_code == 0, result.output
    scenario = json.loads(result.output)["scenario"]
    assert scenario["w_Bps"] > 0 and scenario["o_s"] >= 0
