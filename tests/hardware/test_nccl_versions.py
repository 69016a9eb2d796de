"""NCCL's tuning model per release line (sim.nccl.versions): each line's pick or time against 2.27's,
computed by hand from the constants its record cites, and the default unchanged on every preset."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.errors import CollsimError
from sim.hardware.presets import effective, load_preset, scenario_fields
from sim.nccl.model import FUNCTIONS, nccl_presets, predict
from sim.nccl.versions import known_versions, nccl_version
from sim.scenario import CollectiveScenario

GOLDEN = Path(__file__).parent / "data" / "nccl_model_default_golden.json"
MiB = 2**20


def candidate(prediction, algorithm: str, protocol: str) -> float:
    """A candidate's time in us."""
    return next(c.time_s for c in prediction.candidates if (c.algorithm, c.protocol) == (algorithm, protocol)) * 1e6


def inter_us(preset: str) -> float:
    """graphs[a]->latencyInter of the preset (what NCCL adds to each network hop, twice for Simple)."""
    return effective(load_preset(preset)).nccl.latency_inter_us


def _cases():
    """Every bundled NCCL preset x node count x op x size 8**k bytes (k < 12): the golden file's keys."""
    for name in nccl_presets():
        preset = load_preset(name)
        for nodes in (1, 2, 4, 32):
            try:
                preset.check_nodes(nodes)
            except CollsimError:
                continue
            for op in FUNCTIONS:
                for k in range(12):
                    yield name, nodes, op, 8**k


@pytest.mark.slow
def test_the_default_version_predicts_bit_for_bit_what_the_model_did_before_versions():
    """The golden file was written by the model before sim.nccl.versions existed (v2.27.7-1 with
    v2.29.2-1's Blackwell caps): every pick and time repr, and a digest of every candidate."""
    golden = json.loads(GOLDEN.read_text())
    picks, digest = {}, hashlib.sha256()
    for name, nodes, op, size in _cases():
        p = predict(name, nodes, op, size)
        assert p == predict(name, nodes, op, size, nccl_version="2.27")
        picks[f"{name}|{nodes}|{op}|{size}"] = f"{p.nccl_algorithm}/{p.nccl_protocol}/{p.time_s!r}"
        digest.update(repr([(c.algorithm, c.protocol, c.time_s) for c in p.candidates]).encode())
    assert picks == golden["picks"]
    assert digest.hexdigest() == golden["candidates_sha256"]


@pytest.mark.parametrize("version", ["2.21", "2.22"])
def test_up_to_2_22_tree_simple_pays_28_us_a_hop_and_no_base(version):
    """v2.21.5-1 / v2.22.3-1 tuning.cc:56-78: baseLat Tree/Simple 0, hwLat Tree/Simple 28 us on
    NVLink, PCI and the network (2.23+: 8.4; 4.0, 4.0, 14). Tree all_reduce latency = base +
    2 x ((local - 1) x intra + log2(nodes) x inter), inter + 2 x latencyInter for Simple."""
    size, inter = 64 * MiB, inter_us("dgx-h100")
    old = predict("dgx-h100", 2, "all_reduce", size, nccl_version=version)
    new = predict("dgx-h100", 2, "all_reduce", size)
    lat_old = 0 + 2 * (7 * 28 + 1 * (28 + 2 * inter))
    lat_new = 8.4 + 2 * (7 * 4.0 + 1 * (14 + 2 * inter))
    assert candidate(old, "Tree", "Simple") - candidate(new, "Tree", "Simple") == pytest.approx(lat_old - lat_new, rel=1e-9)
    assert lat_old - lat_new == pytest.approx(355.6)


