"""Hardware presets: one YAML file per machine in this folder, every value with its source.

A preset gives GPUs per node, the intra-node fabric (bandwidth per direction, latency), NICs per
node and their bandwidth, the inter-node switch, and (for GPU machines) what NCCL's topology
search reports for it, which :mod:`sim.nccl.model` needs. ``sources`` maps every field
(``nccl.<field>`` for the NCCL block) to a public citation; loading refuses a preset with an
uncited value. A name ``NAME:NICSxRATE`` (``dgx-h100:16x200Gbps``) is preset NAME with its NICs
replaced (:func:`variant_name`, :func:`load_variant`).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from sim.errors import CollsimError
from sim.units import parse_bandwidth, parse_time

HERE = Path(__file__).parent
FABRICS = ("nvswitch", "pcie", "none")
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET")  # NCCL topo.h order
_FIELDS = (
    "name", "description", "gpu_model", "gpus_per_node", "intra_fabric", "intra_bandwidth", "intra_latency",
    "nics_per_node", "nic_bandwidth", "inter_latency", "inter_switch", "max_nodes", "nccl",
)  # fmt: skip
_NCCL_FIELDS = ("compute_capability", "cpu_vendor", "nvswitch", "nvls", "collnet", "graphs", "type_intra", "type_inter",
                "latency_inter_us", "same_channels")  # fmt: skip
_NCCL_OPTIONAL = ("buffsize",)  # NCCL_BUFFSIZE of the machine's documented NCCL environment (default 4 MiB)
_OPTIONAL = ("gpu_peak_tflops", "gpu_memory", "transport")  # cited where given; transport: the NICs' (transports.TRANSPORTS)
DEFAULT_BUFFSIZE = 1 << 22  # src/init.cc DEFAULT_BUFFSIZE: comm->buffSizes[Simple]
DEFAULT_BUFFSIZE_SOURCE = "NCCL's default NCCL_BUFFSIZE (4 MiB, src/init.cc:813)"  # cited where a preset gives none


@dataclass(frozen=True)
class Graph:
    """One of NCCL's channel graphs: ``n_channels`` channels of ``bw_intra``/``bw_inter`` GB/s each."""

    n_channels: int
    bw_intra: float
    bw_inter: float


@dataclass(frozen=True)
class NcclSystem:
    """What NCCL's tuning model reads from a machine (``comm`` and ``graphs`` in tuning.cc)."""

    compute_capability: int
    cpu_vendor: str  # intel | amd
    nvswitch: bool
    nvls: bool
    collnet: bool
    graphs: dict[str, Graph]  # ring, tree, nvls; "<name>_1node" for a single node
    type_intra: str
    type_inter: str
    latency_inter_us: float
    same_channels: bool
    buffsize: int = DEFAULT_BUFFSIZE  # Simple's buffer per connection (NCCL_BUFFSIZE): 8 slots of buffsize / 8
    cpu_arch: str = "x86"  # x86 | arm (comm->cpuArch: NCCL 2.29's NVLSTree correction is x86 only)

    def graph(self, name: str, nodes: int) -> Graph | None:
        return self.graphs.get(f"{name}_1node") if nodes == 1 else self.graphs.get(name)


