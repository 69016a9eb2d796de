"""``--model nccl`` answers all_to_all and send_recv (issue 33, item 5): a closed form of NCCL's
p2p channels (sim.nccl.p2p_model) that agrees with the DES's ``nccl_p2p`` run where both are
bandwidth-bound, and whose small-size time is NCCL's cited latencies."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.errors import CollsimError
from sim.hardware.presets import effective, load_preset
from sim.nccl.model import predict
from sim.units import format_time

MiB = 1 << 20
PRESETS = ("dgx-h100", "oci-a100-roce", "gcp-a3-mega")  # one NIC a GPU, two a GPU, TCPXO's per-call floor


def des_time(hardware: str, nodes: int, op: str, size: int) -> float:
    scenario, why = scenario_for_pick(hardware, nodes, op, size)
    assert scenario is not None and scenario.algorithm == "nccl_p2p", why
    return run_collective(scenario).time_s


@pytest.mark.parametrize("hardware", PRESETS)
@pytest.mark.parametrize("op", ["all_to_all", "send_recv"])
def test_model_nccl_answers_p2p_ops_with_a_time(hardware, op):
    for nodes in (1, 2):
        prediction = predict(hardware, nodes, op, 64 * MiB)
        assert prediction.nccl_algorithm == "P2P" and prediction.nccl_protocol == "Simple"
        assert prediction.time_s > 0 and [c.time_s for c in prediction.candidates] == [prediction.time_s]


@pytest.mark.parametrize("hardware", ["dgx-h100", "oci-a100-roce", "gb200-nvl72"])
@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("op", ["all_to_all", "send_recv"])
def test_closed_form_agrees_with_the_des_when_bandwidth_bound(hardware, nodes, op):
    """256 MiB: the same bottleneck (a rank's NVLink bytes, or its share of the NICs). Tolerance
    1 %: the closed form is exact where the DES's fair sharing gives every message on the busiest
    link the same rate (measured agreement: better than 1e-6)."""
    size = 256 * MiB
    assert predict(hardware, nodes, op, size).time_s == pytest.approx(des_time(hardware, nodes, op, size), rel=0.01)


@pytest.mark.parametrize("size", [1024, 64 * 1024, MiB])
def test_closed_form_agrees_with_the_des_at_small_sizes_too(size):
    for op in ("all_to_all", "send_recv"):
        assert predict("dgx-h100", 2, op, size).time_s == pytest.approx(des_time("dgx-h100", 2, op, size), rel=0.01)


def test_latency_bound_all_to_all_follows_ncclss_cited_constants():
    """2 x dgx-h100, all_to_all of 1 KiB: 64 B a peer, Simple (p2p network connections have no LL
    buffer: net.cc:773-790). tuning.cc: Ring baseLat Simple 8.4 us; hwLat Ring Simple NVLink
    3.4 us, NET 14.0 us; all x latency_scale, + the fitted per-call base across nodes. A rank's
    7 NVLink blocks and 8 NIC blocks go side by side; the 7 NIC blocks for other rails first
    cross NVLink to the GPU by that rail's NIC (PXN): one more NVLink hop."""
    preset = load_preset("dgx-h100")
    eff = effective(preset)
    scale = eff.latency_scale
    start_us = 8.4 * scale + eff.base_latency_us
    nvlink_Bps = preset.intra_bandwidth_Bps * eff.intra_efficiency
    nic_Bps = preset.nic_bandwidth_Bps * eff.inter_efficiency * max(1.0, preset.nics_per_node / preset.gpus_per_node)
    intra_us = 3.4 * scale + 7 * 64 / nvlink_Bps * 1e6
    inter_us = max(14.0 * scale + 8 * 64 / nic_Bps * 1e6, (14.0 + 3.4) * scale + 7 * 64 / nic_Bps * 1e6)
    prediction = predict(preset, 2, "all_to_all", 1024)
    assert prediction.nccl_protocol == "Simple"
    assert prediction.time_s * 1e6 == pytest.approx(start_us + max(intra_us, inter_us), rel=1e-12)
    # one node (8 ranks: 128 B a peer, LL, 256 B on the wire): no NIC, no fitted per-call base
    # (hop_latencies_s charges it only across nodes)
    one_node_us = 6.6 * scale + 0.6 * scale + 7 * 256 / nvlink_Bps * 1e6
    assert predict(preset, 1, "all_to_all", 1024).time_s * 1e6 == pytest.approx(one_node_us, rel=1e-12)


def test_send_recv_is_one_message_across_the_network():
    """Simple: baseLat Simple 8.4 us, hwLat NET Ring Simple 14.0 us (tuning.cc), and PXN's NVLink
    hop (3.4 us): rank 0's NICs are not the ones by the last rank's local index."""
    preset = load_preset("oci-a100-roce")
    eff = effective(preset)
    nic_Bps = preset.nic_bandwidth_Bps * eff.inter_efficiency * max(1.0, preset.nics_per_node / preset.gpus_per_node)
    expected_us = (8.4 + 14.0 + 3.4) * eff.latency_scale + eff.base_latency_us + 64 * MiB / nic_Bps * 1e6
    assert predict(preset, 2, "send_recv", 64 * MiB).time_s * 1e6 == pytest.approx(expected_us, rel=1e-12)


def test_time_grows_with_size_and_one_rank_costs_nothing():
    times = [predict("dgx-h100", 2, "all_to_all", size).time_s for size in (0, 1024, 64 * 1024, MiB, 64 * MiB)]
    assert times == sorted(times)
    assert predict("dgx-h100", 2, "all_to_all", 64 * MiB).busbw_GBps == pytest.approx(
        predict("dgx-h100", 2, "all_to_all", 64 * MiB).algbw_GBps * 15 / 16
    )


def test_nccl_algo_and_proto_are_refused_for_p2p():
    with pytest.raises(CollsimError, match="NCCL_ALGO and NCCL_PROTO do not select"):
        predict("dgx-h100", 2, "all_to_all", MiB, nccl_algo="Ring")


def invoke(*args: str) -> str:
    out = CliRunner().invoke(cli, ["sim", "collective", *args])
    assert out.exit_code == 0, out.output
    return out.output


@pytest.mark.parametrize("op", ["all_to_all", "send_recv"])
def test_cli_model_nccl_text_and_json(op):
    args = ("--hardware", "dgx-h100", "--nodes", "2", "--op", op, "--size", "64MiB", "--model", "nccl")
    expected = predict("dgx-h100", 2, op, 64 * MiB).time_s
    text = invoke(*args)
    assert "NCCL picks       P2P / Simple" in text and f"predicted time   {format_time(expected)}" in text
    data = json.loads(invoke(*args, "--json"))
    assert data["model"] == "nccl" and data["op"] == op and data["time_s"] == pytest.approx(expected, rel=1e-12)


def test_cli_des_run_carries_the_closed_form_under_nccl():
    """``sim collective --json`` of NCCL's all_to_all: the ``nccl`` key holds the closed form's time."""
    data = json.loads(invoke("--hardware", "dgx-h100", "--nodes", "2", "--op", "all_to_all", "--size", "64MiB", "--json"))
    assert data["algorithm"] == "nccl_p2p"
    assert data["nccl"]["model_time_s"] == pytest.approx(predict("dgx-h100", 2, "all_to_all", 64 * MiB).time_s, rel=1e-12)
    assert data["nccl"]["model_time_s"] == pytest.approx(data["time_s"], rel=0.01)


def test_explorer_nccl_model_card_shows_a_time_for_all_to_all():
    """The Collectives page's "NCCL's model" card (callback level, no browser) on 2 x dgx-h100."""
    from webapp import collective as model
    from webapp.pages.collectives import callbacks as page
    from webapp.pages.collectives import ids

    chosen = page.apply_hardware("dgx-h100", "8", "all_to_all", "nccl")
    form = {**model.DEFAULTS, "hardware": "dgx-h100", "size": "16MiB", "op": "all_to_all"}
    form.update({key: value for key, value in chosen.items() if key in form and isinstance(value, str)})
    form["nodes"] = "2"
    form["ranks"] = page.nodes_or_ranks(ids.field_id("nodes"), "2", form["ranks"], "dgx-h100", form["gpus_per_node"])["ranks"]
    data = page.validate(form)["scenario"]
    summary = page.simulate(data, "step", False, 0, True)["summary"]
    shown = {}

    def walk(component) -> None:
        if getattr(component, "id", None):
            shown[component.id] = component.children
        children = getattr(component, "children", None)
        for child in children if isinstance(children, list) else [children]:
            if hasattr(child, "children"):
                walk(child)

    for card in summary:
        walk(card)
    assert shown[ids.COLL_NCCL_TIME] == format_time(predict("dgx-h100", 2, "all_to_all", 16 * MiB).time_s)
