"""NCCL's tuning model against picks and times computed by hand from NCCL v2.27.7-1
(src/graph/tuning.cc, src/enqueue.cc), with the presets' channel graphs."""

import pytest

from sim.errors import CollsimError
from sim.nccl import model as nccl_model
from sim.nccl.model import predict

GiB, MiB = 2**30, 2**20

# (hardware, nodes, op, bytes, algorithm, protocol, time in us), each worked out below.
PINNED = [
    # 1 node dgx-h100, ring graph 12 ch x 30 GB/s: busBw 360, x nRanks/nsteps = 8/14 -> 205.714 GB/s;
    # lat = baseLat 8.4 + 14 steps x hwLat[NVLink][Ring][Simple] 3.4 = 56.0 us; no plateau on 1 node
    ("dgx-h100", 1, "all_reduce", GiB, "Ring", "Simple", 56.0 + GiB / (1000 * 360 * 8 / 14)),
    # 2 nodes: ring 8 ch x 45 (bwIntra, nNodes <= 2) = 360 x 16/30 = 192 GB/s; lat = 8.4 + 28 x
    # max(3.4, netOverhead 1 x 3) + 2 inter steps x hwLat[NET][Ring][Simple] 14 = 131.6, plateau x 1.4
    ("dgx-h100", 2, "all_reduce", GiB, "Ring", "Simple", 131.6 * 1.4 + GiB / (1000 * 192.0)),
    # 2 nodes, 1 KiB: Tree/LL: busBw min(360 x .92, 8 x 41.4) = 331.2, LL: min(331.2/3.8, llMaxBw 39.0)
    # = 39, x .5 = 19.5, tree correction[LL][log2(1024>>6)=4] = .9 -> 17.55;
    # lat = 6.8 + 2 x (7 x .6 + 1 x 5.0) = 25.2
    ("dgx-h100", 2, "all_reduce", 1024, "Tree", "LL", 25.2 + 1024 / (1000 * 19.5 * 0.9)),
    # 1 node hgx-h100-nvls: NVLS graph 8 x 40: busBw 320 x 5/6; lat = hwLat[NVLink][NVLS][Simple] 25
    ("hgx-h100-nvls", 1, "all_reduce", GiB, "NVLS", "Simple", 25.0 + GiB / (1000 * 320 * 5 / 6)),
    # 2 nodes: NVLSTree: bw min(40, 40) x 8 = 320 x 5/6; lat = 0 + 25 + 2 x 1 x hwLat[NET][NVLSTree][Simple] 14
    ("hgx-h100-nvls", 2, "all_reduce", GiB, "NVLSTree", "Simple", 53.0 + GiB / (1000 * 320 * 5 / 6)),
    # all_gather, 1 node: ring 360 x 8/7; lat = 8.4 + 7 x 3.4 = 32.2
    ("dgx-h100", 1, "all_gather", GiB, "Ring", "Simple", 32.2 + GiB / (1000 * 360 * 8 / 7)),
    # broadcast, 1 node, 1 KiB: Ring/LL: busBw min(llMaxBw[Hopper][N1] 141, 360 x .5) = 141 x 8/8;
    # lat = 6.6 + hwLat[NVLink][Ring][LL] .6 (sameChannels)
    ("dgx-h100", 1, "broadcast", 1024, "Ring", "LL", 7.2 + 1024 / (1000 * 141.0)),
    # dgx-a100, 2 nodes, 1 GiB (AMD host): ring 8 x 24 = 192 x 16/30 = 102.4; lat = 8.4 + 28 x
    # max(3.4, 2.0 x 3) + 2 x 14 = 204.4, plateau x 1.4
    ("dgx-a100", 2, "all_reduce", GiB, "Ring", "Simple", 204.4 * 1.4 + GiB / (1000 * 102.4)),
    # pcie-gen4-8gpu (SYS paths: no LL128), 64 MiB: ring 1 x 5 = 5 x 8/14; lat = 8.4 + 14 x 5.7 = 88.2
    ("pcie-gen4-8gpu", 1, "all_reduce", 64 * MiB, "Ring", "Simple", 88.2 + 64 * MiB / (1000 * 5 * 8 / 14)),
]


