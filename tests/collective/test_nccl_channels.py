"""How many channels NCCL runs a Ring/Tree call on: comm->nChannels as ncclTopoPostset sets it
(src/graph/connect.cc, v2.27.7-1 :452-495) and comm->nvlsChannels (src/transport/nvls.cc
:147-198), computed by hand from those lines and compared with sim.nccl.model and the DES's pick."""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.collective.pick import scenario_for_pick
from sim.hardware.presets import Graph, load_preset
from sim.nccl.model import comm_channels, nvls_channels
from sim.nccl.topo import path_params
from sim.nccl.versions import nccl_version


def _system(preset: str, ring: Graph, nvls: bool):
    """A preset's NcclSystem with its multi-node ring and tree graphs replaced by ``ring``."""
    system = load_preset(preset).nccl
    return dataclasses.replace(system, nvls=nvls, graphs={**system.graphs, "ring": ring, "tree": ring})


def test_two_hgx_b200_nodes_run_rings_on_the_32_nvls_channels_up_to_2_27():
    """The ring/tree graphs give 8 channels, doubled to 16 (connect.cc:452); NVLS is on, so 2.27
    copies the rings up to nvlsChannels = NVLS_NCHANNELS_SM100 = 32 across nodes (:493-495,
    nvls.cc:148, 193). 2.28 dropped the copy: 16."""
    system = load_preset("hgx-b200").nccl
    assert system.graph("ring", 2).n_channels == 8
    assert comm_channels(system, 2) == 32
    assert comm_channels(system, 2, nccl_version("2.26")) == 32
    assert comm_channels(system, 2, nccl_version("2.29")) == 16
    assert comm_channels(dataclasses.replace(system, nvls=False), 2) == 16


def test_the_picked_all_gather_on_two_hgx_b200_nodes_runs_32_channels():
    scenario, _ = scenario_for_pick("hgx-b200", 2, "all_gather", 16 << 20)
    assert scenario.chunks == 32
    assert path_params(scenario, load_preset("hgx-b200")).channels == 32
    older, _ = scenario_for_pick("hgx-b200", 2, "all_gather", 16 << 20, nccl_version="2.29")
    assert older.chunks == 16


@pytest.mark.parametrize(
    ("bw_intra", "nodes", "compute_capability", "expected"),
    [
        (48.0, 2, 90, 16),  # 4 graph channels -> 8 -> 16: "4 compute channels per search channel" (:466-468)
        (45.0, 2, 90, 8),  # bwIntra must exceed 45
        (48.0, 2, 80, 8),  # SM90 and later only
    ],
)
def test_few_fast_rings_across_nodes_get_four_channels_a_search_channel(bw_intra, nodes, compute_capability, expected):
    system = dataclasses.replace(_system("dgx-h100", Graph(4, bw_intra, bw_intra), nvls=False), compute_capability=compute_capability)
    assert comm_channels(system, nodes) == expected


def test_up_to_2_24_only_hopper_doubles_its_rings():
    """v2.24.3-1 connect.cc:468 tests minCompCap == 90 (2.25+: >= 90): a Blackwell ring stays at 8."""
    system = dataclasses.replace(_system("dgx-h100", Graph(4, 48.0, 48.0), nvls=False), compute_capability=100)
    assert comm_channels(system, 2, nccl_version("2.24")) == 8
    assert comm_channels(system, 2, nccl_version("2.25")) == 16


@pytest.mark.parametrize(
    ("compute_capability", "nodes", "version", "expected"),
    [
        (90, 2, "2.27", 16),  # NVLS_NCHANNELS_SM90
        (100, 2, "2.27", 32),  # NVLS_NCHANNELS_SM100, ranks on several nodes
        (100, 1, "2.27", 24),  # NVLS_NCHANNELS_SM100_NVL: one node or one NVLink domain
        (100, 1, "2.26", 32),  # 2.25-2.26: no NVL-domain count yet
        (100, 1, "2.24", 16),  # up to 2.24: NCCL_NVLS_NCHANNELS' default 16 for every GPU
    ],
)
def test_nvls_channels_follow_nvls_cc(compute_capability, nodes, version, expected):
    assert nvls_channels(compute_capability, nodes, nccl_version(version)) == expected


def test_nvls_on_one_hgx_b200_node_runs_24_channels():
    scenario, _ = scenario_for_pick("hgx-b200", 1, "all_reduce", 1 << 30)
    assert scenario.algorithm == "nccl_nvls"
    assert path_params(scenario, load_preset("hgx-b200")).channels == 24


@pytest.mark.slow
def test_the_cli_says_how_many_channels_nccl_runs_the_ring_on():
    """What a user reads: the pick line names NCCL's channel count for the call."""
    args = ["sim", "collective", "--hardware", "hgx-b200", "--nodes", "2", "--op", "all_gather", "--size", "16MiB"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "NCCL picks Ring/LL128 on 32 channels" in result.output
    result = CliRunner().invoke(cli, [*args, "--nccl-version", "2.29"])
    assert "NCCL picks Ring/LL128 on 16 channels" in result.output
