"""Failures and checkpoints (sim.training.runcost): layout and callbacks in :mod:`.page`, the
form's model in :mod:`.model`, the figures in :mod:`.figures`, the ids in :mod:`.ids`."""

from webapp.pages.runcost import ids, model, page
from webapp.pages.spec import Page

__all__ = ["PAGE"]

PAGE = Page(
    path=ids.PATH, name="runcost", title="Failures", order=7, prefix=ids.PREFIX, layout=page.layout, register=page.register,
    defaults=model.DEFAULTS, validate=model.validate, run=page.show, outputs=page.OUTPUTS,
)  # fmt: skip
