"""The scenario in the URL: a page's form values as a short query string and back.

One mechanism for every page: the page's layout carries its :func:`url_spec` in a store, and the
browser writes the query from the inputs' values (``collsim.writeUrl`` in assets/collsim.js; no
request per change), only while the page's own path is shown and only for the page the browser
last asked for (:func:`writer_states`); the page reads it back when it is built
(:func:`form_from_query`). :func:`query_of` is the writer's rule in Python."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode

from dash import State

from webapp import ids


def form_from_query(search: str | None, defaults: dict[str, str]) -> dict[str, str]:
    """The form's values from a URL query string; unknown keys are ignored, missing ones default."""
    query = dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=True))
    return {key: query.get(key, default) for key, default in defaults.items()}


def query_from_form(form: dict[str, Any], defaults: dict[str, str]) -> str:
    """Only the fields that differ from the defaults, so shared links stay short."""
    return query_of({"defaults": dict(defaults)}, form)


def url_spec(
    names: list[str],
    defaults: dict[str, str],
    *,
    path: str,
    pinned_by: str | None = None,
    pinned: tuple[str, ...] = (),
    cleared: tuple[str, ...] = (),
) -> dict[str, Any]:
    """What the browser's URL writer (``collsim.writeUrl`` in assets/collsim.js, the one writer of
    every page's query) needs: the page's inputs in the order the writer gets their values
    (``names``) and the query's keys with their defaults (``defaults``: a key is written when its
    value differs). ``path``: the page's own path; the writer writes only while the address bar
    shows it (a write still pending when a link leaves the page, such as the fields a hardware
    preset's answer fills, put this page's query on the next page's address, and Back led there;
    a link to the same path is told apart by the page's instance, :func:`writer_states`).
    ``pinned``: keys written even at their default while the field ``pinned_by`` is set (what a
    hardware preset filled: a link read back fills what it lacks from the preset); ``cleared``:
    keys not written while ``pinned_by`` is empty (a field shown only then)."""
    spec = {"names": list(names), "defaults": dict(defaults), "path": path}
    return {**spec, "pinned_by": pinned_by, "pinned": list(pinned), "cleared": list(cleared)}


def writer_states(spec_id: str) -> list[State]:
    """A URL writer's last two arguments: which built page the container shows (the writer's own
    page, or the next one once a link was followed: :func:`webapp.app.instance_of`; a writer
    writes only for the page the browser last asked for) and the page's :func:`url_spec` store."""
    return [State(ids.PAGE_INSTANCE, "data"), State(spec_id, "data")]


def query_of(spec: dict[str, Any], form: dict[str, Any]) -> str:
    """The query ``collsim.writeUrl`` writes for these values: the same rule, in Python (links a
    page or a test builds, and the tests that hold the two to one rule)."""
    by = bool(_text(form.get(spec.get("pinned_by"))).strip()) if spec.get("pinned_by") else False
    query = {}
    for key, default in spec["defaults"].items():
        text = "" if not by and key in spec.get("cleared", ()) else _text(form.get(key))
        if text != default or (by and key in spec.get("pinned", ())):
            query[key] = text
    return "?" + urlencode(query) if query else ""


def _text(value: Any) -> str:
    """A value as the writer writes it: empty for None, False and 0 (as JavaScript's falsy ones)."""
    return "" if value is None or value is False or value == 0 and not isinstance(value, str) else str(value)


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