@pytest.mark.parametrize("hardware, nodes, op, nbytes, algorithm, protocol, time_us", PINNED)
def test_pinned_picks_and_times(hardware, nodes, op, nbytes, algorithm, protocol, time_us):
    prediction = predict(hardware, nodes, op, nbytes)
    assert (prediction.nccl_algorithm, prediction.nccl_protocol) == (algorithm, protocol)
    assert prediction.time_s == pytest.approx(time_us * 1e-6, rel=1e-9)


def test_pick_is_the_fastest_candidate_and_busbw_follows_nccl_tests():
    prediction = predict("dgx-h100", 4, "all_reduce", 256 * MiB)
    assert prediction.time_s == min(c.time_s for c in prediction.candidates)
    ranks = 32
    assert prediction.busbw_GBps == pytest.approx(256 * MiB / prediction.time_s / 1e9 * 2 * (ranks - 1) / ranks)


def test_candidates_respect_applicability():
    one = {(c.algorithm, c.protocol) for c in predict("dgx-h100", 1, "all_reduce", MiB).candidates}
    assert ("NVLS", "Simple") not in one and ("NVLSTree", "Simple") not in one  # NVLS off on this preset
    nvls = {(c.algorithm, c.protocol) for c in predict("hgx-h100-nvls", 1, "all_reduce", MiB).candidates}
    assert ("NVLS", "Simple") in nvls and ("NVLSTree", "Simple") not in nvls  # NVLSTree needs > 1 node
    multi = {(c.algorithm, c.protocol) for c in predict("hgx-h100-nvls", 2, "all_reduce", MiB).candidates}
    assert ("NVLS", "Simple") not in multi and ("NVLSTree", "Simple") in multi  # NVLS across nodes needs CollNet
    gather = {c.algorithm for c in predict("dgx-h100", 2, "all_gather", MiB).candidates}
    assert gather == {"Ring"}  # no PAT with 8 GPUs a node, no Tree for all_gather
    pcie = {c.protocol for c in predict("pcie-gen4-8gpu", 1, "all_reduce", MiB).candidates}
    assert "LL128" not in pcie  # LL128 needs NVLink-class paths


def test_crossover_moves_from_latency_to_bandwidth_protocols():
    picks = [p.nccl_protocol for p in nccl_model.crossover("dgx-h100", 1, "all_reduce", [1024, GiB])]
    assert picks == ["LL", "Simple"]


def test_refusals():
    with pytest.raises(CollsimError, match="gloo"):
        predict("cpu-ethernet-25g", 2, "all_reduce", MiB)
    with pytest.raises(CollsimError, match="allowed: broadcast"):
        predict("dgx-h100", 1, "barrier", MiB)
    with pytest.raises(CollsimError, match="at most 1 node"):
        predict("pcie-gen4-8gpu", 2, "all_reduce", MiB)


def test_pat_on_one_gpu_per_node():
    """PAT needs one GPU a node: a made-up 1-GPU H100 node with two 20 GB/s channels."""
    import yaml

    from sim.hardware.presets import HERE, parse_preset

    raw = yaml.safe_load((HERE / "dgx-h100.yaml").read_text())
    raw.update(gpus_per_node=1, nics_per_node=1)
    raw["nccl"]["graphs"] = {"ring": [2, 20.0, 20.0], "tree": [2, 20.0, 20.0]}
    prediction = predict(parse_preset(raw, "one-gpu"), 4, "all_gather", MiB)
    times = {(c.algorithm, c.protocol): c.time_s * 1e6 for c in prediction.candidates}
    # PAT: 8 + log2(4) x (hwLat[NET][Tree][Simple] 14 / 3.5) + 4 ranks x 2.8 = 27.2 us; 2 x 20 x .75 = 30 GB/s
    assert times["PAT", "Simple"] == pytest.approx(27.2 + MiB / 30000, rel=1e-9)
    # Ring/LL128: min(40 x .92, 2 x 36.7) x 4/3; lat 14.0 + 3 inter steps x hwLat[NET][Tree][LL128] 8.5 (ppn 1)
    assert times["Ring", "LL128"] == pytest.approx(39.5 + MiB / (1000 * 36.8 * 4 / 3), rel=1e-9)
    # Ring/LL: min(llMaxBw[Intel][N4] 20.4, 40 x .5) x 4/3; lat 6.6 + 3 x 5.0
    assert times["Ring", "LL"] == pytest.approx(21.6 + MiB / (1000 * 20 * 4 / 3), rel=1e-9)
    assert (prediction.nccl_algorithm, prediction.nccl_protocol) == ("Ring", "LL128")
