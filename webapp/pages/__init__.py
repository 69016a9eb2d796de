"""The explorer's pages, one package each (``webapp/pages/<name>/``, exporting ``PAGE``), and the
one list of them (:data:`PAGES`) that the app, the bench and the tests read.

As Dash Pages scans its pages folder, every package here that exports a ``PAGE``
(:class:`webapp.pages.spec.Page`) is a page: adding one edits no file outside its package.
"""

import importlib
import pkgutil

from webapp.pages.spec import Page, drawn_from, drawn_into

__all__ = ["PAGES", "Page", "drawn_from", "drawn_into"]


def _pages() -> tuple[Page, ...]:
    """Every page package's ``PAGE``, in navigation order (``Page.order``)."""
    found = []
    for package in pkgutil.iter_modules(__path__):
        if package.ispkg:
            page = getattr(importlib.import_module(f"{__name__}.{package.name}"), "PAGE", None)
            found += [page] if isinstance(page, Page) else []
    return tuple(sorted(found, key=lambda page: page.order))


PAGES = _pages()
