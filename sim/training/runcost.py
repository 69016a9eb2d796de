"""A run-level model of failures, checkpoints and restarts (``collsim sim run-cost``).

A run of ``steps`` steps of ``step_time_s`` on ``gpus`` GPUs fails as a Poisson process of
``failure_rate`` per GPU-hour (exponential times between failures, MTBF M = 1 / (rate x GPUs)).
Every ``interval_s`` of work it writes a checkpoint that blocks training for delta (the whole
write when synchronous; only the device-to-host copy when asynchronous, as
``torch.distributed.checkpoint.async_save`` does). A failure loses the work since the last
durable checkpoint and costs a restart R (re-rendezvous, process-group init, loading the
checkpoint, warm-up); failures may strike during a checkpoint or a restart too.

The answer: Young's interval sqrt(2 delta M), Daly's higher-order one, the optimum of Daly's
exact expected wall time, and the optimum of a seedable Monte-Carlo simulation of the same run
(:mod:`sim.training.runcost_sim`) beside them; the goodput (useful fraction of wall time) at the
chosen and optimal interval; the wall time for the run; an elastic restart on fewer nodes
against waiting for a replacement. See docs/failures.md for the assumptions and the sources.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from sim.errors import CollsimError

__all__ = [
    "FAILURE_RATES",
    "LLAMA3_FAILURE_RATE",
    "SOURCES",
    "Checkpoint",
    "RunCostResult",
    "RunCostScenario",
    "checkpoint_cost",
    "daly_interval",
    "daly_wall_factor",
    "exact_optimum",
    "goodput",
    "lost_work",
    "run_cost",
    "young_interval",
]

# Llama 3 405B: 419 unexpected interruptions in a 54-day snapshot on 16,384 H100s
# (Dubey et al. 2024, "The Llama 3 Herd of Models", sec. 3.3.4): one failure per GPU every
# 50,677 GPU-hours, one failure of the job every ~3.1 h at that scale.
LLAMA3_GPUS, LLAMA3_DAYS, LLAMA3_UNEXPECTED, LLAMA3_INTERRUPTIONS = 16384, 54, 419, 466
LLAMA3_FAILURE_RATE = LLAMA3_UNEXPECTED / (LLAMA3_GPUS * LLAMA3_DAYS * 24)
# OPT-175B: "at least 35 manual restarts" and an estimated "70+" automatic ones over "2 months"
# (taken as 60 days) on 992 A100s (Zhang et al. 2022, arXiv:2205.01068, sec. 2.4 and 2.5).
OPT175B_GPUS, OPT175B_DAYS, OPT175B_RESTARTS = 992, 60, 35 + 70
# named rates --failure-rate accepts, per GPU-hour
FAILURE_RATES = {
    "llama3": LLAMA3_FAILURE_RATE,
    "llama3-all": LLAMA3_INTERRUPTIONS / (LLAMA3_GPUS * LLAMA3_DAYS * 24),
    "opt175b": OPT175B_RESTARTS / (OPT175B_GPUS * OPT175B_DAYS * 24),
}

SOURCES = {
    "failure_rate": "Llama 3 405B: 419 unexpected of 466 interruptions in 54 days on 16,384 H100s "
    "(Dubey et al. 2024, The Llama 3 Herd of Models, arXiv:2407.21783, sec. 3.3.4)",
    "opt175b": "OPT-175B: at least 35 manual and an estimated 70+ automatic restarts in 2 months on 992 A100s "
    "(Zhang et al. 2022, OPT: Open Pre-trained Transformer Language Models, arXiv:2205.01068, sec. 2.5)",
    "young": "J. W. Young, A first order approximation to the optimum checkpoint interval, CACM 17(9), 1974",
    "daly": "J. T. Daly, A higher order estimate of the optimum checkpoint interval for restart dumps, FGCS 22(3), 2006",
    "async": "torch.distributed.checkpoint.async_save; PyTorch blog 'Reducing Model Checkpointing Times by Over 10x "
    "with PyTorch Distributed Asynchronous Checkpointing' (2024): 7B model 148.8 s -> 6.3 s",
}

# bytes per parameter held in a checkpoint: weights, fp32 master copy, optimizer states
_WEIGHT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
_OPTIMIZER_BYTES = {"adam": 8, "sgd": 4, "none": 0}  # Adam: fp32 m and v; SGD: fp32 momentum
PRECISIONS, OPTIMIZERS, SHARDINGS, WRITE_MODES = tuple(_WEIGHT_BYTES), tuple(_OPTIMIZER_BYTES), ("sharded", "full"), ("sync", "async")
MAX_SAMPLES = 2_000_000


@dataclass(frozen=True)
class RunCostScenario:
    """One run. Times in seconds, bandwidths in bytes/s; ``interval_s`` None: the optimum."""

    step_time_s: float
    gpus: int
    params: float
    steps: int = 100_000
    gpus_per_node: int = 8
    failure_rate: float = LLAMA3_FAILURE_RATE  # failures per GPU-hour
    precision: str = "bf16"
    optimizer: str = "adam"
    sharding: str = "sharded"
    write: str = "sync"
    storage_bandwidth_Bps: float = 100e9  # aggregate, all nodes together
    node_storage_bandwidth_Bps: float = 5e9  # one node's link to storage
    copy_bandwidth_Bps: float = 10e9  # one GPU's device-to-host copy (async staging)
    rendezvous_s: float = 30.0
    pg_init_per_rank_s: float = 0.005  # TCPStore rendezvous and NCCL init grow with the ranks
    warmup_s: float = 60.0
    interval_s: float | None = None
    replace_wait_s: float = 3600.0  # a spare node arrives this long after a failure
    nodes_lost: int = 1
    tokens_per_step: int | None = None
    samples: int = 100_000
    seed: int = 0

    def __post_init__(self) -> None:
        positive = ("step_time_s", "params", "failure_rate", "storage_bandwidth_Bps", "node_storage_bandwidth_Bps", "copy_bandwidth_Bps")
        for name in positive:
            _check(name, getattr(self, name), "must be a positive number", lambda v: math.isfinite(v) and v > 0)
        for name in ("rendezvous_s", "pg_init_per_rank_s", "warmup_s", "replace_wait_s"):
            _check(name, getattr(self, name), "must be a number >= 0", lambda v: math.isfinite(v) and v >= 0)
        for name in ("gpus", "steps", "gpus_per_node", "samples", "nodes_lost"):
            _check(name, getattr(self, name), "must be a whole number >= 1", lambda v: isinstance(v, int) and v >= 1)
        for name, allowed in (("precision", PRECISIONS), ("optimizer", OPTIMIZERS), ("sharding", SHARDINGS), ("write", WRITE_MODES)):
            _check(name, getattr(self, name), f"must be one of {', '.join(allowed)}", lambda v, allowed=allowed: v in allowed)
        self._check_relations()

    def _check_relations(self) -> None:
        if self.gpus % self.gpus_per_node and self.gpus > self.gpus_per_node:
            raise CollsimError(
                f"gpus: {self.gpus} GPUs do not fill nodes of {self.gpus_per_node} GPUs; give a multiple of --gpus-per-node", field="gpus"
            )
        if self.nodes_lost > self.nodes:
            raise CollsimError(f"nodes_lost: {self.nodes_lost} is more than the job's {self.nodes} nodes", field="nodes_lost")
        if self.samples > MAX_SAMPLES:
            raise CollsimError(f"samples: at most {MAX_SAMPLES:,} simulated checkpoint intervals, got {self.samples:,}", field="samples")
        if self.interval_s is not None and not (math.isfinite(self.interval_s) and self.interval_s > 0):
            raise CollsimError(f"interval: must be a positive time, got {self.interval_s}", field="interval_s")
        if self.tokens_per_step is not None and self.tokens_per_step < 1:
            raise CollsimError(f"tokens_per_step: must be >= 1, got {self.tokens_per_step}", field="tokens_per_step")

    @property
    def nodes(self) -> int:
        return max(1, self.gpus // self.gpus_per_node)

    @property
    def mtbf_s(self) -> float:
        """Mean time between failures of the whole job."""
        return 3600.0 / (self.failure_rate * self.gpus)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check(name: str, value: Any, rule: str, ok: Any) -> None:
    try:
        good = not isinstance(value, bool) and ok(value)
    except TypeError:
        good = False
    if not good:
        raise CollsimError(f"{name}: {rule}, got {value!r}", field=name)


@dataclass(frozen=True)
class Checkpoint:
    """What one checkpoint costs. ``blocking_s``: training stops this long (delta)."""

    nbytes: float
    bytes_per_param: int
    write_s: float
    copy_s: float
    blocking_s: float
    load_s: float


def checkpoint_cost(scenario: RunCostScenario) -> Checkpoint:
    """Size from the parameters (weights, an fp32 master copy below fp32, optimizer states);
    sharded: every node writes its shard at once, bounded by the aggregate bandwidth; full:
    rank 0 writes the whole state through its node's link. Async blocks for the copy only."""
    s = scenario
    per_param = _WEIGHT_BYTES[s.precision] + (4 if s.precision != "fp32" and s.optimizer != "none" else 0) + _OPTIMIZER_BYTES[s.optimizer]
    nbytes = s.params * per_param
    writers = s.nodes if s.sharding == "sharded" else 1
    write_s = nbytes / min(s.storage_bandwidth_Bps, writers * s.node_storage_bandwidth_Bps)
    copy_s = (nbytes / s.gpus if s.sharding == "sharded" else nbytes) / s.copy_bandwidth_Bps
    blocking_s = write_s if s.write == "sync" else copy_s
    return Checkpoint(nbytes, per_param, write_s, copy_s, blocking_s, load_s=write_s)