@dataclass(frozen=True)
class Preset:
    """A machine: per-node GPUs and fabric, NICs, switch, and what NCCL sees of it."""

    name: str
    description: str
    gpu_model: str
    gpus_per_node: int
    intra_fabric: str
    intra_bandwidth_Bps: float | None
    intra_latency_s: float | None
    nics_per_node: int
    nic_bandwidth_Bps: float | None
    inter_latency_s: float | None
    inter_switch: str
    max_nodes: int | None
    nccl: NcclSystem | None
    sources: dict[str, str] = field(default_factory=dict)
    nvlink_domain_nodes: int = 1  # nodes (trays) one NVLink domain spans (GB200 NVL72: 18)
    fitted: dict[str, Any] | None = None  # the ``fitted:`` block: effective constants and their provenance
    gpu_peak_tflops: dict[str, float] = field(default_factory=dict)  # dense peak per GPU: bf16, fp16, fp32
    gpu_memory_bytes: int | None = None  # memory of one GPU (datasheet GB = 1e9 bytes); None: not a GPU machine
    transport: str | None = None  # the NICs' transport (transports.TRANSPORTS): sets base_latency_us's prior

    def check_nodes(self, nodes: int) -> None:
        if nodes < 1:
            raise CollsimError(f"nodes: must be >= 1, got {nodes}")
        if self.max_nodes is not None and nodes > self.max_nodes:
            raise CollsimError(f"nodes: hardware {self.name} has no NICs and runs on at most {self.max_nodes} node(s), got {nodes}")
        self.nccl_nodes(nodes)

    def nccl_nodes(self, nodes: int) -> tuple[int, int]:
        """(NVLink domains, GPUs a domain) of ``nodes`` nodes: what NCCL counts as nodes and local
        ranks, since it treats a multi-node NVLink domain as one node (MNNVL). Nodes fill as few
        domains as they need, spread evenly (32 GB200 trays: 2 racks of 16)."""
        per = self.nvlink_domain_nodes
        domains = -(-nodes // per)
        if nodes % domains:
            raise CollsimError(
                f"nodes: {self.name} puts up to {per} nodes in one NVLink domain; {nodes} nodes do not spread evenly over {domains} domains (give a multiple of {domains})"
            )
        return domains, nodes // domains * self.gpus_per_node

    def to_dict(self) -> dict[str, Any]:
        """The preset as plain data (rates in bytes/s, times in s), for --json and the webapp."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__ if name not in ("nccl", "sources", "fitted")}
        if self.nccl is not None:
            nccl = {name: getattr(self.nccl, name) for name in self.nccl.__dataclass_fields__}
            nccl["graphs"] = {key: [g.n_channels, g.bw_intra, g.bw_inter] for key, g in self.nccl.graphs.items()}
            data["nccl"] = nccl
        else:
            data["nccl"] = None
        data["sources"] = dict(self.sources)
        data["fitted"] = self.fitted
        data["effective"] = effective(self).to_dict()
        return data


def list_presets() -> list[str]:
    """Names of the presets shipped with collsim, sorted."""
    return sorted(path.stem for path in HERE.glob("*.yaml"))


def load_preset(name: str) -> Preset:
    """The preset called ``name`` (see :func:`list_presets`), your own preset file (a path ending
    .yaml/.yml, same fields as the bundled ones), or ``NAME:NICSxRATE`` (dgx-h100:16x200Gbps: NAME
    with its NICs replaced, :func:`load_variant`); CollsimError for an unknown name."""
    if str(name).lower().endswith((".yaml", ".yml")):
        return _load_file(str(name))
    if ":" in name:
        return load_variant(*name.split(":", 1))
    if name not in list_presets():
        raise CollsimError(f"hardware: unknown preset {name!r}; allowed: {', '.join(list_presets())}, or a preset file ending .yaml/.yml")
    return _load(name)


_FILES: dict[tuple[str, int, int], Preset] = {}  # a user's preset files, by (resolved path, mtime_ns, size)
_FILES_KEPT = 16
_FILES_LOCK = threading.Lock()  # the webapp's callbacks run in threads


def _load_file(name: str) -> Preset:
    """A user's preset file, read and checked once while it is unchanged: parsed presets are kept
    by (resolved path, mtime_ns, size), so a scenario's many looks at its preset (validation on
    every replace(), topology, NCCL's pick) read the YAML once, and an edited file is read again."""
    from sim.files import load_mapping, user_file

    path = user_file(name, "hardware", "a YAML or JSON file", label="hardware preset file")  # a server's checks, every call
    try:
        stat = path.stat()
    except OSError:  # gone since: load_mapping says so
        return parse_preset(load_mapping(name, "hardware preset file"), name)
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    with _FILES_LOCK:
        if key in _FILES:
            return _FILES[key]
    preset = parse_preset(load_mapping(name, "hardware preset file"), name)
    with _FILES_LOCK:
        while len(_FILES) >= _FILES_KEPT:
            _FILES.pop(next(iter(_FILES)))
        _FILES[key] = preset
    return preset


@cache
def _load(name: str) -> Preset:
    raw = yaml.safe_load((HERE / f"{name}.yaml").read_text())
    return parse_preset(raw, name)


def parse_preset(raw: Any, label: str) -> Preset:
    """Validate a preset mapping: every field present and cited, units parsed."""
    if not isinstance(raw, dict):
        raise CollsimError(f"hardware preset {label}: expected a mapping")
    sources = raw.get("sources") or {}
    missing = [key for key in _FIELDS if key not in raw]
    unknown = sorted(set(raw) - set(_FIELDS) - {"sources", "nvlink_domain_nodes", "fitted", *_OPTIONAL})
    if missing or unknown:
        raise CollsimError(f"hardware preset {label}: missing fields {missing}, unknown fields {unknown}")
    _check_cited(raw, sources, label)
    fabric = raw["intra_fabric"]
    if fabric not in FABRICS:
        raise CollsimError(f"hardware preset {label}: intra_fabric must be one of {', '.join(FABRICS)}, got {fabric!r}")
    gpus, nics = int(raw["gpus_per_node"]), int(raw["nics_per_node"])
    if gpus < 1 or nics < 0 or (nics and gpus % nics and nics % gpus):
        raise CollsimError(
            f"hardware preset {label}: need gpus_per_node >= 1 and NICs that divide or are divided by it, got {gpus}, {nics}"
        )
    return Preset(
        name=str(raw["name"]),
        description=str(raw["description"]),
        gpu_model=str(raw["gpu_model"]),
        gpus_per_node=gpus,
        intra_fabric=fabric,
        intra_bandwidth_Bps=_maybe(parse_bandwidth, raw["intra_bandwidth"], f"{label} intra_bandwidth"),
        intra_latency_s=_maybe(parse_time, raw["intra_latency"], f"{label} intra_latency"),
        nics_per_node=nics,
        nic_bandwidth_Bps=_maybe(parse_bandwidth, raw["nic_bandwidth"], f"{label} nic_bandwidth"),
        inter_latency_s=_maybe(parse_time, raw["inter_latency"], f"{label} inter_latency"),
        inter_switch=str(raw["inter_switch"]),
        max_nodes=None if raw["max_nodes"] is None else int(raw["max_nodes"]),
        nccl=_nccl(raw["nccl"], label),
        sources=_sources(raw, sources),
        nvlink_domain_nodes=int(raw.get("nvlink_domain_nodes", 1)),
        fitted=_fitted(raw.get("fitted"), label, raw),
        gpu_peak_tflops={str(key): float(value) for key, value in (raw.get("gpu_peak_tflops") or {}).items()},
        gpu_memory_bytes=_gpu_memory(raw.get("gpu_memory"), label),
        transport=_transport(raw.get("transport"), label),
    )


def _transport(value: Any, label: str) -> str | None:
    from sim.hardware.presets.transports import TRANSPORTS

    if value is not None and value not in TRANSPORTS:
        raise CollsimError(f"hardware preset {label}: transport must be one of {', '.join(TRANSPORTS)}, got {value!r}")
    return value


def _sources(raw: dict, sources: dict) -> dict[str, str]:
    """The preset's citations, and NCCL's default buffer size's where the preset takes that default."""
    cited = {str(key): str(value) for key, value in sources.items()}
    if isinstance(raw.get("nccl"), dict) and "buffsize" not in raw["nccl"]:
        cited.setdefault("nccl.buffsize", DEFAULT_BUFFSIZE_SOURCE)
    return cited


def _check_cited(raw: dict, sources: dict, label: str) -> None:
    wanted = [key for key in (*_FIELDS, "nvlink_domain_nodes", *_OPTIONAL) if key not in ("name", "description") and key in raw]
    if isinstance(raw.get("nccl"), dict):
        optional = [key for key in _NCCL_OPTIONAL if key in raw["nccl"]]
        wanted = [key for key in wanted if key != "nccl"] + [f"nccl.{key}" for key in (*_NCCL_FIELDS, *optional)]
    uncited = [key for key in wanted if not str(sources.get(key, "")).strip()]
    if uncited:
        raise CollsimError(f"hardware preset {label}: every value needs a source; uncited: {', '.join(uncited)}")


def _gpu_memory(value: Any, label: str) -> int | None:
    """One GPU's memory ("80GB": the datasheet's decimal GB), or None where the preset has no GPU."""
    if value is None:
        return None
    from sim.units import parse_size

    nbytes = parse_size(value, f"hardware preset {label} gpu_memory")
    if nbytes <= 0:
        raise CollsimError(f"hardware preset {label}: gpu_memory must be a positive size such as 80GB, got {value!r}")
    return nbytes


def _maybe(parse, value: Any, what: str) -> float | None:
    if value is None:
        return None
    number = parse(value, what)
    if not (number >= 0 and math.isfinite(number)):
        raise CollsimError(f"hardware preset {what}: must be >= 0 and finite, got {value!r}")
    return number


def _cpu_arch(value: Any, label: str) -> str:
    if value not in ("x86", "arm"):
        raise CollsimError(f"hardware preset {label}: nccl.cpu_arch must be x86 or arm, got {value!r}")
    return value


def _nccl(raw: Any, label: str) -> NcclSystem | None:
    if raw is None:
        return None
    missing = [key for key in _NCCL_FIELDS if key not in raw]
    if missing:
        raise CollsimError(f"hardware preset {label}: nccl block misses {', '.join(missing)}")
    for key in ("type_intra", "type_inter"):
        if raw[key] not in PATH_TYPES:
            raise CollsimError(f"hardware preset {label}: nccl.{key} must be one of {', '.join(PATH_TYPES)}, got {raw[key]!r}")
    if raw["cpu_vendor"] not in ("intel", "amd"):
        raise CollsimError(f"hardware preset {label}: nccl.cpu_vendor must be intel or amd, got {raw['cpu_vendor']!r}")
    graphs = {}
    for key, value in raw["graphs"].items():
        channels, intra, inter = value
        graphs[str(key)] = Graph(int(channels), float(intra), float(inter))
    return NcclSystem(
        compute_capability=int(raw["compute_capability"]),
        cpu_vendor=raw["cpu_vendor"],
        nvswitch=bool(raw["nvswitch"]),
        nvls=bool(raw["nvls"]),
        collnet=bool(raw["collnet"]),
        graphs=graphs,
        type_intra=raw["type_intra"],
        type_inter=raw["type_inter"],
        latency_inter_us=float(raw["latency_inter_us"]),
        same_channels=bool(raw["same_channels"]),
        buffsize=_buffsize(raw.get("buffsize", DEFAULT_BUFFSIZE), label),
        cpu_arch=_cpu_arch(raw.get("cpu_arch", "x86"), label),
    )


def _buffsize(value: Any, label: str) -> int:
    size = int(value) if isinstance(value, int) or str(value).isdigit() else -1
    if size < 8 * 1024 or size % 8:
        raise CollsimError(
            f"hardware preset {label}: nccl.buffsize must be NCCL_BUFFSIZE in bytes, a multiple of 8 and >= 8192, got {value!r}"
        )
    return size


def scenario_fields(name: str, nodes: int = 1, preset: Preset | None = None) -> dict[str, Any]:
    """Collective-scenario fields (canonical names) that ``--hardware NAME --nodes N`` fills:
    ranks (nodes x GPUs a node), topology two_level with the preset's NICs, link rates and
    latencies; ``CollectiveScenario.from_dict({**scenario_fields(...), "op": ...})`` works.
    ``preset``: NAME's, loaded already."""
    preset = preset or load_preset(name)
    preset.check_nodes(nodes)
    intra_bw = preset.intra_bandwidth_Bps or preset.nic_bandwidth_Bps
    nic_bw = preset.nic_bandwidth_Bps or intra_bw
    return {
        "hardware": name,
        "ranks": nodes * preset.gpus_per_node,
        "topology": "two_level",
        "gpus_per_node": preset.gpus_per_node,
        "bandwidth_Bps": nic_bw,
        "latency_s": preset.inter_latency_s or 0.0,
        "intra_bandwidth_Bps": intra_bw,
        "intra_latency_s": preset.intra_latency_s or 0.0,
    }


# -- effective constants: what the DES data path and nccl_model read (one function) ----------
# name -> (datasheet default, lower bound, upper bound, meaning)
CONSTANTS = {
    "intra_efficiency": (0.8, 0.2, 1.0, "fraction of intra_bandwidth a GPU's NVLink/PCIe carries for NCCL"),
    "inter_efficiency": (0.92, 0.2, 1.0, "fraction of the NICs' rate NCCL's network transport carries"),
    "nvls_efficiency": (0.6, 0.1, 1.0, "NVSwitch reduce/multicast rate per GPU and direction, as a fraction of intra_bandwidth"),
    "latency_scale": (1.0, 0.05, 10.0, "scale on NCCL's per-hop hwLat and baseLat (tuning.cc)"),
    "ll128_latency_scale": (1.0, 0.1, 10.0, "further scale on LL128's per-hop hwLat: its line-flag round trip on the machine's links"),
    "nvls_latency_scale": (
        1.0,
        0.1,
        10.0,
        "further scale on NVLS/NVLSTree's latencies (the switch's reduce and multicast, NVLSTree's hops): NVLink SHARP's round trip on the machine",
    ),
    "base_latency_us": (
        0.0,
        0.0,
        200.0,
        "fixed cost of a call that crosses the network beyond NCCL's baseLat (proxy, plugin, host), us; none inside one node",
    ),
}


# Each constant's prior for `collsim hardware fit` (issue 33): centred on the default above, with the
# spread real machines show around it, so a fit moves a constant only as far as its logs can tell.
# ("log", sd): multiplicative, sd of the natural log; ("abs", sd): additive, in the constant's unit.
PRIORS = {
    "intra_efficiency": (
        "log",
        0.15,
        "NVLink/PCIe busbw reached by nccl-tests on one node: 70-92 % of the link rate on DGX/HGX A100-H100 (NVIDIA's published nccl-tests figures, docs/nccl-model.md)",
    ),
    "inter_efficiency": (
        "log",
        0.10,
        "InfiniBand/RoCE busbw of 2-node nccl-tests: 85-97 % of the NICs' line rate (NVIDIA and cloud providers' published runs)",
    ),
    "nvls_efficiency": ("log", 0.25, "NVLink SHARP's reduce/multicast rate: known only from a few published one-node runs"),
    "latency_scale": ("log", 0.30, "NCCL's hwLat/baseLat (tuning.cc) match measured small-size latency within about a third"),
    "ll128_latency_scale": ("log", 0.30, "as latency_scale, for LL128's flag round trip"),
    "nvls_latency_scale": ("log", 0.40, "as latency_scale, for NVLink SHARP's round trip (few published points)"),
    "base_latency_us": (
        "abs",
        25.0,
        "per-call cost across the network beyond baseLat (proxy, plugin, host), for a preset that names no transport (no NICs, or a file without 'transport:'): 0 inside a node, width as wide as the transports' (sim/hardware/presets/transports.py gives each transport's, cited)",
    ),
}


def prior(name: str, preset: Preset | None = None) -> tuple[float, str, float, str]:
    """(centre, kind, sd, basis) of constant ``name``'s prior on ``preset``: :data:`PRIORS` around
    the default of :data:`CONSTANTS`, except base_latency_us on a preset that names its transport,
    whose centre and sd are that transport's cited figures (transports.TRANSPORTS)."""
    from sim.hardware.presets.transports import TRANSPORTS

    kind, sd, basis = PRIORS[name]
    if name == "base_latency_us" and preset is not None and preset.transport:
        centre, sd, basis = TRANSPORTS[preset.transport]
        return centre, kind, sd, f"{preset.transport}: {basis}"
    return CONSTANTS[name][0], kind, sd, basis


TRIAL: dict[str, dict[str, float]] = {}  # preset name -> constants being tried by the fit (sim.collective.nccl_fit)


@dataclass(frozen=True)
class Effective:
    """A preset's effective constants: fitted where the ``fitted:`` block has them, else the
    datasheet defaults of :data:`CONSTANTS`. ``provenance`` says which."""

    intra_efficiency: float
    inter_efficiency: float
    nvls_efficiency: float
    latency_scale: float
    ll128_latency_scale: float
    nvls_latency_scale: float
    base_latency_us: float
    nccl: NcclSystem | None
    provenance: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in CONSTANTS} | {"provenance": dict(self.provenance)}


