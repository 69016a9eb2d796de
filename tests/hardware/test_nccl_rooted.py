"""NCCL's Ring broadcast and reduce on NCCL's data path (sim.nccl.rooted): the closed form
of a pipelined chain on a uniform switch, the collective's definition, NCCL's own model at sizes
where bandwidth dominates, the ring all_gather on the same links, and the pick."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.algorithms.call import Call
from sim.cli import cli
from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.hardware.presets import load_preset
from sim.nccl import topo as nccl_topo
from sim.nccl.model import predict
from sim.nccl.proto import BY_NAME
from sim.nccl.rooted import WAVE_BYTES, chain, chain_pieces
from sim.scenario import CollectiveScenario

PROTOCOLS = {"nccl_ring": "Simple", "nccl_ring_ll": "LL", "nccl_ring_ll128": "LL128"}


@pytest.mark.parametrize("op", ["broadcast", "reduce"])
@pytest.mark.parametrize("algorithm", sorted(PROTOCOLS))
def test_one_channel_on_a_switch_is_a_pipelined_chain(op, algorithm):
    """(p - 2 + k)(a + w b / k): k pieces (Simple: one-slot chunks, as NCCL's BROADCAST/
    REDUCE_CHUNKSTEPS = 1; LL, LL128: one line pass of the thread block, 8 and 15 a slot) of wire
    bytes w (LL doubles them, LL128 x 128/120) down p - 1 hops, to 1e-9."""
    protocol = PROTOCOLS[algorithm]
    p, latency_s, bandwidth_Bps = 6, 2e-6, 10e9
    size = 5 * WAVE_BYTES[protocol] - 5 * WAVE_BYTES[protocol] % 4
    s = CollectiveScenario.from_dict(
        {"op": op, "algorithm": algorithm, "ranks": p, "size_bytes": size, "latency_s": latency_s, "bandwidth_Bps": bandwidth_Bps}
    )
    k = len(chain_pieces(Call(op, p, size), 1, 0, protocol))
    assert k == 5
    wire = size / BY_NAME[protocol].data_per_wire
    expected = (p - 2 + k) * (latency_s + wire / k / bandwidth_Bps)
    assert run_collective(s).time_s == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("op", ["broadcast", "reduce"])
@pytest.mark.parametrize("algorithm", sorted(PROTOCOLS))
def test_every_channel_ends_with_the_definition(op, algorithm):
    """Three channels (not collapsed: --verify runs every one) on 2 x dgx-a100, root inside the second node."""
    s, _ = scenario_for_pick("dgx-a100", 2, op, 3 * 2**20 + 12, verify=True, root=11, chunks=3)
    result = run_collective(s.replace(algorithm=algorithm))
    assert result.verified is True


def test_the_chain_follows_the_channel_ring_from_the_root_and_ends_at_it_for_reduce():
    assert chain(16, 8, 1, 10, "broadcast") == [10, 11, 12, 13, 14, 15, 8, 1, 2, 3, 4, 5, 6, 7, 0, 9]
    assert chain(16, 8, 1, 10, "reduce") == [11, 12, 13, 14, 15, 8, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10]


def _fill(s, protocol):
    """The chain's pipeline fill: (p - 2) pieces more than the k a channel moves (NCCL's model
    charges none: tuning.cc:339-341 adds one hop of latency for broadcast and reduce)."""
    channels = nccl_topo.path_params(s, load_preset(s.hardware)).channels
    return (s.ranks - 2) / len(chain_pieces(Call(s.op, s.ranks, s.size_bytes), channels, 0, protocol))


@pytest.mark.parametrize("nodes", [1, 2, 4])
@pytest.mark.parametrize("protocol", ["Simple", "LL128", "LL"])
def test_large_broadcast_and_reduce_agree_with_nccls_model(nodes, protocol):
    """dgx-h100 (datasheet efficiencies, no fitted latency): at sizes where bandwidth dominates
    (Simple 8 GiB, LL128 1 GiB, LL 64 MiB: a thousand pieces a channel or more) the DES is NCCL's model
    times the chain's fill to 3 % (what is left: the effective NVLink/NIC rates against the
    graph's 8-12 channel bandwidths, which the model reads instead)."""
    size = {"Simple": 8 * 2**30, "LL128": 2**30, "LL": 2**26}[protocol]
    for op in ("broadcast", "reduce"):
        s, _ = scenario_for_pick("dgx-h100", nodes, op, size, "Ring", protocol)
        model_s = predict("dgx-h100", nodes, op, size, "Ring", protocol).time_s
        assert run_collective(s).time_s / (model_s * (1 + _fill(s, protocol))) == pytest.approx(1.0, abs=0.03)


@pytest.mark.parametrize("hardware", ["hgx-h100-nvls", "dgx-a100", "gcp-a3-mega", "oci-a100-roce", "hgx-b200", "gb200-nvl72"])
def test_broadcast_moves_at_the_rate_of_the_ring_on_every_presets_links(hardware):
    """Fitted constants included: a broadcast's chain carries S through each GPU's links where the
    ring's all_gather carries (p-1)/p S, so broadcast = all_gather x p/(p-1) x (1 + fill), to 3 %."""
    size = 2**32
    for nodes in (1, 2):
        b, _ = scenario_for_pick(hardware, nodes, "broadcast", size, "Ring", "Simple")
        g, _ = scenario_for_pick(hardware, nodes, "all_gather", size, "Ring", "Simple")
        p = b.ranks
        ratio = run_collective(b).time_s / (run_collective(g).time_s * p / (p - 1) * (1 + _fill(b, "Simple")))
        assert ratio == pytest.approx(1.0, abs=0.03), (nodes, ratio)


@pytest.mark.parametrize("op", ["broadcast", "reduce"])
def test_the_collapsed_run_is_the_full_run_on_one_node(op):
    """Max-min fair sharing splits each link equally among the channels (all cross the same
    links on one node): exactly the collapse, as for the ring (tests/hardware/test_nccl_path.py)."""
    s, _ = scenario_for_pick("dgx-h100", 1, op, 24 * 8 * 4 * 2048, sharing="fair")
    collapsed = run_collective(s).time_s
    nccl_topo.COLLAPSE = False
    try:
        full = run_collective(s).time_s
    finally:
        nccl_topo.COLLAPSE = True
    assert collapsed == pytest.approx(full, rel=1e-9)


@pytest.mark.parametrize("op", ["broadcast", "reduce"])
def test_the_default_runs_nccls_pick_restricted_as_nccl_proto(op):
    base = ["sim", "collective", "--hardware", "hgx-h100-nvls", "--nodes", "2", "--op", op, "--json"]
    for size, proto, expected in [("1GiB", None, None), ("64MiB", "LL", "nccl_ring_ll"), ("64MiB", "^LL,LL128", "nccl_ring")]:
        args = base + ["--size", size] + (["--nccl-proto", proto] if proto else [])
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        pick = predict("hgx-h100-nvls", 2, op, 2**30 if size == "1GiB" else 2**26, None, proto)
        algorithm = {"Simple": "nccl_ring", "LL": "nccl_ring_ll", "LL128": "nccl_ring_ll128"}[pick.nccl_protocol]
        assert json.loads(result.output)["algorithm"] == (expected or algorithm) == algorithm
    bad = CliRunner().invoke(cli, base + ["--size", "1MiB", "--nccl-algo", "Tree"])
    assert bad.exit_code != 0 and "no algorithm/protocol left" in bad.output
