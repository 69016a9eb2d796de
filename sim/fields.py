"""What a person needs to know about each scenario field, in one place: the short key of files
and the command line, a form label and hint, the help sentence, the unit, the bounds and the
choices, which ``collsim sim`` commands take it as a flag, which explorer form shows it under
which URL key, and what a value other than its default breaks (the closed form, the collapsed
path) and why.

Everything else iterates these tables: the scenarios read their short names, parsers and bounds
(:mod:`sim.scenario`, :func:`check_value`); ``collsim sim collective`` / ``crossover`` / ``ddp``
and the commands whose tables are registered with :func:`register` (``train``, ``run-cost``,
``dataparallel``, ``hang``) build their options from :func:`command_fields` /
:func:`sim.cli_fields.field_options`; the explorer's forms
take their boxes, labels, first values and URL keys from :func:`form_fields`;
:mod:`sim.collective.analytic` and :mod:`sim.collective.collapsed` ask :func:`breaks`; the docs'
scenario-keys reference is written from them. Standard library only, so ``collsim --help`` stays
light; the defaults come from the scenario dataclasses themselves (:func:`field_info` looks
them up). A new field: one entry here, its dataclass field, what it does in the engine.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math
from dataclasses import dataclass
from typing import Any

from sim.errors import CollsimError, unknown_key

__all__ = [
    "COLLECTIVE",
    "DDP",
    "FieldInfo",
    "Groups",
    "PRESET_KEYS",
    "RECORD_MODES",
    "SHARING_MODES",
    "VERIFY_LIMIT_BYTES",
    "breaks",
    "broken",
    "check_range",
    "check_value",
    "command_fields",
    "field_info",
    "fields_of",
    "form_fields",
    "register",
    "resolve_groups",
    "verify_bytes",
]

RECORD_MODES = ("auto", "full", "aggregate")
SHARING_MODES = ("fifo", "fair")


@dataclass(frozen=True)
class FieldInfo:
    """One scenario field. ``name``: the dataclass field (``size_bytes``); ``short``: its key in
    files and forms and, as ``--short``, on the command line (``size``); ``aliases``: other keys
    accepted for it; ``unit``: "bytes", "s", "B/s" or "" (a plain number or word); ``low`` and
    ``high``: inclusive bounds where the field has them; ``default``: the dataclass default
    (``dataclasses.MISSING`` where the field is required; filled by :func:`field_info`);
    ``kind``: how a command-line flag reads it (text, int, float, flag, repeated); ``listing``:
    where the allowed values are listed ("module:function"), so help never goes stale.

    Where it shows: ``commands``: the ``collsim sim`` commands with a flag for it; ``group``: the
    explorer form it is a box of ("collectives", "ddp"; "" for none), its key there and in the
    page's URL ``url`` (default: :attr:`key`), ``hint`` the box's short help (default: ``help``),
    ``start`` the box's first value where the dataclass default is none to start from (ranks 8,
    64MiB), ``alone``: the box is checked on its own, so each wrong box gets its message.
    What it breaks: ``closed_form`` / ``collapsed``: None when the field does not matter to the
    closed form / the collapsed (one event per call) path, else why a value other than the
    default breaks it (``{value}``: the value)."""

    name: str
    label: str
    help: str
    short: str = ""
    aliases: tuple[str, ...] = ()
    unit: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    kind: str = "text"  # how a flag reads it: text (parsed by the scenario), int, float, flag (on/off) or repeated
    default: Any = None
    listing: str = ""  # "module:function" listing the allowed values (the registry's ops), read when help is shown
    commands: tuple[str, ...] = ()
    group: str = ""
    url: str = ""
    hint: str = ""
    start: str = ""
    alone: bool = False
    closed_form: str | None = None
    collapsed: str | None = None

    @property
    def key(self) -> str:
        return self.short or self.name

    @property
    def option(self) -> str:
        """The command-line flag: ``--eager-limit`` for ``eager_limit_bytes``."""
        return "--" + self.key.replace("_", "-")

    @property
    def url_key(self) -> str:
        """Its key in an explorer form and its URL (``?size=64MiB``)."""
        return self.url or self.key

    def keys(self) -> tuple[str, ...]:
        """Every key besides ``name`` that files and flags may use for this field."""
        return tuple(key for key in (self.short, *self.aliases) if key and key != self.name)


def _table(*infos: FieldInfo) -> dict[str, FieldInfo]:
    return {info.name: info for info in infos}


def _network(info: FieldInfo, **changes: Any) -> FieldInfo:
    """A collective field as a DDP scenario's ``comm: network`` uses it: a ``sim ddp`` flag, on no
    collective form, breaking nothing of a collective's closed form."""
    return dataclasses.replace(info, help=f"network: {info.help}", commands=("ddp",), group="", hint="", start="", alone=False,
                               closed_form=None, collapsed=None, **changes)  # fmt: skip


