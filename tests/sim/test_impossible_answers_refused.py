"""Scenarios whose answer could only be impossible are refused with one clear message (issue 36):
NVLS without an NVLink SHARP switch, send/recv without a peer; a barrier has no bandwidth."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.errors import CollsimError
from sim.hardware.presets import list_presets, load_preset, scenario_fields
from sim.nccl.model import nvls_presets
from sim.scenario import CollectiveScenario


def _cli(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("algorithm", ["nccl_nvls", "nccl_nvls_tree"])
def test_nvls_on_a_plain_switch_is_refused_naming_the_presets_that_have_it(algorithm):
    """Before: 0 messages in 68 us for 64 MiB through 10 GB/s ports (984.6 GB/s algbw)."""
    out = _cli(
        "sim", "collective", "--op", "all_reduce", "--algorithm", algorithm, "--ranks", "8", "--bandwidth", "10GB/s", "--size", "64MiB"
    )
    assert out.exit_code != 0 and "Traceback" not in out.output
    assert "NVLink SHARP" in out.output
    for name in nvls_presets():
        assert name in out.output
    assert set(nvls_presets()) == {name for name in list_presets() if load_preset(name).nccl and load_preset(name).nccl.nvls}
    assert "hgx-h100-nvls" in nvls_presets()


def test_nvls_on_a_preset_without_it_is_refused_and_runs_where_it_is():
    fields = {"op": "all_reduce", "algorithm": "nccl_nvls", "size": "64MiB"}
    with pytest.raises(CollsimError, match="hardware dgx-h100 has none") as refused:
        CollectiveScenario.from_dict({**scenario_fields("dgx-h100", 1), **fields})
    assert refused.value.field == "algorithm"
    assert CollectiveScenario.from_dict({**scenario_fields("hgx-h100-nvls", 1), **fields}).algorithm == "nccl_nvls"


def test_a_barrier_has_no_bandwidth():
    """Before: a 1 GiB barrier read algbw 357,913 GB/s. Its size moves nothing (its messages are
    empty): the time is the same at any size and algbw is none, in JSON and text, full or collapsed."""
    args = ["sim", "collective", "--op", "barrier", "--ranks", "8", "--bandwidth", "10GB/s", "--latency", "1us"]
    for mode in ("full", "collapsed"):
        for size in ("0", "1GiB"):
            summary = json.loads(_cli(*args, "--size", size, "--mode", mode, "--json").output)
            assert summary["time_s"] == pytest.approx(3e-6) and summary["algbw_GBps"] is None
    assert "algbw" not in _cli(*args, "--size", "1GiB").output


@pytest.mark.parametrize("fields", [{"ranks": 1, "bandwidth": "10GB/s"}, {"ranks": 1, "bandwidth": "10GB/s", "algorithm": "direct"}])
def test_send_recv_on_one_rank_is_refused(fields):
    """Before: 0 s, a send to nobody."""
    with pytest.raises(CollsimError, match="needs at least 2 ranks") as refused:
        CollectiveScenario.from_dict({"op": "send_recv", "size": "1MiB", **fields})
    assert refused.value.field == "ranks"


def test_model_nccl_on_a_gloo_preset_lists_every_gpu_preset():
    """Before: 4 of the 9 GPU presets."""
    out = _cli("sim", "collective", "--op", "all_reduce", "--model", "nccl", "--hardware", "cpu-ethernet-25g", "--size", "1MiB")
    assert out.exit_code != 0
    gpu = [name for name in list_presets() if load_preset(name).nccl is not None]
    assert len(gpu) >= 9
    for name in gpu:
        assert name in out.output
