# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""The Collectives page in a real Chromium with dgx-h100 x 2 picked: NCCL's pick runs on its
channels (the CLI's time), the Chunks field reads Channels, a protocol choice changes the run."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from playwright.sync_api import Page, expect

from sim.cli import cli
from sim.units import format_time

from .test_browser import app_page, choose, open_page  # noqa: F401

pytestmark = pytest.mark.browser


def cli_time(*more: str) -> str:
    args = ["sim", "collective", "--hardware", "dgx-h100", "--nodes", "2", "--op", "all_reduce", "--size", "25MiB", "--json", *more]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return format_time(json.loads(result.output)["time_s"])


def test_picking_dgx_h100_runs_nccls_pick_with_the_clis_time(app_page: Page, live_server: str, shot):
    open_page(app_page, live_server + "/?ranks=16&size=25MiB")
    expect(app_page.locator("#coll-chunks-label")).to_have_text("Chunks k")
    choose(app_page, "coll-hardware", "dgx-h100")
    expect(app_page.locator("#coll-algorithm")).to_contain_text("NCCL's pick")
    expect(app_page.locator("#coll-chunks-label")).to_have_text("Channels")
    expect(app_page.locator("#coll-chunks")).to_have_attribute("placeholder", "16: NCCL's channels")
    expect(app_page.locator("#coll-field-nccl_proto")).to_be_visible()
    note = app_page.locator("#coll-nccl-note")
    expect(note).to_contain_text("NCCL picks Ring/LL128 on 16 channels")
    expect(note).to_contain_text("NCCL's model 242.6 us, DES 250.9 us")
    expect(note).to_contain_text("runs at NVLink 360 GB/s a GPU")
    expect(app_page.locator("#coll-sim-time")).to_have_text(cli_time())
    expect(app_page).to_have_url(re.compile(r"algorithm=nccl"))
    shot("collectives-nccl", docs=True, full_page=False)

    choose(app_page, "coll-nccl_proto", "Simple")
    expect(note).to_contain_text("NCCL picks Tree/Simple")
    expect(app_page.locator("#coll-sim-time")).to_have_text(cli_time("--nccl-proto", "Simple"))
    expect(app_page).to_have_url(re.compile(r"nccl_proto=Simple"))
    app_page.reload()  # the URL keeps the choice
    expect(note).to_contain_text("NCCL picks Tree/Simple")

    choose(app_page, "coll-nccl_algo", "NVLS")  # dgx-h100 has no NVLink SHARP: one message, under the field
    expect(app_page.locator("#coll-nccl_algo-error")).to_contain_text("no algorithm/protocol left for all_reduce on 2 x dgx-h100")
    expect(app_page.locator("#coll-notice")).to_contain_text("Fix the highlighted inputs")
    choose(app_page, "coll-nccl_algo", "auto")
    expect(app_page.locator("#coll-nccl_algo-error")).to_have_text("")
    expect(note).to_contain_text("NCCL picks Tree/Simple")

    choose(app_page, "coll-algorithm", "ring")  # a plain ring: chunks again, no NCCL choices
    expect(app_page.locator("#coll-chunks-label")).to_have_text("Chunks k")
    expect(app_page.locator("#coll-field-nccl_proto")).to_be_hidden()
    expect(note).to_have_count(0)
