"""The DDP scenario: parameters, compute profile, strategy, buckets, comm model (frozen data,
one validating constructor, JSON/YAML round trip). The step itself is :mod:`sim.training.ddp`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sim.errors import CollsimError
from sim.fields import DDP
from sim.scenario import ScenarioData, aliases_of, optional_parser, parse_bool, parse_int
from sim.training import comm
from sim.training.hooks import DEFAULT_START_POWERSGD_ITER, CommHook
from sim.training.params import PRESETS, Param, params_from_list
from sim.units import parse_bandwidth, parse_size, parse_time

STRATEGIES = ("naive", "flat", "overlap", "bucketed")
COMM_MODELS = ("ow", "network")
DEFAULT_BUCKET_CAP_BYTES = 25 * 2**20  # DDP's bucket_cap_mb=25
DEFAULT_FIRST_BUCKET_BYTES = 2**20  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
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
    # DDP communication hook on every bucket (sim.training.hooks): none | fp16 | bf16 | powersgd
    comm_hook: str = "none"
    powersgd_rank: int | None = None  # PowerSGD's matrix_approximation_rank
    powersgd_warmup: int = DEFAULT_START_POWERSGD_ITER  # start_powerSGD_iter: plain all-reduce before it
    iteration: int | None = None  # 0-based training iteration of this step; None: after the warm-up
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
    # what the step computes and holds (sim.training.compute); the defaults change nothing
    precision: str | None = None  # fp32 | bf16 | fp16 parameters and gradients; None: the parameter list's element sizes
    master_weights: bool = True  # bf16 / fp16: an fp32 master copy of the weights (memory)
    mfu: float | str | None = (
        None  # "measured": the preset's measured MFU (sim.training.compute.measured); backward and forward not given otherwise: from FLOPs at this fraction of the GPU's peak (with tokens)
    )
    gpu: str | None = None  # hardware preset whose GPU peak mfu uses; None: hardware
    activation_checkpointing: bool = False  # keep layer inputs only; backward recomputes forward

    @property
    def peak_gpu(self) -> str | None:
        """The hardware preset whose GPU peak the FLOP-derived compute uses."""
        return self.gpu or self.hardware

    def __post_init__(self) -> None:
        if self.algorithm is None:  # no explicit algorithm: NCCL's pick on a GPU preset, ring elsewhere
            object.__setattr__(self, "algorithm", comm.NCCL if comm.uses_nccl(self.hardware) else "ring")
        self._check_sources()
        self._check_strategy()
        self._check_times()
        self._check_comm()
        self._check_compute()
        self.hook  # noqa: B018 (validates comm_hook, powersgd_rank, powersgd_warmup)
        if self.comm_hook != "none" and self.strategy != "bucketed":
            raise CollsimError(
                f"comm_hook: torch's hooks run on DDP's buckets; use strategy bucketed (got {self.strategy}) or comm_hook none"
            )
        if self.iteration is not None and self.iteration < 0:
            raise CollsimError(f"iteration: must be a whole number >= 0 (0 is the first training step), got {self.iteration}")

    @property
    def hook(self) -> CommHook:
        """The communication hook on every bucket (checked: name, PowerSGD rank and warm-up)."""
        return CommHook(self.comm_hook, self.powersgd_rank, self.powersgd_warmup)

    def _check_sources(self) -> None:
        from sim.training.compute import transformer_shape

        given = [name for name in _PARAM_SOURCES if getattr(self, name) is not None]
        if len(given) > 1:
            raise CollsimError(f"parameters: give one of preset, params, param_bytes; got {', '.join(given)}", field="preset")
        if not given and self.profile_file is None:
            raise CollsimError(
                "parameters: give a preset (--preset xl), a parameter file (--params FILE) or sizes (--param-bytes 4MiB,4MiB)",
                field="preset",
            )
        if self.preset is not None and self.preset not in PRESETS:
            hint = (
                "; a parameter list file goes in --params FILE (scenario key params_file)"
                if self.preset.lower().endswith((".json", ".yaml", ".yml")) or "/" in self.preset
                else ""
            )
            raise CollsimError(f"preset: unknown {self.preset!r}; allowed: {', '.join(PRESETS)}{hint}")
        if self.param_bytes is not None and not self.param_bytes:
            raise CollsimError("param_bytes: empty list; give sizes such as 4MiB,4MiB")
        if self.params is not None:
            params_from_list(list(self.params), "params")
        profiles = [name for name in _PROFILE_SOURCES if getattr(self, name) is not None]
        if len(profiles) != 1 and not (not profiles and self.mfu is not None):  # mfu: from FLOPs where none is given
            raise CollsimError(
                f"backward profile: give exactly one of backward_time, backward_rate, layer_times, flops_per_s (with tokens), mfu (with tokens and a GPU), profile; got {', '.join(profiles) or 'none'}",
                field="backward_time",
            )
        if (self.flops_per_s is not None or self.mfu is not None) and self.tokens is None and not self._measured_without_flops():
            raise CollsimError("tokens: flops_per_s and mfu need tokens per micro-batch (backward FLOPs per tensor are 4 x tokens x numel)")
        if self.tokens is not None and self.flops_per_s is None and self.mfu is None and transformer_shape(self.preset) is None:
            raise CollsimError(
                "tokens: only FLOP-based compute (flops_per_s, mfu) and a transformer preset's activation memory use tokens; "
                "flops_per_s and tokens go together (backward FLOPs per tensor are 4 x tokens x numel)"
            )

    def _measured_without_flops(self) -> bool:
        """mfu = measured on a model without a FLOP model (ResNet-18): its measured times, no tokens."""
        from sim.training.compute import MEASURED, measured

        return self.mfu == MEASURED and measured(self.preset, self.precision, self.peak_gpu).backward_mfu is None

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

    def _check_compute(self) -> None:
        from sim.training.compute import PRECISIONS, peak_flops

        if self.precision is not None and self.precision not in PRECISIONS:
            raise CollsimError(f"precision: unknown {self.precision!r}; allowed: {', '.join(PRECISIONS)}")
        from sim.training.compute import MEASURED, measured

        if self.mfu != MEASURED and self.mfu is not None and not (0 < self.mfu <= 1):
            raise CollsimError(f"mfu: must be above 0 and at most 1 (100%) or 'measured', got {self.mfu!r}")
        if self.gpu is not None:
            from sim.hardware.presets import list_presets

            if self.gpu.split(":", 1)[0] not in list_presets():
                raise CollsimError(f"gpu: unknown hardware preset {self.gpu!r}; allowed: {', '.join(list_presets())}")
        if self.mfu is not None:
            if self.peak_gpu is None:
                raise CollsimError(
                    "mfu: needs a GPU whose peak it is a fraction of: give --gpu NAME or --hardware NAME (collsim hardware list)"
                )
            peak_flops(self.peak_gpu, self.precision)
        if self.mfu == MEASURED:
            measured(self.preset, self.precision, self.peak_gpu)

    def _check_comm(self) -> None:
        from sim.fields import check_range

        check_range("ranks", self.ranks, "ddp")  # the network model's limit, under ow too
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
        from sim.collective.pick import scenario_for_pick
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
    if value is None:
        return None
    try:
        return tuple(params_from_list(list(value), what))
    except CollsimError as error:  # "params[0]: ..." names the list's entry: the field is the list
        raise CollsimError(str(error), field=error.field or what) from None


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


def parse_flops(text: Any, what: str = "--flops-per-s") -> float:
    """FLOP/s from "312e12", "312T", "312TFLOPS" or "312 TFLOP/s"."""
    cleaned = str(text).strip().upper().replace(" ", "").removesuffix("FLOP/S").removesuffix("FLOPS")
    factor = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}.get(cleaned[-1:], 1.0)
    number = cleaned[:-1] if factor != 1.0 else cleaned
    try:
        return float(number) * factor
    except ValueError:
        raise CollsimError(f"{what}: cannot read {text!r}; expected FLOP/s such as 312e12 or 312TFLOPS") from None


def _number(value: Any, what: str) -> float:
    """A plain number (slowdown 1.5): a word is refused naming the field, not a ValueError's traceback."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise CollsimError(f"{what}: expected a number, got {value!r}", field=what) from None


