"""One module per page: PATH, NAME, TITLE, layout(search), register(app)."""

from __future__ import annotations

from typing import Any


def drawn_into(tree: Any, drawn: dict[Any, dict[str, Any]]) -> Any:
    """Set ``drawn[component id][property]`` on the components of a layout ``tree`` (a page that
    comes drawn: what its callbacks would answer at load, carried by the layout); returns it."""
    for component in tree._traverse():
        for prop, value in drawn.get(getattr(component, "id", None), {}).items():
            setattr(component, prop, value)
    return tree
