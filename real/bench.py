"""Collective benchmark in the manner of nccl-tests, on torch.distributed.

For each op and size: warm-up calls, a barrier, then timed back-to-back calls. Each call is
timed on every rank (``perf_counter`` around a synchronous call on CPU; CUDA events on GPU,
synchronised once at the end), and the time of iteration i is the **max over ranks** of the
ranks' times for iteration i, gathered to rank 0 after the timed loop.

Sizes and bus bandwidth follow nccl-tests (GB = 1e9 bytes):

==============  =====================================  ============
op              size (bytes) means                     busbw factor
==============  =====================================  ============
all_reduce      the buffer                             2(p-1)/p
broadcast       the buffer                             1
reduce          the buffer                             1
all_gather      the gathered output (p pieces)         (p-1)/p
reduce_scatter  the input (p pieces)                   (p-1)/p
all_to_all      what each rank holds (p blocks)        (p-1)/p
send_recv       what each rank sends (ring shift)      1
barrier         0                                      0
==============  =====================================  ============

``algbw = size / time`` with time the mean over iterations, as nccl-tests reports it;
``busbw = algbw * factor``.
"""

from __future__ import annotations

import datetime as dt
import platform
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from real.launcher import LaunchConfig, RankContext, launch, run_torchrun, under_torchrun
from sim.collective.analytic import busbw_factor  # noqa: F401  (the one busbw factor; real.bench's name kept)
from sim.errors import CollsimError
from sim.units import format_size

