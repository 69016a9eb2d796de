"""The Collectives page with a GPU preset: Algorithm "NCCL's pick" (its channels, NCCL's model
beside the DES), NCCL algorithm / protocol choices, the Channels label, the URL keeps them."""

from __future__ import annotations

import json

from click.testing import CliRunner
from dash import no_update

from sim.cli import cli
from sim.units import format_time
from webapp import collective as model
from webapp.pages.collectives import callbacks as page
from webapp.pages.collectives.layout import layout


def picked_form(**changes: str) -> dict[str, str]:
    """The form after choosing dgx-h100 with 16 ranks typed (the hardware callback's values)."""
    chosen = page.apply_hardware("dgx-h100", "16", "all_reduce", "ring")
    form = {**model.DEFAULTS, "hardware": "dgx-h100", "size": "25MiB"}
    form.update({key: value for key, value in chosen.items() if key in form and value is not no_update})
    return {**form, **changes}


def summary_text(form: dict[str, str]) -> str:
    return str(page.simulate(page.validate(form)["scenario"], "step", False, 0, form["algorithm"] == "nccl")["summary"])


def cli_time(*more: str) -> float:
    args = ["sim", "collective", "--hardware", "dgx-h100", "--nodes", "2", "--op", "all_reduce", "--size", "25MiB", "--json", *more]
    return json.loads(CliRunner().invoke(cli, args).output)["time_s"]


def test_choosing_a_gpu_preset_runs_nccls_pick_and_says_so():
    form = picked_form()
    assert (form["algorithm"], form["chunks"], form["sharing"], form["reduce_bandwidth"]) == ("nccl", "", "auto", "")
    text = summary_text(form)
    assert "NCCL picks Ring/LL128 on 16 channels" in text and format_time(cli_time()) in text
    assert "NCCL's model 242.6 us, DES 250.9 us (+3.4%)" in text and "8 slots a connection" in text
    # the form's Bandwidth/Latency fields hold the datasheet's figures; the note says what the DES ran at
    assert "runs at NVLink 360 GB/s a GPU = 0.8 (default) x 450 GB/s; network 46 GB/s a GPU = 0.92 (default) x 50 GB/s" in text


def test_a_protocol_choice_changes_the_result_as_the_clis_nccl_proto():
    scenario, errors = model.parse_form(picked_form(nccl_proto="Simple"))
    assert not errors and scenario.algorithm == "nccl_tree"
    assert model.run(scenario, frames=False).result.time_s == cli_time("--nccl-proto", "Simple") != cli_time()
    assert "NCCL picks Tree/Simple" in summary_text(picked_form(nccl_proto="Simple"))
    assert "NCCL picks Ring/LL" in summary_text(picked_form(nccl_algo="Ring", nccl_proto="LL"))


def test_a_protocol_or_algorithm_the_preset_does_not_allow_gets_one_message():
    errors = page.validate(picked_form(nccl_algo="NVLS"))["errors"]  # dgx-h100 has no NVLink SHARP
    assert "no algorithm/protocol left for all_reduce on 2 x dgx-h100" in errors["nccl_algo"]
    assert [name for name, message in errors.items() if message] == ["nccl_algo"]
    errors = page.validate(picked_form(hardware="hgx-h100-nvls", nodes="1", ranks="8", nccl_algo="NVLS", nccl_proto="LL"))["errors"]
    assert "protocols ['LL']" in errors["nccl_proto"] and not errors["nccl_algo"]  # NVLS runs Simple only: the protocol is wrong
    errors = page.validate(picked_form(nccl_algo="NVLS", nccl_proto="Simple"))["errors"]
    assert "no algorithm/protocol left" in errors["nccl_algo"] and not errors["nccl_proto"]  # no NVLS on dgx-h100 at all


