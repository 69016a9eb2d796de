"""Per-rank programs of one training step, from a DDP or FSDP scenario (the files ``collsim sim
ddp --scenario`` / ``collsim sim fsdp --scenario`` read), with the mutations only a step has: a
parameter unused on one rank, and a rank that dies or stalls at a time of the step.

DDP: one all-reduce per bucket, in the order buckets become ready (bucket 0 holds the last
parameters). A parameter unused on rank R never gets its gradient, so R never launches its
bucket, nor (DDP launches buckets in order) any later one; R goes on to the next forward, where
the reducer raises "Expected to have finished reduction ..." (its exact text, checked on gloo
ranks), and the others wait in that bucket's all-reduce.

FSDP (full_shard, shard_grad_op): an all-gather per unit in forward; in backward, in reverse, an
all-gather (full_shard re-gathers what forward freed; not the root) and a reduce-scatter per unit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sim.errors import CollsimError

__all__ = ["Step", "ddp_step", "fsdp_step", "reducer_error", "tool_note", "with_time_event", "with_unused"]

_DTYPE = {4: "float32", 8: "float64", 1: "uint8"}


@dataclass(frozen=True)
class Step:
    """One step's calls (the same on every rank), when each is issued, and the parameters."""

    calls: tuple[dict[str, Any], ...]
    times_s: tuple[float, ...]
    params: tuple[str, ...]  # parameter names, in the module's order (DDP's indices)
    bucket_params: tuple[tuple[int, ...], ...]  # per call: the parameter indices it carries (DDP)
    ranks: int

    def programs(self) -> dict[str, Any]:
        return {"ranks": [list(self.calls) for _ in range(self.ranks)]}


def _dtype(element_bytes: int, precision: str | None) -> str:
    if element_bytes == 2:
        return "float16" if precision == "fp16" else "bfloat16"
    return _DTYPE.get(element_bytes, "uint8")


def _scenario(kind: str, data: dict[str, Any]) -> Any:
    data = dict(data)
    if data.get("comm", "ow") == "ow" and "w" not in data and "hardware" not in data:
        data["w"] = "10GB/s"  # the comm model's speed changes no call of the program
    if kind == "ddp":
        from sim.training.ddp_scenario import DDPScenario

        return DDPScenario.from_dict(data)
    from sim.training.fsdp_scenario import FSDPScenario

    return FSDPScenario.from_dict(data)


def _ready_s(prepared: Any) -> dict[int, float]:
    """When each parameter's gradient is ready, from the start of backward."""
    ready, clock = {}, 0.0
    for indices, work_s in prepared.backward.segments:
        clock += work_s
        for index in indices:
            ready[index] = clock
    return ready


