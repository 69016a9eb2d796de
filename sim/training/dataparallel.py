"""``torch.nn.DataParallel`` on one node: one process, one Python thread per GPU, GPU 0 the master.

One training step, as ``DataParallel.forward`` and autograd run it, phase after phase (nothing
overlaps: each phase waits for the one before):

1. **scatter** the global batch's inputs from GPU 0 to the others (``comm.scatter``: a copy per
   GPU out of GPU 0's links: ``(G-1)/G x bytes / link bandwidth``);
2. **replicate** the module: every parameter broadcast from GPU 0 (``broadcast_coalesced``,
   NCCL's broadcast on the node, as ``sim collective`` costs it), every step;
3. **parallel_apply**: one ``threading.Thread`` per GPU runs its replica's forward; the threads
   launch kernels under the GIL, one at a time, so the launches of all G replicas add up
   (``G x (thread + kernels x launch)``) while each GPU computes its 1/G of the batch;
4. **gather** the outputs (the logits) to GPU 0, where the loss is computed;
5. backward: the output gradients scattered back, each GPU's backward (autograd's device
   threads, no GIL) on its 1/G, then the gradients **reduced** to GPU 0 (``reduce_add``: NCCL's
   reduce on the node); the optimizer then runs on GPU 0 alone, as on one GPU.

The same step on one GPU is forward and backward of the whole batch. Compute is FLOPs at the
stated MFU of the GPU's peak (:mod:`sim.training.compute`), links and collectives come from the
hardware preset (:mod:`sim.training.comm`), and the two CPU constants are cited, not fitted.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Any

from sim.errors import CollsimError
from sim.fields import FieldInfo, register
from sim.training import comm, compute
from sim.training.params import Param, preset

__all__ = ["THREAD_S", "LAUNCH_S", "FIELDS", "PHASE_OPS", "DataParallelScenario", "DataParallelResult", "phase_bytes", "run_dataparallel"]

# CPython threading.Thread create + start + join, per thread: 190-225 us measured on the collsim
# VM (2 shared cores, Python 3.11, 2026-11-28); a dedicated host core is faster, so take 100 us
THREAD_S = 100e-6
# CPU time of one CUDA kernel launch: 3.8 us per kernel where launches overlap execution (NVIDIA
# technical blog, "Getting Started with CUDA Graphs", 2019); under the GIL only one thread launches
LAUNCH_S = 4e-6
INPUT_BYTES_PER_TOKEN = 8  # token ids: int64

F = functools.partial(FieldInfo, commands=("dataparallel",))  # every field is a flag of collsim sim dataparallel
FIELDS = {
    info.name: info
    for info in (
        F("preset", "Model preset", "transformer preset: cs336-tiny, small, medium, large, xl, 2.7B, gpt2"),
        F("hardware", "Hardware", "hardware preset of the node (collsim hardware list), default dgx-h100"),
        F("tokens", "Tokens per step", "tokens of the global batch per step (split over the GPUs)", low=1, kind="int"),
        F("mfu", "MFU", "model FLOP utilisation of every GPU, e.g. 0.4 (default 0.4)", unit="fraction", low=0, high=1, kind="float"),
        F("precision", "Precision", "compute and activation precision", choices=compute.PRECISIONS),
        F(
            "thread_s",
            "Thread overhead",
            "per GPU and step: Python thread start + join (default 100us, cited)",
            "thread_overhead",
            unit="s",
            low=0,
        ),
        F("launch_s", "Kernel launch", "CPU time per kernel launch under the GIL (default 4us, cited)", "launch", unit="s", low=0),
    )
}
del F
register("dataparallel", __name__, "DataParallelScenario", FIELDS)  # sim dataparallel's flags (sim.cli_fields)


@dataclass(frozen=True)
class DataParallelScenario:
    """One DataParallel step on every GPU of one node of ``hardware``."""

    preset: str
    tokens: int
    hardware: str = "dgx-h100"
    mfu: float = compute.DEFAULT_MFU
    precision: str = "bf16"
    thread_s: float = THREAD_S
    launch_s: float = LAUNCH_S

    def __post_init__(self) -> None:
        from sim.hardware.presets import list_presets

        if compute.transformer_shape(self.preset) is None:
            allowed = "cs336-tiny, small, medium, large, xl, 2.7B, gpt2"
            raise CollsimError(
                f"preset: DataParallel needs a transformer preset (its logits are gathered); allowed: {allowed}; got {self.preset!r}"
            )
        if self.hardware not in list_presets() or not comm.uses_nccl(self.hardware):
            gpus = [name for name in list_presets() if comm.uses_nccl(name)]
            raise CollsimError(f"hardware: DataParallel runs on one GPU node; allowed: {', '.join(gpus)}; got {self.hardware!r}")
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or self.tokens < self.gpus:
            raise CollsimError(f"tokens: must be a whole number >= the node's {self.gpus} GPUs (each gets a slice), got {self.tokens!r}")
        if not (0 < self.mfu <= 1):
            raise CollsimError(f"mfu: must be above 0 and at most 1, got {self.mfu!r}")
        if self.precision not in compute.PRECISIONS:
            raise CollsimError(f"precision: unknown {self.precision!r}; allowed: {', '.join(compute.PRECISIONS)}")
        for name in ("thread_s", "launch_s"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise CollsimError(f"{FIELDS[name].key}: must be a time >= 0 in seconds, got {value!r}")

    @property
    def gpus(self) -> int:
        from sim.hardware.presets import load_preset

        return load_preset(self.hardware).gpus_per_node


@dataclass(frozen=True)
class DataParallelResult:
    """Seconds of each phase of the DataParallel step, the step, and the same step on one GPU."""

    scenario: DataParallelScenario
    phases_s: dict[str, float]
    single_gpu: dict[str, float]

    @property
    def step_time_s(self) -> float:
        return sum(self.phases_s.values())

    @property
    def single_gpu_s(self) -> float:
        return sum(self.single_gpu.values())

    @property
    def speedup(self) -> float:
        """One GPU's step time over DataParallel's (below 1: DataParallel is slower)."""
        return self.single_gpu_s / self.step_time_s

    def step_interval(self, moved: dict[str, int] | None = None) -> dict[str, Any]:
        """``step_time_interval_s`` (with its level and basis): every communication phase at the
        low, then the high end of its own 80 % interval on the preset (:func:`sim.hardware.uncertainty.spread`
        of its op and size: the broadcast, the reduce, and the copies as what they are, transfers of
        that size between the node's GPUs); compute and the CPU's threads and launches as given.
        Nothing overlaps, so each end is a sum."""
        from sim.training.step_interval import ENDS, interval_fields

        moved = moved or phase_bytes(self.scenario)  # ``moved``: phase_bytes' answer, where the caller has it
        ends = [sum(_at_end(self.scenario, moved, name, seconds, end) for name, seconds in self.phases_s.items()) for end in ENDS]
        return interval_fields(self.step_time_s, ends)

    def summary(self) -> dict[str, Any]:
        moved = phase_bytes(self.scenario)
        return {"gpus": self.scenario.gpus, "step_time_s": self.step_time_s, **self.step_interval(moved), "single_gpu_s": self.single_gpu_s,
                "speedup": self.speedup, "phases_s": dict(self.phases_s), "single_gpu_phases_s": dict(self.single_gpu),
                "phase_bytes": moved, "scenario": asdict(self.scenario)}  # fmt: skip


# the op each communication phase's interval is read for (None: a copy between the node's GPUs, not
# a collective: the uncalibrated spread at its size, as for any op a preset has no log of)
PHASE_OPS = {
    "scatter_inputs": None,
    "replicate": "broadcast",
    "gather_outputs": None,
    "scatter_output_grads": None,
    "reduce_grads": "reduce",
}


def phase_bytes(scenario: DataParallelScenario) -> dict[str, int]:
    """Bytes each communication phase moves (:data:`PHASE_OPS`' phases)."""
    s = scenario
    param_bytes = sum(param.nbytes for param in compute.with_precision(preset(s.preset), s.precision))
    output_bytes = s.tokens * compute.transformer_shape(s.preset).vocab * compute.PRECISION_BYTES[s.precision]
    return {"scatter_inputs": s.tokens * INPUT_BYTES_PER_TOKEN, "replicate": param_bytes, "gather_outputs": output_bytes,
            "scatter_output_grads": output_bytes, "reduce_grads": param_bytes}  # fmt: skip


def _at_end(scenario: DataParallelScenario, moved: dict[str, int], name: str, seconds: float, end: int) -> float:
    """One phase's seconds at ``end`` of its 80 % interval; compute and CPU phases as given."""
    from sim.hardware.uncertainty import spread

    found = spread(scenario.hardware, scenario.gpus, moved[name], PHASE_OPS[name]) if name in PHASE_OPS else None
    return seconds if found is None else seconds * found[0] ** end


def _copy_s(hardware: str, gpus: int, nbytes: float) -> float:
    """Copies of ``nbytes`` split over ``gpus`` between GPU 0 and the others: GPU 0's link carries
    all but its own slice."""
    from sim.hardware.presets import load_preset

    node = load_preset(hardware)
    return node.intra_latency_s + nbytes * (gpus - 1) / gpus / node.intra_bandwidth_Bps


def _compute_s(params: list[Param], scenario: DataParallelScenario, tokens: float) -> tuple[float, float]:
    """Forward and backward seconds of ``tokens`` on one GPU at the scenario's MFU."""
    rate = scenario.mfu * compute.peak_flops(scenario.hardware, scenario.precision)
    forward, backward = compute.model_flops(params, max(1, round(tokens)))
    return forward / rate, backward / rate


def run_dataparallel(scenario: DataParallelScenario) -> DataParallelResult:
    """The DataParallel step's phases (module docstring) and the one-GPU step beside it."""
    s, gpus = scenario, scenario.gpus
    params = compute.with_precision(preset(s.preset), s.precision)
    moved = phase_bytes(s)
    issue_s = s.thread_s + len(params) * s.launch_s  # one replica's thread and forward launches
    forward_s, backward_s = _compute_s(params, s, s.tokens / gpus)
    phases = {
        "scatter_inputs": _copy_s(s.hardware, gpus, moved["scatter_inputs"]),
        "replicate": comm.pick_time(s.hardware, 1, "broadcast", moved["replicate"]).time_s,
        "parallel_forward": max(gpus * issue_s, issue_s + forward_s),
        "gather_outputs": _copy_s(s.hardware, gpus, moved["gather_outputs"]),
        "scatter_output_grads": _copy_s(s.hardware, gpus, moved["scatter_output_grads"]),
        "backward": backward_s,
        "reduce_grads": comm.pick_time(s.hardware, 1, "reduce", moved["reduce_grads"]).time_s,
    }
    one_forward_s, one_backward_s = _compute_s(params, s, s.tokens)
    single = {"forward": max(len(params) * s.launch_s, one_forward_s), "backward": one_backward_s}
    return DataParallelResult(s, phases, single)
