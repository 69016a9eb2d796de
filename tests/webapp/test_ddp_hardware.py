"""The DDP page's hardware picker: what a preset fills, the scenario it builds, its caption, and
the messages for ranks that are not whole nodes (callback level; the browser test is
test_browser_ddp_hardware.py)."""

from __future__ import annotations

import re

import pytest
from dash import no_update
from dash.exceptions import PreventUpdate

from sim.collective.analytic import ow_for_ring
from sim.training.comm import hardware_ow
from sim.training.ddp import DDPScenario, run_ddp
from sim.units import parse_bandwidth, parse_time
from webapp.pages.ddp import model as ddp_model
from webapp.pages.ddp import page as ddp

RANKS_ID = "ddp-ranks"
MiB25 = 25 * 2**20


def _form(**changes: str) -> dict[str, str]:
    return {**ddp_model.DEFAULTS, **changes}


def _picked(name: str, ranks: str = "8", **changes: str) -> dict[str, str]:
    """The form after picking ``name`` with ``ranks`` typed, as the page's callback fills it."""
    filled = {key: value for key, value in ddp.apply_hardware(name, ranks, "ddp-hardware").items() if value is not no_update}
    return _form(hardware=name, **{**filled, **changes})


def _messages(form: dict[str, str]) -> tuple[dict | None, dict[str, str], str]:
    checked = ddp.validate(None, form)
    return checked["ddp"], checked["errors"], ddp_model.query_from_form(form)


def test_picking_a_preset_fills_whole_nodes_links_and_o_w():
    filled = ddp.apply_hardware("dgx-h100", "20", "ddp-hardware")
    ranks, bandwidth, latency, o, w, algorithm, gpu = (filled[key] for key in ddp_model.HARDWARE_FIELDS)
    assert (ranks, bandwidth, latency, algorithm, gpu) == ("16", "50GB/s", "14us", "nccl", "dgx-h100")  # 20 ranks: two whole nodes of 8
    # o and w: the line through the network model's all-reduce times (NCCL's pick in the DES), 1 MiB to 1 GiB
    fit = hardware_ow("dgx-h100", 2, (("element_bytes", 4),))
    assert parse_time(o, "o") == pytest.approx(fit.o_s, rel=1e-3) and parse_bandwidth(w, "w") == pytest.approx(fit.w_Bps, rel=1e-3)
    # fewer ranks than a node round up to one node; a one-node box caps there
    assert ddp.apply_hardware("dgx-a100", "3", "ddp-hardware")["ranks"] == "8"
    assert ddp.apply_hardware("pcie-gen4-8gpu", "64", "ddp-hardware")["ranks"] == "8"
    assert ddp.apply_hardware("cpu-ethernet-25g", "4", "ddp-hardware")["gpu"] is no_update  # no GPU peak: the GPU stays
    with pytest.raises(PreventUpdate):  # "none" leaves the boxes as they are
        ddp.apply_hardware("", "16", "ddp-hardware")


def test_changing_ranks_refills_o_and_w_for_the_new_node_count():
    one_node = ddp.apply_hardware("dgx-h100", "8", "ddp-hardware")
    filled = ddp.apply_hardware("dgx-h100", "32", RANKS_ID)
    ranks, bandwidth, latency, o, w, algorithm, gpu = (filled[key] for key in ddp_model.HARDWARE_FIELDS)
    assert (ranks, bandwidth, latency, algorithm, gpu) == (no_update,) * 5  # the user's ranks stay
    assert parse_time(o, "o") == pytest.approx(hardware_ow("dgx-h100", 4, (("element_bytes", 4),)).o_s, rel=1e-3)
    assert (o, w) != (one_node["o"], one_node["w"])
    assert set(ddp.apply_hardware("dgx-h100", "12", RANKS_ID).values()) == {no_update}  # not whole nodes: the field says why
    with pytest.raises(PreventUpdate):
        ddp.apply_hardware("", "12", RANKS_ID)


