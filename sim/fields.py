"""What a person needs to know about each scenario field, in one place: the short key of files
and the command line, a form label, the help sentence, the unit, the bounds and the choices.

The scenarios read their short names (aliases) and bounds from here
(:mod:`sim.scenario`, :mod:`sim.training.ddp_scenario`); ``collsim sim collective`` / ``sim
ddp`` / ``sim crossover`` / ``sim fsdp`` build their options from it (:mod:`sim.cli_fields`);
the explorer's forms take labels and help from :func:`field_info`. Standard library only, so
``collsim --help`` stays light; the defaults come from the scenario dataclasses themselves
(:func:`field_info` looks them up).
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any

from sim.errors import CollsimError, unknown_key

__all__ = [
    "COLLECTIVE",
    "DDP",
    "FieldInfo",
    "Groups",
    "RECORD_MODES",
    "SHARING_MODES",
    "VERIFY_LIMIT_BYTES",
    "check_range",
    "field_info",
    "fields_of",
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
    where the allowed values are listed ("module:function"), so help never goes stale."""

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

    @property
    def key(self) -> str:
        return self.short or self.name

    @property
    def option(self) -> str:
        """The command-line flag: ``--eager-limit`` for ``eager_limit_bytes``."""
        return "--" + self.key.replace("_", "-")

    def keys(self) -> tuple[str, ...]:
        """Every key besides ``name`` that files and flags may use for this field."""
        return tuple(key for key in (self.short, *self.aliases) if key and key != self.name)


def _table(*infos: FieldInfo) -> dict[str, FieldInfo]:
    return {info.name: info for info in infos}


def _network(info: FieldInfo) -> FieldInfo:
    """A collective field as a DDP scenario's ``comm: network`` uses it."""
    return dataclasses.replace(info, help=f"network: {info.help}")


# the collective fields a DDP scenario's network comm model takes as they are
NETWORK_FIELDS = ("latency_s", "bandwidth_Bps", "topology", "gpus_per_node", "intra_latency_s", "intra_bandwidth_Bps", "reduce_bandwidth_Bps",
                  "chunks")  # fmt: skip


