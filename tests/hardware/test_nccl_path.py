"""NCCL's data path in the DES: every (algorithm, protocol) runs and moves the right data, slots
pipeline a connection, collapsed channels equal the full run, NCCL_ALGO/NCCL_PROTO syntax."""

import pytest

import sim.nccl.topo as nccl_topo
from sim.algorithms.registry import algorithm_spec
from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.errors import CollsimError
from sim.hardware.presets import list_presets, load_preset, scenario_fields
from sim.nccl.des import NAMES
from sim.nccl.model import predict
from sim.nccl.proto import ALGORITHMS, PROTOCOLS, chunking, parse_selection
from sim.scenario import CollectiveScenario

GPU_PRESETS = [name for name in list_presets() if load_preset(name).nccl is not None]


DATA_PATH = [
    (op, name) for name in sorted(set(NAMES.values())) for op in ("all_reduce", "all_gather", "reduce_scatter") if algorithm_spec(op, name)
]


@pytest.mark.parametrize("op, name", DATA_PATH)
def test_every_data_path_algorithm_verifies_on_plain_links(name, op):
    """NVLS needs an NVLink SHARP switch (its record's ``needs``): it verifies on hgx-h100-nvls."""
    data = {"op": op, "algorithm": name, "ranks": 8, "chunks": 3, "size_bytes": 8 * 4 * 1001, "bandwidth": "10GB/s",
            "verify": True, "topology": "two_level", "gpus_per_node": 4}  # fmt: skip
    if name.startswith("nccl_nvls"):
        data = {**scenario_fields("hgx-h100-nvls", 1), "op": op, "algorithm": name, "chunks": 3, "size_bytes": 8 * 4 * 1001, "verify": True}
    assert run_collective(CollectiveScenario.from_dict(data)).verified


@pytest.mark.parametrize("algo, proto", [("ring", "ll"), ("ring", "ll128"), ("tree", "ll128"), ("nvlstree", "simple")])
def test_hardware_runs_verify_with_all_channels(algo, proto):
    scenario, why = scenario_for_pick("hgx-h100-nvls", 2, "all_reduce", 16 * 4 * 3000, algo, proto, verify=True)
    result = run_collective(scenario)
    assert result.verified and result.time_s > 0


@pytest.mark.parametrize("hardware", GPU_PRESETS)
def test_every_candidate_of_nccls_model_runs_in_the_des(hardware):
    preset = load_preset(hardware)
    for nodes in (1, 2) if preset.max_nodes is None else (1,):
        for op in ("all_reduce", "all_gather", "reduce_scatter"):
            for candidate in predict(hardware, nodes, op, 1 << 16).candidates:
                scenario, why = scenario_for_pick(hardware, nodes, op, 1 << 16, candidate.algorithm, candidate.protocol)
                assert why is None, why
                assert run_collective(scenario).time_s > 0


@pytest.mark.parametrize("hardware", GPU_PRESETS)
def test_the_default_answer_never_refuses_on_a_shipped_preset(hardware):
    preset = load_preset(hardware)
    for nodes in (1, 2, 4) if preset.max_nodes is None else (1,):
        for op in ("all_reduce", "all_gather", "reduce_scatter"):
            for size in (8, 4096, 1 << 20, 1 << 26, 1 << 30):
                scenario, why = scenario_for_pick(hardware, nodes, op, size)
                assert why is None and scenario.algorithm in NAMES.values()


def test_slots_pipeline_a_connection_on_two_dgx_h100():
    """Issue 20: NCCL_ALGO=Ring, 16 MiB on 2 x DGX H100 measured 158 GB/s busbw; one chunk in
    flight per connection gave -74 %. With NCCL_STEPS slots the DES is within 25 %."""
    scenario, _ = scenario_for_pick("dgx-h100", 2, "all_reduce", 1 << 24, "Ring", "Simple")
    time = run_collective(scenario).time_s
    busbw = (1 << 24) / time / 1e9 * 2 * 15 / 16
    assert abs(busbw / 158 - 1) < 0.25


@pytest.mark.parametrize("proto", ["Simple", "LL", "LL128"])
def test_collapsed_ring_equals_the_full_run_on_one_node(proto):
    # max-min fair sharing splits a link equally among the identical channels: exactly the collapse
    scenario, _ = scenario_for_pick("dgx-h100", 1, "all_reduce", 24 * 8 * 4 * 2048, "Ring", proto, sharing="fair")
    assert scenario.chunks == 24
    collapsed = run_collective(scenario)
    try:
        nccl_topo.COLLAPSE = False
        full = run_collective(scenario)
    finally:
        nccl_topo.COLLAPSE = True
    assert collapsed.time_s == full.time_s
    assert full.message_count == 24 * collapsed.message_count


