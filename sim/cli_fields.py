"""Command-line options for scenario fields, built from the fields' metadata (:mod:`sim.fields`):
the flag, help text and choices are the field's own, so a command does not restate them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from sim.fields import field_info, fields_of

__all__ = ["field_option", "field_options"]


def field_option(name: str, *decls: str, scenario: str = "collective", note: str = "", **kwargs: Any) -> Callable:
    """A click option for field ``name`` of ``scenario``: flag ``--short`` (or ``decls``), the
    field's help (with its range where it has both bounds), its choices; ``kwargs`` as click.option takes them
    (``type=int``, ``multiple=True``...); ``note``: what this command adds ("required without
    --hardware"). Defaults to None: an option not given leaves the
    scenario's default (or a scenario file's value) alone."""
    info = fields_of(scenario).get(name) or field_info(name, scenario)
    kwargs.setdefault("default", None)
    if info.choices and "type" not in kwargs:
        kwargs["type"] = click.Choice(list(info.choices))
    elif info.kind in ("int", "float") and "type" not in kwargs:
        kwargs["type"] = {"int": int, "float": float}[info.kind]
    elif info.kind == "flag" and not any("/" in decl for decl in decls):
        kwargs.setdefault("is_flag", True)
    elif info.kind == "repeated":
        kwargs.setdefault("multiple", True)
    text = info.help + (f" ({info.low:g} to {info.high:g})" if info.low is not None and info.high is not None else "")
    text += f"; {note}" if note else ""
    return click.option(*(decls or (info.option,)), help=text, **kwargs)


def field_options(scenario: str, *names: str, decls: dict[str, tuple[str, ...]] | None = None) -> Callable:
    """:func:`field_option` for each of ``names``, in this order in ``--help``; ``decls`` gives a
    field its own flags and destination (``{"params_file": ("--params", "params_file")}``)."""

    def apply(command: Callable) -> Callable:
        for name in reversed(names):
            command = field_option(name, *(decls or {}).get(name, ()), scenario=scenario)(command)
        return command

    return apply
