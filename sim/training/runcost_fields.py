"""The run-cost scenario's fields (label, help, unit, bounds, choices) and its one factory,
:func:`scenario_from_dict`, which reads the keys of files, flags and forms ("step_time: 1.2s",
"params: 405B", "interval: 30min") into a :class:`sim.training.runcost.RunCostScenario`."""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from sim.errors import CollsimError, unknown_key
from sim.fields import FieldInfo, check_range, register
from sim.training.runcost import FAILURE_RATES, OPTIMIZERS, PRECISIONS, SHARDINGS, WRITE_MODES, RunCostScenario
from sim.units import parse_bandwidth, parse_time, require_unit

__all__ = ["RUNCOST", "parse_count", "parse_duration", "scenario_from_dict"]

F = functools.partial(FieldInfo, commands=("run-cost",))  # every field is a flag of collsim sim run-cost
RUNCOST = {
    info.name: info
    for info in (
        F(
            "step_time_s",
            "Step time",
            "time of one training step, e.g. 1.2s (or --from-ddp / --from-fsdp FILE)",
            short="step_time",
            unit="s",
            low=1e-6,
            high=86400,
        ),
        F("gpus", "GPUs", "GPUs in the job (or --hardware NAME --nodes N)", low=1, high=10_000_000, kind="int"),
        F("gpus_per_node", "GPUs per node", "GPUs in one node (default 8; a hardware preset's own)", low=1, high=1024, kind="int"),
        F("params", "Parameters", "parameters of the model, e.g. 405B, 7e9, 124M", low=1, high=1e15),
        F("steps", "Steps", "training steps in the run (default 100000)", low=1, kind="int", high=1e12),
        F(
            "tokens_per_step",
            "Tokens per step",
            "tokens in one step's global batch, e.g. 16M: the run's tokens are reported too",
            low=1,
            high=1e12,
        ),
        F(
            "failure_rate",
            "Failure rate",
            "failures per GPU-hour, or a published run's: llama3 (the default: 419 unexpected in 54 days on 16384 GPUs), "
            "llama3-all (all 466 interruptions), opt175b (35 + 70 restarts in 2 months on 992 GPUs)",
            unit="1/GPU-h",
            low=1e-12,
            high=1,
        ),
        F("tokens", "Tokens", "tokens of the whole run, e.g. 15T: steps = tokens / --tokens-per-step", low=1, high=1e18),
        F("precision", "Precision", "weights' precision (below fp32 an fp32 master copy is saved too)", choices=PRECISIONS),
        F("optimizer", "Optimizer", "optimizer states saved: adam (fp32 m and v), sgd (fp32 momentum), none", choices=OPTIMIZERS),
        F(
            "sharding",
            "Checkpoint sharding",
            "sharded: every rank writes its shard at once (DCP); full: rank 0 writes it all",
            choices=SHARDINGS,
        ),
        F(
            "write",
            "Write mode",
            "sync: training waits for the write; async: only for the device-to-host copy (DCP async_save)",
            choices=WRITE_MODES,
        ),
        F(
            "storage_bandwidth_Bps",
            "Storage bandwidth",
            "aggregate storage write/read bandwidth, e.g. 100GB/s",
            short="storage_bw",
            unit="B/s",
            low=1,
            high=1e16,
        ),
        F(
            "node_storage_bandwidth_Bps",
            "Per-node storage bandwidth",
            "one node's bandwidth to storage, e.g. 5GB/s",
            short="node_storage_bw",
            unit="B/s",
            low=1,
            high=1e16,
        ),
        F(
            "copy_bandwidth_Bps",
            "Copy bandwidth",
            "one GPU's device-to-host copy bandwidth (async staging), e.g. 10GB/s",
            short="copy_bw",
            unit="B/s",
            low=1,
            high=1e16,
        ),
        F(
            "rendezvous_s",
            "Rendezvous",
            "restart: torchrun's re-rendezvous and process start, e.g. 30s",
            short="rendezvous",
            unit="s",
            low=0,
            high=1e7,
        ),
        F(
            "pg_init_per_rank_s",
            "Process-group init per rank",
            "restart: process-group init per rank (TCPStore, NCCL), e.g. 5ms",
            short="pg_init_per_rank",
            unit="s",
            low=0,
            high=60,
        ),
        F(
            "warmup_s",
            "Warm-up",
            "restart: warm-up before full speed (compilation, data loader), e.g. 60s",
            short="warmup",
            unit="s",
            low=0,
            high=1e7,
        ),
        F(
            "interval_s",
            "Checkpoint interval",
            "work between checkpoints, e.g. 30min (default: the optimum)",
            short="interval",
            unit="s",
            low=1e-6,
            high=1e9,
        ),
        F(
            "replace_wait_s",
            "Replacement wait",
            "elastic: a spare node arrives this long after a failure, e.g. 1h",
            short="replace_wait",
            unit="s",
            low=0,
            high=1e7,
        ),
        F("nodes_lost", "Nodes lost", "elastic: nodes one failure takes out (default 1)", low=1, kind="int"),
        F("samples", "Samples", "simulated checkpoint intervals per point (default 100000)", low=1, high=2_000_000, kind="int"),
        F("seed", "Seed", "seed of the simulation (the same seed, the same answer)", low=0, kind="int"),
    )
}
del F
register("runcost", "sim.training.runcost", "RunCostScenario", RUNCOST)

