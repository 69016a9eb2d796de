"""DDP buckets and the training step: layout and callbacks in :mod:`.page`, the form's model in
:mod:`.model`, the ids in :mod:`.ids`; the figures in :mod:`webapp.figures.ddp` (shared with the
Sim vs measured page)."""

from typing import Any

from webapp.pages.ddp import ids, model, page
from webapp.pages.spec import Page

__all__ = ["PAGE"]


def _validate(form: dict[str, Any]) -> dict[str, Any]:
    return page.validate(None, form)


def _run(checked: dict[str, Any]) -> dict[str, Any]:
    return {"ddp": page.simulate(checked["ddp"]), "training": page.simulate_training(checked["training"])}


PAGE = Page(
    path=ids.PATH, name="ddp", title="DDP buckets", order=1, prefix=ids.PREFIX, layout=page.layout, register=page.register,
    defaults=model.DEFAULTS, validate=_validate, run=_run, outputs={**page.DDP_OUTPUTS, **{f"train_{k}": v for k, v in page.TRAIN_OUTPUTS.items()}},
)  # fmt: skip
