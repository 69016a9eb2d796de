"""DDP step model: gradients become ready during backward, buckets all-reduce on one comm stream.

One training step on one rank (every rank runs the same timeline): forward, backward (gradients
ready in reverse registration order at times from a compute profile), gradient all-reduces
issued by a strategy onto the process group's single comm stream (one collective at a time, in
issue order), then the optimizer once every all-reduce has finished. See docs/ddp.md.

Strategies (DESIGN §5): ``naive`` (after backward, one blocking all-reduce per parameter, in
registration order), ``flat`` (after backward, one all-reduce of everything), ``overlap`` (one
async all-reduce per parameter as soon as its gradient is ready) and ``bucketed`` (PyTorch
Reducer: buckets filled by ``torch.distributed._compute_bucket_assignment_by_size`` rules, a
bucket launches when its gradients are ready and every earlier bucket has launched).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Generator, Hashable, Sequence
from dataclasses import dataclass
from functools import cached_property, reduce
from pathlib import Path
from typing import Any

import simpy

from sim.collective.results import EVENT_COLUMNS, event_row, write_csv
from sim.errors import CollsimError
from sim.scenario import ScenarioData, _bool, _int, _optional, load_mapping
from sim.training import comm
from sim.training import overhead as formula
from sim.training.params import PRESETS, Param, load_params, params_from_bytes, params_from_list, preset
from sim.units import parse_bandwidth, parse_size, parse_time

STRATEGIES = ("naive", "flat", "overlap", "bucketed")
COMM_MODELS = ("ow", "network")
DEFAULT_BUCKET_CAP_BYTES = 25 * 2**20  # DDP's bucket_cap_mb=25
DEFAULT_FIRST_BUCKET_BYTES = 2**20  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
PROFILE_KIND = "collsim-ddp-profile"
_PROFILE_SOURCES = ("backward_time_s", "backward_rate_Bps", "layer_times", "flops_per_s", "profile_file")
_PARAM_SOURCES = ("preset", "params_file", "param_bytes", "params")


# --- scenario -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DDPScenario(ScenarioData):
    """One DDP training step: parameters, compute profile, strategy, buckets, comm model."""

    # parameters: exactly one source (a measured profile file carries its own list)
    preset: str | None = None
    params_file: str | None = None
    param_bytes: tuple[int, ...] | None = None
    params: tuple[Param, ...] | None = None
    element_bytes: int = 4  # for param_bytes
    # strategy and buckets
    strategy: str = "bucketed"
    bucket_cap_bytes: int = DEFAULT_BUCKET_CAP_BYTES
    first_bucket_bytes: int | None = DEFAULT_FIRST_BUCKET_BYTES  # None: no smaller first bucket
    rebuild: bool = False  # fill buckets in observed gradient-ready order (DDP's rebuild)
    accumulation_steps: int = 1  # no_sync for the first k-1 micro-steps
    # backward compute profile: exactly one source
    backward_time_s: float | None = None
    backward_rate_Bps: float | None = None
    layer_times: tuple[tuple[str, float], ...] | None = None  # (name prefix, backward s)
    flops_per_s: float | None = None  # with tokens: 4 tokens numel FLOPs per tensor
    tokens: int | None = None
    profile_file: str | None = None  # measured by real: "collsim-ddp-profile" JSON
    forward_time_s: float | None = None  # None: from the profile file, else 0
    optimizer_time_s: float | None = None  # None: from the profile file, else 0
    slowdown: float = 1.0  # compute runs this many times slower while comm is in flight
    # comm model
    comm: str = "ow"
    o_s: float = 0.0  # ow: per-call overhead
    w_Bps: float | None = None  # ow: algorithm bandwidth (per-rank bytes / time); with hardware: fitted (sim.training.comm)
    algorithm: str | None = None  # network: None is NCCL's pick ("nccl") on a GPU preset, else ring
    ranks: int = 2
    latency_s: float = 0.0
    bandwidth_Bps: float | None = None
    topology: str = "switch"
    gpus_per_node: int | None = None
    intra_latency_s: float | None = None
    intra_bandwidth_Bps: float | None = None
    reduce_bandwidth_Bps: float | None = None
    call_overhead_s: float = 0.0  # network: fixed cost per collective call
    hardware: str | None = None  # network: a preset's two_level with its NIC rails, as sim collective --hardware
    chunks: int = 1
    # network: each bucket's all-reduce runs alone on the comm stream, so the collapsed mode
    # (closed form, exact ring replay or one cached simulation per size) gives the full times
    mode: str = "collapsed"  # collapsed | full (message by message)

    def __post_init__(self) -> None:
        if self.algorithm is None:  # no explicit algorithm: NCCL's pick on a GPU preset, ring elsewhere
            object.__setattr__(self, "algorithm", comm.NCCL if comm.uses_nccl(self.hardware) else "ring")
        self._check_sources()
        self._check_strategy()
        self._check_times()
        self._check_comm()

    def _check_sources(self) -> None:
        given = [name for name in _PARAM_SOURCES if getattr(self, name) is not None]
        if len(given) > 1:
            raise CollsimError(f"parameters: give one of preset, params, param_bytes; got {', '.join(given)}")
        if not given and self.profile_file is None:
            raise CollsimError(
                "parameters: give a preset (--preset xl), a parameter file (--params FILE) or sizes (--param-bytes 4MiB,4MiB)"
            )
        if self.preset is not None and self.preset not in PRESETS:
            raise CollsimError(f"preset: unknown {self.preset!r}; allowed: {', '.join(PRESETS)}")
        if self.param_bytes is not None and not self.param_bytes:
            raise CollsimError("param_bytes: empty list; give sizes such as 4MiB,4MiB")
        if self.params is not None:
            params_from_list(list(self.params), "params")
        profiles = [name for name in _PROFILE_SOURCES if getattr(self, name) is not None]
        if len(profiles) != 1:
            raise CollsimError(
                f"backward profile: give exactly one of backward_time, backward_rate, layer_times, flops_per_s (with tokens), profile; got {', '.join(profiles) or 'none'}"
            )
        if (self.flops_per_s is None) != (self.tokens is None):
            raise CollsimError("flops_per_s and tokens go together: backward FLOPs per tensor are 4 x tokens x numel")

    def _check_strategy(self) -> None:
        if self.strategy not in STRATEGIES:
            raise CollsimError(f"strategy: unknown {self.strategy!r}; allowed: {', '.join(STRATEGIES)}")
        if self.bucket_cap_bytes <= 0:
            raise CollsimError(f"bucket_size: must be > 0 bytes (e.g. 25MiB), got {self.bucket_cap_bytes}")
        if self.first_bucket_bytes is not None and self.first_bucket_bytes <= 0:
            raise CollsimError(f"first_bucket: must be > 0 bytes (e.g. 1MiB) or none, got {self.first_bucket_bytes}")
        if self.accumulation_steps < 1:
            raise CollsimError(f"accumulation_steps: must be >= 1, got {self.accumulation_steps}")
        if self.element_bytes < 1:
            raise CollsimError(f"element_bytes: must be >= 1, got {self.element_bytes}")

    def _check_times(self) -> None:
        times = {
            "backward_time": self.backward_time_s,
            "forward_time": self.forward_time_s,
            "optimizer_time": self.optimizer_time_s,
            "o": self.o_s,
            "latency": self.latency_s,
            "call_overhead": self.call_overhead_s,
            "intra_latency": self.intra_latency_s,
        }
        for name, value in times.items():
            if value is not None and not (value >= 0 and math.isfinite(value)):
                raise CollsimError(f"{name}: must be a time >= 0 such as 120ms, got {value!r}")
        for prefix, time_s in self.layer_times or ():
            if not (time_s >= 0 and math.isfinite(time_s)):
                raise CollsimError(f"layer_times: {prefix!r}: must be a time >= 0, got {time_s!r}")
        rates = {
            "backward_rate": self.backward_rate_Bps,
            "flops_per_s": self.flops_per_s,
            "w": self.w_Bps,
            "bandwidth": self.bandwidth_Bps,
            "intra_bandwidth": self.intra_bandwidth_Bps,
            "reduce_bandwidth": self.reduce_bandwidth_Bps,
        }
        for name, value in rates.items():
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise CollsimError(f"{name}: must be a positive, finite rate, got {value!r}")
        if self.tokens is not None and self.tokens < 1:
            raise CollsimError(f"tokens: must be >= 1, got {self.tokens}")
        if not (self.slowdown >= 1 and math.isfinite(self.slowdown)):
            raise CollsimError(f"slowdown: must be >= 1 (1 = comm does not slow compute), got {self.slowdown!r}")

    def _check_comm(self) -> None:
        if self.mode not in ("collapsed", "full"):
            raise CollsimError(f"mode: must be collapsed or full, got {self.mode!r}")
        if self.comm not in COMM_MODELS:
            raise CollsimError(f"comm: unknown {self.comm!r}; allowed: ow (o + bytes/w per call), network (simulated all-reduce)")
        if self.comm == "ow" and self.w_Bps is None and self.hardware is None:
            raise CollsimError("w: the ow comm model needs the algorithm bandwidth w (e.g. --w 10GB/s), or a hardware preset (--hardware)")
        if self.algorithm == comm.NCCL and not comm.uses_nccl(self.hardware):
            raise CollsimError("algorithm: nccl (NCCL's pick) needs a GPU hardware preset (--hardware, collsim hardware list)")
        if self.comm == "network" or self.hardware is not None:
            if self.bandwidth_Bps is None:
                raise CollsimError("bandwidth: the network comm model needs a link bandwidth (e.g. --bandwidth 25GB/s)")
            self.collective(0)  # validates algorithm, ranks, topology, hardware

    @property
    def nodes(self) -> int:
        """Nodes of the hardware preset (ranks / its GPUs a node)."""
        from sim.hardware.presets import load_preset

        return self.ranks // load_preset(self.hardware).gpus_per_node

    def pick_fields(self, element_bytes: int = 1) -> tuple[tuple[str, Any], ...]:
        """Collective-scenario fields this scenario sets over its preset's (link figures as given,
        element size, reduction rate, per-call cost), for :func:`sim.training.comm.pick_time`."""
        fields = {"bandwidth_Bps": self.bandwidth_Bps, "latency_s": self.latency_s, "intra_bandwidth_Bps": self.intra_bandwidth_Bps,
                  "intra_latency_s": self.intra_latency_s, "reduce_bandwidth_Bps": self.reduce_bandwidth_Bps,
                  "overhead_s": self.call_overhead_s, "element_bytes": element_bytes, "record": "aggregate"}  # fmt: skip
        return tuple(sorted((key, value) for key, value in fields.items() if value is not None))

    def ow_fit(self, element_bytes: int = 1, buckets: tuple[tuple[int, int], ...] | None = None, last: int | None = None) -> Any:
        """With a hardware preset and no w given: o and w fitted to the network comm model's
        all-reduce times at ``buckets`` ((size, calls) pairs; :func:`sim.training.comm.hardware_ow`);
        None otherwise."""
        if self.hardware is None or self.w_Bps is not None:
            return None
        return comm.hardware_ow(self.hardware, self.nodes, self.pick_fields(element_bytes), buckets, last)

    def ow_params(self, element_bytes: int = 1, buckets: tuple[tuple[int, int], ...] | None = None) -> tuple[float, float]:
        """(o, w) of the ow comm model: as given, or fitted on the hardware preset."""
        fit = self.ow_fit(element_bytes, buckets)
        return (self.o_s, self.w_Bps) if fit is None else (fit.o_s, fit.w_Bps)

    def collective(self, nbytes: int, element_bytes: int = 1) -> Any:
        """The all-reduce of ``nbytes`` this scenario's network comm model simulates (NCCL's
        pick: the scenario it runs, or ring on NCCL's ring channels where the DES has none)."""
        from sim.scenario import CollectiveScenario

        algorithm, chunks = self.algorithm, self.chunks
        if algorithm == comm.NCCL:
            algorithm, chunks = self._nccl_collective(nbytes)
        return CollectiveScenario(
            op="all_reduce", algorithm=algorithm, ranks=self.ranks, size_bytes=nbytes, bandwidth_Bps=self.bandwidth_Bps or 1.0,
            latency_s=self.latency_s, reduce_bandwidth_Bps=self.reduce_bandwidth_Bps, overhead_s=self.call_overhead_s, chunks=chunks,
            topology=self.topology, gpus_per_node=self.gpus_per_node, intra_latency_s=self.intra_latency_s,
            intra_bandwidth_Bps=self.intra_bandwidth_Bps, element_bytes=element_bytes, record="aggregate", hardware=self.hardware,
        )  # fmt: skip

    def _nccl_collective(self, nbytes: int) -> tuple[str, int]:
        from sim.hardware.nccl_des import scenario_for_pick
        from sim.hardware.presets import load_preset

        scenario, _ = scenario_for_pick(self.hardware, self.nodes, "all_reduce", nbytes)
        if scenario is not None:
            return scenario.algorithm, scenario.chunks
        return "nccl_ring", load_preset(self.hardware).nccl.graph("ring", self.nodes).n_channels

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["param_bytes"] = None if self.param_bytes is None else list(self.param_bytes)
        data["params"] = None if self.params is None else [param.to_dict() for param in self.params]
        data["layer_times"] = None if self.layer_times is None else [list(pair) for pair in self.layer_times]
        return data