_DURATION = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(min|h|d)\s*$")
_LONG_UNITS = {"min": 60.0, "h": 3600.0, "d": 86400.0}
_COUNT = re.compile(r"^\s*((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([KMBT]?)\s*$")
_COUNT_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def parse_duration(value: Any, what: str) -> float:
    """Seconds in "1.2s", "250ms", "30min", "2h", "1.5d"; a bare number other than 0 is refused."""
    match = _DURATION.match(str(value))
    if match:
        return float(match.group(1)) * _LONG_UNITS[match.group(2)]
    require_unit(value, what, "time")
    try:
        return parse_time(value, what)
    except CollsimError as error:
        raise CollsimError(f"{error}; or min, h, d for long times (30min, 2h)") from None


def parse_count(value: Any, what: str) -> float:
    """A count such as 405B, 7e9, 124M, 1.5T (K, M, B, T: thousand to trillion)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _COUNT.match(str(value))
    if not match:
        raise CollsimError(f"{what}: {value!r} is not a count; give a number such as 405B, 7e9 or 124M (K, M, B, T)")
    return float(match.group(1)) * _COUNT_UNITS[match.group(2)]


_PARSERS = {"s": parse_duration, "B/s": lambda value, what: (require_unit(value, what, "bandwidth"), parse_bandwidth(value, what))[1]}


def scenario_from_dict(data: dict[str, Any]) -> RunCostScenario:
    """The scenario from a mapping keyed by field names or short keys (files, flags, forms)."""
    by_key = {key: info for info in RUNCOST.values() for key in (info.name, *info.keys())}
    fields: dict[str, Any] = {}
    for key, value in data.items():
        if key not in by_key:
            raise unknown_key(key, by_key, "run-cost scenario")
        info = by_key[key]
        if info.name in fields:
            raise CollsimError(f"{info.key}: given twice (as {info.name} and {info.key}); give it once", field=info.key)
        fields[info.name] = _read(info, f"{value!r}{info.unit}" if key == info.name != info.key and _plain(value) else value)
    _steps_from_tokens(fields)
    missing = [RUNCOST[name].key for name in ("step_time_s", "gpus", "params") if name not in fields]
    if missing:
        raise CollsimError(
            f"run-cost: missing {', '.join(missing)}; give --step-time (or --from-ddp/--from-fsdp FILE), --gpus (or --hardware and --nodes) and --params"
        )
    return RunCostScenario(**fields)


def _plain(value: Any) -> bool:
    """A bare number under a field's full name (``step_time_s: 1.2``) is in the unit the name
    says, so a saved ``result.to_dict()["scenario"]`` reads back as it was."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _read(info: FieldInfo, value: Any) -> Any:
    """The value parsed, within the field's bounds (the table's, one source for every surface)."""
    parsed = _parse(info, value)
    if isinstance(parsed, (int, float)) and not isinstance(parsed, bool) and math.isfinite(parsed):
        check_range(info.name, parsed, "runcost")
    return parsed


def _parse(info: FieldInfo, value: Any) -> Any:
    if value is None:
        return None
    if info.unit in _PARSERS:
        return _PARSERS[info.unit](value, info.key)
    if info.name in ("params", "tokens"):
        return parse_count(value, info.key)
    if info.name == "tokens_per_step":
        return _whole(parse_count(value, info.key), info)
    if info.name == "failure_rate":
        return _failure_rate(value)
    if info.kind == "int":
        return _whole(value, info)
    if info.kind == "float":
        return _number(value, info.key)
    return value


def _whole(value: Any, info: FieldInfo) -> int:
    number = _number(value, info.key)
    if number != int(number):
        raise CollsimError(f"{info.key}: must be a whole number, got {value!r}", field=info.key)
    return int(number)


def _number(value: Any, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CollsimError(f"{what}: {value!r} is not a number", field=what) from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise CollsimError(f"{what}: must be a finite number, got {value!r}", field=what)
    return number


def _steps_from_tokens(fields: dict[str, Any]) -> None:
    """--tokens with --tokens-per-step sets the steps (rounded up); not with --steps as well."""
    tokens = fields.pop("tokens", None)
    if tokens is None:
        return
    if "steps" in fields or fields.get("tokens_per_step") is None:
        raise CollsimError("tokens: give it with --tokens-per-step and without --steps (steps = tokens / tokens per step)", field="tokens")
    fields["steps"] = max(1, math.ceil(tokens / fields["tokens_per_step"]))


def _failure_rate(value: Any) -> float:
    if value in FAILURE_RATES:
        return FAILURE_RATES[value]
    try:
        return float(value)
    except (TypeError, ValueError):
        names = ", ".join(FAILURE_RATES)
        raise CollsimError(
            f"failure_rate: {value!r} is neither a number of failures per GPU-hour nor a published run ({names})", field="failure_rate"
        ) from None
