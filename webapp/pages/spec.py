"""A page of the explorer as one unit: its :class:`Page` spec, and the "comes drawn" helper every
page whose layout arrives drawn uses (:func:`drawn_into`).

A page is a package ``webapp/pages/<name>/`` (its model, ids, layout, figures and callbacks) whose
``__init__`` exports ``PAGE = Page(...)``; :data:`webapp.pages.PAGES` lists them, and the app, the
bench and the tests read that list (nothing else lists pages).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Page", "drawn_from", "drawn_into"]


@dataclass(frozen=True)
class Page:
    """One page of the explorer, as the shell and the tests see it.

    Args:
        path: its URL path ("/ddp"); unique.
        name: a short name (the nav link's id is ``nav-<name>``); unique.
        title: the navigation text.
        order: its place in the navigation (lowest first).
        prefix: the start of every component id of the page (``<prefix>-...``, built with
            :func:`webapp.ids.make` in the page's ``ids`` module); unique.
        layout: the page for a URL query string (``layout("?ranks=16")``), drawn or to be drawn.
        register: puts the page's callbacks on an app (``register(app)``).
        defaults: the form's values at the defaults (from :mod:`sim.fields` where the page has
            scenario fields), as its URL query reads them; None for a page without a form.
        validate: the form's values -> the checked scenario(s) and a message per field.
        run: ``validate``'s answer -> what the page draws (its named outputs).
        outputs: the named outputs ``run`` answers (name -> ``dash.Output``).
        warm: extra first-visitor work the app does once at start-up (after ``run`` at the defaults).
    """

    path: str
    name: str
    title: str
    order: int
    prefix: str
    layout: Callable[[str], Any]
    register: Callable[[Any], None]
    defaults: Mapping[str, str] | None = None
    validate: Callable[[dict[str, Any]], Any] | None = None
    run: Callable[[Any], Any] | None = None
    outputs: Mapping[str, Any] = field(default_factory=dict)
    warm: tuple[Callable[[], Any], ...] = ()

    @property
    def module(self) -> str:
        """Its key in Dash Pages' registry (``dash.page_registry``)."""
        return f"webapp.pages.{self.name}"

    def first_run(self) -> Any:
        """What the page draws at its defaults (None for a page without a form)."""
        if self.defaults is None or self.validate is None or self.run is None:
            return None
        return self.run(self.validate(dict(self.defaults)))


def drawn_from(outputs: Mapping[str, Any], shown: Mapping[str, Any]) -> dict[Any, dict[str, Any]]:
    """{component id: {property: value}} from a callback's named ``outputs`` and what it answered
    (``shown``; names it does not answer, and ``no_update``, are left out), for :func:`drawn_into`."""
    from dash import no_update

    drawn: dict[Any, dict[str, Any]] = {}
    for name, value in shown.items():
        if name in outputs and value is not no_update:
            drawn.setdefault(outputs[name].component_id, {})[outputs[name].component_property] = value
    return drawn


def drawn_into(tree: Any, drawn: dict[Any, dict[str, Any]]) -> Any:
    """Set ``drawn[component id][property]`` on the components of a layout ``tree`` (a page that
    comes drawn: what its callbacks would answer at load, carried by the layout); returns it."""
    for component in tree._traverse():
        for prop, value in drawn.get(getattr(component, "id", None), {}).items():
            setattr(component, prop, value)
    return tree
