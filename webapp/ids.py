"""The shell's component ids (navigation, URL, page container) and how every page builds its own
from its prefix (:func:`make`; each page's are in its ``ids`` module, ``webapp/pages/<name>/ids.py``).
"""

from collections.abc import Callable

__all__ = [
    "NAV",
    "PAGE",
    "PAGE_INSTANCE",
    "ROUTE_BUILT",
    "ROUTE_REQUEST",
    "URL",
    "URL_WRITTEN",
    "error_id",
    "field_box_id",
    "field_id",
    "field_ids",
    "make",
    "nav_id",
]

URL = "url"
PAGE = "page"
NAV = "nav"
URL_WRITTEN = "url-written"  # dcc.Store: the query a page last wrote (anything else in the URL is Back/Forward)
ROUTE_REQUEST = "route-request"  # dcc.Store: a path and query the page container must be built for
PAGE_INSTANCE = "page-instance"  # dcc.Store in the page container: the route request its page was built for
ROUTE_BUILT = "route-built"  # dcc.Store: the path and query whose page the layout already carries (app.built_route)


def make(prefix: str, name: str) -> str:
    """A page's component id: its prefix, a dash, the name (``make("ddp", "summary")``)."""
    return f"{prefix}-{name}"


def field_id(field: str, prefix: str) -> str:
    """A form field's input."""
    return make(prefix, field)


def error_id(field: str, prefix: str) -> str:
    """The message slot under a form field's input."""
    return make(prefix, f"{field}-error")


def field_box_id(field: str, prefix: str) -> str:
    """The box around a form field (label, input, message, hint): hidden when it does not apply."""
    return make(prefix, f"field-{field}")


def field_ids(prefix: str) -> tuple[Callable[..., str], Callable[..., str], Callable[..., str]]:
    """A page's (field_id, error_id, field_box_id), its prefix the default (a page's ``ids`` module:
    ``field_id, error_id, field_box_id = field_ids(PREFIX)``)."""

    def page_field_id(field: str, page_prefix: str = prefix) -> str:
        return field_id(field, page_prefix)

    def page_error_id(field: str, page_prefix: str = prefix) -> str:
        return error_id(field, page_prefix)

    def page_field_box_id(field: str, page_prefix: str = prefix) -> str:
        return field_box_id(field, page_prefix)

    return page_field_id, page_error_id, page_field_box_id


def nav_id(page_name: str) -> str:
    """A page's link in the navigation bar."""
    return f"nav-{page_name}"