@pytest.mark.parametrize("version", ["2.21", "2.22"])
def test_up_to_2_22_an_all_reduce_ring_counts_2_x_nodes_network_steps(version):
    """v2.21.5-1 tuning.cc:161: nInterSteps = 2 x nNodes for all_reduce (2.23+, line 258: 2 x
    (nNodes - 1)); the rest of 2 x (ranks - 1) steps at max(hwLat NVLink Ring/Simple 3.4, 3 x
    net overhead 1.0); x 1.4, the ring's plateau on Hopper."""
    size, inter = 64 * MiB, 14.0 + 2 * inter_us("dgx-h100")
    old = predict("dgx-h100", 2, "all_reduce", size, nccl_version=version)
    new = predict("dgx-h100", 2, "all_reduce", size)
    lat_old = 8.4 + (30 - 4) * 3.4 + 4 * inter
    lat_new = 8.4 + (30 - 2) * 3.4 + 2 * inter
    assert candidate(old, "Ring", "Simple") - candidate(new, "Ring", "Simple") == pytest.approx(1.4 * (lat_old - lat_new), rel=1e-9)


@pytest.mark.parametrize("version", ["2.23", "2.24"])
def test_before_2_25_blackwell_reads_hoppers_rows_and_runs_no_ll128(version):
    """v2.23.4-1 tuning.cc:146 / v2.24.3-1:210: compCapIndex stops at Hopper, so llMaxBws[N1] is
    141 (2.25+: 2 x 141); the LL128 switch (lines 330-334 / 426-430) lists SM 70, 80, 90 only.
    A 2 MiB broadcast on one HGX B200: Ring/LL at 7.2 us + S / min(141, 16 x 45 / 2) GB/s, so
    Ring/Simple (11.8 us + S / 720 GB/s) wins where 2.27 keeps Ring/LL."""
    size = 2 * MiB
    old = predict("hgx-b200", 1, "broadcast", size, nccl_version=version)
    new = predict("hgx-b200", 1, "broadcast", size)
    assert candidate(old, "Ring", "LL") == pytest.approx(6.6 + 0.6 + size / (1000 * 141.0), rel=1e-9)
    assert candidate(new, "Ring", "LL") == pytest.approx(6.6 + 0.6 + size / (1000 * 282.0), rel=1e-9)
    assert candidate(old, "Ring", "Simple") == pytest.approx(8.4 + 3.4 + size / (1000 * 16 * 45.0), rel=1e-9)
    assert not [c for c in old.candidates if c.protocol == "LL128"] and [c for c in new.candidates if c.protocol == "LL128"]
    assert (old.nccl_algorithm, old.nccl_protocol, new.nccl_algorithm, new.nccl_protocol) == ("Ring", "Simple", "Ring", "LL")


def _one_gpu_per_node():
    """DGX H100's NCCL view with one GPU per node: where PAT runs (ncclPatEnable: nNodes == nRanks)."""
    return dataclasses.replace(load_preset("dgx-h100"), gpus_per_node=1)


def test_pat_appears_in_2_23_at_0_85_and_drops_to_0_75_in_2_24():
    """v2.23.4-1 tuning.cc:193 PAT busBw x .85, v2.24.3-1:256 x .75; no NCCL_ALGO_PAT before 2.23.
    Latency 8 + log2(4) x 14 / 3.5 + 4 x 2.8 us (ppn 1: Tree's network latency) in both."""
    preset, size = _one_gpu_per_node(), MiB
    lat = 8 + 2 * (14.0 + 2 * inter_us("dgx-h100")) / 3.5 + 4 * 2.8
    times = {v: candidate(predict(preset, 4, "reduce_scatter", size, nccl_version=v), "PAT", "Simple") for v in ("2.23", "2.24")}
    assert (times["2.23"] - lat) / (times["2.24"] - lat) == pytest.approx(0.75 / 0.85, rel=1e-9)
    assert "PAT" not in {c.algorithm for c in predict(preset, 4, "reduce_scatter", size, nccl_version="2.22").candidates}