def restart_parts(scenario: RunCostScenario, checkpoint: Checkpoint) -> dict[str, float]:
    """R's parts. Async: a failure while the newest checkpoint is still being written loses back
    to the one before, on average one write's worth of extra work per failure."""
    parts = {
        "rendezvous_s": scenario.rendezvous_s,
        "pg_init_s": scenario.pg_init_per_rank_s * scenario.gpus,
        "load_s": checkpoint.load_s,
        "warmup_s": scenario.warmup_s,
    }
    if scenario.write == "async":
        parts["unfinished_write_s"] = checkpoint.write_s
    return parts


def young_interval(delta_s: float, mtbf_s: float) -> float:
    """Young (1974): sqrt(2 delta M), first order in delta / M."""
    return math.sqrt(2 * delta_s * mtbf_s)


def daly_interval(delta_s: float, mtbf_s: float) -> float:
    """Daly (2006) eq. 37: sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + delta / 18M] - delta for
    delta < 2M, else M."""
    if delta_s >= 2 * mtbf_s:
        return mtbf_s
    ratio = delta_s / (2 * mtbf_s)
    return math.sqrt(2 * delta_s * mtbf_s) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - delta_s


def daly_wall_factor(interval_s: float, delta_s: float, restart_s: float, mtbf_s: float) -> float:
    """Expected wall time per second of work with exponential failures that may strike during
    work, checkpoints and restarts (Daly 2006 eq. 13): M e^(R/M) (e^((tau+delta)/M) - 1) / tau."""
    try:
        return mtbf_s * math.exp(restart_s / mtbf_s) * math.expm1((interval_s + delta_s) / mtbf_s) / interval_s
    except OverflowError:  # a cost of hundreds of MTBFs (an elastic wait): the run never ends
        return math.inf


