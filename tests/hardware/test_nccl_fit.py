"""Fitting a preset's effective constants to nccl-tests logs, and the fitted blocks they carry."""

import pytest

from sim.collective.nccl_fit import compare, des_time, fit, read_log, regime_stats
from sim.errors import CollsimError
from sim.hardware.presets import CONSTANTS, TRIAL, effective, list_presets, load_preset, parse_preset


def _write_log(path, rows):
    lines = [
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20",
        "# Collective test starting: all_reduce_perf",
    ]
    lines += [f"  {size:>12d}  {size // 4:>10d}  float  sum  -1  {seconds * 1e6:9.2f}  0.00  0.00  0  {seconds * 1e6:9.2f}  0.00  0.00  0"
              for size, seconds in rows]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow
def test_the_fit_recovers_constants_that_made_a_log(tmp_path):
    truth = {"inter_efficiency": 0.7, "latency_scale": 2.0}
    # up to 1 GiB: the NICs bind only on large rings (a 4 MiB tree is NVLink-bound), so five of them
    # tell inter_efficiency beyond its prior (issue 33: one point would leave it near the prior)
    sizes = [2**k for k in range(10, 26, 4)] + [2**k for k in range(26, 31)]
    TRIAL["dgx-h100"] = truth
    try:
        rows = [(size, des_time("dgx-h100", 2, "all_reduce", size)[0]) for size in sizes]
    finally:
        TRIAL.pop("dgx-h100")
    log = tmp_path / "made.txt"
    _write_log(log, rows)
    assert read_log(log) == ("all_reduce", [(size, pytest.approx(t, rel=1e-3)) for size, t in rows])
    result = fit([(str(log), 2, None)], "dgx-h100", list(truth))
    for name, value in truth.items():  # regularised toward the prior: most of the way to the truth, the truth inside the interval
        entry = result["constants"][name]
        prior = entry["prior"]["value"]
        assert abs(entry["value"] - value) <= 0.25 * abs(prior - value), (name, entry)
        assert entry["interval"][0] <= value <= entry["interval"][1], (name, entry)


def test_fit_refuses_unknown_constants_and_too_few_points(tmp_path):
    log = tmp_path / "one.txt"
    _write_log(log, [(1024, 30e-6)])
    with pytest.raises(CollsimError, match="unknown constant"):
        fit([(str(log), 2, None)], "dgx-h100", ["speed"])
    with pytest.raises(CollsimError, match="1 points for 2 constants"):
        fit([(str(log), 2, None)], "dgx-h100", ["latency_scale", "base_latency_us"])


def test_shipped_fitted_blocks_name_their_logs_and_stay_in_bounds():
    fitted = [name for name in list_presets() if load_preset(name).fitted]
    assert {"dgx-h100", "hgx-h100-nvls", "oci-a100-roce", "gcp-a3-mega", "gb200-nvl72"} <= set(fitted)
    for name in fitted:
        preset = load_preset(name)
        assert preset.fitted["logs"] and preset.fitted["command"].startswith("collsim hardware fit")
        eff = effective(preset)
        for constant, (_, lower, upper, _) in CONSTANTS.items():
            assert lower <= getattr(eff, constant) <= upper
            if constant in preset.fitted["constants"]:
                assert eff.provenance[constant].startswith("fitted")


def test_the_des_and_nccls_model_read_the_same_effective_constants():
    preset = load_preset("dgx-h100")
    before = des_time("dgx-h100", 2, "all_reduce", 1 << 12)[0]
    shipped = effective(preset).base_latency_us
    TRIAL["dgx-h100"] = {"base_latency_us": 100.0}
    try:
        after = des_time("dgx-h100", 2, "all_reduce", 1 << 12)[0]
        assert effective(preset).base_latency_us == 100.0
    finally:
        TRIAL.pop("dgx-h100")
    assert after == pytest.approx(before + (100.0 - shipped) * 1e-6)
    assert effective(preset).nccl is preset.nccl  # NCCL's model reads the machine through effective() too


def test_a_fitted_block_is_checked():
    raw = dict(load_preset.__wrapped__("dgx-h100").__dict__) if hasattr(load_preset, "__wrapped__") else None
    import yaml

    from sim.hardware.presets import HERE

    data = yaml.safe_load((HERE / "dgx-h100.yaml").read_text())
    data["fitted"] = {"logs": ["x"], "constants": {"warp_speed": {"value": 1}}}
    with pytest.raises(CollsimError, match="fitted constant 'warp_speed' unknown"):
        parse_preset(data, "test")
    data["fitted"] = {"constants": {}}
    with pytest.raises(CollsimError, match="fitted needs 'logs'"):
        parse_preset(data, "test")
    assert raw is None or raw


