"""The scenario in the URL: a page's form values as a short query string and back."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode


def form_from_query(search: str | None, defaults: dict[str, str]) -> dict[str, str]:
    """The form's values from a URL query string; unknown keys are ignored, missing ones default."""
    query = dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=True))
    return {key: query.get(key, default) for key, default in defaults.items()}


def query_from_form(form: dict[str, Any], defaults: dict[str, str]) -> str:
    """Only the fields that differ from the defaults, so shared links stay short."""
    changed = {key: str(form.get(key) or "") for key in defaults if str(form.get(key) or "") != defaults[key]}
    return "?" + urlencode(changed) if changed else ""


def with_unknown(options: list[dict[str, Any]], value: str | None) -> list[dict[str, Any]]:
    """A dropdown's options, plus a link's value that is none of them, labelled unknown: a
    dropdown drops a value it does not offer, and the URL writer would then drop it from the
    address bar (``?sharing=nonsense`` became ``?sharing=`` and ran fair). Kept, the value stays in
    its field and in the URL, and the field shows why it is refused."""
    if value in (None, "") or any(option.get("value") == value for option in options):
        return options
    return [*options, {"label": f"{value} (unknown)", "value": value}]


def query_keys(search: str | None) -> set[str]:
    """The keys a URL query string names (whatever their values)."""
    return {key for key, _ in parse_qsl((search or "").lstrip("?"), keep_blank_values=True)}


def unknown_keys(search: str | None, allowed: list[str]) -> list[str]:
    """One message naming the keys of a link the page does not read (``rank=16`` for ranks) and
    the keys it does, or [] when it reads them all: a key ignored in silence looked as if it had
    been applied."""
    unknown = sorted(query_keys(search) - set(allowed))
    if not unknown:
        return []
    keys = ", ".join(unknown)
    return [f"Ignored in the link: {keys} ({'not a key' if len(unknown) == 1 else 'not keys'} of this page). Keys: {', '.join(allowed)}."]