def test_gloo_preset_gets_the_ring_closed_form():
    form = _picked("cpu-ethernet-25g", "8")
    o_s, w_Bps = ow_for_ring(8, 0.0, 25e9 / 8)
    assert parse_time(form["o"], "o") == pytest.approx(o_s, abs=1e-12)
    assert parse_bandwidth(form["w"], "w") == pytest.approx(w_Bps, rel=1e-3)
    words = ddp_model.hardware_caption(form)
    assert "fitted to the network comm model's all-reduce times" in words["lines"][1] and "ring on" in words["lines"][1]
    assert form["algorithm"] == "ring"  # gloo: no NCCL pick


def test_network_mode_runs_on_the_presets_two_level_network():
    data, messages, search = _messages(_picked("dgx-h100", "16", comm_model="network", algorithm="hierarchical"))
    assert not any(messages.values()), messages
    scenario = DDPScenario.from_dict(data)
    assert (scenario.hardware, scenario.topology, scenario.gpus_per_node, scenario.ranks) == ("dgx-h100", "two_level", 8, 16)
    assert (scenario.intra_bandwidth_Bps, scenario.bandwidth_Bps) == (450e9, 50e9)  # NVLink inside, the NIC between
    assert "hardware=dgx-h100" in search and "ranks=16" in search
    notice = ddp.simulate(data)["notice"]
    assert "Network: 2 x dgx-h100 (16 ranks, hierarchical)" in notice
    # the preset's NIC rails: hierarchical's 8 inter-node all-reduces do not share one NIC a node
    plain = run_ddp(scenario.replace(hardware=None)).summary()
    assert run_ddp(scenario).summary()["comm_busy_s"] < plain["comm_busy_s"] / 2


def test_training_section_compares_every_strategy_on_the_presets_network():
    """Every strategy's collectives run on the preset's NIC rails, ddp's and the others' alike."""
    from sim.training.fsdp import FSDPScenario, compare

    # fp32: 25 MiB buckets then hold as many calls as the units (bf16 buckets fit twice the tensors: fewer calls)
    form = _picked("dgx-h100", "16", comm_model="network", algorithm="hierarchical", precision="fp32")
    training = ddp.validate(None, form)["training"]
    assert training["hardware"] == "dgx-h100" and training["topology"] == "two_level" and training["gpus_per_node"] == 8
    scenario = FSDPScenario.from_dict(training)
    rows = {row["sharding"]: row for row in compare(scenario, ["ddp", "no_shard"])}
    plain = {row["sharding"]: row for row in compare(scenario.replace(hardware=None), ["ddp", "no_shard"])}
    assert rows["ddp"]["comm_busy_s"] == pytest.approx(rows["no_shard"]["comm_busy_s"], rel=1e-9)
    assert rows["no_shard"]["comm_busy_s"] < plain["no_shard"]["comm_busy_s"] / 2  # rails: 4.16 ms, one NIC a node: 12.96 ms
    shown = ddp.simulate_training(training)
    notice, strategies = shown["notice"], shown["strategies"]
    assert "Every strategy on one network: 2 x dgx-h100, its links and NICs (hierarchical)." in notice and "shared NIC" not in notice
    exposed = strategies.layout.meta["exposed_comm_s"]
    assert exposed["no_shard"] == rows["no_shard"]["exposed_comm_s"] and exposed["ddp"] == rows["ddp"]["exposed_comm_s"]


def test_ow_mode_fits_o_and_w_unless_the_boxes_are_edited():
    """Untouched boxes: the run fits o and w at its own buckets, so ow and network agree."""
    data, messages, search = _messages(_picked("dgx-h100", "16"))
    assert not any(messages.values()) and data["comm"] == "ow" and data["hardware"] == "dgx-h100" and data["w_Bps"] is None
    ow = run_ddp(DDPScenario.from_dict(data)).summary()
    network = run_ddp(DDPScenario.from_dict({**data, "comm": "network"})).summary()
    assert ow["overhead_s"] == pytest.approx(network["overhead_s"], rel=0.10)
    data, _, _ = _messages(_picked("dgx-h100", "16", o="1ms"))  # a user's o wins over the preset's
    assert data["o_s"] == pytest.approx(1e-3) and data["w_Bps"] is not None


