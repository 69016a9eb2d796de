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

import math
from collections.abc import Generator, Hashable, Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any

import simpy

from sim.collective.results import EVENT_COLUMNS
from sim.errors import CollsimError
from sim.scenario import load_mapping
from sim.training import compute
from sim.training.ddp_plan import Backward, Call, CommModel, Prepared
from sim.training.ddp_result import DDPResult
from sim.training.ddp_scenario import (
    COMM_MODELS,
    DEFAULT_BUCKET_CAP_BYTES,
    DEFAULT_FIRST_BUCKET_BYTES,
    STRATEGIES,
    DDPScenario,
)
from sim.training.hooks import HookCall, hook_allreduce_calls
from sim.training.params import Param, load_params, params_from_bytes, params_from_list, preset

PROFILE_KIND = "collsim-ddp-profile"
__all__ = [
    "COMM_MODELS", "DEFAULT_BUCKET_CAP_BYTES", "DEFAULT_FIRST_BUCKET_BYTES", "STRATEGIES", "PROFILE_KIND", "DDPScenario", "DDPResult",
    "MeasuredProfile", "load_profile", "compute_bucket_assignment_by_size", "bucket_limits", "assign_buckets",
    "Backward", "uniform_backward", "layer_backward", "flops_backward", "mfu_of", "measured_backward", "CommModel",
    "Prepared", "resolve_params", "compute_rate", "recompute", "prepare", "Call", "plan_calls", "call_sizes", "run_ddp",
]  # fmt: skip


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


def flops_backward(params: Sequence[Param], flops_per_s: float, tokens: int) -> Backward:
    """Backward FLOPs per tensor at ``flops_per_s``, gradients ready in reverse registration order.
    A tied output head (GPT-2's ``wte``) runs its matrix product first, before the last-registered
    tensor's gradient (measured on an H100: GPT-2's first gradient is ready 45 % into backward),
    while its own gradient is complete only after the embedding's scatter-add at the end."""
    durations = [compute.backward_flops(param, tokens) / flops_per_s for param in params]
    head = [index for index, param in enumerate(params) if param.name in compute.TIED_HEADS]
    for index in head:
        head_s = 4.0 * tokens * params[index].numel / flops_per_s
        durations[index] -= head_s
        durations[-1] += head_s
    return _from_durations(durations)


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


# --- simulation ---------------------------------------------------------------------------


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
        params = list(profile.params)
    if profile is not None and [p.name for p in params] != [p.name for p in profile.params]:
        raise CollsimError("profile: its parameter names differ from the scenario's parameter list; drop one of them")
    return compute.with_precision(params, s.precision)


def _backward(scenario: DDPScenario, params: list[Param], profile: MeasuredProfile | None) -> Backward:
    s = scenario
    if profile is not None:
        return measured_backward(params, profile)
    if s.layer_times is not None:
        return layer_backward(params, s.layer_times)
    if s.flops_per_s is not None:
        return flops_backward(params, s.flops_per_s, s.tokens)
    timed = _measured_without_flops(s)
    if timed is not None:
        return uniform_backward(params, timed.backward_s)
    if s.backward_time_s is None and s.backward_rate_Bps is None:  # mfu: from FLOPs at the GPU's peak
        return flops_backward(params, compute_rate(s, "backward"), s.tokens)
    time_s = s.backward_time_s if s.backward_time_s is not None else sum(p.nbytes for p in params) / s.backward_rate_Bps
    return uniform_backward(params, time_s)


def _measured_without_flops(scenario: DDPScenario) -> compute.Measured | None:
    """With ``mfu = measured`` on a model without a FLOP model (ResNet-18): its measured times."""
    if scenario.mfu != compute.MEASURED:
        return None
    found = compute.measured(scenario.preset, scenario.precision, scenario.peak_gpu)
    return found if found.backward_mfu is None else None