def lost_work(interval_s: float, delta_s: float, mtbf_s: float) -> float:
    """Expected time lost to one failure before its restart: the mean of an exponential time
    to failure given that it falls inside one interval and its checkpoint, L = tau + delta:
    M - L / (e^(L/M) - 1), about L / 2 when L << M."""
    length = interval_s + delta_s
    return mtbf_s - length / math.expm1(length / mtbf_s)


def goodput(interval_s: float, delta_s: float, restart_s: float, mtbf_s: float) -> float:
    """Useful fraction of wall time: 1 / :func:`daly_wall_factor`."""
    return 1.0 / daly_wall_factor(interval_s, delta_s, restart_s, mtbf_s)


def exact_optimum(delta_s: float, restart_s: float, mtbf_s: float) -> float:
    """The interval minimising :func:`daly_wall_factor` (golden-section search in log tau)."""
    low, high = math.log(max(delta_s, 1e-9) * 1e-3), math.log(mtbf_s * 10 + delta_s)
    golden = (math.sqrt(5) - 1) / 2
    cost = lambda x: daly_wall_factor(math.exp(x), delta_s, restart_s, mtbf_s)  # noqa: E731
    for _ in range(200):
        a, b = high - golden * (high - low), low + golden * (high - low)
        low, high = (low, b) if cost(a) < cost(b) else (a, high)
    return math.exp((low + high) / 2)