OPS = ("all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "barrier")
DTYPES = {
    "float": ("float32", 4),
    "float32": ("float32", 4),
    "half": ("float16", 2),
    "float16": ("float16", 2),
    "bfloat16": ("bfloat16", 2),
    "double": ("float64", 8),
    "float64": ("float64", 8),
}
REDOPS = {"all_reduce": "sum", "reduce": "sum", "reduce_scatter": "sum"}
ROOTED = ("broadcast", "reduce")


def effective_size(op: str, size_bytes: int, world_size: int, element_bytes: int) -> int:
    """The size actually moved: whole elements, and a multiple of p elements where the op splits."""
    if op == "barrier":
        return 0
    unit = element_bytes * (world_size if op in ("all_gather", "reduce_scatter", "all_to_all") else 1)
    return max(unit, size_bytes // unit * unit)


@dataclass(frozen=True)
class BenchSpec:
    """What to measure: ops x sizes, iterations, and the tensor type."""

    ops: tuple[str, ...] = ("all_reduce",)
    sizes: tuple[int, ...] = (1 << 20,)
    iters: int = 20
    warmup: int = 5
    dtype: str = "float"
    root: int = 0
    rounds: int = 1  # > 1: points interleaved round-robin, iters / rounds iterations per visit

    def __post_init__(self) -> None:
        unknown = [op for op in self.ops if op not in OPS]
        if unknown:
            raise CollsimError(f"ops: unknown {', '.join(unknown)}; allowed: {', '.join(OPS)}")
        if self.iters < 1 or self.warmup < 0:
            raise CollsimError(f"iters must be >= 1 and warmup >= 0, got {self.iters} and {self.warmup}")
        if self.dtype not in DTYPES:
            raise CollsimError(f"dtype: unknown {self.dtype!r}; allowed: {', '.join(DTYPES)}")
        if not self.sizes:
            raise CollsimError("sizes: need at least one size")
        element = DTYPES[self.dtype][1]
        odd = [size for size in self.sizes if size < element or size % element]
        if odd and any(op != "barrier" for op in self.ops):  # measured as something else, silently (--sizes 1 moved 4 B)
            raise CollsimError(
                f"sizes: {odd[0]} B is not a whole number of {self.dtype} elements ({element} B each); "
                f"give multiples of {element} B, such as {_nearest_multiples(odd[0], element)}"
            )
        if not 1 <= self.rounds <= self.iters:
            raise CollsimError(f"rounds: must be between 1 and iters ({self.iters}), got {self.rounds}")

    @property
    def element_bytes(self) -> int:
        return DTYPES[self.dtype][1]

    def points(self, world_size: int) -> list[tuple[str, int]]:
        """(op, size) pairs in the order they are measured; barrier once, without a size."""
        pairs = []
        for op in self.ops:
            sizes = [0] if op == "barrier" else sorted({effective_size(op, size, world_size, self.element_bytes) for size in self.sizes})
            pairs += [(op, size) for size in sizes]
        return pairs


def system_info(backend: str, device: str) -> dict[str, Any]:
    """What a result must record about where it came from."""
    import torch

    info = {
        "host": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpu_count": _cpu_count(),
        "gpu_model": "",
        "torch_version": torch.__version__,
        "collsim_version": collsim_version(),
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "backend_version": "",
    }
    if device == "cuda" and torch.cuda.is_available():
        info["gpu_model"] = torch.cuda.get_device_name(0)
        info["cuda_version"] = torch.version.cuda or ""
        if backend == "nccl":
            info["backend_version"] = ".".join(str(part) for part in torch.cuda.nccl.version())
    return info


def collsim_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("collsim")
    except PackageNotFoundError:
        return "unknown"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_count() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def now_utc() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- rank side


@dataclass
class _Buffers:
    send: Any
    recv: Any = None
    extra: dict = field(default_factory=dict)


def _buffers(op: str, size_bytes: int, dtype: Any, element_bytes: int, ctx: RankContext) -> _Buffers:
    import torch

    device = ctx.torch_device()
    count = max(1, size_bytes // element_bytes)
    p = ctx.world_size
    if op == "all_gather":
        return _Buffers(torch.ones(count // p, dtype=dtype, device=device), torch.empty(count, dtype=dtype, device=device))
    if op == "reduce_scatter":
        return _Buffers(torch.ones(count, dtype=dtype, device=device), torch.empty(count // p, dtype=dtype, device=device))
    if op in ("send_recv", "all_to_all"):
        return _Buffers(torch.ones(count, dtype=dtype, device=device), torch.empty(count, dtype=dtype, device=device))
    return _Buffers(torch.ones(count, dtype=dtype, device=device))


def _operation(op: str, buffers: _Buffers, ctx: RankContext, root: int) -> Callable[[], None]:
    """A zero-argument callable that performs one call of ``op`` and waits for it locally."""
    import torch.distributed as dist

    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    send, recv = buffers.send, buffers.recv
    if op == "all_reduce":
        return lambda: dist.all_reduce(send)
    if op == "broadcast":
        return lambda: dist.broadcast(send, src=root)
    if op == "reduce":
        return lambda: dist.reduce(send, dst=root)
    if op == "all_gather":
        return lambda: gather(recv, send)
    if op == "reduce_scatter":
        return lambda: scatter(recv, send)
    if op == "barrier":
        return lambda: dist.barrier()
    if op == "all_to_all":
        return lambda: dist.all_to_all_single(recv, send)
    right, left = (ctx.rank + 1) % ctx.world_size, (ctx.rank - 1) % ctx.world_size
    p2p = [dist.P2POp(dist.isend, send, right), dist.P2POp(dist.irecv, recv, left)]

    def send_recv() -> None:
        for work in dist.batch_isend_irecv(p2p):
            work.wait()

    return send_recv


def _time_iterations(call: Callable[[], None], iters: int, cuda: bool) -> list[float]:
    """Per-iteration times on this rank, seconds."""
    import torch

    if cuda:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
        for start, end in events:
            start.record()
            call()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / 1e3 for start, end in events]
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def _max_over_ranks(times: list[float], ctx: RankContext) -> list[float]:
    import torch
    import torch.distributed as dist

    mine = torch.tensor(times, dtype=torch.float64, device=ctx.torch_device())
    everyone = [torch.empty_like(mine) for _ in range(ctx.world_size)]
    dist.all_gather(everyone, mine)
    return torch.stack(everyone).max(dim=0).values.cpu().tolist()


def bench_worker(ctx: RankContext, payload: dict[str, Any]) -> None:
    """Rank program: measure every (op, size) point; rank 0 reports one row per point.

    With ``rounds`` > 1 the points are visited round-robin (``iters / rounds`` iterations per
    visit), so slow drifts of a noisy host spread over all points instead of biasing some;
    a point's row is reported after its last round.
    """
    import torch

    spec = BenchSpec(**payload["spec"])
    dtype = getattr(torch, DTYPES[spec.dtype][0])
    points = spec.points(ctx.world_size)
    times: dict[tuple[str, int], list[float]] = {point: [] for point in points}
    shares = [spec.iters // spec.rounds + (1 if index < spec.iters % spec.rounds else 0) for index in range(spec.rounds)]
    for round_index, iters in enumerate(shares):
        for op, size in points:
            ctx.status(f"{op} {format_size(size)}" + (f" (round {round_index + 1}/{spec.rounds})" if spec.rounds > 1 else ""))
            times[(op, size)] += _measure_point(ctx, spec, op, size, dtype, iters, spec.warmup if round_index == 0 else 0)
            if round_index == spec.rounds - 1 and ctx.rank == 0:
                ctx.report(make_row(op, size, times[(op, size)], spec, ctx.world_size, payload["meta"]))


def _measure_point(ctx: RankContext, spec: BenchSpec, op: str, size: int, dtype: Any, iters: int, warmup: int) -> list[float]:
    """Warm-up, barrier, ``iters`` timed calls; per-iteration times, max over ranks."""
    import torch
    import torch.distributed as dist

    cuda = ctx.device == "cuda"
    call = _operation(op, _buffers(op, size, dtype, spec.element_bytes, ctx), ctx, spec.root)
    for _ in range(warmup):
        call()
    if cuda:
        torch.cuda.synchronize()
    dist.barrier()
    return _max_over_ranks(_time_iterations(call, iters, cuda), ctx)


# --------------------------------------------------------------------------- rows


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in 0..100."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def time_stats(times: list[float]) -> dict[str, float]:
    return {
        "time_s": statistics.fmean(times),
        "median_s": statistics.median(times),
        "p10_s": percentile(times, 10),
        "p90_s": percentile(times, 90),
        "min_s": min(times),
        "max_s": max(times),
        "std_s": statistics.pstdev(times),
    }


def make_row(op: str, size: int, times: list[float], spec: BenchSpec, world_size: int, meta: dict[str, Any]) -> dict[str, Any]:
    """One result row: nccl-tests columns, statistics, raw times, and where it came from."""
    stats = time_stats(times)
    algbw = size / stats["time_s"] / 1e9 if stats["time_s"] > 0 else 0.0
    row = {
        "op": op,
        "world_size": world_size,
        "backend": meta["backend"],
        "device": meta["device"],
        "size_bytes": size,
        "count": size // spec.element_bytes,
        "type": DTYPES[spec.dtype][0],
        "redop": REDOPS.get(op, "none"),
        "root": spec.root if op in ROOTED else -1,
        **stats,
        "algbw_GBps": algbw,
        "busbw_GBps": algbw * busbw_factor(op, world_size),
        "iters": len(times),
        "warmup": spec.warmup,
        "rounds": spec.rounds,
        "times_s": times,
        "measured_at": now_utc(),
    }
    row.update(
        {
            key: meta[key]
            for key in ("run_id", "launch", "host", "cpu_model", "gpu_model", "torch_version", "collsim_version", "backend_version")
            if key in meta
        }
    )
    return row


def run_bench(
    spec: BenchSpec,
    config: LaunchConfig,
    meta: dict[str, Any],
    on_result: Callable[[dict[str, Any]], None] | None = None,
    launcher: Callable | None = None,
) -> list[dict[str, Any]]:
    """Measure ``spec`` on ``config``'s ranks; ``on_result`` sees each row as it arrives."""
    meta = {**meta, "backend": config.backend, "device": config.device}
    run = launcher or (run_torchrun if under_torchrun() else launch)
    return run(bench_worker, {"spec": asdict(spec), "meta": meta}, config, on_result)


def _nearest_multiples(size: int, element: int) -> str:
    """The whole-element sizes either side of ``size`` ("4" alone when only one exists)."""
    below, above = size // element * element, (size // element + 1) * element
    return f"{below} or {above}" if below >= element else str(above)
