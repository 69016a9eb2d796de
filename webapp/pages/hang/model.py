"""Plain functions behind the Hangs page: the form (a canonical case or a typed program, a
mutation, a timeout) -> per-rank programs -> :func:`sim.hang.explain`'s report, as plain data.

The program is text in a bounded box, read by :func:`sim.files.parse_data` (no aliases, no key
given twice) and checked by :func:`sim.hang.parse_programs`; an upload only fills the box."""

from __future__ import annotations

import base64
import re
from typing import Any

import yaml

from sim.errors import CollsimError
from sim.files import own_temporary_folder, parse_data, yaml_reason
from sim.hang import CASES, explain, parse_programs
from sim.hang import fields as hang_fields  # registers the "hang" field table; the timeout's bounds and words
from sim.hang.cli import mutate
from sim.hang.flight import DUMP_PREFIX, read_dumps
from sim.hang.programs import MAX_RANKS, check_timeout
from webapp import urlstate
from webapp.pages.hang import ids

__all__ = [
    "DEFAULTS",
    "MAX_LINK_CHARS",
    "MAX_PROGRAM_CHARS",
    "MUTATIONS",
    "TOOLS",
    "case_text",
    "dumps_text",
    "explained",
    "form_from_query",
    "linked_program",
    "program_of",
    "upload_text",
    "url_spec",
    "validate",
]

DEFAULTS: dict[str, str] = {
    "case": "swapped",  # a canonical case of sim.hang.cases, or "" (the program box as typed or uploaded)
    "mutation": "",  # "" or one of MUTATIONS, applied to the program
    "spec": "",  # the mutation's RANK:CALL[:...] (sim.hang.fields)
    "timeout": "",  # the process group's timeout in seconds; "" torch's defaults
    "program": "",  # an edited program the link carries ("" when the box holds the case's)
}
MUTATIONS = ("skip", "resize", "dtype", "swap", "dies", "stalls")  # sim.hang.cli.mutate's kinds
MAX_PROGRAM_CHARS = 256 * 1024  # the box and an upload: a few thousand calls of YAML
MAX_DUMPS_BYTES = 32 * 2**20  # uploaded flight-recorder dumps, all together
MAX_LINK_CHARS = 2000  # an edited program longer than this is not put in the link (browsers cut long URLs)
TOOLS = (
    ("nccl", "NCCL watchdog"),
    ("nccl_detail", "NCCL + DETAIL"),
    ("gloo", "gloo"),
    ("gloo_detail", "gloo + DETAIL"),
    ("flight", "Flight recorder"),
)
FIELDS = {name: hang_fields.FIELDS[name] for name in (*MUTATIONS, "timeout_s")}


def form_from_query(search: str | None) -> dict[str, str]:
    return urlstate.form_from_query(search, DEFAULTS)


def url_spec() -> dict[str, Any]:
    return urlstate.url_spec(list(DEFAULTS), DEFAULTS, path=ids.PATH)


def case_text(name: str | None) -> str:
    """A canonical case's program as YAML (what the box shows when the case is picked); "" for none."""
    if name not in CASES:
        return ""
    data = {key: value for key, value in CASES[name].items() if key != "about"}
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)


def program_of(form: dict[str, Any]) -> str:
    """The box's text for a form read from a link: its edited program, else its case's."""
    return str(form.get("program") or "") or case_text(form.get("case"))


def linked_program(text: str | None, case: str | None) -> tuple[str, str]:
    """(what the link carries for the box, a note): "" when the box holds the case's program; the
    text when it is short enough for a link; else "" and a note saying it is not in the link."""
    text = text or ""
    if text == case_text(case):
        return "", ""
    if len(text) > MAX_LINK_CHARS:
        return "", f"This program ({len(text):,} characters) is too long for the link (up to {MAX_LINK_CHARS:,}); share its file."
    return text, ""


def upload_text(contents: str | None, filename: str | None) -> str:
    """An uploaded program file's text (base64 data URL), bounded before it is decoded."""
    name = filename or "upload"
    if len(contents or "") > MAX_PROGRAM_CHARS * 4 // 3 + 1024:
        raise CollsimError(f"{name}: larger than {MAX_PROGRAM_CHARS // 1024} KiB; the page takes programs up to that")
    try:
        text = base64.b64decode(str(contents).split(",", 1)[1]).decode("utf-8")
    except (IndexError, ValueError, UnicodeDecodeError):
        raise CollsimError(f"{name}: not a text file; expected a YAML or JSON program (ranks: one list of calls per rank)") from None
    if len(text) > MAX_PROGRAM_CHARS:
        raise CollsimError(f"{name}: {len(text):,} characters; the page takes programs up to {MAX_PROGRAM_CHARS:,}")
    return text