# the collective fields a DDP scenario's network comm model takes as they are
NETWORK_FIELDS = ("latency_s", "bandwidth_Bps", "topology", "gpus_per_node", "intra_latency_s", "intra_bandwidth_Bps", "reduce_bandwidth_Bps",
                  "chunks")  # fmt: skip
# keys that resolve a hardware preset before the scenario is built (sim.nccl.pick.apply_hardware):
# flags and form boxes, not fields of the dataclass
PRESET_KEYS = ("nodes", "nics_per_node", "nic_bandwidth", "nccl_algo", "nccl_proto")

F = FieldInfo
C, X, P = ("collective",), ("collective", "crossover"), "collectives"  # commands and the explorer page
# in the Collectives page's order; the closed-form and collapse reasons are asked in this order too
COLLECTIVE = _table(
    F("hardware", "Hardware", "hardware preset (collsim hardware list): fills ranks, topology and links; flags override", commands=X, group=P,
      hint="a preset fills nodes, ranks, topology and links (collsim hardware list)"),
    F("nodes", "Nodes", "with --hardware: number of nodes (default 1)", kind="int", commands=X, group=P,
      hint="with a preset: ranks = nodes x its GPUs per node"),
    F("nics_per_node", "NICs per node", "with --hardware: NICs a node instead of the preset's (e.g. 16)", kind="int", commands=X),
    F("nic_bandwidth", "NIC bandwidth", "with --hardware: bandwidth of each NIC instead of the preset's (e.g. 200Gbps)", commands=X),
    F("op", "Operation", "the collective operation", listing="sim.algorithms.registry:ops", commands=X, group=P, start="all_reduce",
      hint="the collective to run"),
    F("algorithm", "Algorithm", "e.g. ring, binomial, recursive_doubling, rabenseifner, double_binary_tree", commands=C, group=P, start="ring",
      hint="choices depend on the operation; NCCL's pick with a GPU preset"),
    F("nccl_algo", "NCCL algorithm", "with --hardware: restrict NCCL's pick as NCCL_ALGO does (Ring,Tree,NVLS,NVLSTree,PAT; ^ excludes)",
      commands=C, group=P, hint="auto: NCCL's pick; else only this one, as NCCL_ALGO"),
    F("nccl_proto", "NCCL protocol", "with --hardware: restrict NCCL's pick as NCCL_PROTO does (LL,LL128,Simple; ^ excludes)", commands=C,
      group=P, hint="auto: NCCL's pick; else only this one, as NCCL_PROTO"),
    F("nccl_version", "NCCL version", "with --hardware: the NCCL release whose tuning model picks (default 2.27)", commands=C,
      listing="sim.nccl.versions:known_versions"),
    F("topology", "Topology", "switch | ring | two_level | torus2d | FILE (GraphML/JSON)", commands=X, group=P,
      hint="switch: one port per rank into a non-blocking switch",
      closed_form="closed forms assume one port per rank into a switch, not the {value} topology"),
    F("ranks", "Ranks p", "number of ranks p", low=1, high=65536, kind="int", commands=X, group=P, start="8", hint="2 to 1024", alone=True),
    F("gpus_per_node", "GPUs per node", "two_level: ranks per node (default 8: then ranks must be a multiple of 8)", low=1, kind="int",
      commands=X, group=P, hint="two_level: ranks per node (default 8)"),
    F("size_bytes", "Message size n", "message size n, e.g. 64MiB; a bare number is bytes (all_gather: gathered size)", "size",
      unit="bytes", low=0, commands=C, group=P, start="64MiB", hint="e.g. 64MiB, 1.5KB, 4096", alone=True),
    F("latency_s", "Latency alpha", "link latency alpha, e.g. 5us (default 0)", "latency", unit="s", low=0, commands=X, group=P,
      start="5us", hint="per message, e.g. 5us", alone=True),
    F("bandwidth_Bps", "Bandwidth B", "link bandwidth B, e.g. 25GB/s or 100Gbps", "bandwidth", unit="B/s", commands=X, group=P,
      start="25GB/s", hint="per link, e.g. 25GB/s or 100Gbps", alone=True),
    F("reduce_bandwidth_Bps", "Reduction bandwidth 1/gamma", "reduction bandwidth 1/gamma, e.g. 100GB/s (default: free)", "reduce_bandwidth",
      unit="B/s", commands=X, group=P, start="100GB/s", hint="e.g. 100GB/s; empty: free", alone=True),
    F("intra_latency_s", "Intra-node latency", "two_level: latency inside a node", "intra_latency", unit="s", low=0, commands=X, group=P,
      hint="two_level; empty: same as latency", alone=True),
    F("intra_bandwidth_Bps", "Intra-node bandwidth", "two_level: bandwidth inside a node", "intra_bandwidth", unit="B/s", commands=X,
      group=P, hint="two_level; empty: same as bandwidth", alone=True),
    F("chunks", "Chunks k", "pipeline chunks k (chain, ring, trees)", low=1, kind="int", commands=X, group=P,
      hint="pipeline chunks (chunked algorithms)", alone=True),
    F("overhead_s", "Per-call overhead o", "per-call overhead o, e.g. 10us", "overhead", unit="s", low=0, commands=X, group=P,
      hint="e.g. 10us", alone=True),
    F("stragglers", "Stragglers", "RANK:DELAY start skew, e.g. 3:1ms (repeatable)", kind="repeated", commands=C, group=P,
      hint="rank:delay pairs, e.g. 3:20us,5:1ms",
      closed_form="stragglers start some ranks late; closed forms assume all start together",
      collapsed="stragglers make ranks asymmetric"),
    F("sharing", "Link sharing", "how messages share links and ports: fair (max-min fair flows, default) or fifo (work-conserving FIFO queues)",
      choices=SHARING_MODES, commands=X, group=P,
      hint="fair: flows that meet share a link (max-min); fifo: they queue; auto: NCCL's pick's own, else fair"),
    F("eager_limit_bytes", "Eager limit", "messages larger than this wait for the matching receive (rendezvous); default 0: all wait",
      "eager_limit", unit="bytes", low=0, commands=C, group=P, alone=True,
      hint="larger messages wait for their receive; 0: all wait (NCCL), 64KiB: MPI-like"),
    F("placement", "Rank placement", "ranks on endpoints: block (default), round_robin (two_level: rank r on node r % nodes) or FILE",
      commands=C, group=P, hint="two_level: block fills a node first; round_robin alternates nodes"),
    F("element_bytes", "Element bytes", "bytes per element (float32: 4)", unit="bytes", low=1, kind="int", commands=C),
    F("root", "Root", "root rank for rooted collectives", low=0, kind="int", commands=C),
    F("jitter_s", "Jitter", "mean extra delay per message, exponential, e.g. 1us", "jitter", unit="s", low=0, commands=C,
      closed_form="jitter varies message times; closed forms assume fixed costs",
      collapsed="per-message jitter needs per-message simulation"),
    F("seed", "Seed", "seed for jitter and verification payloads", low=0, high=2**63 - 1, kind="int", commands=C),
    F("repetitions", "Repetitions", "back-to-back calls; time_s is per call (total_time / repetitions), buffers fresh each call", low=1,
      kind="int", commands=C, closed_form="{value} back-to-back calls may overlap; the closed form is for one call"),
    F("verify", "Verify", "move real payloads and check every rank's final buffer", kind="flag", commands=C,
      collapsed="verify moves real payloads message by message"),
    F("record", "Recording", "event recording", choices=RECORD_MODES, commands=C),
    F("max_events", "Recorded messages", "record auto: above this many messages keep aggregates only", low=0, kind="int"),
    F("groups", "Groups", "run the collective at once on disjoint groups: 4x8, strided:4 or 0,1;2,3", commands=C,
      collapsed="groups run at once and contend for the network"),
)  # fmt: skip