@pytest.mark.slow
def test_calibration_targets_on_the_shipped_presets():
    """Issue 20's targets on the six calibration logs (bench/nccl_logs.py prints the full table):
    median |busbw error| <= 10 % in each regime and no worse than NCCL's own model there, and no
    point beyond 35 % but the GB200 run's 1 GiB dip (slower than its 2 GiB in both columns: the
    log's header calls it unexplained, and NCCL's model misses it by as much)."""
    from pathlib import Path

    from sim.collective.nccl_fit import CALIBRATION

    data = Path(__file__).resolve().parents[2] / "real" / "data" / "nccl-tests"  # shipped: never skipped
    points = []
    for name, (preset, nodes, proto, algo) in CALIBRATION.items():
        points += compare(data / name, preset, nodes, proto, nccl_algo=algo)
    for regime, n, des, _, model, _ in regime_stats(points):
        assert des <= 0.10 and des <= model, (regime, n, des, model)
    beyond = [(p.log, p.size_bytes) for p in points if abs(p.des_error) > 0.35]
    assert beyond == [("oci-gb200-nvl72_32trays-128gpu_nccl2.29.2_allreduce.txt", 1 << 30)]


@pytest.mark.slow
def test_hardware_fit_writes_a_preset_with_its_fitted_block(tmp_path):
    import yaml
    from click.testing import CliRunner

    from sim.hardware.cli import hardware

    sizes = [2**k for k in range(8, 16)]  # eight small sizes: the +40 us is told well beyond its prior (0 +- 25 us)
    log = tmp_path / "slow_host.txt"
    _write_log(log, [(size, des_time("dgx-h100", 2, "all_reduce", size)[0] + 40e-6) for size in sizes])
    out = tmp_path / "fitted.yaml"
    result = CliRunner().invoke(
        hardware, ["fit", str(log), "--hardware", "dgx-h100", "--nodes", "2", "--fit", "base_latency_us", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    preset = parse_preset(yaml.safe_load(out.read_text()), "fitted")
    assert preset.fitted["logs"] == ["slow_host.txt (all_reduce, 2 nodes)"] and "--fit base_latency_us" in preset.fitted["command"]
    assert effective(preset).base_latency_us == pytest.approx(
        40.0 + effective(load_preset("dgx-h100")).base_latency_us, abs=0.5
    )  # on top of the shipped one
    shown = CliRunner().invoke(hardware, ["show", "dgx-h100"])
    assert "effective constants" in shown.output and "base_latency_us" in shown.output
    bad = CliRunner().invoke(hardware, ["fit", str(log), "--hardware", "dgx-h100", "--nodes", "2,2"])
    assert isinstance(bad.exception, CollsimError) and "one count per log" in str(bad.exception)


@pytest.mark.slow
def test_the_gb200_log_is_run_as_the_ring_its_numbers_show():
    """CALIBRATION runs each log with the NCCL_ALGO it had: the OCI GB200 log as Ring (183 us at
    8 B is 2 x 127 NVLink LL hops; 683 GB/s at 32 GiB is the ring graph's 16 x 45.1 x 0.95).
    NCCL's model's own pick there, NVLSTree, was 3.5x too fast at 8 B (+247 %)."""
    from pathlib import Path

    from sim.collective.nccl_fit import CALIBRATION

    name = "oci-gb200-nvl72_32trays-128gpu_nccl2.29.2_allreduce.txt"
    log = Path(__file__).resolve().parents[2] / "real" / "data" / "nccl-tests" / name  # shipped: never skipped
    preset, nodes, proto, algo = CALIBRATION[name]
    assert algo == "Ring"
    first, *_, last = compare(log, preset, nodes, proto, stride=32, nccl_algo=algo)
    assert first.pick == "Ring/LL" and last.pick == "Ring/Simple"
    assert abs(first.des_error) < 0.15 and abs(last.des_error) < 0.15
    default = compare(log, preset, nodes, proto, stride=64)[0]
    assert default.pick.startswith("NVLS") and default.des_error > 1.0


@pytest.mark.slow
def test_hardware_fit_runs_the_logs_algorithm(tmp_path):
    """--nccl-algo: the fit runs the DES on the algorithm the run had (NCCL_ALGO), and the block
    records it; a log made by Ring + 40 us gives back 40 us only when fitted as Ring."""
    import yaml
    from click.testing import CliRunner

    from sim.hardware.cli import hardware

    sizes = [2**k for k in range(8, 16)]  # eight sizes: the +40 us is told well beyond its prior (0 +- 25 us)
    log = tmp_path / "ring_run.txt"
    _write_log(log, [(size, des_time("dgx-h100", 2, "all_reduce", size, "Ring")[0] + 40e-6) for size in sizes])
    out = tmp_path / "fitted.yaml"
    args = ["fit", str(log), "--hardware", "dgx-h100", "--nodes", "2", "--fit", "base_latency_us", "-o", str(out)]
    result = CliRunner().invoke(hardware, [*args, "--nccl-algo", "Ring"])
    assert result.exit_code == 0, result.output
    preset = parse_preset(yaml.safe_load(out.read_text()), "fitted")
    assert preset.fitted["nccl_algo"] == "Ring" and "--nccl-algo Ring" in preset.fitted["command"]
    assert effective(preset).base_latency_us == pytest.approx(
        40.0 + effective(load_preset("dgx-h100")).base_latency_us, abs=0.5
    )  # on top of the shipped one
    CliRunner().invoke(hardware, args)  # NCCL's own pick at these sizes: Tree/LL
    assert abs(effective(parse_preset(yaml.safe_load(out.read_text()), "fitted")).base_latency_us - 40.0) > 2
