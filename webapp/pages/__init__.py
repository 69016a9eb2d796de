"""The explorer's pages, one package each (``webapp/pages/<name>/``, exporting ``PAGE``), and the
one list of them (:data:`PAGES`) that the app, the bench and the tests read.

Adding a page: a package with its ``PAGE`` (:class:`webapp.pages.spec.Page`) and one line below.
"""

from webapp.pages.spec import Page, drawn_from, drawn_into

__all__ = ["PAGES", "Page", "drawn_from", "drawn_into"]


def _pages() -> tuple[Page, ...]:
    from webapp.pages import collectives, compare, ddp, guides

    return tuple(sorted((collectives.PAGE, ddp.PAGE, compare.PAGE, guides.PAGE), key=lambda page: page.order))


PAGES = _pages()