D = ("ddp",)
_DDP_NETWORK = {"bandwidth_Bps": {"label": "Link bandwidth"}, "latency_s": {"label": "Link latency"}}
DDP = _table(
    F("preset", "Model preset", "model preset: small, medium, large, xl, 2.7B, cs336-tiny, resnet18, gpt2"),
    F("params_file", "Parameter file", "parameter list file (JSON/YAML, registration order)"),  # --params: "params" is the list's own field
    F("param_bytes", "Tensor sizes", "tensor sizes in registration order, e.g. 4MiB,4MiB,16MiB", unit="bytes"),
    F("element_bytes", "Element bytes", "bytes per element for --param-bytes (default 4)", unit="bytes", low=1, kind="int"),
    F(
        "strategy",
        "DDP strategy",
        "naive, flat, overlap or bucketed (PyTorch DDP); default bucketed",
        choices=("naive", "flat", "overlap", "bucketed"),
    ),
    F(
        "bucket_cap_bytes",
        "Bucket size",
        "bucket cap (DDP bucket_cap_mb), default 25MiB",
        "bucket_size",
        ("bucket_cap",),
        unit="bytes",
        low=1,
    ),
    F(
        "first_bucket_bytes",
        "First bucket",
        "first bucket cap, default 1MiB (PyTorch's); 'none' for no smaller first bucket",
        "first_bucket",
        unit="bytes",
        low=1,
    ),  # fmt: skip
    F("rebuild", "Rebuild buckets", "fill buckets in observed gradient-ready order (DDP rebuild)", kind="flag"),
    F("accumulation_steps", "Accumulation steps", "micro-steps per step; the first k-1 run under no_sync", low=1, kind="int"),
    F("comm_hook", "Communication hook", "comm hook on every DDP bucket", choices=("none", "fp16", "bf16", "powersgd")),
    F("powersgd_rank", "PowerSGD rank", "powersgd: matrix approximation rank r (torch's matrix_approximation_rank)", low=1, kind="int"),
    F("powersgd_warmup", "PowerSGD warm-up", "powersgd: plain all-reduce for N iterations (start_powerSGD_iter; 1000)", low=0, kind="int"),
    F("iteration", "Iteration", "0-based training iteration of the step (powersgd warm-up); default: after the warm-up", low=0, kind="int"),
    F(
        "backward_time_s",
        "Backward time",
        "total backward time, gradients ready uniformly by bytes, e.g. 120ms",
        "backward_time",
        unit="s",
        low=0,
    ),
    F("backward_rate_Bps", "Backward rate", "gradient bytes produced per second, e.g. 2GB/s", "backward_rate", unit="B/s"),
    F("layer_times", "Layer times", "per-layer backward times: FILE {prefix: time} or 'layers.0:2ms,...'"),
    F("flops_per_s", "Compute throughput", "compute throughput for FLOP-based backward, e.g. 100TFLOPS (needs tokens)", unit="FLOP/s"),
    F(
        "tokens",
        "Tokens per rank",
        "tokens per micro-batch: sequences x sequence length (FLOPs: 4 x tokens x numel; activations)",
        low=1,
        kind="int",
    ),
    F("profile_file", "Measured profile", "measured profile JSON written by 'collsim real' (replayed)", "profile"),
    F(
        "forward_time_s",
        "Forward time",
        "forward time per micro-step, e.g. 40ms (default 0, or from FLOPs at the MFU)",
        "forward_time",
        unit="s",
        low=0,
    ),
    F(
        "optimizer_time_s",
        "Optimizer time",
        "optimizer step time after the last all-reduce, e.g. 5ms (default 0)",
        "optimizer_time",
        unit="s",
        low=0,
    ),
    F("slowdown", "Compute slowdown", "compute slowdown factor while comm is in flight (default 1.0)", low=1, kind="float"),
    F("comm", "Comm model", "ow: o + bytes/w per call; network: simulated all-reduce", choices=("ow", "network")),
    F("o_s", "o (per-call overhead)", "ow: per-call overhead, e.g. 50us", "o", unit="s", low=0),
    F("w_Bps", "w (algorithm bandwidth)", "ow: algorithm bandwidth (per-rank bytes / time), e.g. 10GB/s", "w", unit="B/s"),
    F("algorithm", "All-reduce algorithm", "network: all-reduce algorithm, e.g. ring (default)"),
    *(_network(COLLECTIVE[name], **_DDP_NETWORK.get(name, {})) for name in NETWORK_FIELDS),
    F("ranks", "Ranks", "number of ranks (default 2)", low=1, high=COLLECTIVE["ranks"].high, kind="int"),  # one rank limit
    F("call_overhead_s", "Call overhead", "network: fixed cost per collective call, e.g. 20us", "call_overhead", unit="s", low=0),
    F("hardware", "Hardware", "a preset sets ranks (whole nodes), the network, o / w and the GPU (collsim hardware list)"),
    *(dataclasses.replace(COLLECTIVE[name], commands=("ddp",), group="", hint="") for name in ("nodes", "nics_per_node", "nic_bandwidth")),
    F(
        "mode",
        "Network mode",
        "network: collapsed (closed form, ring replay or one cached simulation per size) or full",
        choices=("collapsed", "full"),
    ),
    F(
        "precision",
        "Precision",
        "parameters and gradients: bytes per gradient element in every bucket; default: the parameter list's",
        choices=("fp32", "bf16", "fp16"),
    ),  # fmt: skip
    F(
        "master_weights",
        "fp32 master weights",
        "bf16 / fp16: an fp32 copy of the weights for the optimizer (memory; default on)",
        kind="flag",
    ),
    F(
        "mfu",
        "MFU",
        "model FLOP utilisation: backward and forward not given otherwise come from FLOPs at this fraction of the GPU's "
        "dense peak, e.g. 40%, or 'measured': the preset's MFU measured on an H100 with torch.compile (GPT-2 21%, 2.7B 53%; "
        "on an H200 preset the H200's; bench/gpu_step_times.py); needs tokens and a GPU",
        unit="fraction",
        low=0,
        high=1,
    ),  # fmt: skip
    F("gpu", "GPU", "hardware preset whose GPU peak the MFU uses (default: the hardware's), e.g. dgx-h100"),
    F(
        "activation_checkpointing",
        "Activation checkpointing",
        "keep layer inputs only; backward recomputes forward (memory, time)",
        kind="flag",
    ),
)
# the DDP page's boxes (form and URL key) of DDP fields; its other boxes (backward, bucket slider,
# sharding) are the page's own
_DDP_PAGE = {"hardware": "", "preset": "", "precision": "", "master_weights": "master", "tokens": "", "gpu": "", "mfu": "",
             "forward_time_s": "forward", "optimizer_time_s": "optimizer", "activation_checkpointing": "checkpointing", "strategy": "",
             "first_bucket_bytes": "", "accumulation_steps": "accumulation", "comm": "comm_model", "o_s": "", "w_Bps": "",
             "bandwidth_Bps": "", "latency_s": "", "algorithm": ""}  # fmt: skip
