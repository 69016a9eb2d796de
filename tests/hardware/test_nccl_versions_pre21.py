"""NCCL 2.19 and 2.20 (sim.nccl.versions records "2.19", "2.20"): what their tuning.cc computes
differently from 2.21's, worked out by hand from the lines each record cites, and what 2.19 picks
on the OCI A100 RoCE machine of the log it ran (real/data/nccl-tests, NCCL 2.19.3 inferred)."""

from __future__ import annotations

import dataclasses

import pytest

from sim.hardware.presets import Graph, load_preset
from sim.nccl.model import predict
from sim.nccl.versions import nccl_version

MiB = 2**20


def candidate(prediction, algorithm: str, protocol: str) -> float:
    """A candidate's time in us (None: not weighed)."""
    found = [c.time_s for c in prediction.candidates if (c.algorithm, c.protocol) == (algorithm, protocol)]
    return found[0] * 1e6 if found else None


@pytest.mark.parametrize("version", ["2.19", "2.20"])
def test_before_2_21_ring_ll_runs_at_a_third_of_the_channels_on_one_node(version):
    """v2.19.3-1 tuning.cc:180 / v2.20.5-1:181: Ring/LL busBw x 1/3 for a one-node broadcast (x 1/4
    on several nodes or for all_reduce/reduce); 2.21 (v2.21.5-1:180): x 0.5. One DGX A100 (ring
    graph 12 x 20 GB/s), 1 MiB broadcast: min(llMaxBws Ampere-N1 87.7, 240 / 3 = 80) against 87.7."""
    old = predict("dgx-a100", 1, "broadcast", MiB, nccl_version=version)
    new = predict("dgx-a100", 1, "broadcast", MiB, nccl_version="2.21")
    lat = 6.6 + 0.6  # baseLat Ring/LL + hwLat NVLink Ring/LL (same channels: one hop)
    assert candidate(old, "Ring", "LL") == pytest.approx(lat + MiB / (1000 * 80.0), rel=1e-9)
    assert candidate(new, "Ring", "LL") == pytest.approx(lat + MiB / (1000 * 87.7), rel=1e-9)


@pytest.mark.parametrize("version", ["2.19", "2.20"])
def test_before_2_21_hopper_reads_amperes_ll_row_and_nvls_pays_23_us_on_nvlink(version):
    """v2.19.3-1 tuning.cc:89 (v2.20.5-1:89): llMaxBws Hopper row {87.7, 22.5, 19.0} (2.21: 141);
    line 69: hwLat NVLink NVLS 23 us (2.21: 25). One HGX H100: a 1 MiB broadcast's Ring/LL at
    min(87.7, 16 x ... / 3), and a 128 MiB all_reduce's NVLS 2 us sooner."""
    old = predict("hgx-h100-nvls", 1, "broadcast", MiB, nccl_version=version)
    assert candidate(old, "Ring", "LL") == pytest.approx(6.6 + 0.6 + MiB / (1000 * 87.7), rel=1e-9)
    size = 128 * MiB
    nvls = {v: candidate(predict("hgx-h100-nvls", 1, "all_reduce", size, nccl_version=v), "NVLS", "Simple") for v in (version, "2.21")}
    assert nvls["2.21"] - nvls[version] == pytest.approx(25 - 23, rel=1e-9)


def test_2_19_weighs_no_collnet_direct_for_all_gather_where_2_20_does():
    """v2.19.3-1 tuning.cc:168-169: all_gather/reduce_scatter weigh Ring and NVLS only; v2.20.5-1
    lines 169-170 add CollNetDirect. One DGX H100 with SHARP (collnet): CollNetDirect is a
    candidate for a 64 MiB all_gather in 2.20, not in 2.19."""
    preset = load_preset("dgx-h100")
    preset = dataclasses.replace(preset, nccl=dataclasses.replace(preset.nccl, collnet=True))
    algorithms = {v: {c.algorithm for c in predict(preset, 1, "all_gather", 64 * MiB, nccl_version=v).candidates} for v in ("2.19", "2.20")}
    assert "CollNetDirect" in algorithms["2.20"] and "CollNetDirect" not in algorithms["2.19"]


def test_patch_names_of_2_19_and_2_20_reach_their_lines():
    assert nccl_version("v2.19.3-1").name == nccl_version("2.19.4+cuda12.2").name == "2.19"
    assert nccl_version("2.20.5").name == "2.20"