def _size_tuple(value: Any, what: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    items = [item for item in value.split(",") if item.strip()] if isinstance(value, str) else list(value)
    return tuple(parse_size(item, what) for item in items)


def _params_tuple(value: Any, what: str) -> tuple[Param, ...] | None:
    return None if value is None else tuple(params_from_list(list(value), what))


def _layer_times(value: Any, what: str) -> tuple[tuple[str, float], ...] | None:
    """{prefix: time} or [[prefix, time], ...] or "layers.0:2ms,layers.1:2ms"."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [item.rsplit(":", 1) for item in value.split(",") if item.strip()]
    items = value.items() if isinstance(value, dict) else value
    try:
        pairs = tuple((str(prefix), parse_time(time_s, what)) for prefix, time_s in items)
    except (TypeError, ValueError) as error:
        raise CollsimError(f"{what}: expected prefix: time pairs such as layers.0: 2ms ({error})") from None
    if not pairs:
        raise CollsimError(f"{what}: empty; give one backward time per layer name prefix")
    return pairs


def _first_bucket(value: Any, what: str) -> int | None:
    return None if str(value).lower() in ("none", "off", "") else parse_size(value, what)


def _choice(value: Any, what: str) -> str:
    return str(value)


_DDP_PARSERS: dict[str, Callable[[Any, str], Any]] = {
    "param_bytes": _size_tuple,
    "params": _params_tuple,
    "element_bytes": _int,
    "bucket_cap_bytes": parse_size,
    "first_bucket_bytes": _first_bucket,
    "rebuild": _bool,
    "accumulation_steps": _int,
    "backward_time_s": _optional(parse_time),
    "backward_rate_Bps": _optional(parse_bandwidth),
    "layer_times": _layer_times,
    "flops_per_s": _optional(lambda value, what: float(value)),
    "tokens": _optional(_int),
    "forward_time_s": _optional(parse_time),
    "optimizer_time_s": _optional(parse_time),
    "slowdown": lambda value, what: float(value),
    "o_s": parse_time,
    "w_Bps": _optional(parse_bandwidth),
    "ranks": _int,
    "latency_s": parse_time,
    "bandwidth_Bps": _optional(parse_bandwidth),
    "gpus_per_node": _optional(_int),
    "intra_latency_s": _optional(parse_time),
    "intra_bandwidth_Bps": _optional(parse_bandwidth),
    "reduce_bandwidth_Bps": _optional(parse_bandwidth),
    "call_overhead_s": parse_time,
    "chunks": _int,
    "algorithm": _optional(_choice),
    "hardware": _optional(_choice),
}
_DDP_ALIASES = {
    "bucket_size": "bucket_cap_bytes",
    "bucket_cap": "bucket_cap_bytes",
    "first_bucket": "first_bucket_bytes",
    "backward_time": "backward_time_s",
    "backward_rate": "backward_rate_Bps",
    "profile": "profile_file",
    "forward_time": "forward_time_s",
    "optimizer_time": "optimizer_time_s",
    "o": "o_s",
    "w": "w_Bps",
    "latency": "latency_s",
    "bandwidth": "bandwidth_Bps",
    "intra_latency": "intra_latency_s",
    "intra_bandwidth": "intra_bandwidth_Bps",
    "reduce_bandwidth": "reduce_bandwidth_Bps",
    "call_overhead": "call_overhead_s",
}
DDPScenario.PARSERS = _DDP_PARSERS
DDPScenario.ALIASES = _DDP_ALIASES
DDPScenario.LABEL = "DDP scenario"


# --- measured profiles --------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredProfile:
    """A profile file written by ``real``: parameters, phase times, gradient ready times."""

    params: tuple[Param, ...]
    forward_s: float
    backward_s: float
    optimizer_s: float
    ready_s: dict[str, float]  # parameter name -> seconds since backward start


def _profile_time(data: dict[str, Any], key: str, path: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value >= 0 and math.isfinite(value)):
        raise CollsimError(f"profile {path!r}: {key!r} must be a time in seconds >= 0, got {value!r}")
    return float(value)


def _ready_times(events: Any, params: Sequence[Param], path: str) -> dict[str, float]:
    """Latest grad_ready time per parameter (rows of several ranks: a collective waits for the slowest)."""
    if not isinstance(events, list):
        raise CollsimError(f"profile {path!r}: 'events' must be a list of event rows ({', '.join(EVENT_COLUMNS)})")
    ready: dict[str, float] = {}
    for index, row in enumerate(events):
        if not isinstance(row, dict) or row.get("kind") != "grad_ready":
            continue
        time_s = row.get("start_s")
        if isinstance(time_s, bool) or not isinstance(time_s, (int, float)) or not (time_s >= 0 and math.isfinite(time_s)):
            raise CollsimError(f"profile {path!r}: events[{index}] start_s must be seconds >= 0 since backward start, got {time_s!r}")
        ready[str(row.get("name"))] = max(float(time_s), ready.get(str(row.get("name")), 0.0))
    names = {param.name for param in params}
    missing = [param.name for param in params if param.name not in ready]
    unknown = sorted(set(ready) - names)
    if missing or unknown:
        raise CollsimError(
            f"profile {path!r}: grad_ready rows must name every parameter once; missing {missing[:5]}, unknown {unknown[:5]}"
        )
    return ready


def load_profile(path: str | Path) -> MeasuredProfile:
    """Read and validate a measured profile (``kind: collsim-ddp-profile``)."""
    data = load_mapping(path)
    where = str(path)
    if data.get("kind") != PROFILE_KIND:
        raise CollsimError(f"profile {where!r}: 'kind' must be {PROFILE_KIND!r}, got {data.get('kind')!r}")
    params = params_from_list(data.get("params"), f"profile {where!r}")
    times = {key: _profile_time(data, key, where) for key in ("forward_s", "backward_s", "optimizer_s")}
    ready = _ready_times(data.get("events"), params, where)
    return MeasuredProfile(tuple(params), times["forward_s"], times["backward_s"], times["optimizer_s"], ready)


# --- bucket assignment (PyTorch's rules) --------------------------------------------------


def compute_bucket_assignment_by_size(
    sizes_nbytes: Sequence[int],
    bucket_size_limits: Sequence[int],
    keys: Sequence[Hashable] | None = None,
    tensor_indices: Sequence[int] | None = None,
) -> tuple[list[list[int]], list[int]]:
    """Pure-Python twin of ``torch.distributed._compute_bucket_assignment_by_size`` (dense tensors).

    Tensors are visited in the given order; each joins the open bucket of its key (dtype and
    device in torch; element size here), and a bucket closes once its size reaches the current
    limit (``>=``), after which that key moves on to the next limit (the last one repeats).
    Open buckets are appended at the end. Without ``tensor_indices`` buckets are sorted by their
    smallest index; with them, indices are ``tensor_indices[i]`` and the order is kept.
    Returns (buckets of tensor indices, the size limit of each bucket).
    """
    if not bucket_size_limits:
        raise CollsimError("bucket_size_limits: need at least one limit")
    keys = keys if keys is not None else [0] * len(sizes_nbytes)
    result: list[tuple[list[int], int]] = []
    open_buckets: dict[Hashable, list[Any]] = {}  # key -> [indices, nbytes, limit]
    limit_position: dict[Hashable, int] = {}
    for position, nbytes in enumerate(sizes_nbytes):
        key = keys[position]
        bucket = open_buckets.setdefault(key, [[], 0, 0])
        bucket[0].append(tensor_indices[position] if tensor_indices else position)
        bucket[1] += nbytes
        limit_at = limit_position.setdefault(key, 0)
        bucket[2] = bucket_size_limits[limit_at]
        if bucket[1] >= bucket[2]:
            result.append((bucket[0], bucket[2]))
            del open_buckets[key]
            limit_position[key] = min(limit_at + 1, len(bucket_size_limits) - 1)
    result += [(indices, limit) for indices, _, limit in open_buckets.values() if indices]
    if not tensor_indices:
        result.sort(key=lambda item: min(item[0]))
    return [indices for indices, _ in result], [limit for _, limit in result]


def bucket_limits(scenario: DDPScenario) -> list[int]:
    """The Reducer's limits: the first bucket's cap, then ``bucket_cap`` for every other one."""
    if scenario.first_bucket_bytes is None:
        return [scenario.bucket_cap_bytes]
    return [scenario.first_bucket_bytes, scenario.bucket_cap_bytes]


def assign_buckets(params: Sequence[Param], order: Sequence[int], limits: Sequence[int]) -> list[list[int]]:
    """Buckets (parameter indices) filled in ``order`` (gradient-ready order), launch order first."""
    sizes = [params[index].nbytes for index in order]
    keys = [params[index].element_bytes for index in order]
    buckets, _ = compute_bucket_assignment_by_size(sizes, limits, keys, list(order))
    return buckets


# --- backward profile ---------------------------------------------------------------------


@dataclass(frozen=True)
class Backward:
    """Backward as work segments: ``segments[k] = (parameter indices ready at its end, work s)``."""

    segments: tuple[tuple[tuple[int, ...], float], ...]
    tail_s: float  # compute after the last gradient (measured profiles)

    @property
    def total_s(self) -> float:
        return sum(work for _, work in self.segments) + self.tail_s

    @cached_property
    def order(self) -> tuple[int, ...]:
        """Parameter indices in gradient-ready order."""
        return tuple(index for indices, _ in self.segments for index in indices)


def _from_durations(durations_s: Sequence[float]) -> Backward:
    """Gradients ready in reverse registration order, tensor i taking ``durations_s[i]``."""
    order = range(len(durations_s) - 1, -1, -1)
    return Backward(tuple(((index,), durations_s[index]) for index in order), 0.0)


def uniform_backward(params: Sequence[Param], backward_time_s: float) -> Backward:
    """Ready uniformly by bytes: a gradient is ready once its bytes and those of every tensor
    registered after it are produced. Segment ends are computed from cumulative bytes, so the
    ready times are ``T * suffix_bytes / total_bytes`` up to rounding."""
    total_nbytes = sum(param.nbytes for param in params)
    return _from_durations([backward_time_s * param.nbytes / total_nbytes for param in params])


def layer_backward(params: Sequence[Param], layer_times: Sequence[tuple[str, float]]) -> Backward:
    """Each parameter belongs to the longest matching name prefix; a layer's time is spread over
    its tensors by bytes; gradients are ready in reverse registration order."""
    groups = [_layer_of(param.name, layer_times) for param in params]
    group_nbytes: dict[int, int] = {}
    for group, param in zip(groups, params):
        group_nbytes[group] = group_nbytes.get(group, 0) + param.nbytes
    return _from_durations([layer_times[g][1] * param.nbytes / group_nbytes[g] for g, param in zip(groups, params)])


def _layer_of(name: str, layer_times: Sequence[tuple[str, float]]) -> int:
    matches = [
        (len(prefix), index)
        for index, (prefix, _) in enumerate(layer_times)
        if name == prefix or name.startswith(prefix + ".") or prefix == ""
    ]
    if not matches:
        raise CollsimError(f"layer_times: parameter {name!r} matches no layer prefix; prefixes: {', '.join(p for p, _ in layer_times)}")
    return max(matches)[1]


def backward_flops(param: Param, tokens: int) -> float:
    """Backward FLOPs of one tensor: 4 x tokens x numel for weights (grad input + grad weight
    matmuls); an embedding's backward is a scatter-add, tokens x embedding width."""
    if "embed" in param.name or param.name.endswith(("wte.weight", "wpe.weight")):
        return float(tokens * (param.shape[-1] if param.shape else 1))
    return 4.0 * tokens * param.numel


def flops_backward(params: Sequence[Param], flops_per_s: float, tokens: int) -> Backward:
    return _from_durations([backward_flops(param, tokens) / flops_per_s for param in params])


def measured_backward(params: Sequence[Param], profile: MeasuredProfile) -> Backward:
    """Replay measured ready times: segments between consecutive ready times (ties: reverse
    registration order); compute after the last gradient up to ``backward_s`` is the tail."""
    order = sorted(range(len(params)), key=lambda i: (profile.ready_s[params[i].name], -i))
    segments, previous_s = [], 0.0
    for index in order:
        ready_s = profile.ready_s[params[index].name]
        if segments and ready_s == previous_s:
            segments[-1] = (segments[-1][0] + (index,), segments[-1][1])
        else:
            segments.append(((index,), ready_s - previous_s))
        previous_s = ready_s
    return Backward(tuple(segments), max(0.0, profile.backward_s - previous_s))


# --- comm models --------------------------------------------------------------------------


class CommModel:
    """Seconds one all-reduce of n bytes takes; ``network`` results are cached by size. On a GPU
    preset without an explicit algorithm each all-reduce is NCCL's pick on its channels, and
    ``ow`` without w takes o and w fitted to those times (:mod:`sim.training.comm`)."""

    def __init__(self, scenario: DDPScenario, element_bytes: int) -> None:
        self.scenario = scenario
        self.element_bytes = element_bytes
        self._cache: dict[int, float] = {}
        self.picks: dict[int, comm.PickTime] = {}  # NCCL's pick per all-reduce size (algorithm nccl)
        self.buckets: tuple[tuple[int, int], ...] | None = None  # (size, calls) of the step: where ow's line is fitted
        self.last_bytes: int | None = None  # the step's last all-reduce

    @cached_property
    def ow_fit(self) -> comm.OwFit | None:
        if self.scenario.comm != "ow":
            return None
        return self.scenario.ow_fit(self.element_bytes, self.buckets, self.last_bytes)

    def cost_s(self, nbytes: int) -> float:
        s = self.scenario
        if s.comm == "ow":
            if self.ow_fit is not None:
                return self.ow_fit.o_s + nbytes / self.ow_fit.w_Bps
            return s.o_s + nbytes / s.w_Bps
        cached = self._cache.get(nbytes)
        if cached is None:
            if s.algorithm == comm.NCCL:
                pick = comm.pick_time(s.hardware, s.nodes, "all_reduce", nbytes, s.pick_fields(self.element_bytes), s.mode)
                self.picks[nbytes] = pick
                cached = pick.time_s
            else:
                cached = self._simulate(s.collective(nbytes, self.element_bytes))
            self._cache[nbytes] = cached
        return cached

    def _simulate(self, collective: Any) -> float:
        if self.scenario.mode == "collapsed":
            from sim.collective.collapsed import collective_time

            return collective_time(collective).time_s
        from sim.collective.runner import run_collective

        return run_collective(collective).time_s

    def ow(self, total_nbytes: int) -> tuple[float, float]:
        """(o, w) of this model: exact for ow, a least-squares line through simulated sizes for network."""
        s = self.scenario
        if s.comm == "ow":
            return (self.ow_fit.o_s, self.ow_fit.w_Bps) if self.ow_fit is not None else (s.o_s, s.w_Bps)
        step = self.element_bytes * max(1, s.ranks)
        sizes = sorted({max(step, (total_nbytes >> shift) // step * step) for shift in range(0, 12)})
        if len(sizes) < 2:
            sizes = [step, 2 * step]
        return formula.fit_ow(sizes, [self.cost_s(size) for size in sizes])


# --- simulation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """What every bucket size of one scenario shares: parameters, profile, comm model."""

    params: tuple[Param, ...]
    backward: Backward
    forward_s: float
    optimizer_s: float
    comm: CommModel

    @property
    def grad_bytes(self) -> int:
        return sum(param.nbytes for param in self.params)


def resolve_params(scenario: DDPScenario, profile: MeasuredProfile | None = None) -> list[Param]:
    """The scenario's parameter list, checked against the profile's when both are given."""
    s = scenario
    if s.preset is not None:
        params = preset(s.preset)
    elif s.params_file is not None:
        params = load_params(s.params_file)
    elif s.param_bytes is not None:
        params = params_from_bytes(s.param_bytes, s.element_bytes)
    elif s.params is not None:
        params = list(s.params)
    else:
        return list(profile.params)
    if profile is not None and [p.name for p in params] != [p.name for p in profile.params]:
        raise CollsimError("profile: its parameter names differ from the scenario's parameter list; drop one of them")
    return params


def _backward(scenario: DDPScenario, params: list[Param], profile: MeasuredProfile | None) -> Backward:
    s = scenario
    if profile is not None:
        return measured_backward(params, profile)
    if s.layer_times is not None:
        return layer_backward(params, s.layer_times)
    if s.flops_per_s is not None:
        return flops_backward(params, s.flops_per_s, s.tokens)
    time_s = s.backward_time_s if s.backward_time_s is not None else sum(p.nbytes for p in params) / s.backward_rate_Bps
    return uniform_backward(params, time_s)


def prepare(scenario: DDPScenario) -> Prepared:
    """Load files and build the profile once; bucket sweeps reuse the result."""
    s = scenario
    profile = load_profile(s.profile_file) if s.profile_file is not None else None
    params = resolve_params(s, profile)
    element_bytes = reduce(math.gcd, (param.element_bytes for param in params))
    forward_s = s.forward_time_s if s.forward_time_s is not None else (profile.forward_s if profile else 0.0)
    optimizer_s = s.optimizer_time_s if s.optimizer_time_s is not None else (profile.optimizer_s if profile else 0.0)
    prepared = Prepared(tuple(params), _backward(s, params, profile), forward_s, optimizer_s, CommModel(s, element_bytes))
    if s.hardware is not None and s.comm == "ow" and s.w_Bps is None:  # o and w fitted where this step's all-reduces are
        sizes = [call.nbytes for call in plan_calls(s, prepared)]
        prepared.comm.buckets = tuple((size, sizes.count(size)) for size in sorted(set(sizes)))
        prepared.comm.last_bytes = sizes[-1]
    return prepared


@dataclass(frozen=True)
class Call:
    """One all-reduce on the comm stream."""

    index: int
    name: str
    params: tuple[int, ...]
    nbytes: int


def plan_calls(scenario: DDPScenario, prepared: Prepared) -> list[Call]:
    """The strategy's all-reduces in issue order."""
    params, order = prepared.params, prepared.backward.order
    strategy = scenario.strategy
    if strategy == "naive":
        groups = [[index] for index in range(len(params))]
    elif strategy == "flat":
        groups = [list(range(len(params)))]
    elif strategy == "overlap":
        groups = [[index] for index in order]
    else:
        fill_order = order if scenario.rebuild else range(len(params) - 1, -1, -1)
        groups = assign_buckets(params, list(fill_order), bucket_limits(scenario))
    return [
        Call(k, _call_name(strategy, k, group, params), tuple(group), sum(params[i].nbytes for i in group))
        for k, group in enumerate(groups)
    ]


def _call_name(strategy: str, index: int, group: Sequence[int], params: Sequence[Param]) -> str:
    if strategy == "flat":
        return "flat"
    if strategy == "bucketed":
        return f"bucket {index}"
    return params[group[0]].name


class _Step:
    """The SimPy processes of the synchronised micro-step: backward compute and the comm stream."""

    def __init__(self, scenario: DDPScenario, prepared: Prepared, calls: list[Call], backward_start_s: float) -> None:
        self.env = simpy.Environment()
        self.scenario, self.prepared, self.calls = scenario, prepared, calls
        self.backward_start_s = backward_start_s
        self.ready = [self.env.event() for _ in prepared.params]
        self.ready_s = [math.nan] * len(prepared.params)
        self.backward_done = self.env.event()
        self.segments: list[tuple[tuple[int, ...], float, float]] = []  # (params, start, end)
        self.comm_spans: list[tuple[float, float]] = []
        self.backward_end_s = math.nan
        self.busy = False
        self.working = False
        self.backward_process: simpy.Process | None = None

    def run(self) -> _Step:
        self.backward_process = self.env.process(self._backward())
        self.env.process(self._comm())
        self.env.run()
        return self

    def _work(self, work_s: float) -> Generator:
        """Advance ``work_s`` seconds of compute, at 1/slowdown speed while comm is in flight."""
        remaining_s = work_s
        while remaining_s > 0:
            rate = 1.0 / self.scenario.slowdown if self.busy else 1.0
            began = self.env.now
            self.working = True
            try:
                yield self.env.timeout(remaining_s / rate)
                remaining_s = 0.0
            except simpy.Interrupt:
                remaining_s = max(0.0, remaining_s - (self.env.now - began) * rate)
            self.working = False

    def _backward(self) -> Generator:
        yield self.env.timeout(self.backward_start_s)
        for indices, work_s in self.prepared.backward.segments:
            began = self.env.now
            yield from self._work(work_s)
            self.segments.append((indices, began, self.env.now))
            for index in indices:
                self.ready_s[index] = self.env.now
                self.ready[index].succeed()
        yield from self._work(self.prepared.backward.tail_s)
        self.backward_end_s = self.env.now
        self.backward_done.succeed()

    def _set_busy(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            if self.scenario.slowdown != 1.0 and self.working:
                self.backward_process.interrupt()

    def _gate(self, call: Call) -> simpy.Event:
        if self.scenario.strategy in ("naive", "flat"):
            return self.backward_done
        return simpy.AllOf(self.env, [self.ready[index] for index in call.params])

    def _comm(self) -> Generator:
        for k, call in enumerate(self.calls):
            yield self._gate(call)
            self._set_busy(True)
            start_s = self.env.now
            yield self.env.timeout(self.prepared.comm.cost_s(call.nbytes))
            self.comm_spans.append((start_s, self.env.now))
            following = self.calls[k + 1] if k + 1 < len(self.calls) else None
            if following is None or not self._gate(following).triggered:
                self._set_busy(False)


def run_ddp(scenario: DDPScenario, prepared: Prepared | None = None) -> DDPResult:
    """Simulate one training step (``accumulation_steps`` micro-steps, the last one synchronised)."""
    prepared = prepared or prepare(scenario)
    calls = plan_calls(scenario, prepared)
    micro_s = prepared.forward_s + prepared.backward.total_s
    backward_start_s = (scenario.accumulation_steps - 1) * micro_s + prepared.forward_s
    step = _Step(scenario, prepared, calls, backward_start_s).run()
    return DDPResult(
        scenario, prepared, calls, tuple(step.ready_s), tuple(step.segments), tuple(step.comm_spans), backward_start_s, step.backward_end_s
    )


# --- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DDPResult:
    """One simulated step: per-call spans, gradient ready times, summary numbers and events."""

    scenario: DDPScenario
    prepared: Prepared
    calls: tuple[Call, ...] | list[Call]
    ready_s: tuple[float, ...]  # per parameter, absolute
    segments: tuple[tuple[tuple[int, ...], float, float], ...]  # backward work (params, start, end)
    comm_spans: tuple[tuple[float, float], ...]  # per call (start, end)
    backward_start_s: float
    backward_end_s: float

    @property
    def comm_end_s(self) -> float:
        return self.comm_spans[-1][1] if self.comm_spans else self.backward_end_s

    @property
    def overhead_s(self) -> float:
        """Comm end minus backward end: the time gradient sync adds after backward (0 when a
        measured profile's compute after its last gradient outlasts the communication)."""
        return max(0.0, self.comm_end_s - self.backward_end_s)

    @property
    def exposed_comm_s(self) -> float:
        """Comm time not hidden behind backward compute."""
        return sum(max(0.0, end - max(start, self.backward_end_s)) for start, end in self.comm_spans)

    @property
    def comm_busy_s(self) -> float:
        return sum(end - start for start, end in self.comm_spans)

    @property
    def optimizer_start_s(self) -> float:
        return max(self.backward_end_s, self.comm_end_s)

    @property
    def step_time_s(self) -> float:
        return self.optimizer_start_s + self.prepared.optimizer_s

    @property
    def compute_time_s(self) -> float:
        """The step without any communication (and without slowdown)."""
        p = self.prepared
        return self.scenario.accumulation_steps * (p.forward_s + p.backward.total_s) + p.optimizer_s

    def _call_ready_s(self, call: Call) -> float:
        if self.scenario.strategy in ("naive", "flat"):
            return self.backward_end_s
        return max(self.ready_s[index] for index in call.params)

    @cached_property
    def buckets(self) -> list[dict[str, Any]]:
        """One row per all-reduce call: index, name, bytes, params, num_params, ready_s, start_s, end_s."""
        names = [param.name for param in self.prepared.params]
        return [
            {"index": call.index, "name": call.name, "bytes": call.nbytes, "params": [names[i] for i in call.params], "num_params": len(call.params),
             "ready_s": self._call_ready_s(call), "start_s": start, "end_s": end}
            for call, (start, end) in zip(self.calls, self.comm_spans)
        ]  # fmt: skip

    def formula(self) -> dict[str, float | None]:
        """The closed forms for this many equal buckets, with the comm model's (o, w)."""
        o_s, w_Bps = self.prepared.comm.ow(self.prepared.grad_bytes)
        if self.scenario.strategy == "naive" or not w_Bps or not math.isfinite(w_Bps):
            return {"o_s": o_s, "w_Bps": w_Bps, "formula_overhead_s": None, "formula_simple_overhead_s": None}
        s, n_b, t_s = self.prepared.grad_bytes, len(self.calls), self.prepared.backward.total_s
        return {
            "o_s": o_s,
            "w_Bps": w_Bps,
            "formula_overhead_s": formula.overhead_uniform(s, n_b, t_s, o_s, w_Bps),
            "formula_simple_overhead_s": formula.overhead_simple(s, n_b, o_s, w_Bps),
        }

    def summary(self) -> dict[str, Any]:
        """The JSON the CLI prints (keys are part of the CLI contract)."""
        s, p = self.scenario, self.prepared
        return {
            "strategy": s.strategy,
            "comm": s.comm,
            "mode": s.mode if s.comm == "network" else "formula",
            "ranks": s.ranks,
            "num_params": len(p.params),
            "param_count": sum(param.numel for param in p.params),
            "grad_bytes": p.grad_bytes,
            "bucket_cap_bytes": s.bucket_cap_bytes if s.strategy == "bucketed" else None,
            "first_bucket_bytes": s.first_bucket_bytes if s.strategy == "bucketed" else None,
            "num_buckets": len(self.calls),
            "largest_bucket_bytes": max(call.nbytes for call in self.calls),
            "accumulation_steps": s.accumulation_steps,
            "forward_time_s": p.forward_s,
            "backward_time_s": p.backward.total_s,
            "optimizer_time_s": p.optimizer_s,
            "backward_start_s": self.backward_start_s,
            "backward_end_s": self.backward_end_s,
            "comm_end_s": self.comm_end_s,
            "overhead_s": self.overhead_s,
            "exposed_comm_s": self.exposed_comm_s,
            "comm_busy_s": self.comm_busy_s,
            "compute_time_s": self.compute_time_s,
            "step_time_s": self.step_time_s,
            **self.formula(),
            "buckets": self.buckets,
            "scenario": s.to_dict(),
            **({"hardware_comm": self.hardware_comm()} if s.hardware else {}),
        }

    def hardware_comm(self) -> dict[str, Any]:
        """On a hardware preset: what each all-reduce ran (NCCL's pick, the DES algorithm and
        channels, or why NCCL's model answered) and, for ow, how o and w were fitted."""
        s, model = self.scenario, self.prepared.comm
        sizes = sorted({call.nbytes for call in self.calls})
        picks = [
            {"bytes": n, "time_s": pick.time_s, "nccl_pick": pick.nccl_pick, "algorithm": pick.algorithm, "channels": pick.chunks, "why": pick.why}
            for n, pick in ((n, model.picks.get(n)) for n in sizes) if pick is not None
        ]  # fmt: skip
        fit = model.ow_fit
        return {"hardware": s.hardware, "nodes": s.nodes, "algorithm": s.algorithm if s.comm == "network" else None,
                "picks": picks, "ow_fit": fit.to_dict() if fit is not None else None}  # fmt: skip

    def events(self) -> list[dict[str, Any]]:
        """Rows in the core's event schema (rank 0; every rank runs the same timeline)."""
        rows = self._compute_rows() + self._grad_rows() + self._comm_rows()
        rows.sort(key=lambda row: (row["start_s"], row["end_s"], row["resource"]))
        return rows

    def _row(
        self, resource: str, kind: str, start_s: float, end_s: float, nbytes: int = 0, step: int = -1, bucket: int = -1, name: str = ""
    ) -> dict[str, Any]:
        return event_row(0, -1, resource, kind, start_s, end_s, nbytes, step, -1, bucket, name)

    def _compute_rows(self) -> list[dict[str, Any]]:
        p, last = self.prepared, self.scenario.accumulation_steps - 1
        micro_s = p.forward_s + p.backward.total_s
        rows = []
        for micro in range(last + 1):
            rows.append(self._row("compute:0", "forward", micro * micro_s, micro * micro_s + p.forward_s, step=micro, name="forward"))
            if micro < last:  # no_sync micro-steps: one backward block, no communication
                rows.append(
                    self._row(
                        "compute:0",
                        "backward",
                        micro * micro_s + p.forward_s,
                        (micro + 1) * micro_s,
                        p.grad_bytes,
                        micro,
                        name="backward (no_sync)",
                    )
                )
        for indices, start_s, end_s in self.segments:
            nbytes = sum(p.params[i].nbytes for i in indices)
            rows.append(self._row("compute:0", "backward", start_s, end_s, nbytes, last, name=p.params[indices[0]].name))
        rows.append(self._row("compute:0", "optimizer", self.optimizer_start_s, self.step_time_s, step=last, name="optimizer"))
        return rows

    def _grad_rows(self) -> list[dict[str, Any]]:
        bucket_of = {index: call.index for call in self.calls for index in call.params}
        last = self.scenario.accumulation_steps - 1
        return [
            self._row("compute:0", "grad_ready", t, t, param.nbytes, last, bucket_of[i], param.name)
            for i, (param, t) in enumerate(zip(self.prepared.params, self.ready_s))
        ]

    def _comm_rows(self) -> list[dict[str, Any]]:
        last = self.scenario.accumulation_steps - 1
        return [
            self._row("comm:0", "comm", start, end, call.nbytes, last, call.index, call.name)
            for call, (start, end) in zip(self.calls, self.comm_spans)
        ]

    def to_csv(self, path: str | Path) -> None:
        write_csv(self.events(), path)

    def chrome_trace(self) -> dict[str, Any]:
        return ddp_chrome_trace(self.events())

    def write_trace(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.chrome_trace()))


def ddp_chrome_trace(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Chrome trace JSON (Perfetto) of DDP event rows: a compute and a comm track per rank;
    gradient-ready rows become instant markers."""
    tracks: dict[tuple[int, str], int] = {}
    events: list[dict[str, Any]] = []
    for row in rows:
        tid = tracks.setdefault((row["rank"], row["resource"]), len(tracks))
        args = {"bytes": row["bytes"], "bucket": row["bucket"], "step": row["step"], "kind": row["kind"]}
        if row["kind"] == "grad_ready":
            events.append(
                {
                    "ph": "i",
                    "s": "t",
                    "pid": row["rank"],
                    "tid": tid,
                    "name": f"ready {row['name']}",
                    "ts": row["start_s"] * 1e6,
                    "args": args,
                }
            )
        else:
            events.append(
                {
                    "ph": "X",
                    "pid": row["rank"],
                    "tid": tid,
                    "name": row["name"] or row["kind"],
                    "cat": row["kind"],
                    "ts": row["start_s"] * 1e6,
                    "dur": (row["end_s"] - row["start_s"]) * 1e6,
                    "args": args,
                }
            )
    meta = [
        {"ph": "M", "pid": rank, "name": "process_name", "args": {"name": f"rank {rank}"}} for rank in sorted({rank for rank, _ in tracks})
    ]
    meta += [
        {"ph": "M", "pid": rank, "tid": tid, "name": "thread_name", "args": {"name": resource}} for (rank, resource), tid in tracks.items()
    ]
    return {"traceEvents": meta + events, "displayTimeUnit": "ns"}


# --- sweeps and the optimum -----------------------------------------------------------------


def sweep_bucket_sizes(scenario: DDPScenario, sizes: Sequence[int], prepared: Prepared | None = None) -> list[dict[str, Any]]:
    """One summary per bucket cap (strategy ``bucketed``); the profile and comm cache are shared."""
    if not sizes:
        raise CollsimError("sweep_bucket_sizes: give at least one bucket size")
    _check_bucketed(scenario, "sweep_bucket_sizes")
    bucketed = scenario.replace(strategy="bucketed")
    prepared = prepared or prepare(bucketed)
    return [run_ddp(bucketed.replace(bucket_cap_bytes=int(size)), prepared).summary() for size in sizes]


def _check_bucketed(scenario: DDPScenario, what: str) -> None:
    if scenario.strategy != "bucketed":
        raise CollsimError(f"{what}: bucket sizes only apply to strategy bucketed, got {scenario.strategy}")


def _compact(summary: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "bucket_cap_bytes",
        "num_buckets",
        "largest_bucket_bytes",
        "step_time_s",
        "overhead_s",
        "exposed_comm_s",
        "formula_overhead_s",
        "formula_simple_overhead_s",
        "grad_bytes",
    )
    return {key: summary[key] for key in keys}


def _grid(low_nbytes: float, high_nbytes: float, points: int) -> list[int]:
    ratio = (high_nbytes / low_nbytes) ** (1.0 / max(1, points - 1))
    return sorted({max(1, int(round(low_nbytes * ratio**k))) for k in range(points)})


def _plateau(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose step time equals the fastest (to 1e-9 relative): caps on one plateau."""
    fastest = min(row["step_time_s"] for row in rows)
    return [row for row in rows if row["step_time_s"] <= fastest * (1 + 1e-9)]


def _best(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Fastest step; on a plateau the fewest all-reduce calls, then the largest cap."""
    return min(_plateau(rows), key=lambda row: (row["num_buckets"], -row["bucket_cap_bytes"]))


def optimize(scenario: DDPScenario, refine_rounds: int = 2, refine_points: int = 17) -> dict[str, Any]:
    """Best bucket cap by simulation (power-of-two sweep, then finer geometric grids around the
    best) beside the formula's ``b* = sqrt(s w o)`` and the exact closed form's optimum."""
    _check_bucketed(scenario, "optimize")
    bucketed = scenario.replace(strategy="bucketed")
    prepared = prepare(bucketed)
    s = prepared.grad_bytes
    smallest = min(param.nbytes for param in prepared.params)
    sizes = [2**k for k in range(max(0, smallest.bit_length() - 1), max(1, (2 * s).bit_length()))]
    rows = [_compact(row) for row in sweep_bucket_sizes(bucketed, sizes, prepared)]
    for _ in range(refine_rounds):
        best = _best(rows)["bucket_cap_bytes"]
        tried = {row["bucket_cap_bytes"] for row in rows}
        grid = [size for size in _grid(best / 2, best * 2, refine_points) if size not in tried]
        rows += [_compact(row) for row in sweep_bucket_sizes(bucketed, grid, prepared)] if grid else []
    rows.sort(key=lambda row: row["bucket_cap_bytes"])
    fits = {"fit": _fit(rows), "fit_exact": _fit(rows, prepared.backward.total_s)}
    return {**_optimum(bucketed, prepared, rows), **fits, "sweep": rows}


def _fit(rows: Sequence[dict[str, Any]], backward_time_s: float | None = None) -> dict[str, Any] | None:
    """o and w of the formula (textbook, or exact with T) fitted to the sweep; None when the
    sweep has too few distinct bucket counts."""
    try:
        return formula.fit_overhead(rows, backward_time_s=backward_time_s).to_dict()
    except CollsimError:
        return None


def _optimum(scenario: DDPScenario, prepared: Prepared, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    best, plateau = _best(rows), _plateau(rows)
    s, t_s = prepared.grad_bytes, prepared.backward.total_s
    o_s, w_Bps = prepared.comm.ow(s)
    best_run = run_ddp(scenario.replace(bucket_cap_bytes=best["bucket_cap_bytes"]), prepared).summary()
    if not math.isfinite(w_Bps):  # communication is free (one rank): the formula has no optimum
        b_formula = n_formula = b_exact = at_formula = None
    else:
        b_formula = formula.optimal_bucket_bytes(s, w_Bps, max(0.0, o_s))
        n_formula = formula.optimal_num_buckets(s, w_Bps, max(0.0, o_s))
        b_exact = s / formula.optimal_num_buckets_uniform(s, t_s, o_s, w_Bps, len(prepared.params))
        at_formula = run_ddp(scenario.replace(bucket_cap_bytes=max(1, int(round(b_formula)))), prepared) if b_formula >= 1 else None
    return {
        **best_run,
        "best_bucket_bytes_sim": best["bucket_cap_bytes"],
        "best_bucket_bytes_range": [min(r["bucket_cap_bytes"] for r in plateau), max(r["bucket_cap_bytes"] for r in plateau)],
        "best_step_time_s": best["step_time_s"],
        "best_overhead_s": best["overhead_s"],
        "best_bucket_bytes_formula": b_formula,
        "best_num_buckets_formula": n_formula,
        "best_bucket_bytes_closed_form": b_exact,
        "step_time_at_formula_s": at_formula.step_time_s if at_formula else None,
        "overhead_at_formula_s": at_formula.overhead_s if at_formula else None,
        "formula_inputs": {"s_bytes": s, "w_Bps": w_Bps, "o_s": o_s, "backward_time_s": t_s},
    }
