"""What every page's callbacks share: named answers, a guard that turns errors into messages, and
the URL query a callback writes.

A callback's outputs are named (a dict of ``Output``s); its function returns a dict with the same
names, and :func:`answer` fills the names it leaves out with ``no_update``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from dash import no_update
from dash.exceptions import PreventUpdate

from sim.errors import CollsimError
from sim.files import refusing_paths

__all__ = ["answer", "events_csv", "guarded"]

log = logging.getLogger(__name__)


def answer(names: Iterable[str], **values: Any) -> dict[str, Any]:
    """A callback's named answer: ``values`` for the names given, ``no_update`` for the rest."""
    names = list(names)
    unknown = set(values) - set(names)
    if unknown:
        raise KeyError(f"not an output of this callback: {', '.join(sorted(unknown))}")
    return {name: values.get(name, no_update) for name in names}


def guarded(function: Callable[..., Any], fallback: Callable[[str], Any]) -> Callable[..., Any]:
    """Run a callback; a :class:`CollsimError` or an unexpected error becomes ``fallback(message)``
    (a visible message), never an HTTP 500 that leaves the page blank. It runs refusing user-named
    server paths (:func:`sim.files.refusing_paths`), also where it runs outside a request."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:  # background callbacks get set_progress first: it passes through
        try:
            with refusing_paths():  # a field never opens a server file (sim.files), in a request or a background job
                return function(*args, **kwargs)
        except PreventUpdate:
            raise
        except CollsimError as error:
            return fallback(str(error))
        except Exception as error:  # noqa: BLE001 - the page must keep working whatever went wrong
            log.exception("callback %s failed", function.__name__)
            return fallback(f"internal error in {function.__name__}: {type(error).__name__}: {error}")

    wrapper.__name__ = function.__name__
    return wrapper


def events_csv(rows: Iterable[dict[str, Any]]) -> str:
    """An event table (:data:`sim.collective.results.EVENT_COLUMNS`) as CSV text, for a download."""
    import csv
    import io

    from sim.collective.results import EVENT_COLUMNS

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EVENT_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