@dataclass(frozen=True)
class RunCostResult:
    """Plain data for a CLI, a test or an explorer panel (:meth:`to_dict` is JSON-ready).

    Seconds throughout. ``checkpoint``: :class:`Checkpoint`'s fields (``blocking_s`` is delta);
    ``restart_parts``: R's parts (their sum ``restart_s``); the four optima: Young, Daly, the
    exact optimum of Daly's expected wall time and the simulated one; ``interval_s``: the one
    used (the user's or the exact optimum, whole steps); ``goodput`` and ``simulated_goodput``
    at it, ``optimal_goodput`` at the (feasible) optimum; ``wall_s`` / ``simulated_wall_s``:
    expected wall time of ``steps`` steps; ``elastic``: :func:`elastic`'s mapping."""

    scenario: dict[str, Any]
    mtbf_s: float
    checkpoint: dict[str, float]
    restart_s: float
    restart_parts: dict[str, float]
    young_interval_s: float
    daly_interval_s: float
    exact_interval_s: float
    simulated_interval_s: float
    interval_s: float
    goodput: float
    simulated_goodput: float
    simulated_goodput_stderr: float
    optimal_goodput: float
    work_s: float
    wall_s: float
    simulated_wall_s: float
    expected_failures: float
    lost_work_per_failure_s: float
    tokens: int | None
    elastic: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=lambda: dict(SOURCES))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def run_cost(scenario: RunCostScenario) -> RunCostResult:
    """The whole answer for one scenario (closed forms and the seeded simulation)."""
    from sim.training import runcost_sim

    checkpoint = checkpoint_cost(scenario)
    parts = restart_parts(scenario, checkpoint)
    delta, restart, mtbf = checkpoint.blocking_s, sum(parts.values()), scenario.mtbf_s
    _check_recoverable(delta, restart, mtbf)
    exact = exact_optimum(delta, restart, mtbf)
    interval, notes = _chosen_interval(scenario, checkpoint, exact)
    _check_recoverable(delta, restart, mtbf, interval)
    simulated = runcost_sim.simulated_optimum(delta, restart, mtbf, scenario.samples, scenario.seed, around_s=exact)
    measured = runcost_sim.simulate(interval, delta, restart, mtbf, scenario.samples, scenario.seed)
    work = scenario.steps * scenario.step_time_s
    wall = work * daly_wall_factor(interval, delta, restart, mtbf)
    return RunCostResult(
        scenario=scenario.to_dict(),
        mtbf_s=mtbf,
        checkpoint=dataclasses.asdict(checkpoint),
        restart_s=restart,
        restart_parts=parts,
        young_interval_s=young_interval(delta, mtbf),
        daly_interval_s=daly_interval(delta, mtbf),
        exact_interval_s=exact,
        simulated_interval_s=simulated,
        interval_s=interval,
        goodput=goodput(interval, delta, restart, mtbf),
        simulated_goodput=measured.goodput,
        simulated_goodput_stderr=measured.goodput_stderr,
        optimal_goodput=goodput(max(exact, checkpoint.write_s) if scenario.write == "async" else exact, delta, restart, mtbf),
        work_s=work,
        wall_s=wall,
        simulated_wall_s=work / measured.goodput,
        expected_failures=wall / mtbf,
        lost_work_per_failure_s=lost_work(interval, delta, mtbf),
        tokens=scenario.steps * scenario.tokens_per_step if scenario.tokens_per_step else None,
        elastic=elastic(scenario, interval, delta, restart),
        notes=notes,
    )