DDP = {
    name: dataclasses.replace(info, commands=info.commands or D, **({"group": "ddp", "url": _DDP_PAGE[name]} if name in _DDP_PAGE else {}))
    for name, info in DDP.items()
}
del F, C, X, P, D

_SCENARIOS = {"collective": ("sim.scenario", "CollectiveScenario", COLLECTIVE), "ddp": ("sim.training.ddp_scenario", "DDPScenario", DDP)}


def register(scenario: str, module: str, cls: str, table: dict[str, FieldInfo]) -> None:
    """A command's own field table, registered as its module is imported (sim.training.runcost_fields)."""
    _SCENARIOS[scenario] = (module, cls, table)


def fields_of(scenario: str = "collective") -> dict[str, FieldInfo]:
    """Every field's metadata of ``scenario`` ("collective" or "ddp"), by field name (no defaults)."""
    if scenario not in _SCENARIOS:
        raise CollsimError(f"scenario: unknown {scenario!r}; allowed: {', '.join(_SCENARIOS)}")
    return _SCENARIOS[scenario][2]


def check_range(name: str, value: float, scenario: str = "collective") -> None:
    """Raise when ``value`` is outside field ``name``'s bounds: one limit, from the table above,
    for every command, file and form (``sim ddp --ranks 100000`` once passed its own 65,536)."""
    _check_bounds(fields_of(scenario)[name], value)