def effective(preset: Preset) -> Effective:
    """The constants the DES data path (sim.nccl.topo) and NCCL's model
    (sim.nccl.model) read: one function, so both see the same machine."""
    values, provenance = {}, {}
    fitted = (preset.fitted or {}).get("constants", {})
    trial = TRIAL.get(preset.name, {})
    for name, (default, _, _, _) in CONSTANTS.items():
        if name in trial:
            values[name], provenance[name] = trial[name], "trial value (collsim hardware fit)"
        elif name in fitted:
            values[name] = float(fitted[name]["value"])
            source = (preset.fitted or {}).get("taken_from")
            provenance[name] = f"fitted ({fitted[name].get('interval', '')}) on {', '.join((preset.fitted or {}).get('logs', []))}" + (
                f", taken from {source}" if source else ""
            )
        else:
            values[name] = prior(name, preset)[0] if name == "base_latency_us" else default
            provenance[name] = "default (no fit)" if values[name] == default else f"prior of transport {preset.transport} (no fit)"
    return Effective(nccl=preset.nccl, provenance=provenance, **values)


def _fitted(raw: Any, label: str, preset: dict | None = None) -> dict[str, Any] | None:
    """The ``fitted:`` block, checked. A block with ``taken_from: PRESET`` and ``take: [names]``
    carries those constants of that preset's own fit (same hardware, no log of its own): they are
    read from that preset, never copied, so a refit there moves both."""
    if raw is None:
        return None
    if isinstance(raw, dict) and "taken_from" in raw:
        raw = _taken(raw, label, preset or {})
    if not isinstance(raw, dict) or not isinstance(raw.get("constants"), dict) or not raw.get("logs"):
        raise CollsimError(f"hardware preset {label}: fitted needs 'logs' (what was fitted on) and 'constants' (name: {{value, interval}})")
    for name, entry in raw["constants"].items():
        if name not in CONSTANTS:
            raise CollsimError(f"hardware preset {label}: fitted constant {name!r} unknown; allowed: {', '.join(CONSTANTS)}")
        if not isinstance(entry, dict) or "value" not in entry:
            raise CollsimError(f"hardware preset {label}: fitted.{name} needs a value")
    return raw