MAX_MTBFS = 5.0  # a checkpoint, a restart or an interval this many MTBFs long almost never completes


def _check_recoverable(delta_s: float, restart_s: float, mtbf_s: float, interval_s: float = 0.0) -> None:
    """Refuse a run that could (almost) never make progress, before any formula overflows."""
    for what, seconds in (("a checkpoint", delta_s), ("a restart", restart_s), ("an interval and its checkpoint", interval_s + delta_s)):
        if seconds > MAX_MTBFS * mtbf_s:
            raise CollsimError(
                f"run-cost: {what} takes {seconds:.3g} s, {seconds / mtbf_s:.3g} times the job's MTBF ({mtbf_s:.3g} s): "
                f"the run would almost never make progress; lower the failure rate or the cost (at most {MAX_MTBFS:g} MTBFs)"
            )


def _chosen_interval(scenario: RunCostScenario, checkpoint: Checkpoint, exact_s: float) -> tuple[float, list[str]]:
    """The user's interval, else the optimum; rounded up to whole steps. Async: checkpoints
    closer than one background write would queue behind it, so the interval is at least that."""
    notes = []
    interval = scenario.interval_s if scenario.interval_s is not None else exact_s
    if scenario.write == "async" and interval < checkpoint.write_s:
        notes.append(
            f"async: the background write takes {checkpoint.write_s:.3g} s; a shorter interval would queue checkpoints, so the interval is at least that"
        )
        interval = checkpoint.write_s
    steps = max(1, math.ceil(interval / scenario.step_time_s - 1e-9))
    if scenario.interval_s is not None and steps * scenario.step_time_s != scenario.interval_s:
        notes.append(f"interval: rounded up to whole steps, {steps} steps")
    return steps * scenario.step_time_s, notes


def elastic(scenario: RunCostScenario, interval_s: float, delta_s: float, restart_s: float) -> dict[str, Any]:
    """After a failure: wait ``replace_wait_s`` for a spare node and restart at full size, or
    restart at once on the nodes left (throughput scaled by nodes, the job's batch shrinks)
    and restart again to grow back when the spare arrives. Each as Daly's model with the
    failure's cost folded into R."""
    lost = scenario.nodes_lost / scenario.nodes
    mtbf = scenario.mtbf_s
    wait = goodput(interval_s, delta_s, restart_s + scenario.replace_wait_s, mtbf)
    shrink = goodput(interval_s, delta_s, 2 * restart_s + scenario.replace_wait_s * lost, mtbf) if lost < 1 else None
    return {
        "replace_wait_s": scenario.replace_wait_s,
        "nodes_lost": scenario.nodes_lost,
        "wait_goodput": wait,
        "shrink_goodput": shrink,  # None: no node is left to continue on
        "shrink_throughput": 1 - lost,
        "better": "shrink" if shrink is not None and shrink > wait else "wait",
    }
