"""Files a user names: the one gate every reader of a user-named file goes through, and the one
reader of YAML/JSON data (aliases and duplicate keys refused, size bounded before parsing).

On the command line a path is the user's own: ``--topology my.graphml`` opens that file. The
explorer (``collsim ui``) is a server, and there a URL or form value must never open a server
path (``/?topology=/etc/passwd`` opened that file and ``placement=<a YAML file>`` echoed its
content). Its requests run under :func:`refusing_paths` (and its helper processes under
:func:`refuse_paths_in_this_process`): a field may then name only a file of a folder the server
was started with (``collsim ui --files DIR``), by its name relative to that folder. Files from a
browser come by upload, bounded in size, and are parsed with :func:`parse_data` like any other.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from sim.errors import CollsimError

__all__ = [
    "load_mapping",
    "yaml_reason",
    "MAX_DATA_BYTES",
    "allow_folders",
    "allowed_files",
    "allowed_folders",
    "own_temporary_folder",
    "parse_data",
    "read_text",
    "refuse_paths_in_this_process",
    "refusing",
    "refusing_paths",
    "user_folder",
    "shown",
    "user_file",
]

MAX_DATA_BYTES = 64 * 2**20  # a YAML/JSON file the tool reads whole: recorded profiles are a few MB
SHOWN_CHARS = 120  # a value echoed in a message is cut here: a message never carries an unbounded value

_REFUSING: ContextVar[bool] = ContextVar("collsim_refusing_paths", default=False)
_OWN: ContextVar[tuple[Path, ...]] = ContextVar("collsim_own_folders", default=())
_process_refuses = False
_folders: tuple[Path, ...] = ()


def refusing() -> bool:
    """Whether user-named paths are refused here (a server request or a server's helper process)."""
    return _process_refuses or _REFUSING.get()


@contextmanager
def refusing_paths() -> Iterator[None]:
    """Within this block (this thread or task), a user-named path opens only a file of the
    folders given to :func:`allow_folders`."""
    token = _REFUSING.set(True)
    try:
        yield
    finally:
        try:
            _REFUSING.reset(token)
        except ValueError:  # left in another context than entered (a server's teardown): end it here
            _REFUSING.set(False)


@contextmanager
def own_temporary_folder() -> Iterator[Path]:
    """A temporary folder this code writes itself (a server's replay of a measured profile): its
    files open within this block even while paths are refused; no link or form can name it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="collsim-own-") as folder:
        path = Path(folder).resolve()
        token = _OWN.set((*_OWN.get(), path))
        try:
            yield path
        finally:
            _OWN.reset(token)


def refuse_paths_in_this_process() -> None:
    """A server's helper or job process: no user-named path is opened outside the allowed folders."""
    global _process_refuses
    _process_refuses = True


def allow_folders(folders: Sequence[str | Path]) -> None:
    """The folders whose files a server's fields may name (``collsim ui --files DIR``)."""
    global _folders
    resolved = []
    for folder in folders:
        path = Path(folder).expanduser().resolve()
        if not path.is_dir():
            raise CollsimError(f"--files: {str(folder)!r} is not a folder; give a folder of topology/placement/preset files")
        resolved.append(path)
    _folders = tuple(resolved)


def allowed_folders() -> list[str]:
    """The folders given to :func:`allow_folders`."""
    return [str(folder) for folder in _folders]


def allowed_files() -> list[str]:
    """The names a server's fields may give: files of the allowed folders, relative to them."""
    names = []
    for folder in _folders:
        names += sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())
    return names


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


