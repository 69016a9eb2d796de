"""Sim vs measured: layout and callbacks in :mod:`.page`, figures in :mod:`.figures`, ids in
:mod:`.ids`; the numbers from :mod:`real.overlays` and :mod:`real.gpu_heldout`."""

from webapp.pages.compare import ids, page
from webapp.pages.spec import Page

__all__ = ["PAGE"]

PAGE = Page(
    path=ids.PATH, name="compare", title="Sim vs measured", order=2, prefix=ids.PREFIX, layout=page.layout, register=page.register,
    outputs=page.OUTPUTS,
)  # fmt: skip