def _check_bounds(info: FieldInfo, value: float) -> None:
    low, high = (None if bound is None else _number(bound) for bound in (info.low, info.high))
    if low is not None and high is not None and not info.low <= value <= info.high:
        raise CollsimError(f"{info.key}: must be between {low} and {high}, got {_number(value)}", field=info.key)
    if low is not None and value < info.low:
        raise CollsimError(f"{info.key}: must be >= {low}, got {_number(value)}", field=info.key)


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def check_value(info: FieldInfo, value: Any) -> None:
    """Raise unless ``value`` (parsed; None: not given) is one the field allows: one of its
    choices, a positive finite rate (B/s), a finite time or size within its bounds, a number
    within its bounds. The error names the field (``field=`` its key), so a form shows it at its box."""
    if value is None or isinstance(value, bool):
        return
    key = info.key
    if info.choices and value not in info.choices:
        raise CollsimError(f"{key}: must be one of {', '.join(info.choices)}, got {value!r}", field=key)
    if info.unit == "B/s" and not (value > 0 and math.isfinite(value)):
        raise CollsimError(f"{key}: must be a positive, finite rate such as 25GB/s, got {value!r}", field=key)
    if info.unit == "s" and not (value >= (info.low or 0) and math.isfinite(value)):
        raise CollsimError(f"{key}: must be a time >= {info.low or 0:g} such as 5us, got {value!r}", field=key)
    if info.unit == "bytes" and info.kind != "int" and isinstance(value, (int, float)) and value < (info.low or 0):
        raise CollsimError(f"{key}: must be a size >= {info.low or 0:g} such as 64KiB, got {value!r}", field=key)
    if info.kind in ("int", "float") and isinstance(value, (int, float)):
        _check_bounds(info, value)