def user_file(value: str | Path, field: str, expected: str, label: str | None = None) -> Path:
    """The regular file a user-given ``value`` names, for ``field``.

    ``expected`` says what the field takes besides a file ("switch, ring, torus2d or two_level");
    messages start with ``label`` (default: the field) and name the value and that. Under :func:`refusing` only a file inside an
    allowed folder, named relative to it, is returned: nothing else on the server is even looked at.
    """
    label = label or field
    if not str(value).strip():
        raise CollsimError(f"{label}: empty file name; give {expected}", field=field)
    if refusing():
        return _allowed_file(str(value), field, expected, label)
    path = Path(value)
    if path.is_dir():
        raise CollsimError(f"{label} {shown(str(value))} is a directory; give {expected}", field=field)
    if not path.exists():
        raise CollsimError(f"{label} {shown(str(value))} not found; give {expected}", field=field)
    if not path.is_file():
        raise CollsimError(f"{label} {shown(str(value))} is not a regular file; give {expected}", field=field)
    return path


def user_folder(value: str | Path, field: str, expected: str) -> Path:
    """The folder a user-given ``value`` names, for ``field`` (a folder of flight-recorder dumps).
    Under :func:`refusing` only a folder this code made itself (:func:`own_temporary_folder`) or
    one inside an allowed folder, named relative to it, is returned."""
    text = str(value)
    if not text.strip():
        raise CollsimError(f"{field}: empty folder name; give {expected}", field=field)
    if refusing():
        own = Path(text).resolve() if os.path.isabs(text) else None
        if own is not None and own.is_dir() and any(own.is_relative_to(folder) for folder in _OWN.get()):
            return own
        for folder in _folders:
            candidate = (folder / text).resolve()
            if not os.path.isabs(text) and candidate.is_relative_to(folder) and candidate.is_dir():
                return candidate
        raise CollsimError(
            f"{field} {shown(text)} is not allowed: the explorer opens no server folder named in a link or a form; give {expected}",
            field=field,
        )
    path = Path(text)
    if not path.is_dir():
        raise CollsimError(f"{field}: {shown(text)} is not a folder; give {expected}", field=field)
    return path


def _allowed_file(value: str, field: str, expected: str, label: str) -> Path:
    own = Path(value).resolve() if os.path.isabs(value) else None
    if own is not None and own.is_file() and any(own.is_relative_to(folder) for folder in _OWN.get()):
        return own  # a file this code wrote itself, within its own_temporary_folder block
    for folder in _folders:
        if not value or os.path.isabs(value):
            break
        candidate = (folder / value).resolve()
        if candidate.is_relative_to(folder) and candidate.is_file():
            return candidate
    where = f"a file of the folder the explorer was started with ({', '.join(allowed_files()[:12]) or 'none there'})"
    if not _folders:
        where = "start the explorer with `collsim ui --files DIR` to offer the files of DIR"
    raise CollsimError(
        f"{label} {shown(value)} is not allowed: the explorer opens no server file named in a link or a form; give {expected}, or {where}",
        field=field,
    )