def _taken(raw: dict, label: str, preset: dict) -> dict[str, Any]:
    source, take = raw["taken_from"], raw.get("take")
    if source not in list_presets() or source == label:
        raise CollsimError(
            f"hardware preset {label}: fitted.taken_from must name another shipped preset, got {source!r}; allowed: {', '.join(list_presets())}"
        )
    fitted = _load(source).fitted or {}
    own = fitted.get("constants", {})
    if not isinstance(take, list) or not take or any(name not in own for name in take):
        raise CollsimError(
            f"hardware preset {label}: fitted.take must list constants that {source} has fitted ({', '.join(own) or 'none'}), got {take!r}"
        )
    if "constants" in raw or "logs" in raw:
        raise CollsimError(f"hardware preset {label}: a fitted block with taken_from reads logs and constants from {source}; give neither")
    constants = {name: dict(own[name]) for name in take}
    for name, rate in _RATES.items():  # an efficiency carries the fitted rate in bytes/s, not the fraction
        mine, theirs = _maybe(parse_bandwidth, preset.get(rate), f"{label} {rate}"), getattr(_load(source), f"{rate}_Bps")
        if name in constants and mine and theirs and mine != theirs:
            entry = constants[name]
            entry["value"] = float(entry["value"]) * theirs / mine
            entry["interval"] = [round(float(bound) * theirs / mine, 6) for bound in entry.get("interval", [])]
            entry["rescaled"] = f"x {theirs / mine:.6g}: {source}'s fitted rate on this preset's {rate}"
    return {**raw, "logs": list(fitted["logs"]), "command": fitted["command"], "date": fitted.get("date"), "constants": constants}


