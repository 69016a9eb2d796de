"""The `collsim sim ddp` contract of issue 3, bad input, and the import boundary."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.training.ddp import DDPScenario
from sim.training.params import preset

OW = ["--comm", "ow", "--o", "50us", "--w", "10GB/s"]
NETWORK = ["--comm", "network", "--algorithm", "ring", "--ranks", "8", "--latency", "5us", "--bandwidth", "25GB/s"]
KEYS = ("step_time_s", "backward_end_s", "comm_end_s", "overhead_s", "num_buckets", "buckets")


def run(args):
    return CliRunner().invoke(cli, ["sim", "ddp", *args])


def test_contract_single_run_ow_and_trace(tmp_path):
    trace = tmp_path / "out.json"
    result = run(
        [
            "--preset",
            "xl",
            "--strategy",
            "bucketed",
            "--bucket-size",
            "25MiB",
            "--first-bucket",
            "1MiB",
            "--backward-time",
            "120ms",
            *OW,
            "--json",
            "--trace",
            str(trace),
        ]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert all(key in data for key in KEYS)
    assert data["overhead_s"] == pytest.approx(max(0.0, data["comm_end_s"] - data["backward_end_s"]), rel=1e-12) and data["overhead_s"] > 0
    assert data["num_buckets"] == len(data["buckets"])
    assert set(data["buckets"][0]) >= {"index", "bytes", "params", "ready_s", "start_s", "end_s"}
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(1 for e in events if e.get("cat") == "comm") == data["num_buckets"]


@pytest.mark.parametrize("params", [["--param-bytes", "4MiB,4MiB,8MiB"], ["--preset", "cs336-tiny"]])
@pytest.mark.parametrize("profile", [["--backward-time", "20ms"], ["--backward-rate", "2GB/s"]])
def test_contract_network_and_sources(params, profile):
    result = run([*params, "--strategy", "overlap", *profile, *NETWORK, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["comm"] == "network" and data["ranks"] == 8 and all(key in data for key in KEYS)


def test_first_bucket_none_and_text_output():
    result = run(
        ["--param-bytes", "512KiB,512KiB,512KiB", "--first-bucket", "none", "--bucket-size", "1MiB", "--backward-time", "3ms", *OW]
    )
    assert result.exit_code == 0, result.output
    assert "overhead" in result.stdout and "all-reduces      2" in result.stdout


def test_contract_sweep_one_row_per_size():
    result = run(
        [
            "--preset",
            "gpt2",
            "--strategy",
            "bucketed",
            "--backward-time",
            "120ms",
            *OW,
            "--sweep-bucket-sizes",
            "1MiB,4MiB,16MiB,64MiB",
            "--json",
        ]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [row["bucket_cap_bytes"] for row in rows] == [2**20, 4 * 2**20, 16 * 2**20, 64 * 2**20]
    assert [row["num_buckets"] for row in rows] == sorted((row["num_buckets"] for row in rows), reverse=True)


def test_contract_optimize():
    result = run(["--preset", "gpt2", "--strategy", "bucketed", "--backward-time", "60ms", *OW, "--optimize", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert all(key in data for key in (*KEYS, "best_bucket_bytes_sim", "best_bucket_bytes_formula"))
    inputs = data["formula_inputs"]
    assert data["best_bucket_bytes_formula"] == pytest.approx((inputs["s_bytes"] * inputs["w_Bps"] * inputs["o_s"]) ** 0.5)
    assert data["best_step_time_s"] <= min(row["step_time_s"] for row in data["sweep"])
    assert data["best_step_time_s"] <= data["step_time_at_formula_s"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--param-bytes", "4MiB", "--bucket-size", "0", "--backward-time", "1ms", *OW], "bucket_size: must be > 0"),
        (["--param-bytes", "4MiB", "--backward-time", "-5ms", *OW], "backward_time: must be a time >= 0"),
        (["--param-bytes", "4MiB", "--backward-time", "5ms", "--forward-time", "-1ms", *OW], "forward_time: must be a time >= 0"),
        (["--param-bytes", "", "--backward-time", "1ms", *OW], "param_bytes: empty list"),
        (["--backward-time", "1ms", *OW], "parameters: give a preset"),
        (["--param-bytes", "4MiB", *OW], "give exactly one of backward_time"),
        (["--param-bytes", "4MiB", "--backward-time", "1ms", "--backward-rate", "1GB/s", *OW], "got backward_time_s, backward_rate_Bps"),
        (["--param-bytes", "4MiB", "--backward-time", "1ms", "--comm", "ow"], "needs the algorithm bandwidth w"),
        (["--param-bytes", "4MiB", "--backward-time", "1ms", "--comm", "network"], "needs a link bandwidth"),
        (
            ["--param-bytes", "4MiB", "--backward-time", "1ms", "--comm", "network", "--bandwidth", "1GB/s", "--algorithm", "nope"],
            "algorithm",
        ),
        (["--preset", "huge", "--backward-time", "1ms", *OW], "preset: unknown 'huge'"),
        (["--param-bytes", "4MiB", "--backward-time", "1ms", "--bucket-size", "25XB", *OW], "unknown unit"),
        (["--params", "/nonexistent.json", "--backward-time", "1ms", *OW], "not found"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = (
        subprocess.run([sys.executable, "-m", "sim.cli", "sim", "ddp", *args], capture_output=True, text=True, timeout=60)
        if args[0] == "--params"
        else None
    )
    if result is None:
        invoked = run(args)
        assert invoked.exit_code == 2, invoked.output
        assert invoked.stderr.startswith("error") and message in invoked.stderr, invoked.stderr
        assert invoked.stderr.count("\n") == 1
    else:
        assert result.returncode == 2 and result.stderr.startswith("error: ") and message in result.stderr


def test_scenario_file_with_flag_overrides(tmp_path):
    path = tmp_path / "ddp.yaml"
    scenario = DDPScenario.from_dict({"preset": "cs336-tiny", "backward_time": "30ms", "o": "20us", "w": "5GB/s", "bucket_size": "8MiB"})
    path.write_text(scenario.to_yaml())
    base = json.loads(run(["--scenario", str(path), "--json"]).stdout)
    override = json.loads(run(["--scenario", str(path), "--param-bytes", "1MiB,1MiB", "--backward-rate", "1GB/s", "--json"]).stdout)
    assert base["num_params"] == 39 and base["bucket_cap_bytes"] == 8 * 2**20
    assert override["num_params"] == 2 and override["backward_time_s"] == pytest.approx(2 * 2**20 / 1e9)


def test_scenario_round_trips():
    scenario = DDPScenario.from_dict(
        {
            "param_bytes": "1MiB,2MiB",
            "layer_times": "p0:1ms,p1:2ms",
            "strategy": "overlap",
            "w": "10GB/s",
            "o": "5us",
            "first_bucket": "none",
            "slowdown": 1.5,
        }
    )
    assert DDPScenario.from_json(scenario.to_json()) == scenario
    assert DDPScenario.from_yaml(scenario.to_yaml()) == scenario
    assert scenario.first_bucket_bytes is None and scenario.layer_times == (("p0", 1e-3), ("p1", 2e-3))
    inline = DDPScenario(params=tuple(preset("resnet18")), backward_rate_Bps=1e9, comm="network", bandwidth_Bps=1e10, ranks=4)
    assert DDPScenario.from_json(inline.to_json()) == inline


def test_sim_ddp_imports_no_torch():
    code = "import sim.training.ddp, sim.training.ddp_cli, sim.training.overhead, sim.training.params, sys; print(sorted(m for m in ('torch', 'scipy', 'dash', 'plotly') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stderr


def test_layer_times_file_flops_and_csv(tmp_path):
    layers = tmp_path / "layers.yaml"
    layers.write_text("p0: 2ms\np1: 1ms\n")
    csv_path = tmp_path / "events.csv"
    result = run(["--param-bytes", "1MiB,1MiB", "--layer-times", str(layers), *OW, "--csv", str(csv_path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["backward_time_s"] == pytest.approx(3e-3)
    header, *rows = csv_path.read_text().splitlines()
    assert header.split(",") == ["rank", "peer", "resource", "kind", "start_s", "end_s", "bytes", "step", "chunk", "bucket", "name"]
    assert sum(",grad_ready," in row for row in rows) == 2
    flops = run(["--param-bytes", "4KiB", "--flops-per-s", "1TFLOPS", "--tokens", "1000", *OW, "--json"])
    assert json.loads(flops.stdout)["backward_time_s"] == pytest.approx(4 * 1000 * 1024 / 1e12)
    bad = run(["--param-bytes", "4KiB", "--flops-per-s", "fast", "--tokens", "1000", *OW])
    assert bad.exit_code == 2 and "FLOP/s" in bad.stderr