def read_text(path: str | Path, what: str, limit: int = MAX_DATA_BYTES) -> str:
    """A text file's content, refused before reading when larger than ``limit`` bytes."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > limit:
            raise CollsimError(f"{what} {shown(str(path))} is {size:,} bytes; files up to {limit:,} bytes are read")
        with open(path, encoding="utf-8") as handle:
            text = handle.read(limit + 1)  # a file that grows while read (or a device) still stops here
    except (OSError, UnicodeDecodeError) as error:
        raise CollsimError(f"{what} {shown(str(path))} cannot be read as text: {error}") from None
    if len(text) > limit:
        raise CollsimError(f"{what} {shown(str(path))} is larger than {limit:,} bytes; files up to that are read")
    return text


def parse_data(text: str, suffix: str = "", limit: int = MAX_DATA_BYTES) -> Any:
    """A JSON or YAML document's data. A ``.json`` text goes through the JSON parser (recorded
    profiles and parameter lists are megabytes of it); any other text, or a ``.json`` one that
    is not valid JSON, through PyYAML's safe loader (libyaml's when PyYAML has it: the pure-Python
    parser reads ~1 MB/s). Refused, whatever the format: text over ``limit`` characters, YAML
    aliases (``*name``: a 600-byte alias bomb expands to gigabytes), and a key given twice in one
    mapping (which would silently keep the last). Raises ``yaml.YAMLError`` for text that is
    neither, CollsimError for the refusals."""
    import yaml

    if len(text) > limit:
        raise CollsimError(f"the document is {len(text):,} characters; documents up to {limit:,} are read")
    if suffix.lower() == ".json":
        try:
            return json.loads(text, object_pairs_hook=_json_object)
        except ValueError as error:
            if isinstance(error, CollsimError):
                raise
    return yaml.load(text, Loader=_strict_loader())  # noqa: S506 - a safe loader (SafeConstructor)


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise CollsimError(f"{key}: key given twice in one JSON object; keep one of them", field=key)
        data[key] = value
    return data


_LOADER: Any = None


def _strict_loader() -> Any:
    """PyYAML's safe loader (C when available) refusing aliases and duplicate keys."""
    global _LOADER
    if _LOADER is None:
        import yaml
        from yaml.constructor import ConstructorError

        class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
            def compose_node(self, parent: Any, index: Any) -> Any:  # pure-Python composer: refuse at the alias
                if self.check_event(yaml.AliasEvent):
                    event = self.peek_event()
                    raise ConstructorError(None, None, "aliases (*name) are not accepted; write the value out", event.start_mark)
                return super().compose_node(parent, index)

            def construct_object(self, node: Any, deep: bool = False) -> Any:  # libyaml composes itself: an alias is a node met twice
                if node in self.constructed_objects or node in self.recursive_objects:
                    raise ConstructorError(None, None, "aliases (*name) are not accepted; write the value out", node.start_mark)
                return super().construct_object(node, deep)

            def construct_mapping(self, node: Any, deep: bool = False) -> Any:
                seen: dict[Any, Any] = {}
                for key_node, _ in node.value:
                    key = getattr(key_node, "value", None)
                    if isinstance(key, str) and key in seen:
                        raise ConstructorError(
                            None,
                            None,
                            f"key {key!r} given twice in one mapping (also at line {seen[key]}); keep one of them",
                            key_node.start_mark,
                        )
                    seen[key] = key_node.start_mark.line + 1 if key_node.start_mark else "?"
                return super().construct_mapping(node, deep)

        _LOADER = StrictLoader
    return _LOADER


def load_mapping(path: str | Path, kind: str = "scenario file") -> dict[str, Any]:
    """A YAML or JSON file's top-level mapping, with a clear message when it is not one;
    ``kind`` names the file in messages ("profile", "calibration file", "sweep grid"...). The file
    goes through :func:`user_file` (a server opens no path a URL names) and
    :func:`parse_data` (size bounded, aliases and duplicate keys refused)."""
    import yaml  # only commands that read files pay for it

    path = user_file(path, _KIND_FIELDS.get(kind, kind.replace(" ", "_")), "a YAML or JSON file", label=kind)
    text = read_text(path, kind)
    try:
        data = parse_data(text, path.suffix)
    except yaml.YAMLError as error:
        raise CollsimError(f"{kind} {shown(str(path))} is not valid YAML/JSON: {yaml_reason(error)}") from None
    except CollsimError as error:
        raise CollsimError(f"{kind} {shown(str(path))}: {error}") from None
    if not isinstance(data, dict):
        raise CollsimError(f"{kind} {shown(str(path))}: expected a mapping of fields at the top level")
    return data


_KIND_FIELDS = {"hardware preset file": "hardware", "profile": "profile"}  # the input a file kind is given through


def yaml_reason(error: Exception) -> str:
    """A YAML error in one line, without the echoed document text (bounded)."""
    problem = getattr(error, "problem", None)
    mark = getattr(error, "problem_mark", None)
    if problem:
        return f"{problem}" + (f" (line {mark.line + 1}, column {mark.column + 1})" if mark else "")
    return " ".join(str(error).split())[: SHOWN_CHARS * 2]