@pytest.mark.parametrize("version", ["2.25", "2.26"])
def test_2_25_and_2_26_cap_blackwell_ring_ll128_at_twice_hoppers_73_4_per_channel(version):
    """v2.25.1-1 tuning.cc:162 / v2.26.6-1:162: Blackwell's perChMaxRingLL128Bws = 2 x 36.7 (the
    default has v2.29.2-1's measured 34.6 at N2). A 16 MiB broadcast on 2 HGX B200: busBw
    min(8 x 48 x 0.92, 8 x cap), so LL128 beats Simple in 2.25/2.26 only."""
    size = 16 * MiB
    old = predict("hgx-b200", 2, "broadcast", size, nccl_version=version)
    new = predict("hgx-b200", 2, "broadcast", size)
    lat = candidate(new, "Ring", "LL128") - size / (1000 * 8 * 34.6)
    assert candidate(old, "Ring", "LL128") == pytest.approx(lat + size / (1000 * min(8 * 48 * 0.92, 8 * 2 * 36.7)), rel=1e-9)
    assert (old.nccl_protocol, new.nccl_protocol) == ("LL128", "Simple")


@pytest.mark.parametrize("version", ["2.28", "2.29", "2.29.3"])
def test_from_2_28_nvls_bandwidth_is_nvls_efficiency_x_intra_and_ring_over_nsteps(version):
    """v2.28.9-1 tuning.cc:285-300: NVLS per-channel bw min(bwIntra x nvlsEfficiency[Hopper] 0.85 x
    (nCh - 1) / nCh x 2, bwInter) and line 348: x nRanks / nsteps (2.27: min(intra, inter) x 5/6).
    One HGX H100 (NVLS graph 8 x 40 GB/s), 128 MiB all_reduce: NVLS falls behind Ring/Simple."""
    size = 128 * MiB
    old = predict("hgx-h100-nvls", 1, "all_reduce", size, nccl_version=version)
    new = predict("hgx-h100-nvls", 1, "all_reduce", size)
    per_channel = min(40.0 * 0.85 * 7 / 8 * 2, 40.0)
    assert candidate(old, "NVLS", "Simple") == pytest.approx(25 + size / (1000 * 8 * per_channel * 8 / 14), rel=1e-9)
    assert candidate(new, "NVLS", "Simple") == pytest.approx(25 + size / (1000 * 8 * 40.0 * 5 / 6), rel=1e-9)
    assert (old.nccl_algorithm, new.nccl_algorithm) == ("Ring", "NVLS")


def test_2_29_corrects_nvlstree_on_blackwell_x86_only_and_caps_ring_ll128_at_40():
    """v2.29.7-1 tuning.cc:596: NVLSTree all_reduce bw x treeCorrectionFactor[Simple][log2(S/64)]
    on SM100+ x86 (16 MiB: index 18, 0.7), not on Grace (Arm: gb200-nvl72); line 180: Blackwell
    Ring/LL128 40 GB/s a channel (v2.28.9-1:179: 34.6 at N2). NVLSTree latency on 2 nodes: 25 +
    2 x log2(2) x 20.9 us (hwLat NET NVLSTree 20.9 from 2.28)."""
    size = 16 * MiB
    v28 = predict("hgx-b200", 2, "all_reduce", size, nccl_version="2.28")
    v29 = predict("hgx-b200", 2, "all_reduce", size, nccl_version="2.29")
    lat = 25 + 2 * (20.9 + 2 * inter_us("hgx-b200"))
    assert (candidate(v29, "NVLSTree", "Simple") - lat) == pytest.approx((candidate(v28, "NVLSTree", "Simple") - lat) / 0.7, rel=1e-9)
    ring = {v: candidate(p, "Ring", "LL128") for v, p in (("2.28", v28), ("2.29", v29))}
    ring_lat = ring["2.28"] - size / (1000 * 8 * 34.6 * 16 / 30)
    assert ring["2.29"] == pytest.approx(ring_lat + size / (1000 * 8 * 40.0 * 16 / 30), rel=1e-9)
    arm = [predict("gb200-nvl72", 32, "all_reduce", size, nccl_version=v) for v in ("2.28", "2.29")]
    assert candidate(arm[0], "NVLSTree", "Simple") == candidate(arm[1], "NVLSTree", "Simple")