@pytest.mark.parametrize("algo, proto, step", [("Ring", "Simple", 1), ("Ring", "LL128", 1), ("Tree", "Simple", 2), ("Tree", "LL", 2)])
def test_every_channel_alone_takes_as_long_as_the_simulated_one(algo, proto, step):
    """Channels partition the links; across nodes each is a rotation of channel 0 (tree: of the
    mirrored pair 0, 1), so running any one of them gives the same time."""
    scenario, _ = scenario_for_pick("dgx-h100", 2, "all_reduce", 1 << 20, algo, proto)
    times = set()
    try:
        for first in range(0, scenario.chunks, step):
            nccl_topo.FIRST = first
            times.add(run_collective(scenario).time_s)
    finally:
        nccl_topo.FIRST = 0
    assert len(times) == 1


def test_protocols_put_their_line_format_on_the_wire():
    sizes = {}
    for proto in ("Simple", "LL", "LL128"):
        scenario, _ = scenario_for_pick("dgx-h100", 1, "all_gather", 8 * 4 * 120 * 64, "Ring", proto)
        result = run_collective(scenario.replace(verify=True))
        sizes[proto] = result.bytes_sent
    assert sizes["LL"] == 2 * sizes["Simple"]
    assert sizes["LL128"] == pytest.approx(sizes["Simple"] * 128 / 120, rel=1e-3)


def test_chunk_and_slice_sizes_follow_enqueue_cc():
    ring = chunking("Ring", "Simple", 1 << 30, 16, 2, 16)
    assert (ring.chunk_bytes, ring.slice_bytes, ring.in_flight) == (1 << 21, 1 << 20, 4)  # 512 KiB steps x 4, slices of 2
    assert chunking("Ring", "LL", 1 << 30, 16, 2, 16).chunk_bytes == 32768  # 64 KiB of lines, half data
    assert chunking("Ring", "LL128", 1 << 30, 16, 2, 16).chunk_bytes == 614400 // 16 * 15
    assert chunking("NVLS", "Simple", 1 << 30, 16, 1, 8).chunk_bytes == 128 * 1024


def test_nccl_algo_and_proto_syntax():
    assert parse_selection("ring,TREE", ALGORITHMS, "nccl-algo", "all_reduce") == {"Ring", "Tree"}
    assert parse_selection("^LL", PROTOCOLS, "nccl-proto", "all_reduce") == {"LL128", "Simple"}
    assert parse_selection(None, PROTOCOLS, "nccl-proto", "all_reduce") == set(PROTOCOLS)
    assert parse_selection("ring;allreduce:tree", ALGORITHMS, "nccl-algo", "all_reduce") == {"Tree"}
    assert parse_selection("ring;allreduce:tree", ALGORITHMS, "nccl-algo", "all_gather") == {"Ring"}
    with pytest.raises(CollsimError, match="unknown algo 'rong'"):
        parse_selection("rong", ALGORITHMS, "nccl-algo", "all_reduce")
    pick = predict("hgx-h100-nvls", 2, "all_reduce", 1 << 30, "^NVLSTree", "simple")
    assert (pick.nccl_algorithm, pick.nccl_protocol) in {("Ring", "Simple"), ("Tree", "Simple")}
    assert {c.protocol for c in pick.candidates} == {"Simple"}


def test_nvls_switch_rate_bounds_a_large_all_reduce():
    from sim.hardware.presets import effective

    preset = load_preset("hgx-h100-nvls")
    scenario, _ = scenario_for_pick("hgx-h100-nvls", 1, "all_reduce", 1 << 30)
    assert scenario.algorithm == "nccl_nvls"
    rate = preset.intra_bandwidth_Bps * effective(preset).nvls_efficiency
    time = run_collective(scenario).time_s
    assert (1 << 30) / rate < time < 1.1 * (1 << 30) / rate  # reduce and multicast overlap


@pytest.mark.parametrize(
    "algorithm, size, nodes, expected",
    [
        ("NVLSTree", 32 << 20, 2, 65536),  # 32 MiB < 4 x (16 x 8) x 128 KiB = 64 MiB
        ("NVLSTree", 64 << 20, 2, 131072),
        ("NVLSTree", 4 << 20, 2, 32768),  # 4 MiB < 1 x 128 x 64 KiB = 8 MiB
        ("NVLS", 512 << 20, 1, 65536),  # 512 MiB < 64 x 128 x 128 KiB = 1 GiB
    ],
)
def test_nvls_chunks_count_every_head_of_every_channel(algorithm, size, nodes, expected):
    """enqueue.cc calcCollChunking cuts NVLS chunks by concurrentOps = nChannels x nvls.nHeads
    (16 channels x 8 heads on an H100 node), not by the channels alone: 8x larger thresholds,
    so mid sizes move in smaller chunks (fewer bytes in NCCL_STEPS slots per round trip)."""
    assert chunking(algorithm, "Simple", size, 16, nodes, 8 * nodes, heads=8).chunk_bytes == expected
    assert chunking(algorithm, "Simple", size, 16, nodes, 8 * nodes).chunk_bytes >= expected  # one head: never smaller
