"""Command-line options for scenario fields, built from the fields' metadata (:mod:`sim.fields`):
the flag, help text and choices are the field's own, so a command does not restate them."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from sim.errors import CollsimError
from sim.fields import field_info, fields_of

__all__ = ["check_outputs", "field_option", "field_options", "writing_to"]


def check_outputs(*pairs: tuple[str | None, str]) -> None:
    """Each (path, flag) given: refused before a run when empty (``--trace ""``, once silently
    skipped), a directory, or in a directory that does not exist."""
    from sim.collective.results import check_output_path

    for path, what in pairs:
        if path is not None and not str(path).strip():
            raise CollsimError(f"{what}: empty file name; give a file to write")
        if path is not None:
            check_output_path(path, what)


@contextmanager
def writing_to(path: Any, what: str) -> Iterator[None]:
    """Around the writing of an output file: a full disk (``/dev/full``), a missing permission,
    any OSError becomes one error naming the flag and the file, not a traceback."""
    try:
        yield
    except OSError as error:
        raise CollsimError(f"{what}: cannot write {str(path)!r}: {error.strerror or error}") from None


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
    if info.listing:
        kwargs.update(cls=_ListingOption, listing=info.listing, head=info.help)
    return click.option(*(decls or (info.option,)), help=text, **kwargs)


class _ListingOption(click.Option):
    """An option whose help ends with the allowed values, listed when help is shown (the
    registry's ops: all_to_all included), so ``collsim --help`` imports nothing heavy."""

    def __init__(self, *args: Any, listing: str, head: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.listing, self.head = listing, head  # the list goes after the field's own help, before a command's note

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        module, function = self.listing.split(":")
        names = ", ".join(getattr(importlib.import_module(module), function)())
        base, self.help = self.help, (self.help or "").replace(self.head, f"{self.head}: {names}", 1)
        try:
            return super().get_help_record(ctx)
        finally:
            self.help = base


def field_options(
    scenario: str,
    *names: str,
    decls: dict[str, tuple[str, ...]] | None = None,
    notes: dict[str, str] | None = None,
    extra: dict[str, dict[str, Any]] | None = None,
) -> Callable:
    """:func:`field_option` for each of ``names``, in this order in ``--help``; ``decls`` gives a
    field its own flags and destination (``{"params_file": ("--params", "params_file")}``),
    ``notes`` what this command adds to a field's help, ``extra`` its click keywords
    (``{"op": {"required": True}}``). A command passes :func:`sim.fields.command_fields`: the
    fields whose entry names it, so a new field's flag needs no edit here."""

    def apply(command: Callable) -> Callable:
        for name in reversed(names):
            note = (notes or {}).get(name, "")
            command = field_option(name, *(decls or {}).get(name, ()), scenario=scenario, note=note, **(extra or {}).get(name, {}))(command)
        return command

    return apply