def test_2_29_3_keeps_the_measured_34_6_blackwell_ring_ll128_cap_that_2_29_7_raised_to_40():
    """v2.29.3-1 tuning.cc:179 (= v2.29.2-1, the GB200 log's): {34.5, 34.6, 34.5}, the default's."""
    a, b = (predict("hgx-b200", 2, "all_reduce", 16 * MiB, nccl_version=v) for v in ("2.29.3", "2.27"))
    assert candidate(a, "Ring", "LL128") == candidate(b, "Ring", "LL128")
    assert nccl_version("v2.29.2-1").name == nccl_version("2.29.3+cuda13.1").name == "2.29.3"
    assert nccl_version("2.26.2+cuda12.8").name == "2.26"


@pytest.mark.parametrize(("named", "line"), [("2.26.3", "2.26"), ("2.26.5+cuda12.9", "2.26"), ("2.27.5", "2.27"), ("v2.27.6-1", "2.27")])
def test_a_patch_with_its_lines_tuning_is_that_line_not_an_unknown_release(named, line):
    """Common releases a user's log names (NCCL 2.27.5, 2.26.5) have tuning.cc identical to their
    line's record (git diff v2.27.5-1 v2.27.7-1 -- src/graph/tuning.cc is empty): they were refused
    as unknown by `collsim validate nccl-tests` once logs were read with their own release."""
    assert nccl_version(named).name == line


def test_a_patch_whose_tuning_differs_is_still_unknown():
    """v2.27.3-1 and v2.28.3-1 differ from their line's record in tuning.cc: no silent stand-in."""
    for named in ("2.27.3", "2.28.3"):
        with pytest.raises(CollsimError, match="unknown NCCL version"):
            nccl_version(named)


def test_an_unknown_version_is_one_message_listing_the_known_ones():
    with pytest.raises(CollsimError, match=r"unknown NCCL version '2\.30'; known: 2\.19, .*2\.29") as error:
        predict("dgx-h100", 2, "all_reduce", MiB, nccl_version="2.30")
    assert all(name in str(error.value) for name in known_versions())
    result = CliRunner().invoke(cli, ["sim", "collective", "--model", "nccl", "--hardware", "dgx-h100", "--op", "all_reduce",
                                       "--size", "1MiB", "--nccl-version", "2.17"])  # fmt: skip
    assert result.exit_code != 0 and "unknown NCCL version '2.17'" in result.output and "Traceback" not in result.output


def test_cli_json_names_the_version_it_modelled():
    args = [
        "sim",
        "collective",
        "--model",
        "nccl",
        "--hardware",
        "dgx-h100",
        "--nodes",
        "2",
        "--op",
        "all_reduce",
        "--size",
        "64MiB",
        "--json",
    ]
    default = json.loads(CliRunner().invoke(cli, args).output)
    old = json.loads(CliRunner().invoke(cli, [*args, "--nccl-version", "2.21"]).output)
    assert (default["nccl_version"], old["nccl_version"]) == ("2.27.7-1", "2.21.5-1")
    assert default["time_s"] != old["time_s"] and math.isfinite(old["time_s"])


def test_algorithm_nccl_on_a_preset_runs_the_pick_of_the_named_version():
    """The DES runs what that release picks: NVLS on one HGX H100 at 128 MiB in 2.27, a ring from 2.28."""
    base = {**scenario_fields("hgx-h100-nvls", 1), "op": "all_reduce", "size": "128MiB", "algorithm": "nccl"}
    default = CollectiveScenario.from_dict(base)
    newer = CollectiveScenario.from_dict({**base, "nccl_version": "2.28"})
    assert default.algorithm.startswith("nccl_nvls") and newer.algorithm.startswith("nccl_ring") and newer.nccl_version == "2.28"


def test_nccl_version_without_a_hardware_preset_is_refused():
    with pytest.raises(CollsimError, match="nccl_version: .*--hardware"):
        CollectiveScenario.from_dict({"op": "all_reduce", "algorithm": "ring", "ranks": 4, "size": "1MiB", "bandwidth": "25GB/s",
                                      "nccl_version": "2.21"})  # fmt: skip
