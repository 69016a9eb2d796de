# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""Issue 36 in a real Chromium: on the DDP page the memory chart draws the GPU's 80 GB and says
"does not fit" on DDP for GPT 2.7B on 2 x dgx-h100; the Nodes field sets the ranks; the o and w
the results used show beside the boxes; the bucket guide's orange band is there to see."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .test_browser import app_page, drawn, open_page  # noqa: F401

pytestmark = pytest.mark.browser


def test_memory_chart_shows_the_gpus_capacity_and_what_does_not_fit(app_page: Page, live_server: str, shot):
    open_page(app_page, live_server + "/ddp?hardware=dgx-h100&preset=2.7B&ranks=16&sharding=ddp")
    drawn(app_page, "ddp-train-memory")
    memory = app_page.locator("#ddp-train-memory")
    expect(memory.locator(".annotation-text", has_text="GPU memory 74.51 GiB (80 GB)")).to_be_visible()
    expect(memory.locator("text", has_text=re.compile(r"82\.\d+ GiB — does not fit")).first).to_be_visible()
    expect(memory.locator("path[style*='stroke-dasharray']")).not_to_have_count(0)  # the dashed capacity line
    expect(app_page.locator("#ddp-train-strategies text", has_text="ddp (does not fit)").first).to_be_visible()
    expect(app_page.locator("#ddp-train-peak")).to_contain_text("does not fit")
    # the link ran on the preset's o and w, and the box under them says which the results used
    expect(app_page.locator("#ddp-w")).not_to_have_value("10GB/s")
    expect(app_page.locator("#ddp-ow-used")).to_contain_text("The results use o =")
    expect(app_page.locator("#ddp-nodes")).to_have_value("2")
    shot("ddp-memory-capacity")


def test_nodes_field_sets_the_ranks(app_page: Page, live_server: str):
    open_page(app_page, live_server + "/ddp?hardware=dgx-h100&preset=gpt2")
    nodes = app_page.locator("#ddp-nodes")
    expect(nodes).to_be_visible()
    nodes.fill("2")
    nodes.press("Enter")
    expect(app_page.locator("#ddp-ranks")).to_have_value("16")
    expect(app_page.locator("#ddp-hardware-caption")).to_contain_text("2 node(s) x 8 GPUs = 16 ranks (the Nodes field sets the ranks)")
    expect(app_page).to_have_url(re.compile(r"nodes=2"))


def test_bucket_guide_orange_band_is_visible(app_page: Page, live_server: str):
    app_page.goto(live_server + "/guides#guide-buckets")
    drawn(app_page, "guides-bucket-graph")
    band = app_page.locator("#guides-bucket-graph path[style*='rgb(255, 127, 14)']").first
    expect(band).to_be_visible()
    box = band.bounding_box()
    assert box is not None and box["width"] >= 8  # a band one sees, not a 1-pixel sliver