def field_info(name: str, scenario: str = "collective") -> FieldInfo:
    """A field's label, help, unit, bounds, choices and default, by field name or short key
    (``field_info("size")``, ``field_info("w", "ddp")``); one clear error for a name that is none."""
    table = fields_of(scenario)
    by_key = {key: info for info in table.values() for key in (info.name, *info.keys())}
    if name not in by_key:
        raise unknown_key(name, by_key, f"{scenario} scenario")
    info = by_key[name]
    declared = _declared(scenario)
    default = declared[info.name].default if info.name in declared else None  # a preset key: none unless given
    return dataclasses.replace(info, default=default)


@functools.cache
def _declared(scenario: str) -> dict[str, dataclasses.Field]:
    module, cls, _ = _SCENARIOS[scenario]
    return {item.name: item for item in dataclasses.fields(getattr(importlib.import_module(module), cls))}


def command_fields(command: str, scenario: str = "collective") -> tuple[str, ...]:
    """The fields ``collsim sim COMMAND`` has a flag for, in the table's order (its ``--help``'s)."""
    return tuple(name for name, info in fields_of(scenario).items() if command in info.commands)


def form_fields(page: str) -> dict[str, FieldInfo]:
    """An explorer page's boxes that are scenario fields, by form and URL key, in the form's
    order, defaults filled (``form_fields("collectives")["size"].start == "64MiB"``)."""
    scenario = "ddp" if page == "ddp" else "collective"
    return {info.url_key: field_info(name, scenario) for name, info in fields_of(scenario).items() if info.group == page}


def breaks(scenario: Any, what: str) -> str | None:
    """Why ``scenario`` (a CollectiveScenario) has no ``what`` ("closed_form" or "collapsed"): the
    reason of the first field, in the table's order, whose value is not its default and whose
    entry says it breaks that; None when none does."""
    return next(iter(broken(scenario, what).values()), None)