F = FieldInfo
COLLECTIVE = _table(
    F("op", "Operation", "the collective operation", listing="sim.algorithms.registry:ops"),
    F("algorithm", "Algorithm", "e.g. ring, binomial, recursive_doubling, rabenseifner, double_binary_tree"),
    F("ranks", "Ranks", "number of ranks p", low=1, high=65536, kind="int"),
    F(
        "size_bytes",
        "Message size",
        "message size n, e.g. 64MiB; a bare number is bytes (all_gather: gathered size)",
        "size",
        unit="bytes",
        low=0,
    ),
    F("bandwidth_Bps", "Link bandwidth", "link bandwidth B, e.g. 25GB/s or 100Gbps", "bandwidth", unit="B/s"),
    F("latency_s", "Link latency", "link latency alpha, e.g. 5us (default 0)", "latency", unit="s", low=0),
    F(
        "reduce_bandwidth_Bps",
        "Reduction bandwidth",
        "reduction bandwidth 1/gamma, e.g. 100GB/s (default: free)",
        "reduce_bandwidth",
        unit="B/s",
    ),
    F("overhead_s", "Per-call overhead", "per-call overhead o, e.g. 10us", "overhead", unit="s", low=0),
    F("chunks", "Chunks", "pipeline chunks k (chain, ring, trees)", low=1, kind="int"),
    F("topology", "Topology", "switch | ring | two_level | torus2d | FILE (GraphML/JSON)"),
    F("gpus_per_node", "Ranks per node", "two_level: ranks per node (default 8: then ranks must be a multiple of 8)", low=1, kind="int"),
    F("intra_latency_s", "Intra-node latency", "two_level: latency inside a node", "intra_latency", unit="s", low=0),
    F("intra_bandwidth_Bps", "Intra-node bandwidth", "two_level: bandwidth inside a node", "intra_bandwidth", unit="B/s"),
    F("element_bytes", "Element bytes", "bytes per element (float32: 4)", unit="bytes", low=1, kind="int"),
    F("root", "Root", "root rank for rooted collectives", low=0, kind="int"),
    F("stragglers", "Stragglers", "RANK:DELAY start skew, e.g. 3:1ms (repeatable)", kind="repeated"),
    F("jitter_s", "Jitter", "mean extra delay per message, exponential, e.g. 1us", "jitter", unit="s", low=0),
    F("seed", "Seed", "seed for jitter and verification payloads", low=0, kind="int"),
    F(
        "repetitions",
        "Repetitions",
        "back-to-back calls; time_s is per call (total_time / repetitions), buffers fresh each call",
        low=1,
        kind="int",
    ),
    F("verify", "Verify", "move real payloads and check every rank's final buffer", kind="flag"),
    F("record", "Recording", "event recording", choices=RECORD_MODES),
    F("max_events", "Recorded messages", "record auto: above this many messages keep aggregates only", low=0, kind="int"),
    F(
        "sharing",
        "Link sharing",
        "how messages share links and ports: fair (max-min fair flows, default) or fifo (work-conserving FIFO queues)",
        choices=SHARING_MODES,
    ),  # fmt: skip
    F(
        "eager_limit_bytes",
        "Eager limit",
        "messages larger than this wait for the matching receive (rendezvous); default 0: all wait",
        "eager_limit",
        unit="bytes",
        low=0,
    ),  # fmt: skip
    F("placement", "Placement", "ranks on endpoints: block (default), round_robin (two_level: rank r on node r % nodes) or FILE"),
    F("groups", "Groups", "run the collective at once on disjoint groups: 4x8, strided:4 or 0,1;2,3"),
    F("hardware", "Hardware", "hardware preset (collsim hardware list): fills ranks, topology and links; flags override"),
)

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
    *(_network(COLLECTIVE[name]) for name in NETWORK_FIELDS),
    F("ranks", "Ranks", "number of ranks (default 2)", low=1, high=65536, kind="int"),
    F("call_overhead_s", "Call overhead", "network: fixed cost per collective call, e.g. 20us", "call_overhead", unit="s", low=0),
    F("hardware", "Hardware", "a preset sets ranks (whole nodes), the network, o / w and the GPU (collsim hardware list)"),
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
del F

_SCENARIOS = {"collective": ("sim.scenario", "CollectiveScenario", COLLECTIVE), "ddp": ("sim.training.ddp_scenario", "DDPScenario", DDP)}


def fields_of(scenario: str = "collective") -> dict[str, FieldInfo]:
    """Every field's metadata of ``scenario`` ("collective" or "ddp"), by field name (no defaults)."""
    if scenario not in _SCENARIOS:
        raise CollsimError(f"scenario: unknown {scenario!r}; allowed: {', '.join(_SCENARIOS)}")
    return _SCENARIOS[scenario][2]


def check_range(name: str, value: float, scenario: str = "collective") -> None:
    """Raise when ``value`` is outside field ``name``'s bounds: one limit, from the table above,
    for every command, file and form (``sim ddp --ranks 100000`` once passed its own 65,536)."""
    info = fields_of(scenario)[name]
    if info.low is not None and info.high is not None and not info.low <= value <= info.high:
        raise CollsimError(f"{info.key}: must be between {info.low:g} and {info.high:g}, got {value:g}", field=info.key)
    if info.low is not None and value < info.low:
        raise CollsimError(f"{info.key}: must be >= {info.low:g}, got {value:g}", field=info.key)


def field_info(name: str, scenario: str = "collective") -> FieldInfo:
    """A field's label, help, unit, bounds, choices and default, by field name or short key
    (``field_info("size")``, ``field_info("w", "ddp")``); one clear error for a name that is none."""
    table = fields_of(scenario)
    by_key = {key: info for info in table.values() for key in (info.name, *info.keys())}
    if name not in by_key:
        raise unknown_key(name, by_key, f"{scenario} scenario")
    info = by_key[name]
    module, cls, _ = _SCENARIOS[scenario]
    declared = {item.name: item for item in dataclasses.fields(getattr(importlib.import_module(module), cls))}
    default = declared[info.name].default if info.name in declared else dataclasses.MISSING
    return dataclasses.replace(info, default=default)


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
