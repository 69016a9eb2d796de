"""What the guides' tests read off a page: the text a person sees in a Dash component tree."""

from __future__ import annotations


def words(component) -> str:
    """The text a person reads in a Dash component tree."""
    if component is None:
        return ""
    if isinstance(component, (str, int, float)):
        return str(component)
    if isinstance(component, (list, tuple)):
        return "".join(words(child) for child in component)
    return words(getattr(component, "children", None))
