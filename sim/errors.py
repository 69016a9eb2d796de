"""The one exception users see: a message naming what was wrong and what is allowed."""

from __future__ import annotations

import re
from typing import Any

# "name: ...", "--name: ...", or "name <what> ...: " (topology ring: ..., placement file 'x': ...)
_LEADING_FIELD = re.compile(r"^(--)?([a-z][a-z0-9_]*(?:-[a-z0-9]+)*)(?:\s*:|\s[^:]{0,60}:)")


MAX_MESSAGE_CHARS = 2_000


class CollsimError(ValueError):
    """Bad input or an impossible scenario. The CLI prints its message and exits with code 2.

    ``field``: the input it is about (a scenario key such as ``chunks`` or ``bandwidth``), so the
    CLI, scenario files and the explorer's forms show the same message at the same input. Given
    explicitly, or read from a message that starts ``name:`` / ``--name:`` (or ``name <what>:``,
    as in ``topology ring: ...``); None when the error is about no single input."""

    def __init__(self, message: str = "", field: str | None = None) -> None:
        message = str(message)
        if len(message) > MAX_MESSAGE_CHARS:  # a value echoed whole (a 2 GB expanded YAML alias) never reaches a screen
            message = f"{message[:MAX_MESSAGE_CHARS]}... ({len(message) - MAX_MESSAGE_CHARS:,} more characters)"
        super().__init__(message)
        if field is None:
            match = _LEADING_FIELD.match(str(message))
            field = match.group(2).replace("-", "_") if match else None
        self.field = field

    def __reduce__(self) -> tuple:  # across processes (sweep pool, Dask, background jobs) the field stays
        if type(self).__init__ is not CollsimError.__init__:  # a subclass with its own arguments
            return super().__reduce__()
        return (type(self), (str(self), self.field))


class DeadlockError(CollsimError):
    """The simulation ended with ranks still waiting for messages that never come."""


def unknown_key(key: Any, allowed: Any, where: str, word: str = "field") -> CollsimError:
    """The error for a key that is not allowed: names it, the nearest allowed key, and the rest."""
    import difflib

    allowed = sorted(str(name) for name in allowed)
    near = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return CollsimError(f"{where}: unknown {word} {key!r}{hint}; allowed: {', '.join(allowed)}")