def _first_bucket(value: Any, what: str) -> int | None:
    return None if str(value).lower() in ("none", "off", "") else parse_size(value, what)


def _mfu(value: Any, what: str) -> float | str:
    from sim.training.compute import parse_mfu

    return parse_mfu(value, what)


def _choice(value: Any, what: str) -> str:
    return str(value)


_DDP_PARSERS: dict[str, Callable[[Any, str], Any]] = {
    "param_bytes": _size_tuple,
    "params": _params_tuple,
    "element_bytes": parse_int,
    "bucket_cap_bytes": parse_size,
    "first_bucket_bytes": _first_bucket,
    "rebuild": parse_bool,
    "accumulation_steps": parse_int,
    "comm_hook": _choice,
    "powersgd_rank": optional_parser(parse_int),
    "powersgd_warmup": parse_int,
    "iteration": optional_parser(parse_int),
    "backward_time_s": optional_parser(parse_time),
    "backward_rate_Bps": optional_parser(parse_bandwidth),
    "layer_times": _layer_times,
    "flops_per_s": optional_parser(parse_flops),
    "tokens": optional_parser(parse_int),
    "forward_time_s": optional_parser(parse_time),
    "optimizer_time_s": optional_parser(parse_time),
    "slowdown": _number,
    "precision": optional_parser(_choice),
    "master_weights": parse_bool,
    "mfu": optional_parser(lambda value, what: _mfu(value, what)),
    "gpu": optional_parser(_choice),
    "activation_checkpointing": parse_bool,
    "o_s": parse_time,
    "w_Bps": optional_parser(parse_bandwidth),
    "ranks": parse_int,
    "latency_s": parse_time,
    "bandwidth_Bps": optional_parser(parse_bandwidth),
    "gpus_per_node": optional_parser(parse_int),
    "intra_latency_s": optional_parser(parse_time),
    "intra_bandwidth_Bps": optional_parser(parse_bandwidth),
    "reduce_bandwidth_Bps": optional_parser(parse_bandwidth),
    "call_overhead_s": parse_time,
    "chunks": parse_int,
    "algorithm": optional_parser(_choice),
    "hardware": optional_parser(_choice),
}
_DDP_ALIASES = aliases_of(DDP)
DDPScenario.PARSERS = _DDP_PARSERS
DDPScenario.ALIASES = _DDP_ALIASES
DDPScenario.LABEL = "DDP scenario"