_RATES = {"intra_efficiency": "intra_bandwidth", "nvls_efficiency": "intra_bandwidth", "inter_efficiency": "nic_bandwidth"}


# --- NIC overrides: a preset variant "NAME:NICSxRATE" (e.g. dgx-h100:16x200Gbps) -------------

# NCCL v2.27.7-1 src/graph/search.cc lines 953, 958, 963: the per-channel speeds its search tries
# across nodes (GB/s), by compute capability (< 90, 90, >= 100)
SPEEDS_INTER = {
    0: (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    90: (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    100: (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
}
RING_MAX_CHANNELS = 16  # init.cc line 851: ringGraph->maxChannels = MAXCHANNELS/2


def variant_name(name: str, nics_per_node: int | None = None, nic_bandwidth: str | float | None = None) -> str:
    """``name`` with its NICs replaced, as one preset name (``dgx-h100:16x200Gbps``), which
    :func:`load_preset` loads everywhere a preset name goes; ``name``
    itself when neither override is given. CollsimError naming the flag on bad values."""
    if nics_per_node is None and nic_bandwidth is None:
        return name
    preset = load_preset(name.partition(":")[0])
    if not preset.nics_per_node or preset.max_nodes is not None:
        raise CollsimError(f"--nics-per-node/--nic-bandwidth: hardware {preset.name} has no NICs to change (one node only)")
    nics = preset.nics_per_node if nics_per_node is None else int(nics_per_node)
    gpus = preset.gpus_per_node
    if nics < 1 or (gpus % nics and nics % gpus):
        raise CollsimError(f"--nics-per-node: must divide or be a multiple of the {gpus} GPUs a node of {preset.name}, got {nics}")
    rate = preset.nic_bandwidth_Bps if nic_bandwidth is None else parse_bandwidth(nic_bandwidth, "--nic-bandwidth")
    if not (rate > 0 and math.isfinite(rate)):
        raise CollsimError(f"--nic-bandwidth: must be a positive rate such as 200Gbps, got {nic_bandwidth!r}")
    return f"{preset.name}:{nics}x{rate * 8 / 1e9:.6g}Gbps"


def apply_nic_keys(data: dict) -> None:
    """``nics_per_node`` / ``nic_bandwidth`` of a scenario mapping (flags, a scenario file, a sweep
    grid) folded into its ``hardware`` as a preset variant (:func:`variant_name`); refused without one."""
    nics, rate = data.pop("nics_per_node", None), data.pop("nic_bandwidth", None)
    if nics is None and rate is None:
        return
    if data.get("hardware") is None:
        raise CollsimError("--nics-per-node and --nic-bandwidth change a hardware preset's NICs: give --hardware NAME too")
    data["hardware"] = variant_name(str(data["hardware"]), nics, rate)


_VARIANTS: dict[tuple[int, str], tuple[Preset, Preset]] = {}  # (id of the base preset, spec) -> (base, variant)


def load_variant(name: str, spec: str) -> Preset:
    """Preset ``name`` with NICs ``spec`` ("16x200Gbps"), built once per loaded base preset
    (NCCL's tables are cached per preset): a base preset file edited since is loaded afresh
    (:func:`load_preset`), and so is its variant."""
    base = load_preset(name)
    key = (id(base), spec)
    with _FILES_LOCK:
        kept = _VARIANTS.get(key)
    if kept is not None and kept[0] is base:
        return kept[1]
    variant = with_nics(base, spec)
    with _FILES_LOCK:
        while len(_VARIANTS) >= _FILES_KEPT:
            _VARIANTS.pop(next(iter(_VARIANTS)))
        _VARIANTS[key] = (base, variant)
    return variant


def with_nics(preset: Preset, spec: str) -> Preset:
    """``preset`` with ``spec`` ("16x200Gbps") NICs a node: the topology's NICs and NCCL's
    multi-node ring and tree graphs as its search would find them (:func:`net_graph`)."""
    count, _, rate_text = spec.partition("x")
    if not count.isdigit() or not rate_text:
        raise CollsimError(f"hardware: {preset.name}:{spec}: NIC override must read NICSxRATE, e.g. {preset.name}:16x200Gbps")
    checked = variant_name(preset.name, int(count), rate_text)
    nics, rate = int(count), parse_bandwidth(rate_text, "--nic-bandwidth")
    sources = dict(preset.sources, nics_per_node=f"override ({nics} a node)", nic_bandwidth=f"override ({rate_text} each)")
    nccl = preset.nccl
    if nccl is not None:
        graph = net_graph(nccl, nics, rate / 1e9)
        graphs = {**nccl.graphs, "ring": graph, "tree": graph}
        nccl = replace(nccl, graphs=graphs)
        sources["nccl.graphs"] = (
            f"multi-node ring/tree {graph.n_channels} x {graph.bw_inter} GB/s derived for the NIC override by "
            "sim.hardware.presets.net_graph (NCCL v2.27.7-1 search.cc speed arrays and bw decrease rule, ncclTopoDupChannels); "
            + preset.sources.get("nccl.graphs", "")
        )
    description = f"{preset.description}; NICs overridden: {nics} x {rate_text} a node"
    return replace(preset, name=checked, description=description, nics_per_node=nics, nic_bandwidth_Bps=rate,
                               nccl=nccl, sources=sources)  # fmt: skip


def net_graph(nccl: NcclSystem, nics: int, nic_GBps: float) -> Graph:
    """NCCL's multi-node ring graph for ``nics`` NICs of ``nic_GBps`` a node: its search
    (search.cc ncclTopoCompute) starts at the fastest speed no faster than a NIC, gives each
    channel one NIC (a NIC carries floor(nic / speed) channels) within the GPUs' NVLink (the
    one-node ring graph's channels x speed), at most 16 channels; it keeps lowering the speed
    while the next one is above 0.49 of the best found, keeping strictly better totals; then
    ncclTopoDupChannels doubles the channels at speeds >= 25 (not on SM90+ below 50 with more
    than 4 channels)."""
    speeds = SPEEDS_INTER[100 if nccl.compute_capability >= 100 else 90 if nccl.compute_capability >= 90 else 0]
    one_node = nccl.graph("ring", 1)
    capacity = one_node.n_channels * one_node.bw_intra
    fitting = [speed for speed in speeds if speed <= min(nic_GBps, capacity)] or [speeds[-1]]
    best_channels, best_speed = 0, fitting[0]
    for speed in fitting:
        if best_channels and speed / best_speed <= 0.49:
            break
        channels = min(RING_MAX_CHANNELS, nics * max(1, int(nic_GBps // speed)), max(1, int(capacity // speed)))
        if channels * speed > best_channels * best_speed:
            best_channels, best_speed = channels, speed
    if best_speed >= 25 and not (nccl.compute_capability > 80 and best_speed < 50 and best_channels > 4):
        doubled = min(2 * best_channels, RING_MAX_CHANNELS)
        best_speed /= -(-doubled // best_channels)
        best_channels = doubled
    return Graph(best_channels, best_speed, best_speed)
