"""Scenarios are data: frozen, validated, JSON/YAML round-trip.

``CollectiveScenario.from_dict`` accepts canonical field names with plain numbers
(``size_bytes: 67108864``) and short names with unit strings (``size: 64MiB``,
``bandwidth: 25GB/s``, ``latency: 5us``). Every invalid value raises one
:class:`~sim.errors.CollsimError` naming the field and what is allowed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.algorithms.registry import algorithm_spec, algorithms_for, fill_only_algorithm, ops
from sim.errors import CollsimError, unknown_key
from sim.fields import (
    COLLECTIVE,
    PRESET_KEYS,
    RECORD_MODES,
    SHARING_MODES,
    VERIFY_LIMIT_BYTES,
    FieldInfo,
    check_value,
    field_info,
    resolve_groups,
    verify_bytes,
)
from sim.files import load_mapping, yaml_reason
from sim.nccl.pick import PICK_KEYS, fill_pick, wants_pick
from sim.units import parse_bandwidth, parse_size, parse_time, require_unit

__all__ = ["RECORD_MODES", "SHARING_MODES", "CollectiveScenario", "FieldInfo", "ScenarioData", "aliases_of", "check_input_file", "check_keys", "field_info", "optional_parser", "parse_bool", "parse_int",
           "from_mapping", "load_mapping", "override", "parse_data", "unit_kind", "unknown_key"]  # fmt: skip


def parse_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise CollsimError(f"{what}: expected a whole number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CollsimError(f"{what}: expected a whole number, got {value!r}") from None
    if not math.isfinite(number) or number != int(number):
        raise CollsimError(f"{what}: expected a whole number, got {value!r}")
    return int(number)


def parse_bool(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "yes", "1", "on"):
        return True
    if str(value).lower() in ("false", "no", "0", "off"):
        return False
    raise CollsimError(f"{what}: expected true or false, got {value!r}")


def optional_parser(parse: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    return lambda value, what: None if value in (None, "", "none", "None") else parse(value, what)


def _stragglers(value: Any, what: str) -> tuple[tuple[int, float], ...]:
    """{rank: delay}, "3:1ms,5:2ms" or [[rank, delay], ...]: every delay with a unit in every form
    ("3:1" or [3, 1] is not read as 1 s; ``to_dict`` writes "0.001s"); zero needs none."""
    if isinstance(value, str):
        value = [item.split(":", 1) for item in value.split(",") if item.strip()]
    items = value.items() if isinstance(value, dict) else value
    try:
        pairs = [(rank, delay) for rank, delay in items]
    except (TypeError, ValueError):
        raise CollsimError(f"{what}: expected rank:delay pairs such as 3:1ms, got {value!r}") from None
    for rank, delay in pairs:
        require_unit(delay.strip() if isinstance(delay, str) else delay, f"{what} {str(rank).strip()}", "time")
    return tuple(sorted((parse_int(rank, what), parse_time(delay, what)) for rank, delay in pairs))


def check_input_file(path: str | Path, what: str) -> Path:
    """``path`` as a file to read, or one error saying what it is instead: not found, a
    directory, or not a regular file (``/dev/null``, a pipe); :func:`sim.files.user_file`, so a
    server never looks at a path a link names."""
    from sim.files import user_file

    return user_file(path, what.split()[0].lstrip("-").replace("-", "_"), "a file", label=what)


Parser = Callable[[Any, str], Any]


def missing_text(flags: list[str], op: Any) -> str:
    """The message for required flags not given; a missing --algorithm names the op's algorithms."""
    how = "(give the flag or a --scenario file that sets it)"
    if "--algorithm" not in flags or not (isinstance(op, str) and op in ops()):
        return f"missing {', '.join(flags)} {how}"
    allowed = ", ".join(algorithms_for(op))
    if flags == ["--algorithm"]:
        return f"missing --algorithm for {op}; allowed: {allowed} {how}"
    return f"missing {', '.join(flags)} {how}; --algorithm for {op} is one of {allowed}"


