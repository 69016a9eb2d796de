"""A link's value that no dropdown offers stays in its field and in the address bar, with the
field's message (issue 22: ``?sharing=nonsense`` became ``?sharing=`` and ran fair sharing;
``?hardware=nonsense`` vanished from the URL; ``?algorithm=nonsense`` ran nccl_ring)."""

from __future__ import annotations

import importlib

import pytest

from webapp import collective as model
from webapp import urlstate
from webapp.pages.collectives import ids
from webapp.pages.ddp import model as ddp_model
from webapp.pages.ddp import page as ddp

layout = importlib.import_module("webapp.pages.collectives.layout")  # the package's own ``layout`` is its page function


def test_an_unknown_value_is_added_to_the_options_labelled_unknown():
    options = [{"label": "fair", "value": "fair"}, {"label": "fifo", "value": "fifo"}]
    assert urlstate.with_unknown(options, "fifo") == options
    assert urlstate.with_unknown(options, "") == options
    assert urlstate.with_unknown(options, "nonsense")[-1] == {"label": "nonsense (unknown)", "value": "nonsense"}


def _dropdown(tree, component_id):
    """The component with ``component_id`` in a Dash layout tree."""
    if getattr(tree, "id", None) == component_id:
        return tree
    children = getattr(tree, "children", None)
    for child in children if isinstance(children, list) else [children] if children is not None else []:
        found = _dropdown(child, component_id)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("name", list(layout.DROPDOWNS))
def test_every_collectives_dropdown_keeps_a_links_unknown_value(name):
    values = model.form_from_query(f"?{name}=nonsense&topology=two_level" if name != "topology" else "?topology=nonsense")
    field = _dropdown(layout.form(values), ids.field_id(name))
    assert field.value == "nonsense"
    assert "nonsense" in [option["value"] for option in field.options]


@pytest.mark.parametrize("name", ["preset", "strategy", "hardware", "algorithm", "comm_model"])
def test_every_ddp_dropdown_keeps_a_links_unknown_value(name):
    values = ddp_model.form_from_query(f"?{name}=nonsense")
    field = ddp._input(name, values[name])
    assert field.value == "nonsense"
    assert "nonsense" in [option["value"] for option in field.options]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize(
    ("query", "field"),
    [("/?algorithm=nonsense", "coll-algorithm"), ("/?sharing=nonsense", "coll-sharing"), ("/?hardware=nonsense", "coll-hardware"),
     ("/ddp?strategy=nonsense", "ddp-strategy")],
)  # fmt: skip
def test_an_unknown_link_value_stays_in_the_address_bar_with_its_fields_message(page, live_server, query, field):
    from playwright.sync_api import expect

    page.goto(live_server + query)
    expect(page.locator(f"#{field}-error")).to_contain_text("nonsense", timeout=30_000)
    expect(page.locator(f"#{field}")).to_contain_text("nonsense (unknown)")
    page.wait_for_timeout(1000)  # the URL writers have run by now
    assert page.url.endswith(query.split("/", 1)[1]) or "nonsense" in page.url, page.url
    assert "nonsense" in page.url
