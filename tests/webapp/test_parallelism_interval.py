# ruff: noqa: F811 - app_page is a fixture imported from test_browser
"""The Parallelism page's Step time card carries the step's 80 % interval on the preset, the
numbers `collsim sim train` prints for the same scenario (issue 33, item 2), its basis on hover."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from playwright.sync_api import Page, expect

from sim.cli import cli
from sim.units import format_time
from webapp.pages.parallelism import PAGE, ids

from .test_browser import LOADED, app_page  # noqa: F401

pytestmark = pytest.mark.slow  # the step simulated three times


EXAMPLE = "--hardware dgx-a100 --nodes 4 --model megatron-22b --tp 8 --pp 2 --dp 2 --global-batch 32"  # the page's default


def _cli(args: str = EXAMPLE) -> tuple[str, str]:
    """(step time, "80 %: low – high") as `collsim sim train --json` gives them."""
    done = CliRunner().invoke(cli, ["sim", "train", *args.split(), "--json"])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    low, high = summary["step_time_interval_s"]
    return format_time(summary["step_time_s"]), f"80 %: {format_time(low)} – {format_time(high)}"


def test_the_step_time_card_shows_the_clis_interval_for_the_same_scenario():
    checked = PAGE.validate(dict(PAGE.defaults))
    card = PAGE.run(checked)["cards"][0]
    title, value, interval = card.children
    assert title.children == "Step time" and value.id == ids.STEP_TIME and interval.id == ids.STEP_INTERVAL
    assert (value.children, interval.children) == _cli()  # the same scenario: the same step, the same interval
    assert "every collective and pipeline send" in interval.title


@pytest.mark.browser
def test_the_card_shows_the_interval_in_the_browser(app_page: Page, live_server: str):
    app_page.goto(live_server + ids.PATH)
    expect(app_page.locator(f"#{ids.STEP_INTERVAL}")).to_have_text(_cli()[1], timeout=LOADED)
    assert "every collective and pipeline send" in app_page.locator(f"#{ids.STEP_INTERVAL}").get_attribute("title")