def dumps_text(contents: list[str] | None, filenames: list[str] | None) -> str:
    """Uploaded flight-recorder dumps (one pickle per rank, each name ending in its rank, as torch
    writes ``nccl_trace_rank_0``) read by :func:`sim.hang.flight.read_dumps` (plain data only, no
    class a pickle names) into the programs they record, as the box's YAML."""
    contents, filenames = list(contents or []), list(filenames or [])
    if len(contents) > MAX_RANKS:
        raise CollsimError(f"flight-recorder dumps: {len(contents):,} files; up to {MAX_RANKS:,} (one per rank)")
    if sum(len(text) for text in contents) > MAX_DUMPS_BYTES * 4 // 3 + 1024 * len(contents):  # base64, before decoding
        raise CollsimError(f"flight-recorder dumps: over {MAX_DUMPS_BYTES // 2**20} MiB in all; the page takes dumps up to that")
    with own_temporary_folder() as folder:
        for text, name in zip(contents, filenames):
            found = re.search(r"(\d+)$", name or "")
            if not found:
                raise CollsimError(f"flight-recorder dumps: {str(name)[:60]!r}: a dump's name ends in its rank (nccl_trace_rank_0)")
            try:
                data = base64.b64decode(text.split(",", 1)[1])
            except (IndexError, ValueError):
                raise CollsimError(f"flight-recorder dumps: {str(name)[:60]!r} could not be read") from None
            (folder / f"{DUMP_PREFIX}{int(found.group(1))}").write_bytes(data)
        try:
            programs = read_dumps(folder)
        except CollsimError as error:
            raise CollsimError(str(error).replace("--flight-recorder: ", "flight-recorder dumps: ", 1)) from None
    data = {key: value for key, value in programs.to_dict().items() if value not in (None, {})}
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    if len(text) > MAX_PROGRAM_CHARS:
        raise CollsimError(f"flight-recorder dumps: {len(text):,} characters as a program; the box takes up to {MAX_PROGRAM_CHARS:,}")
    return text


def _program_data(text: str) -> dict[str, Any]:
    if not text.strip():
        raise CollsimError("program: empty; pick a case or type per-rank programs (ranks: one list of calls per rank)")
    try:
        data = parse_data(text, "", limit=MAX_PROGRAM_CHARS)
    except yaml.YAMLError as error:
        raise CollsimError(f"program: malformed YAML: {yaml_reason(error)}") from None
    except CollsimError as error:
        raise CollsimError(f"program: {error}") from None
    parse_programs(data)  # the strict checks, before a mutation moves its calls
    return data


def _timeout(text: str) -> float | None:
    if not text.strip():
        return None
    info = FIELDS["timeout_s"]
    try:
        value = float(text)
    except ValueError:
        raise CollsimError(f"timeout: give a number of seconds from {info.low:g} to {info.high:g}, got {text[:40]!r}") from None
    return check_timeout(value, "timeout")


def _mutated(data: dict[str, Any], kind: str, spec: str) -> dict[str, Any]:
    if not kind:
        return data
    if kind not in MUTATIONS:
        raise CollsimError(f"mutation: {kind[:40]!r} is not one of {', '.join(MUTATIONS)}")
    if not spec.strip():
        raise CollsimError(f"spec: {kind} needs {FIELDS[kind].help}")
    try:
        mutated = mutate(data, kind, spec.strip())
        parse_programs(mutated)
    except CollsimError as error:
        raise CollsimError(f"spec: {str(error).replace(f'--{kind}: ', '', 1)}") from None
    return mutated


def validate(form: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    """{"programs": the mutated program data or None, "timeout_s", "errors": {field: message}}:
    each field checked, its message in its own slot (the box's under "program"). ``text``: the
    box as typed (None: the form's, as a link gives it: :func:`program_of`)."""
    form = {key: str(form.get(key) if form.get(key) is not None else DEFAULTS[key]) for key in DEFAULTS}
    text = program_of(form) if text is None else text
    errors: dict[str, str] = {}
    if form["case"] and form["case"] not in CASES:
        errors["case"] = f"case: unknown {form['case'][:40]!r}; one of {', '.join(CASES)}"
    data = timeout_s = None
    for name, check in (("program", lambda: _program_data(text)), ("timeout", lambda: _timeout(form["timeout"]))):
        try:
            value = check()
        except CollsimError as error:
            errors[name] = str(error)
            continue
        data, timeout_s = (value, timeout_s) if name == "program" else (data, value)
    if data is not None:
        try:
            data = _mutated(data, form["mutation"], form["spec"])
        except CollsimError as error:
            errors["mutation" if str(error).startswith("mutation") else "spec"] = str(error)
    if errors:
        return {"programs": None, "timeout_s": None, "errors": errors}
    return {"programs": {key: value for key, value in data.items() if key != "about"}, "timeout_s": timeout_s, "errors": {}}


def explained(checked: dict[str, Any]) -> dict[str, Any]:
    """sim.hang's report for validated programs, as plain data (``HangReport.to_dict()``)."""
    return explain(parse_programs(checked["programs"]), timeout_s=checked["timeout_s"]).to_dict()
