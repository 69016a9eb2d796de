# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""Issue 14 item 5 in a real Chromium: the DDP page's training-step section (FSDP / ZeRO)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .test_browser import app_page, choose, meta, open_page  # noqa: F401

pytestmark = pytest.mark.browser


def test_training_step_strategies_timeline_memory_and_url(app_page: Page, live_server: str, shot):
    open_page(app_page, live_server + "/ddp")
    expect(app_page.locator("#ddp-train-notice")).to_contain_text("Training step with full_shard")
    expect(app_page.locator("#ddp-train-step")).not_to_be_empty()
    for graph in ("ddp-train-strategies", "ddp-train-memory", "ddp-train-timeline"):
        expect(app_page.locator(f"#{graph} .main-svg").first).to_be_visible()
    assert meta(app_page, "ddp-train-timeline")["lanes"] == ["compute", "all-gather", "reduce-scatter"]
    assert set(meta(app_page, "ddp-train-memory")["peak_bytes"]) == {
        "ddp",
        "zero1",
        "shard_grad_op",
        "full_shard",
        "no_shard",
        "hybrid_shard",
    }
    expect(app_page.locator("#ddp-train-caption")).to_contain_text("activations (Korthikanti et al. 2022")
    expect(app_page.locator("#ddp-train-activations")).to_contain_text("GiB")  # gpt2, 8192 tokens a rank, bf16
    # compute from FLOPs at the stated MFU, strategies defined, the recommended caps as a range
    expect(app_page.locator("#ddp-compute")).to_contain_text("(backward) MFU of H100 SXM5 80GB's 989.4 TFLOP/s bf16 peak")
    expect(app_page.locator("#ddp-compute")).to_contain_text("the MFU was measured: NVIDIA H100 80GB HBM3")
    expect(app_page.locator("#ddp-strategy-words")).to_contain_text("overlap: one asynchronous all-reduce per tensor")
    expect(app_page.locator("#ddp-best")).to_contain_text("–")
    expect(app_page.locator("#ddp-field-shard_size")).to_be_hidden()
    app_page.locator("#ddp-train-timeline").scroll_into_view_if_needed()
    shot("ddp-training")

    choose(app_page, "ddp-sharding", "hybrid_shard")
    expect(app_page.locator("#ddp-field-shard_size")).to_be_visible()
    expect(app_page.locator("#ddp-train-notice")).to_contain_text("shard group 4 of 8 ranks")
    expect(app_page).to_have_url(re.compile(r"sharding=hybrid_shard"))
    box = app_page.locator("#ddp-shard_size")
    box.fill("3")
    box.press("Enter")
    expect(app_page.locator("#ddp-shard_size-error")).to_contain_text("shard_size: must be a whole number of ranks that divides ranks (8)")
    box.fill("2")
    box.press("Enter")
    expect(app_page.locator("#ddp-shard_size-error")).to_be_empty()
    expect(app_page.locator("#ddp-train-notice")).to_contain_text("shard group 2 of 8 ranks")
    expect(app_page).to_have_url(re.compile(r"shard_size=2"))

    choose(app_page, "ddp-sharding", "ddp")
    expect(app_page.locator("#ddp-train-notice")).to_contain_text("Training step with ddp")
    app_page.wait_for_function(
        "() => (document.querySelector('#ddp-train-timeline .js-plotly-plot').layout.meta || {}).lanes?.includes('all-reduce')"
    )
    assert meta(app_page, "ddp-train-timeline")["lanes"] == ["compute", "all-reduce"]

    # a shared link reopens the same strategy
    open_page(app_page, live_server + "/ddp?sharding=shard_grad_op")
    expect(app_page.locator("#ddp-train-notice")).to_contain_text("Training step with shard_grad_op")
