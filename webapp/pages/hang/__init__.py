"""Hangs: explain a hang or desync (sim.hang); layout and callbacks in :mod:`.page`, the form's
model in :mod:`.model`, the wait-for graph in :mod:`.figures`, the ids in :mod:`.ids`."""

from typing import Any

from webapp.pages.hang import ids, model, page
from webapp.pages.spec import Page

__all__ = ["PAGE"]


def _run(checked: dict[str, Any]) -> dict[str, Any]:
    return page.show(checked)


PAGE = Page(
    path=ids.PATH, name="hang", title="Hangs", order=6, prefix=ids.PREFIX, layout=page.layout, register=page.register,
    defaults=model.DEFAULTS, validate=model.validate, run=_run, outputs=page.OUTPUTS,
)  # fmt: skip
