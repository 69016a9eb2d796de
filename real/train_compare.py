"""A measured ``real train`` step beside a simulation of the same layout fed with measured compute.

:func:`compare` takes a ``collsim-train-profile`` (:func:`real.train.run_train`) and a callable
``simulate(inputs) -> {"step_time_s": float, "rows": [...]}`` (:class:`Simulate`). The callable
receives :class:`SimInputs`: the layout (tp, pp, dp, stages per rank), the schedule, the number of
micro-batches, each stage's measured forward and backward compute seconds per micro-batch (TP
all-reduces subtracted; the schedule's own time before the op added, :func:`schedule_gaps`), and
the measured collective times (TP all-reduce, PP transfer, DP all-reduce, each with its bytes). Its rows have the fields of :data:`real.train_timeline.ROW_FIELDS`
(at least rank, stream, kind, start_s, end_s, bytes) for one step.

The callable for ``collsim sim train`` is :func:`real.train_sim.simulate_train`: that command's
scenario of the same layout replayed with the measured compute and collective times
(``collsim real train --compare``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sim.errors import CollsimError

__all__ = ["SimInputs", "Simulate", "compare", "format_compare", "schedule_gaps", "sim_inputs", "measured_collectives"]


@dataclass(frozen=True)
class SimInputs:
    """What a simulator needs to replay the measured layout (seconds per micro-batch, bytes per op)."""

    tp: int
    pp: int
    dp: int
    stages_per_rank: int
    schedule: str
    micro_batches: int
    forward_s: tuple[float, ...]  # per stage
    backward_s: tuple[float, ...]
    tp_all_reduce_s: float
    tp_all_reduce_bytes: int
    pp_transfer_s: float
    pp_transfer_bytes: int
    dp_all_reduce_s: float
    dp_all_reduce_bytes: int
    layers: int = 0  # the model, for the simulator's bytes
    hidden: int = 0
    heads: int = 0
    seq_len: int = 0
    micro_batch: int = 0
    step_end_s: float = 0.0  # after the pipeline and the DP all-reduce: gradient copies, the optimizer


Simulate = Callable[[SimInputs], Mapping[str, Any]]


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def measured_collectives(rows: list[dict[str, Any]]) -> dict[str, tuple[float, int]]:
    """Mean seconds (median bytes) of one TP all-reduce, one PP transfer and one DP all-reduce.

    A collective's time is its last-arriving rank's (the shortest row of the group: the others
    also waited for it, and that wait is the skew of the compute before it, which the slowest
    rank's compute the simulator is fed already holds); a transfer's time runs from the later of
    the send's and the receive's start to the receive's end, as the simulator starts a transfer
    once both ends are posted (every rank's clock starts after the same barrier). The mean, not
    the median: the simulator adds one call's seconds for every call, so their sum is the count
    times the mean; on a shared CPU a few calls take many times the median (descheduled ranks)."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["kind"] == "all_reduce":
            groups[(row["stream"], row["step"], row["name"], tuple(row["group"]))].append(row)
    result = {}
    for stream in ("tp", "dp"):
        shortest = [min(r["end_s"] - r["start_s"] for r in members) for key, members in groups.items() if key[0] == stream]
        sizes = [members[0]["bytes"] for key, members in groups.items() if key[0] == stream]
        result[stream] = (_mean(shortest), int(_median(sizes)) if sizes else 0)
    sends = {(r["step"], r["name"], r["rank"], r["peer"]): r for r in rows if r["kind"] == "send"}
    transfers, sizes = [], []
    for recv in (r for r in rows if r["kind"] == "recv"):
        send = sends.get((recv["step"], recv["name"], recv["peer"], recv["rank"]))
        if send is not None:
            transfers.append(max(0.0, recv["end_s"] - max(recv["start_s"], send["start_s"])))
            sizes.append(recv["bytes"])
    result["pp"] = (_mean(transfers), int(_median(sizes)) if sizes else 0)
    return result


def _ops_in_order(rows: list[dict[str, Any]]) -> dict[tuple[int, int], list[tuple[float, float, str]]]:
    """(step, rank) -> its ops in order: (start of the op's first compute row, end of its last, name)."""
    spans: dict[tuple[int, int, str], list[float]] = {}
    for row in rows:
        if row["stream"] == "compute":
            key = (row["step"], row["rank"], row["name"])
            span = spans.setdefault(key, [row["start_s"], row["end_s"]])
            span[0], span[1] = min(span[0], row["start_s"]), max(span[1], row["end_s"])
    ops: dict[tuple[int, int], list[tuple[float, float, str]]] = defaultdict(list)
    for (step, rank, name), (start, end) in spans.items():
        ops[step, rank].append((start, end, name))
    return {key: sorted(values) for key, values in ops.items()}


def schedule_gaps(rows: list[dict[str, Any]]) -> dict[str, dict[int, float]]:
    """Per phase (``forward_s``, ``backward_s``) and stage, the mean seconds the schedule's own Python
    takes before an op (the slowest rank holding the stage): from the later of the rank's previous
    op's end (the step's start for its first) and the last send or receive it waited for since,
    to the op's start. It holds what torch runs between two ops outside ``forward_one_chunk`` and
    ``backward_one_chunk``: posting the sends and receives, the loss on the last stage, the
    schedule's bookkeeping; none of it a wait for a peer, which the simulator models itself."""
    waits: dict[tuple[int, int], list[float]] = defaultdict(list)
    for row in rows:
        if row["stream"] == "pp":
            waits[row["step"], row["rank"]].append(row["end_s"])
    slowest: dict[tuple[int, str], float] = defaultdict(float)
    for (step, rank), ops in _ops_in_order(rows).items():
        previous = 0.0
        for start, end, name in ops:
            ready = max([previous, *(t for t in waits[step, rank] if previous <= t <= start)])
            slowest[step, name] = max(slowest[step, name], start - ready, 0.0)
            previous = end
    per_op: dict[tuple[str, int], list[float]] = defaultdict(list)
    for (_, name), seconds in slowest.items():
        phase, _, stage = name.split()
        per_op["forward_s" if phase == "fwd" else "backward_s", int(stage.removeprefix("stage"))].append(seconds)
    result: dict[str, dict[int, float]] = {"forward_s": {}, "backward_s": {}}
    for (phase, stage), values in per_op.items():
        result[phase][stage] = statistics.fmean(values)
    return result


def sim_inputs(measured: dict[str, Any]) -> SimInputs:
    """The :class:`SimInputs` of a measured profile."""
    if measured.get("kind") != "collsim-train-profile":
        raise CollsimError(f"compare: expected a collsim-train-profile (collsim real train --out), got kind {measured.get('kind')!r}")
    compute = measured["compute"]
    config, stage = measured["config"], compute.get("op", compute["stage"])  # whole micro-batch rows (older profiles: the layers' sum)
    collectives = measured_collectives(measured["rows"])
    gaps = schedule_gaps(measured["rows"])  # fed as compute: the op starts that much later on the rank
    forward, backward = ([seconds + gaps[name].get(index, 0.0) for index, seconds in enumerate(stage[name])]
                         for name in ("forward_s", "backward_s"))  # fmt: skip
    return SimInputs(
        tp=config["tp"], pp=config["pp"], dp=config["dp"], stages_per_rank=len(stage["forward_s"]) // config["pp"],
        schedule=config["schedule"], micro_batches=measured["micro_batches"],
        forward_s=tuple(forward), backward_s=tuple(backward),
        tp_all_reduce_s=collectives["tp"][0], tp_all_reduce_bytes=collectives["tp"][1],
        pp_transfer_s=collectives["pp"][0], pp_transfer_bytes=collectives["pp"][1],
        dp_all_reduce_s=collectives["dp"][0], dp_all_reduce_bytes=collectives["dp"][1],
        step_end_s=compute.get("step_end_s", 0.0),
        **{key: config[key] for key in ("layers", "hidden", "heads", "seq_len", "micro_batch")},
    )  # fmt: skip


def _per_rank_streams(rows: list[dict[str, Any]], steps: int) -> dict[tuple[int, str], tuple[float, float]]:
    """(rank, stream) -> (operations, busy seconds), per step."""
    totals: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in rows:
        total = totals[(row["rank"], row["stream"])]
        total[0] += 1
        total[1] += row["end_s"] - row["start_s"]
    return {key: (count / steps, busy / steps) for key, (count, busy) in totals.items()}


def compare(measured: dict[str, Any], simulate: Simulate) -> dict[str, Any]:
    """The measured step (median, spread) beside ``simulate(sim_inputs(measured))``'s, and per
    rank and stream the operations and busy seconds per step, measured and simulated."""
    inputs = sim_inputs(measured)
    simulated = simulate(inputs)
    if "step_time_s" not in simulated or "rows" not in simulated:
        raise CollsimError("compare: the simulate callable must return a mapping with 'step_time_s' and 'rows'")
    step = measured["step_time"]
    simulated_s = float(simulated["step_time_s"])
    mine = _per_rank_streams(measured["rows"], max(1, len(measured["step_time_s"])))
    theirs = _per_rank_streams(list(simulated["rows"]), 1)
    streams = [
        {"rank": rank, "stream": stream, "measured_ops": mine.get((rank, stream), (0, 0))[0], "simulated_ops": theirs.get((rank, stream), (0, 0))[0],
         "measured_busy_s": mine.get((rank, stream), (0, 0.0))[1], "simulated_busy_s": theirs.get((rank, stream), (0, 0.0))[1]}
        for rank, stream in sorted(set(mine) | set(theirs))
    ]  # fmt: skip
    return {
        "inputs": inputs.__dict__,
        "measured_step_s": step["median_s"],
        "measured_spread": step["spread"],
        "measured_min_s": step["min_s"],
        "measured_max_s": step["max_s"],
        "simulated_step_s": simulated_s,
        "error": (simulated_s - step["median_s"]) / step["median_s"] if step["median_s"] else float("nan"),
        "within_spread": step["min_s"] <= simulated_s <= step["max_s"],
        "streams": streams,
    }


def format_compare(result: dict[str, Any]) -> str:
    """The comparison in a few lines: measured step (median, min..max), simulated step, and per
    stream (all ranks) the operations and busy seconds a step, measured and simulated."""
    from sim.units import format_time

    low, high = result["measured_min_s"], result["measured_max_s"]
    inside = "within" if result["within_spread"] else "outside"
    lines = [
        f"measured step: median {format_time(result['measured_step_s'])} (min {format_time(low)}, max {format_time(high)}, "
        f"spread {result['measured_spread']:.0%})",
        f"simulated step: {format_time(result['simulated_step_s'])} (collsim sim train fed the measured compute and collective "
        f"times; {result['error']:+.0%}, {inside} the measured min..max)",
    ]
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for row in result["streams"]:
        total = totals[row["stream"]]
        for index, key in enumerate(("measured_ops", "simulated_ops", "measured_busy_s", "simulated_busy_s")):
            total[index] += row[key]
    for stream, (ops, sim_ops, busy, sim_busy) in sorted(totals.items()):
        lines.append(f"{stream:>8}: measured {ops:g} ops, {format_time(busy)} busy; simulated {sim_ops:g} ops, "
                     f"{format_time(sim_busy)} busy (a step, all ranks)")  # fmt: skip
    return "\n".join(lines)