@pytest.mark.parametrize(
    ("changes", "field", "text"),
    [
        ({"hardware": "dgx-h100", "ranks": "4"}, "ranks", "dgx-h100 has 8 GPUs a node; give whole nodes (8, 16, 24, ...), got 4 (less than one node)"),
        ({"hardware": "dgx-h100", "ranks": "12", "comm_model": "network"}, "ranks", "give whole nodes (8, 16, 24, ...), got 12"),
        ({"hardware": "pcie-gen4-8gpu", "ranks": "16"}, "ranks", "pcie-gen4-8gpu has no NICs and runs on at most 1 node(s) (8 ranks), got 16"),
        ({"hardware": "dgx-z9"}, "hardware", "hardware: unknown preset 'dgx-z9'; allowed: cpu-ethernet-25g, dgx-a100"),
        ({"hardware": "dgx-h100", "ranks": "x"}, "ranks", "ranks: expected a whole number from 2 to 1024"),
    ],
)  # fmt: skip
def test_bad_combinations_get_a_message_in_their_field(changes, field, text):
    data, messages, _ = _messages(_form(**changes))
    assert data is None
    assert text in messages[field]
    assert [name for name, message in messages.items() if message] == [field]


def test_caption_names_the_preset_what_it_sets_and_its_sources():
    form = _picked("dgx-h100", "16")
    children = ddp.hardware_caption(**{key: form[key] for key in ddp.CAPTION_FIELDS})
    text = str(children)
    assert "DGX H100, 8x H100 SXM5" in text and "2 node(s) x 8 GPUs = 16 ranks" in text
    assert "fitted to the network comm model's all-reduce times on 2 x dgx-h100" in text and re.search(
        r"nccl_ring on \d+ channel\(s\)", text
    )
    assert "NVIDIA ConnectX-7 product brief" in text and "nccl.graphs" in text  # sources
    assert "hold other values" not in text
    assert "hold other values" in str(ddp.hardware_caption(hardware="dgx-h100", ranks="16", comm_model="ow", o="1ms", w=form["w"]))
    network = str(ddp.hardware_caption(hardware="dgx-h100", ranks="16", comm_model="network", o="", w=""))
    assert "inside a node 450 GB/s" in network and "8 NIC(s) a node of 50 GB/s, 14 us" in network
    assert "whole nodes of 8 GPUs" in str(ddp.hardware_caption(hardware="dgx-h100", ranks="12", comm_model="ow", o="", w=""))
    assert ddp.hardware_caption(hardware="", ranks="16", comm_model="ow", o="", w="") == []


def test_url_keeps_the_preset_and_the_layout_restores_it():
    form = ddp_model.form_from_query("?hardware=dgx-a100&ranks=16")
    assert form["hardware"] == "dgx-a100" and form["ranks"] == "16"
    assert "hardware" not in ddp_model.query_from_form(_form())  # none is the default: not written
    layout = str(ddp.layout("?hardware=dgx-a100&ranks=16"))
    assert "value='dgx-a100'" in layout and "ddp-hardware-caption" in layout
    assert "ddp-hardware-caption" in str(ddp.layout("?hardware=dgx-z9"))  # an unknown name still builds


def test_hierarchical_hybrid_shard_is_compared_on_the_preset():
    """hybrid_shard's shard and replica groups run on the preset's network, where hierarchical runs."""
    form = _picked("dgx-h100", "16", comm_model="network", algorithm="hierarchical", sharding="full_shard", shard_size="4")
    training = ddp.validate(None, form)["training"]
    shown = ddp.simulate_training(training)
    notice, cards, strategies, memory, timeline, caption = (
        shown[key] for key in ("notice", "cards", "strategies", "memory", "timeline", "caption")
    )
    assert "Not compared" not in notice and "Note:" not in notice
    assert set(strategies.layout.meta["step_time_s"]) == {"ddp", "zero1", "shard_grad_op", "full_shard", "no_shard", "hybrid_shard"}


def test_a_group_the_algorithm_cannot_split_runs_ring_and_the_notice_says_so():
    form = _picked("dgx-h100", "24", comm_model="network", algorithm="hierarchical", sharding="hybrid_shard", shard_size="3")
    training = ddp.validate(None, form)["training"]
    notice = ddp.simulate_training(training)["notice"]
    assert "Note: all_reduce in replica groups of 8 ranks: ring instead of hierarchical, which cannot run there" in notice
