"""Parallelism: one transformer training step under TP, SP, PP, DP/ZeRO and EP (``collsim sim
train``): the form in :mod:`.model`, layout and callbacks in :mod:`.page`, figures in :mod:`.figures`."""

from typing import Any

from webapp.pages.parallelism import ids, model, page
from webapp.pages.spec import Page

__all__ = ["PAGE"]


def _validate(form: dict[str, Any]) -> dict[str, Any]:
    return model.validate_form(form)


PAGE = Page(
    path=ids.PATH, name="parallelism", title="Parallelism", order=4, prefix=ids.PREFIX, layout=page.layout,
    register=page.register, defaults=model.DEFAULTS, validate=_validate, run=page.run_checked, outputs=page.OUTPUTS,
)  # fmt: skip
