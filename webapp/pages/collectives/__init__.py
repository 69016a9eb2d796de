"""Collectives: pick a collective and a network, watch it step by step, compare algorithms.

The layout is in :mod:`.layout`, the callbacks (named outputs, one function call each) in
:mod:`.callbacks`, the ids in :mod:`.ids`; the work in :mod:`webapp.collective`, sim and
:mod:`webapp.helper`, the figures in :mod:`webapp.figures.collectives` (the step player's in
:mod:`webapp.figures.player`).
"""

from typing import Any

from webapp import collective as model
from webapp.pages.collectives import callbacks, ids
from webapp.pages.collectives.callbacks import register
from webapp.pages.collectives.layout import layout, validate
from webapp.pages.spec import Page

__all__ = ["PAGE", "layout", "register"]


def _run(checked: dict[str, Any]) -> dict[str, Any]:
    return callbacks.simulate(checked["scenario"], "step", background=False, position=0)


def _crossover() -> Any:  # the default crossover, waited for from the helper process
    return callbacks.crossover_panel(validate(model.form_from_query(""))["scenario"])


PAGE = Page(
    path=ids.PATH, name="collectives", title="Collectives", order=0, prefix=ids.PREFIX, layout=layout, register=register,
    defaults=model.DEFAULTS, validate=validate, run=_run, outputs=callbacks.outputs(callbacks.PANELS), warm=(_crossover,),
)  # fmt: skip