def test_channels_label_and_the_nccl_choices_follow_the_algorithm():
    shown = page.nccl_fields("nccl", "all_reduce", "NVLS")
    assert shown["label"] == "Channels" and shown["algo_style"] == {} and "the pick's own" in shown["hint"]
    assert [o["value"] for o in shown["algo_options"]] == ["", "Ring", "Tree", "NVLS", "NVLSTree"]
    assert [o["value"] for o in shown["proto_options"]] == ["", "Simple"]  # NVLS runs Simple only
    assert [o["value"] for o in page.nccl_fields("nccl", "broadcast", "")["algo_options"]] == ["", "Ring"]
    assert page.nccl_fields("nccl_ring", "all_reduce", "")["label"] == "Channels"
    data = page.validate(picked_form())["scenario"]
    assert page.channels_placeholder(data, "nccl") == "16: NCCL's channels" and page.channels_placeholder(data, "ring") == ""
    plain = page.nccl_fields("ring", "all_reduce", "")
    assert plain["label"] == "Chunks k" and plain["algo_style"] == {"display": "none"}


def test_the_url_keeps_the_pick_and_a_preset_link_opens_on_it():
    form = picked_form(nccl_proto="LL128")
    query = model.query_from_form(form)
    assert "algorithm=nccl" in query and "nccl_proto=LL128" in query and "chunks=&" in query
    assert model.form_from_query(query) == form
    opened = model.form_from_query("?hardware=dgx-h100&ranks=16")
    assert (opened["algorithm"], opened["chunks"], opened["sharing"]) == ("nccl", "", "auto")
    assert model.form_from_query("?hardware=dgx-h100&algorithm=nccl_ring")["algorithm"] == "nccl_ring"  # a link's algorithm stays
    html = str(layout("?hardware=dgx-h100&ranks=16"))
    assert "NCCL's pick" in html and "'Channels'" in html and "coll-chunks-label" in html
    assert model.algorithm_options("all_reduce", "cpu-ethernet-25g")[0] == "ring"  # gloo: no NCCL's pick


def test_a_run_with_no_message_says_why_the_player_has_no_step():
    """NVLS on one node moves everything through the switch: no message to play, and the player
    says so in lines that fit its card (the generic sentence ran off both panels)."""
    chosen = page.apply_hardware("hgx-h100-nvls", "8", "all_reduce", "ring")
    form = {**model.DEFAULTS, "hardware": "hgx-h100-nvls", "size": "64MiB"}
    form.update({key: value for key, value in chosen.items() if key in form and value is not no_update})
    shown = page.simulate(page.validate(form)["scenario"], "step", False, 0, True)
    assert "NCCL picks NVLS/Simple" in str(shown["summary"])
    for panel in ("topology", "buffers"):
        text = shown[panel].layout.annotations[0].text
        assert "no message between ranks" in text and "NVLink SHARP" in text
        assert all(len(line) <= 48 for line in text.split("<br>"))


def test_auto_sharing_runs_the_picks_own_as_the_cli_and_a_chosen_one_as_its_flag():
    """NCCL's tree runs fair by default (sim.nccl.des.data_path_sharing), its ring fifo;
    the form's "auto" (what choosing a preset sets) gives the CLI's default, fifo its --sharing fifo."""
    chosen = page.apply_hardware("gcp-a3-mega", "16", "all_reduce", "ring")
    form = {**model.DEFAULTS, "hardware": "gcp-a3-mega", "size": "64MiB"}
    form.update({key: value for key, value in chosen.items() if key in form and value is not no_update})
    assert form["sharing"] == "auto"

    def cli_run(*more: str) -> dict:
        args = ["sim", "collective", "--hardware", "gcp-a3-mega", "--nodes", "2", "--op", "all_reduce", "--size", "64MiB", "--json", *more]
        return json.loads(CliRunner().invoke(cli, args).output)

    default, fifo = cli_run(), cli_run("--sharing", "fifo")
    assert (
        default["algorithm"].startswith("nccl_tree")
        and default["scenario"]["sharing"] == "fair"
        and fifo["time_s"] > default["time_s"] * 1.02
    )
    for sharing, expected in (("auto", default), ("fifo", fifo), ("fair", default)):
        scenario, errors = model.parse_form({**form, "sharing": sharing})
        assert not errors and scenario.sharing == expected["scenario"]["sharing"]
        assert format_time(expected["time_s"]) in str(
            page.simulate(page.validate({**form, "sharing": sharing})["scenario"], "step", False, 0, True)["summary"]
        )
    ring, _ = model.parse_form({**form, "algorithm": "ring", "sharing": "auto"})  # no pick: the engine's default
    assert ring.sharing == "fair"