def _oci_tree(bw_intra: float):
    """oci-a100-roce with its two-node tree graph at 16 channels x bw_intra / 12 GB/s."""
    preset = load_preset("oci-a100-roce")
    graphs = {**preset.nccl.graphs, "tree": Graph(16, bw_intra, 12.0)}
    return dataclasses.replace(preset, nccl=dataclasses.replace(preset.nccl, graphs=graphs))


def test_on_the_oci_a100_log_2_19_keeps_tree_ll128_to_512_mib_where_2_27_runs_tree_simple():
    """With the tree graph search.cc's pass 2 gives (v2.19.3-1 src/graph/search.cc:1013-1016: bwIntra
    12 -> 15, 16 x 15 = 240 GB/s = 12 NVLinks x SM80_NVLINK_BW 20), Tree/Simple's bandwidth on 2
    nodes is 16 x 15 x 0.92 x 0.5 = 110.4 GB/s (tuning.cc:174, 182), Ring/Simple's 16 x 12 x 16/30
    = 102.4. 2.19's Tree/Simple pays 2 x (7 x 28 + 28) = 448 us (tuning.cc:65-78, 232-233; 2.27:
    8.4 + 2 x (7 x 4 + 14) = 92.4), so at 512 MiB 2.19 stays on Tree/LL128 (16 x 15 x 0.92 x
    120/128 x 0.5 = 103.5 GB/s, 48.5 us) and takes Tree/Simple from 1 GiB: the log's 166 GB/s at
    512 MiB and jump to 222 at 1 GiB. With the preset's 16 x 12/12 tree, both run Ring/Simple."""
    preset = _oci_tree(15.0)
    picks = {v: [predict(preset, 2, "all_reduce", s * MiB, nccl_version=v) for s in (512, 1024)] for v in ("2.19", "2.27")}
    old = picks["2.19"][0]
    assert candidate(old, "Tree", "Simple") == pytest.approx(448 + 512 * MiB / (1000 * 110.4), rel=1e-6)
    assert candidate(old, "Tree", "LL128") == pytest.approx(48.5 + 512 * MiB / (1000 * 103.5), rel=1e-6)
    assert [(p.nccl_algorithm, p.nccl_protocol) for p in picks["2.19"]] == [("Tree", "LL128"), ("Tree", "Simple")]
    assert [(p.nccl_algorithm, p.nccl_protocol) for p in picks["2.27"]] == [("Tree", "Simple"), ("Tree", "Simple")]
    plain = [predict("oci-a100-roce", 2, "all_reduce", s * MiB, nccl_version=v) for s in (512, 8192) for v in ("2.19", "2.27")]
    assert {(p.nccl_algorithm, p.nccl_protocol) for p in plain} == {("Ring", "Simple")}


@pytest.mark.slow
@pytest.mark.parametrize(
    "algorithm, protocol, per_direction", [("Tree", "Simple", 1.0), ("Tree", "LL128", 128 / 120), ("Ring", "Simple", 30 / 16)]
)
def test_on_two_nodes_the_des_tree_crosses_n_bytes_each_way_where_a_ring_crosses_2_k_minus_1_over_k_n(algorithm, protocol, per_direction):
    """Why the 2.19 log can pass a ring's bound: a ring of k = 16 ranks sends 2(k-1)/k n = 1.875 n
    through a node's NICs each way, so its busbw (algbw x 1.875) cannot pass the NICs' 16 x 12.5 =
    200 GB/s; the log reaches 238 at 8 GiB. NCCL's double binary tree on 2 nodes sends each
    channel's share up once and down once: a node's NICs carry n bytes each way (LL128: x 128/120
    on the wire). Every channel counted (wire_copies), from the DES's per-pair byte totals."""
    from sim.collective.pick import scenario_for_pick
    from sim.collective.runner import run_collective

    n = 64 * MiB
    scenario, _ = scenario_for_pick("oci-a100-roce", 2, "all_reduce", n, algorithm, protocol)
    result = run_collective(scenario.replace(record="full"))
    pairs = result.records.pairs
    crossing = {(0, 1): 0, (1, 0): 0}
    for src, dst, nbytes in zip(pairs["src"], pairs["dst"], pairs["nbytes"]):
        if src // 8 != dst // 8:
            crossing[(int(src) // 8, int(dst) // 8)] += int(nbytes)
    assert [crossing[key] * result.wire_copies / n for key in ((0, 1), (1, 0))] == pytest.approx([per_direction] * 2, rel=1e-3)