def ddp_step(data: dict[str, Any]) -> Step:
    """The bucket all-reduces of a DDP scenario's step (its mapping, as in a scenario file)."""
    from sim.training import ddp

    scenario = _scenario("ddp", data)
    prepared = ddp.prepare(scenario)
    ready = _ready_s(prepared)
    calls, times = [], []
    for call in ddp.plan_calls(scenario, prepared):
        element = prepared.params[call.params[0]].element_bytes
        tag = f"{call.name}: {prepared.params[call.params[0]].name}" + (f" +{len(call.params) - 1}" if len(call.params) > 1 else "")
        calls.append({"op": "all_reduce", "count": call.nbytes // element, "dtype": _dtype(element, scenario.precision), "tag": tag})
        times.append(prepared.forward_s + max(ready.get(i, 0.0) for i in call.params))
    order = sorted(range(len(calls)), key=lambda k: times[k])  # the comm stream issues them as they become ready
    buckets = ddp.plan_calls(scenario, prepared)
    return Step(
        tuple(calls[k] for k in order),
        tuple(times[k] for k in order),
        tuple(p.name for p in prepared.params),
        tuple(buckets[k].params for k in order),
        scenario.ranks,
    )


def fsdp_step(data: dict[str, Any]) -> Step:
    """The all-gathers and reduce-scatters of an FSDP scenario's step."""
    from sim.training import ddp, fsdp

    scenario = _scenario("fsdp", data)
    if scenario.sharding not in ("full_shard", "shard_grad_op"):
        raise CollsimError(
            f"sharding: hang explains full_shard and shard_grad_op steps; for {scenario.sharding} give the step as --ddp or as --programs"
        )
    params = ddp.resolve_params(scenario)
    groups = fsdp.unit_groups(params, scenario.units)
    dtype = _dtype(params[0].element_bytes, scenario.precision)
    ranks, calls, times, clock = scenario.ranks, [], [], 0.0
    numels = [sum(params[i].numel for i in members) for _, members in groups]
    for (name, _), numel in zip(groups, numels):
        calls.append({"op": "all_gather", "count": -(-numel // ranks), "dtype": dtype, "tag": f"forward {name}"})
        times.append(clock)
    for k in reversed(range(len(groups))):
        name = groups[k][0]
        if scenario.sharding == "full_shard" and k > 0:
            calls.append({"op": "all_gather", "count": -(-numels[k] // ranks), "dtype": dtype, "tag": f"backward {name}"})
            times.append(clock)
        calls.append({"op": "reduce_scatter", "count": -(-numels[k] // ranks) * ranks, "dtype": dtype, "tag": f"grads {name}"})
        times.append(clock)
    return Step(tuple(calls), (), tuple(p.name for p in params), (), ranks)


def reducer_error(rank: int, indices: list[int]) -> str:
    """DDP's reducer error on the rank whose parameters got no gradient (torch's text)."""
    return (
        "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your "
        "module has parameters that were not used in producing loss. You can enable unused parameter detection by passing the "
        "keyword argument `find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all "
        "`forward` function outputs participate in calculating loss. \nIf you already have done the above, then the distributed "
        "data parallel module wasn't able to locate the output tensors in the return value of your module's `forward` function. "
        "Please include the loss function and the structure of the return value of `forward` of your module when reporting this "
        f"issue (e.g. list, dict, iterable).\nParameter indices which did not receive grad for rank {rank}: {' '.join(map(str, indices))}"
        "\n In addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print out "
        "information about which particular parameters did not receive gradient on this rank as part of this error"
    )


def with_unused(step: Step, programs: dict[str, Any], spec: str) -> tuple[dict[str, Any], tuple[int, str]]:
    """``--unused-param RANK:NAME``: that rank stops before the bucket holding NAME and raises the
    reducer's error at the next forward (a "die" with that message)."""
    rank_text, _, name = spec.partition(":")
    if not step.bucket_params:
        raise CollsimError("--unused-param: a DDP step only (--ddp); FSDP has no buckets to leave unlaunched")
    if not rank_text.isdigit() or int(rank_text) >= step.ranks or name not in step.params:
        near = [p for p in step.params if name and name.split(".")[0] in p][:5] or list(step.params[:5])
        raise CollsimError(
            f"--unused-param: {spec[:60]!r} is not RANK:NAME with RANK 0..{step.ranks - 1} and NAME a parameter (e.g. {', '.join(near)})"
        )
    rank, index = int(rank_text), step.params.index(name)
    bucket = next(k for k, members in enumerate(step.bucket_params) if index in members)
    ranks = [list(calls) for calls in programs["ranks"]]
    ranks[rank] = ranks[rank][:bucket] + [{"op": "die", "tag": "reducer error at the next forward"}]
    return {**programs, "ranks": ranks}, (rank, reducer_error(rank, [index]))


def with_time_event(step: Step, programs: dict[str, Any], kind: str, rank: int, time_s: float) -> dict[str, Any]:
    """A rank that dies or stalls at ``time_s`` into the step: before its first call issued then."""
    if not step.times_s:
        raise CollsimError(f"--{kind}: a time into the step needs a DDP step (--ddp); here give RANK:CALL (a call index)")
    index = next((k for k, t in enumerate(step.times_s) if t >= time_s), len(step.times_s))
    ranks = [list(calls) for calls in programs["ranks"]]
    ranks[rank] = ranks[rank][:index] + [{"op": "die" if kind == "dies" else "stall"}] + ranks[rank][index:]
    return {**programs, "ranks": ranks}


def tool_note(report: Any, rank: int, message: str) -> Any:
    """The report with DDP's reducer error shown on that rank (every backend raises it)."""
    from sim.hang.report import ToolLine

    return replace(report, tools=report.tools + (ToolLine("ddp", rank, "error", message),))
