"""``algorithm: nccl``: NCCL's pick as a scenario's algorithm on a GPU preset (sim.collective.pick),
restricted as NCCL_ALGO / NCCL_PROTO; the CLI says what NCCL picks and its model's time."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.collective.pick import describe, scenario_for_pick
from sim.errors import CollsimError
from sim.hardware.presets import scenario_fields
from sim.nccl.model import predict
from sim.scenario import CollectiveScenario

SIZE = 25 * 2**20
ARGS = ("--hardware", "dgx-h100", "--nodes", "2", "--op", "all_reduce", "--size", "25MiB")


def _cli(*args: str):
    return CliRunner().invoke(cli, ["sim", "collective", *args])


def _scenario(**more) -> CollectiveScenario:
    return CollectiveScenario.from_dict(
        {**scenario_fields("dgx-h100", 2), "op": "all_reduce", "size": "25MiB", "algorithm": "nccl", **more}
    )


def test_algorithm_nccl_resolves_to_the_default_pick():
    pick, _ = scenario_for_pick("dgx-h100", 2, "all_reduce", SIZE)
    s = _scenario()
    assert (s.algorithm, s.chunks, s.sharing) == (pick.algorithm, pick.chunks, pick.sharing) == ("nccl_ring_ll128", pick.chunks, "fifo")
    assert _scenario(chunks=4).chunks == 4 and _scenario(sharing="fair").sharing == "fair"  # values given win
    assert CollectiveScenario.from_dict(s.to_dict()) == s  # the resolved scenario round-trips as itself


def test_restrictions_change_the_pick_as_nccl_proto_and_nccl_algo():
    assert _scenario(nccl_proto="Simple").algorithm == "nccl_tree"  # NCCL_PROTO=Simple: Tree/Simple wins at 25 MiB
    assert _scenario(nccl_proto="simple", nccl_algo="ring").algorithm == "nccl_ring"
    assert _scenario(nccl_proto="^LL128,Simple").algorithm.endswith("_ll")
    with pytest.raises(CollsimError, match="no algorithm/protocol left") as error:
        _scenario(nccl_algo="NVLS")  # no NVLink SHARP on dgx-h100
    assert error.value.field == "nccl_algo"
    with pytest.raises(CollsimError, match="unknown proto 'LL64'"):
        _scenario(nccl_proto="LL64")


def test_algorithm_nccl_without_a_gpu_preset_says_what_is_needed():
    with pytest.raises(CollsimError, match="'nccl' \\(NCCL's pick\\) needs a GPU hardware preset"):
        CollectiveScenario.from_dict({"op": "all_reduce", "algorithm": "nccl", "ranks": 8, "size": "1MiB", "bandwidth": "10GB/s"})
    result = _cli("--hardware", "cpu-ethernet-25g", "--op", "broadcast", "--size", "1MiB", "--algorithm", "nccl")
    assert result.exit_code == 2 and "runs gloo: choose one of linear, binomial" in result.output
    assert (
        _cli("--hardware", "dgx-h100", "--op", "gather", "--size", "1MiB", "--algorithm", "nccl", "--json").exit_code == 0
    )  # its only algorithm


def test_cli_prints_what_nccl_picks_and_its_models_time(tmp_path):
    text = _cli(*ARGS)
    assert text.exit_code == 0, text.output
    summary = json.loads(_cli(*ARGS, "--json").output)
    assert json.loads(_cli(*ARGS, "--algorithm", "nccl", "--json").output)["time_s"] == summary["time_s"]
    nccl = summary["nccl"]
    model = predict("dgx-h100", 2, "all_reduce", SIZE)
    assert (nccl["nccl_algorithm"], nccl["nccl_protocol"], nccl["picked"]) == (model.nccl_algorithm, model.nccl_protocol, True)
    assert nccl["model_time_s"] == model.time_s and nccl["channels"] >= 1
    assert f"NCCL picks Ring/LL128 on {nccl['channels']} channels" in text.output
    assert nccl["lines"][1] in text.output and "NCCL's model 242.6 us, DES 250.9 us (+3.4%)" in text.output
    path = tmp_path / "s.yaml"
    path.write_text("op: all_reduce\nsize: 25MiB\nalgorithm: nccl\nnccl_proto: Simple\n")
    from_file = json.loads(_cli("--scenario", str(path), "--hardware", "dgx-h100", "--nodes", "2", "--json").output)
    assert from_file["algorithm"] == "nccl_tree" and from_file["nccl"]["nccl_protocol"] == "Simple"
    path.write_text("".join(f"{key}: {value}\n" for key, value in scenario_fields("dgx-h100", 2).items()) + path.read_text())
    assert CollectiveScenario.load(path).algorithm == "nccl_tree"  # a whole scenario file, no flags


def test_a_named_nccl_algorithm_says_what_ran_and_what_nccl_would_pick():
    s = CollectiveScenario.from_dict(
        {**scenario_fields("dgx-h100", 2), "op": "all_reduce", "size": "25MiB", "algorithm": "nccl_ring", "chunks": 8}
    )
    info = describe(s, picked=False)
    assert (info.nccl_algorithm, info.nccl_protocol, info.channels, info.model_pick) == ("Ring", "Simple", 8, "Ring/LL128")
    assert info.model_time_s == predict("dgx-h100", 2, "all_reduce", SIZE, "Ring", "Simple").time_s
    assert describe(s.replace(algorithm="ring"), picked=False) is None


def test_the_rates_line_names_what_the_links_carry_and_where_each_comes_from(monkeypatch):
    """The datasheet figures a form shows x the preset's effective constants: the line's rates
    are the DES topology's own link rates (every channel run, so no link is split among the
    simulated ones), and a changed constant moves both."""
    from sim.hardware import presets
    from sim.nccl import topo as nccl_topo
    from sim.nccl.topo import rates_line, topology
    from sim.units import format_bandwidth

    monkeypatch.setattr(nccl_topo, "COLLAPSE", False)
    scenario, _ = scenario_for_pick("oci-a100-roce", 2, "all_reduce", 2**30, "Ring", "Simple")
    built = topology(scenario).graph
    nvlink, nic = built.edges["hub0.0", "node0"]["bandwidth"], built.edges["hub0.0", "nic0.0"]["bandwidth"]
    line = rates_line(scenario)
    eff = presets.effective(presets.load_preset("oci-a100-roce"))
    assert f"NVLink {format_bandwidth(nvlink)} a GPU = 0.8 (default) x 300 GB/s" in line
    assert f"network {format_bandwidth(nic)} a GPU = {eff.inter_efficiency:.3g} (fitted) x 12.5 GB/s x 2 NICs" in line
    assert "(fitted): NCCL's Ring/Simple tables x 1 (default)" in line and "incl. base 12.77 us" in line
    presets.TRIAL["oci-a100-roce"] = {"intra_efficiency": 0.5}
    try:
        assert "NVLink 150 GB/s a GPU = 0.5 (trial) x 300 GB/s" in rates_line(scenario)
        assert topology(scenario).graph.edges["hub0.0", "node0"]["bandwidth"] == 150e9
    finally:
        presets.TRIAL.pop("oci-a100-roce")
    one_node, _ = scenario_for_pick("hgx-h100-nvls", 1, "all_reduce", 2**30, None, None)
    assert "switch 256.9 GB/s = 0.642 (fitted) x 400 GB/s" in rates_line(one_node) and "network" not in rates_line(one_node)
    assert describe(one_node).rates == rates_line(one_node)