def broken(scenario: Any, what: str) -> dict[str, str]:
    """Every field of ``scenario`` that breaks ``what`` ("closed_form" or "collapsed"), by name,
    with its entry's reason, in the table's order."""
    declared = _declared("collective")
    reasons = {}
    for name, info in COLLECTIVE.items():
        reason = getattr(info, what)
        if reason is not None and name in declared and getattr(scenario, name) != declared[name].default:
            reasons[name] = reason.format(value=getattr(scenario, name))
    return reasons


# -- groups and verify: checks a scenario makes as it is built (sim.collective.groups and
# sim.collective.verify run them; their spec and bounds live here, below sim.scenario) ----------

VERIFY_LIMIT_BYTES = 4 * 2**30  # inputs + working buffers of every rank, 4 bytes an element


def verify_bytes(ranks: int, elements: int) -> int:
    return 2 * ranks * elements * 4


Groups = tuple[tuple[int, ...], ...]

_SPEC_HELP = "4x8 (four groups of 8 consecutive ranks), strided:4 (group g = ranks g, g+4, ...), 0,1;2,3 or a list of rank lists"


def resolve_groups(value: Any, ranks: int) -> Groups:
    """Groups as tuples of global ranks from a spec string or lists; () for none (one group of
    all ranks). Raises CollsimError unless the groups are disjoint and cover 0..ranks-1."""
    if value in (None, "", (), []):
        return ()
    groups = _parse_spec(value.strip(), ranks) if isinstance(value, str) else _lists(value)
    _check_partition(groups, ranks)
    return groups


def _parse_spec(spec: str, ranks: int) -> Groups:
    if spec.startswith("strided:"):
        count = _whole(spec.removeprefix("strided:"), spec)
        if not 1 <= count <= ranks:
            raise CollsimError(f"groups: strided:{count} needs 1 to {ranks} groups (ranks is {ranks})")
        return tuple(tuple(range(g, ranks, count)) for g in range(count))
    if "x" in spec and ";" not in spec and "," not in spec:
        count, size = (_whole(part, spec) for part in spec.split("x", 1))
        if count < 1 or size < 1 or count * size != ranks:
            raise CollsimError(f"groups: {spec} is {count} groups of {size} = {count * size} ranks, but ranks is {ranks}; {_SPEC_HELP}")
        return tuple(tuple(range(g * size, (g + 1) * size)) for g in range(count))
    return _lists([part.split(",") for part in spec.split(";") if part.strip()], spec)


def _whole(text: Any, spec: Any) -> int:
    try:
        number = int(str(text).strip())
    except ValueError:
        raise CollsimError(f"groups: cannot read {spec!r}; give {_SPEC_HELP}") from None
    return number


def _lists(value: Any, shown: Any = None) -> Groups:
    if not isinstance(value, (list, tuple)) or not all(isinstance(group, (list, tuple)) for group in value):
        raise CollsimError(f"groups: expected a list of rank lists, got {value!r}; give {_SPEC_HELP}")
    groups = []
    for group in value:
        if any(isinstance(rank, bool) for rank in group):
            raise CollsimError(f"groups: ranks must be whole numbers, got {list(group)}")
        groups.append(tuple(_whole(rank, value if shown is None else shown) for rank in group))
    return tuple(groups)


def _check_partition(groups: Groups, ranks: int) -> None:
    owner: dict[int, int] = {}
    for index, group in enumerate(groups):
        if not group:
            raise CollsimError(f"groups: group {index} is empty; every group needs at least one rank")
        for rank in group:
            if not 0 <= rank < ranks:
                raise CollsimError(f"groups: group {index} names rank {rank}, outside 0..{ranks - 1}")
            if rank in owner:
                raise CollsimError(f"groups: rank {rank} is in group {owner[rank]} and group {index}; groups must be disjoint")
            owner[rank] = index
    missing = [rank for rank in range(ranks) if rank not in owner]
    if missing:
        raise CollsimError(f"groups: ranks {missing[:16]} are in no group; groups must cover ranks 0..{ranks - 1}")
