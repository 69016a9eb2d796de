"""Hardware presets: every value cited, the topology they build, the CLI around them."""

import json
from pathlib import Path

import pytest
import yaml

from sim.collective.runner import run_collective
from sim.errors import CollsimError
from sim.hardware.cluster import build
from sim.hardware.presets import HERE, list_presets, load_preset, parse_preset
from sim.scenario import CollectiveScenario

from ..cli_in_process import collsim_in_process


def test_required_presets_load_with_sources():
    assert {"dgx-a100", "dgx-h100", "hgx-h100-nvls", "pcie-gen4-8gpu", "cpu-ethernet-25g"} <= set(list_presets())
    assert {"hgx-h200", "hgx-b200", "gb200-nvl72"} <= set(list_presets())
    for name in list_presets():
        preset = load_preset(name)
        assert preset.name == name
        assert all(source.strip() for source in preset.sources.values())


def test_an_uncited_value_is_refused():
    raw = yaml.safe_load((HERE / "dgx-h100.yaml").read_text())
    del raw["sources"]["nic_bandwidth"]
    with pytest.raises(CollsimError, match="uncited: nic_bandwidth"):
        parse_preset(raw, "edited")


def test_an_uncited_nvlink_domain_is_refused():
    raw = yaml.safe_load((HERE / "gb200-nvl72.yaml").read_text())
    assert parse_preset(raw, "gb200").nvlink_domain_nodes == 18
    del raw["sources"]["nvlink_domain_nodes"]
    with pytest.raises(CollsimError, match="uncited: nvlink_domain_nodes"):
        parse_preset(raw, "edited")


@pytest.mark.parametrize("name, nodes, graph", [("hgx-h200", 2, (8, 45.0)), ("hgx-b200", 2, (8, 48.0)), ("gb200-nvl72", 36, (16, 45.1))])
def test_new_presets_multi_node_rings_follow_nccls_search(name, nodes, graph):
    """The hand-derived multi-node ring graphs equal what sim.hardware.presets.net_graph derives
    from the preset's NICs with NCCL's search rules (search.cc speed arrays, DupChannels)."""
    from sim.hardware.presets import net_graph

    preset = load_preset(name)
    ring = preset.nccl.graph("ring", preset.nccl_nodes(nodes)[0])
    assert (ring.n_channels, ring.bw_inter) == graph
    if name != "gb200-nvl72":  # a rack's 72 NICs: more than the 16 channels NCCL searches for
        assert net_graph(preset.nccl, preset.nics_per_node, preset.nic_bandwidth_Bps / 1e9) == ring


def test_rails_one_nic_per_gpu():
    preset = load_preset("dgx-h100")
    topology = build(preset, 2, 1e-6, 450e9, 14e-6, 50e9)
    nics = [node for node in topology.graph if str(node).startswith("nic")]
    assert len(nics) == 16 and topology.ranks == 16
    assert topology.graph.has_edge(3, "nic0.3") and topology.graph.has_edge(11, "nic1.3")


def _scenario(**fields):
    from sim.hardware.presets import scenario_fields

    return CollectiveScenario.from_dict({**scenario_fields("dgx-h100", 2), "op": "all_reduce", "algorithm": "ring", **fields})


def test_inter_node_message_crosses_two_nics_and_pays_the_inter_latency():
    result = run_collective(_scenario(op="send_recv", algorithm="direct", size_bytes=50_000_000))
    # rank 0 -> rank 15: GPU0 -> nic0.0 -> core -> nic1.7 -> GPU15, 14 us + 50 MB at 50 GB/s
    assert result.time_s == pytest.approx(14e-6 + 1e-3, rel=1e-9)


def test_preset_runs_verify():
    result = run_collective(_scenario(size_bytes=16 * 4 * 8, verify=True))
    assert result.verified


def _cli(*args):
    return collsim_in_process(*args, cwd=Path.cwd())  # what it prints: no Python start-up needed


def test_done_when_command_prints_nccl_pick():
    result = _cli(
        "sim", "collective", "--hardware", "dgx-h100", "--nodes", "2", "--op", "all_reduce", "--size", "1GiB", "--model", "nccl", "--json"
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["nccl_algorithm"], data["nccl_protocol"]) == ("Ring", "Simple")
    assert data["time_s"] > 0 and data["busbw_GBps"] > 300
    assert {c["algorithm"] for c in data["candidates"]} == {"Tree", "Ring"}


def test_hardware_list_show_and_errors():
    listed = _cli("hardware", "list")
    assert listed.returncode == 0 and "dgx-h100" in listed.stdout
    shown = _cli("hardware", "show", "dgx-a100")
    assert "source:" in shown.stdout and "AMD EPYC 7742" in shown.stdout
    bad = _cli("hardware", "show", "dgx-z9")
    assert bad.returncode == 2 and bad.stderr.startswith("error: hardware: unknown preset 'dgx-z9'")
    mismatch = _cli(
        "sim", "collective", "--hardware", "dgx-h100", "--nodes", "2", "--ranks", "8", "--op", "all_reduce", "--algorithm", "ring"
    )
    assert mismatch.returncode == 2 and "gives 16 ranks" in mismatch.stderr and "Traceback" not in mismatch.stderr
    override = _cli("sim", "collective", "--hardware", "dgx-h100", "--op", "all_reduce", "--algorithm", "ring", "--size", "8MiB",
                    "--intra-bandwidth", "100GB/s", "--intra-latency", "0s", "--json")  # fmt: skip
    # 1 node, ring: 2 x 7 steps of 1 MiB at the overriding 100 GB/s
    assert json.loads(override.stdout)["time_s"] == pytest.approx(14 * 2**20 / 100e9, rel=1e-9)


def test_model_nccl_and_the_des_run_the_nvls_pick():
    result = _cli("sim", "collective", "--hardware", "hgx-h100-nvls", "--op", "all_reduce", "--size", "8GiB", "--model", "nccl", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["nccl_algorithm"] == "NVLS"
    des = _cli("sim", "collective", "--hardware", "hgx-h100-nvls", "--op", "all_reduce", "--size", "8GiB", "--json")
    assert des.returncode == 0 and json.loads(des.stdout)["algorithm"] == "nccl_nvls"
    forced = _cli("sim", "collective", "--hardware", "hgx-h100-nvls", "--op", "all_reduce", "--size", "8GiB", "--nccl-algo", "^nvls",
                  "--nccl-proto", "simple", "--json")  # fmt: skip
    assert forced.returncode == 0 and json.loads(forced.stdout)["algorithm"] in ("nccl_ring", "nccl_tree")
    bad = _cli("sim", "collective", "--hardware", "hgx-h100-nvls", "--op", "all_reduce", "--size", "8GiB", "--nccl-proto", "LL256")
    assert bad.returncode == 2 and "unknown proto 'LL256'" in bad.stderr and "Traceback" not in bad.stderr