def mfu_of(scenario: DDPScenario, phase: str) -> float:
    """The MFU of ``phase`` ("forward" or "backward"): the scenario's, or with ``mfu = measured``
    the preset's measured one (``sim.training.compute.measured``)."""
    if scenario.mfu == compute.MEASURED:
        found = compute.measured(scenario.preset, scenario.precision, scenario.peak_gpu)
        return found.forward_mfu if phase == "forward" else found.backward_mfu
    return scenario.mfu


def compute_rate(scenario: DDPScenario, phase: str = "backward") -> float:
    """FLOP/s of the FLOP-derived compute: the MFU x the GPU's dense peak at the step's precision."""
    return mfu_of(scenario, phase) * compute.peak_flops(scenario.peak_gpu, scenario.precision)


def _forward_s(scenario: DDPScenario, params: Sequence[Param]) -> float:
    """Forward time when none is given: from FLOPs at the stated MFU (2 x tokens x numel a
    tensor), else 0 (as before the compute inputs existed)."""
    if scenario.mfu is None:
        return 0.0
    timed = _measured_without_flops(scenario)
    if timed is not None:
        return timed.forward_s
    return sum(compute.forward_flops(param, scenario.tokens) for param in params) / compute_rate(scenario, "forward")


def recompute(backward: Backward, forward_s: float) -> Backward:
    """Activation checkpointing: each layer's forward runs again before its backward, so every
    segment grows by its share of the forward time (shares by backward work)."""
    total = sum(work for _, work in backward.segments)
    if forward_s <= 0 or total <= 0:
        return backward
    scale = (total + forward_s) / total
    return Backward(tuple((indices, work * scale) for indices, work in backward.segments), backward.tail_s)


def prepare(scenario: DDPScenario) -> Prepared:
    """Load files and build the profile once; bucket sweeps reuse the result."""
    s = scenario
    profile = load_profile(s.profile_file) if s.profile_file is not None else None
    params = resolve_params(s, profile)
    element_bytes = reduce(math.gcd, (param.element_bytes for param in params))
    forward_s = s.forward_time_s if s.forward_time_s is not None else (profile.forward_s if profile else _forward_s(s, params))
    optimizer_s = s.optimizer_time_s if s.optimizer_time_s is not None else (profile.optimizer_s if profile else 0.0)
    backward = _backward(s, params, profile)
    if s.activation_checkpointing:
        backward = recompute(backward, forward_s)
    prepared = Prepared(tuple(params), backward, forward_s, optimizer_s, CommModel(s, element_bytes))
    if s.hardware is not None and s.comm == "ow" and s.w_Bps is None:  # o and w fitted where this step's all-reduces are
        sizes = call_sizes(plan_calls(s, prepared))
        prepared.comm.buckets = tuple((size, sizes.count(size)) for size in sorted(set(sizes)))
        prepared.comm.last_bytes = sizes[-1]
    return prepared


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
        Call(
            k,
            _call_name(strategy, k, group, params),
            tuple(group),
            sum(params[i].nbytes for i in group),
            _hook_parts(scenario, params, group),
        )
        for k, group in enumerate(groups)
    ]


def _hook_parts(scenario: DDPScenario, params: Sequence[Param], group: Sequence[int]) -> tuple[HookCall, ...]:
    """The communication hook's all-reduces for one bucket (:func:`sim.training.hooks.hook_allreduce_calls`)."""
    shapes = [params[i].shape or (params[i].numel,) for i in group]
    calls = hook_allreduce_calls(shapes, scenario.hook, scenario.iteration, element_bytes=params[group[0]].element_bytes)
    return tuple(calls)


def call_sizes(calls: Sequence[Call]) -> list[int]:
    """Bytes of every all-reduce the step issues, in order (a hook may issue several per bucket)."""
    return [part.nbytes for call in calls for part in call.parts]


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
            yield self.env.timeout(sum(self.prepared.comm.cost_s(part.nbytes) for part in call.parts))
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
