"""Guides: four walks through the course's cases; layout and callbacks in :mod:`.page`, figures in
:mod:`.figures`, ids in :mod:`.ids`."""

from webapp.pages.guides import ids, page
from webapp.pages.spec import Page

__all__ = ["PAGE"]

PAGE = Page(path="/guides", name="guides", title="Guides", order=3, prefix=ids.PREFIX, layout=page.layout, register=page.register)