def check_keys(cls: type, data: dict[str, Any]) -> None:
    """Raise for the first key of ``data`` that is neither a field of ``cls`` nor an alias: the
    valid keys come from the dataclass fields and ``cls.ALIASES``, so new fields count at once."""
    names = {f.name for f in dataclasses.fields(cls)} | set(getattr(cls, "ALIASES", {})) | set(getattr(cls, "EXTRA_KEYS", ()))
    for key in data:
        if key not in names:
            raise unknown_key(key, names, getattr(cls, "LABEL", cls.__name__))


def unit_kind(name: str) -> str | None:
    """ "time" or "bandwidth" for canonical fields that carry their unit in the name."""
    if name.endswith("_Bps"):
        return "bandwidth"
    if name.endswith("_s") and not name.endswith("_per_s"):
        return "time"
    return None


def from_mapping(cls: type, data: dict[str, Any], parsers: dict[str, Parser], aliases: dict[str, str]) -> Any:
    """Build a frozen dataclass from a mapping, parsing unit strings and naming unknown keys.

    A time or bandwidth under its short name (``latency``, ``bandwidth``) needs a unit; under the
    canonical name (``latency_s``, ``bandwidth_Bps``) a bare number is read in that unit."""
    if not isinstance(data, dict):
        raise CollsimError(f"{cls.__name__}: expected a mapping of fields, got {type(data).__name__}")
    check_keys(cls, data)
    values: dict[str, Any] = {}
    given: dict[str, str] = {}
    for key, value in data.items():
        name = aliases.get(key, key)
        if name in given:
            raise CollsimError(
                f"{given[name]}: given twice, as {given[name]!r} ({data[given[name]]!r}) and as {key!r} ({value!r}); keep one of them",
                field=given[name],
            )
        given[name] = key
        kind = unit_kind(name)
        if kind and key != name:
            require_unit(value, key, kind)
        parse = parsers.get(name)
        values[name] = parse(value, key) if parse else value
    missing = [
        f.name
        for f in dataclasses.fields(cls)
        if f.name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise CollsimError(f"{cls.__name__}: missing required field(s): {', '.join(missing)}")
    return cls(**values)


def override(cls: type, data: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a scenario file's fields) with ``given`` (flags) laid over it: a flag replaces
    the file's value under either name (``--latency`` replaces ``latency_s:``), where giving
    both names in one mapping is an error (:func:`from_mapping`)."""
    aliases = getattr(cls, "ALIASES", {})
    names = {aliases.get(key, key) for key in given}
    merged = {key: value for key, value in data.items() if aliases.get(key, key) not in names}
    merged.update(given)
    return merged


def parse_data(text: str, suffix: str = "") -> Any:
    """A JSON or YAML document's data (:func:`sim.files.parse_data`: size bounded, aliases and
    duplicate keys refused). Raises ``yaml.YAMLError`` for text that is neither."""
    from sim.files import parse_data as parse

    return parse(text, suffix)


class ScenarioData:
    """What every scenario dataclass shares: validated construction from a mapping (unit strings
    allowed) and JSON/YAML round trips. Subclasses set PARSERS, ALIASES and define ``to_dict``."""

    PARSERS: dict[str, Parser] = {}
    ALIASES: dict[str, str] = {}
    LABEL = "scenario"

    def replace(self, **changes: Any) -> Any:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        return from_mapping(cls, data, cls.PARSERS, cls.ALIASES)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Any:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as error:
            raise CollsimError(f"{cls.LABEL} JSON is malformed: {error}") from None

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str) -> Any:
        import yaml

        try:
            return cls.from_dict(parse_data(text))
        except yaml.YAMLError as error:
            raise CollsimError(f"{cls.LABEL} YAML is malformed: {yaml_reason(error)}") from None

    @classmethod
    def load(cls, path: str | Path) -> Any:
        return cls.from_dict(load_mapping(path))


_HARDWARE_FITS: set[tuple[str, str, int, int]] = set()  # bundled (preset, topology, gpus a node, ranks) checked


@dataclass(frozen=True)
class CollectiveScenario(ScenarioData):
    """One collective call (or ``repetitions`` back-to-back calls) on a network."""

    op: str
    algorithm: str
    ranks: int
    size_bytes: int
    bandwidth_Bps: float
    latency_s: float = 0.0
    reduce_bandwidth_Bps: float | None = None  # None: reductions cost nothing
    overhead_s: float = 0.0
    chunks: int = 1
    topology: str = "switch"  # switch | ring | two_level | torus2d | path to GraphML/JSON
    gpus_per_node: int | None = None  # two_level; default 8 (then ranks must be a multiple of 8)
    intra_latency_s: float | None = None  # two_level; default latency_s
    intra_bandwidth_Bps: float | None = None  # two_level; default bandwidth_Bps
    element_bytes: int = 4
    root: int = 0
    stragglers: tuple[tuple[int, float], ...] = field(default=())  # (rank, start delay s)
    jitter_s: float = 0.0  # mean of an exponential extra delay per message (seeded)
    seed: int = 0
    repetitions: int = 1
    verify: bool = False
    record: str = "auto"  # auto | full | aggregate
    max_events: int = 2_000_000  # auto: above this many messages keep aggregates only
    sharing: str = "fair"  # fair: max-min fair flows | fifo: work-conserving FIFO queues (docs/network-model.md)
    eager_limit_bytes: int = 0  # messages above this wait for the matching receive (rendezvous)
    placement: str = "block"  # block | round_robin | YAML/JSON file of each rank's endpoint (docs/network-model.md)
    groups: tuple[tuple[int, ...], ...] = ()  # disjoint groups running the collective at once; (): one of all ranks
    hardware: str | None = None  # preset name (sim/hardware/presets): two_level with the preset's NICs (docs/hardware.md)
    nccl_version: str | None = None  # with hardware: NCCL's tuning model of this release line (sim.nccl.versions; None: 2.27)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        if isinstance(data, dict) and (wants_pick(data) or any(data.get(key) for key in PICK_KEYS)):
            data = dict(data)  # algorithm nccl: NCCL's pick on the preset, resolved here (sim.nccl.pick)
            fill_pick(data, *(data.pop(key, None) or None for key in PICK_KEYS))
        elif isinstance(data, dict) and any(key in data for key in PICK_KEYS):
            data = {key: value for key, value in data.items() if key not in PICK_KEYS}  # empty restrictions
        if not isinstance(data, dict) or "algorithm" in data:
            return from_mapping(cls, data, cls.PARSERS, cls.ALIASES)
        data = dict(data)
        fill_only_algorithm(data)
        try:
            return from_mapping(cls, data, cls.PARSERS, cls.ALIASES)
        except CollsimError as error:
            op = data.get("op")
            if "algorithm" in data or not (isinstance(op, str) and op in ops()) or "missing required" not in str(error):
                raise
            raise CollsimError(f"{error}; algorithm for {op} is one of {', '.join(algorithms_for(op))}", field="algorithm") from None

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", resolve_groups(self.groups, self.ranks))  # "4x8", "strided:4" or lists
        self._check_numbers()
        self._check_algorithm()
        self._check_placement()
        self._check_topology()
        self._check_hardware()

    def _check_hardware(self) -> None:
        """The preset fits the scenario's topology and ranks: checked once per (preset, topology,
        ranks) for a bundled preset, so ``replace()`` (a run makes several) loads nothing; a
        preset file is looked up every time (sim.hardware.presets keeps it parsed while unchanged)."""
        if self.nccl_version is not None:
            from sim.nccl.versions import nccl_version

            nccl_version(self.nccl_version)  # an unknown version: one message listing the known ones
            if self.hardware is None:
                raise CollsimError(
                    "nccl_version: picks NCCL's tuning model on a GPU preset; give --hardware NAME too", field="nccl_version"
                )
        if self.hardware is None:
            return
        key = (self.hardware, self.topology, self.gpus_per_node_resolved, self.ranks)
        if key in _HARDWARE_FITS:
            return
        from sim.hardware.presets import load_preset

        preset = load_preset(self.hardware)
        if self.topology != "two_level" or self.gpus_per_node_resolved != preset.gpus_per_node or self.ranks % preset.gpus_per_node:
            raise CollsimError(
                f"hardware: {self.hardware} builds two_level with {preset.gpus_per_node} ranks per node; "
                f"got topology {self.topology}, gpus_per_node {self.gpus_per_node}, ranks {self.ranks}"
            )
        preset.check_nodes(self.ranks // preset.gpus_per_node)
        if not str(self.hardware).lower().endswith((".yaml", ".yml")) and len(_HARDWARE_FITS) < 4096:
            _HARDWARE_FITS.add(key)

    def _check_numbers(self) -> None:
        for name, info in COLLECTIVE.items():  # bounds, units and choices: each field's entry (sim.fields)
            if name not in PRESET_KEYS and name != "root":  # root's bound is the rank count, below
                check_value(info, getattr(self, name))
        if not 0 <= self.root < self.ranks:
            raise CollsimError(f"root: must be a rank in 0..{self.ranks - 1}, got {self.root}", field="root")
        if self.verify:
            need = verify_bytes(self.ranks, self.elements)
            if need > VERIFY_LIMIT_BYTES:
                raise CollsimError(
                    f"verify: real payloads for {self.ranks} ranks x {self.size_bytes} bytes need {need / 2**30:.1f} GiB of memory; "
                    f"allowed up to {VERIFY_LIMIT_BYTES / 2**30:.0f} GiB: lower the size or ranks, or run without verify"
                )
        self._check_stragglers()

    def _check_stragglers(self) -> None:
        ranks = [rank for rank, _ in self.stragglers]
        twice = sorted({rank for rank in ranks if ranks.count(rank) > 1})
        if twice:
            from sim.units import format_time

            delays = ", ".join(format_time(delay).replace(" ", "") for rank, delay in self.stragglers if rank == twice[0])
            raise CollsimError(f"stragglers: rank {twice[0]} has more than one delay ({delays}); give one delay per rank")
        for rank, delay in self.stragglers:
            if not 0 <= rank < self.ranks or delay < 0:
                from sim.units import format_time

                raise CollsimError(
                    f"stragglers: need rank in 0..{self.ranks - 1} and delay >= 0, got {rank}:{format_time(delay).replace(' ', '')}"
                )

    def _check_algorithm(self) -> None:
        if self.op not in ops():
            raise CollsimError(f"op: unknown {self.op!r}; allowed: {', '.join(ops())}")
        spec = algorithm_spec(self.op, self.algorithm)
        if spec is None:
            raise CollsimError(
                f"algorithm: {self.algorithm!r} is not an algorithm for {self.op}; allowed: {', '.join(algorithms_for(self.op))}"
            )
        for group in self._group_shapes():
            spec.check(group)
        self._check_two_level_only()
        if self.topology == "two_level":
            gpus = self.gpus_per_node_resolved
            if self.gpus_per_node is None and self.ranks % gpus:
                raise CollsimError(
                    f"gpus_per_node: two_level puts 8 ranks on a node unless told otherwise, and {self.ranks} ranks "
                    f"do not fill nodes of 8; give gpus_per_node (--gpus-per-node) dividing {self.ranks}, "
                    f"e.g. {self.ranks} for a single node"
                )
            if gpus < 1 or self.ranks % gpus:
                raise CollsimError(f"gpus_per_node: must divide ranks ({self.ranks}), got {gpus}")
        elif self.gpus_per_node is not None and self.topology in ("switch", "ring", "torus2d"):
            raise CollsimError(f"gpus_per_node: only applies to the two_level topology, not {self.topology}")

    def _check_two_level_only(self) -> None:
        """Inside-a-node links exist on two_level (and the presets, which build it): elsewhere
        an intra-node bandwidth or latency would be dropped without a word."""
        given = [
            name
            for name, value in (("intra_bandwidth", self.intra_bandwidth_Bps), ("intra_latency", self.intra_latency_s))
            if value is not None
        ]
        if given and self.topology != "two_level":
            raise CollsimError(
                f"{given[0]}: applies to topology two_level (or a --hardware preset), where ranks share a node; "
                f"topology {self.topology} has no links inside a node: drop it, or use topology two_level"
            )

    def _group_shapes(self) -> list[Any]:
        """What the algorithm check sees: the scenario, or one view per group size (local ranks)."""
        from types import SimpleNamespace

        if not self.groups:
            return [self]
        sizes = sorted({len(group) for group in self.groups})
        if not 0 <= self.root < sizes[0]:
            raise CollsimError(f"root: with groups the root is a rank inside each group, 0..{sizes[0] - 1}; got {self.root}")
        return [SimpleNamespace(**{**dataclasses.asdict(self), "ranks": size, "groups": ()}) for size in sizes]

    def _check_topology(self) -> None:
        """A topology that is none of the built-in ones names a graph file: it must be one (a
        server asks :mod:`sim.files` whether it may even look)."""
        from sim.network.topology import TOPOLOGIES

        if self.topology not in TOPOLOGIES and not self.hardware:
            from sim.files import user_file

            user_file(self.topology, "topology", f"{', '.join(TOPOLOGIES)} or a GraphML/JSON node-link file", label="topology file")

    def _check_placement(self) -> None:
        from sim.network.topology import PLACEMENTS

        if self.placement == "round_robin" and self.topology != "two_level":
            raise CollsimError(
                f"placement: round_robin spreads consecutive ranks over the nodes of two_level, not {self.topology}; "
                "use block or a YAML/JSON file listing each rank's endpoint"
            )
        if self.placement not in PLACEMENTS:
            from sim.files import user_file

            user_file(self.placement, "placement", f"{' or '.join(PLACEMENTS)} or a YAML/JSON file listing each rank's endpoint")

    @property
    def gpus_per_node_resolved(self) -> int:
        return 8 if self.gpus_per_node is None else self.gpus_per_node

    @property
    def elements(self) -> int:
        return self.size_bytes // self.element_bytes

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["stragglers"] = [[rank, f"{delay!r}s"] for rank, delay in self.stragglers]  # with its unit, as from_dict needs
        data["groups"] = [list(group) for group in self.groups]
        return data


def parser_for(info: FieldInfo, default: Any) -> Parser | None:
    """How a field's value is read, from its entry: the unit's parser (5us, 25GB/s, 64MiB), whole
    numbers, on/off; optional (None, "", "none") where the dataclass default is None. None: the
    value is taken as it is (op, algorithm, groups)."""
    by_unit = {"s": parse_time, "B/s": parse_bandwidth, "bytes": parse_size}
    by_kind = {"int": parse_int, "flag": parse_bool}
    parse = by_kind.get(info.kind) or by_unit.get(info.unit)
    if parse is None:
        return None
    return optional_parser(parse) if default is None else parse


_TEXT = optional_parser(lambda value, what: str(value))
_COLLECTIVE_PARSERS: dict[str, Parser] = {
    **{
        name: parse
        for name, item in ((f.name, f) for f in dataclasses.fields(CollectiveScenario))
        if (parse := parser_for(COLLECTIVE[name], item.default)) is not None
    },
    **{name: (lambda value, what: str(value)) for name in ("topology", "sharing", "placement")},
    "hardware": _TEXT,
    "nccl_version": _TEXT,
    "stragglers": _stragglers,
}


def aliases_of(fields: dict[str, FieldInfo]) -> dict[str, str]:
    """Short key -> field name, from the fields' metadata (``size`` -> ``size_bytes``)."""
    return {key: name for name, info in fields.items() for key in info.keys()}


CollectiveScenario.PARSERS = _COLLECTIVE_PARSERS
CollectiveScenario.EXTRA_KEYS = PICK_KEYS  # from_dict only: restrict algorithm nccl (sim.collective.pick)
CollectiveScenario.ALIASES = aliases_of(COLLECTIVE)
