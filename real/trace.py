"""Import a torch.profiler (Kineto) Chrome trace of a training step as a replayable profile.

``import_trace(path)`` reads the trace JSON (``.json`` or ``.json.gz``) directly and returns a
``collsim-ddp-profile`` document that ``collsim sim ddp --profile`` and ``collsim sim fsdp
--profile`` replay. What it takes from the trace (docs/fsdp.md, "Trace-driven what-if"):

- the step: the longest ``ProfilerStep#N`` annotation, else the span of the CPU ops;
- phases: ``forward`` / ``backward`` / ``optimizer`` annotations (``record_function``) when the
  step has them; else backward starts at the first ``autograd::engine::evaluate_function`` op
  and ends at the last one, the optimizer is the ``Optimizer.step#...`` (and ``zero_grad``) ops,
  forward is the step start up to backward;
- gradient-ready times: the end of every ``torch::autograd::AccumulateGrad`` op (one per
  parameter, shapes from ``record_shapes``), matched to the parameter list by shape in reverse
  registration order, or named ``grad.K`` when no list is given;
- per-layer backward compute: the time between consecutive gradient-ready times;
- collectives: ``gloo:<op>`` / ``nccl:<op>`` annotations, ``record_param_comms`` ops and
  ``ncclDevKernel_*`` / ``ncclKernel_*`` GPU kernels, with durations and (where the trace says)
  bytes, and an (o, w) line fitted to the all-reduces for ``--comm ow``.

``record_ddp_trace`` records such a trace of a small DDP step on gloo (CPU) with the launcher.
HolisticTraceAnalysis was tried on the bundled CPU trace; see docs/fsdp.md for why the JSON is
read directly.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

from sim.collective.results import event_row
from sim.errors import CollsimError
from sim.trace import chrome_trace

PROFILE_KIND = "collsim-ddp-profile"
_DTYPE_BYTES = {"float": 4, "c10::Half": 2, "c10::BFloat16": 2, "double": 8, "int": 4, "long int": 8, "signed char": 1, "unsigned char": 1,
                "bool": 1, "Float": 4, "Half": 2, "BFloat16": 2, "Double": 8, "Int": 4, "Long": 8, "Byte": 1, "Char": 1}  # fmt: skip
_COLLECTIVE = re.compile(r"^(?:gloo|nccl):(\w+)$")
_KERNEL = re.compile(r"^nccl(?:Dev)?Kernel_(\w+?)(?:_|$)")
_SNAKE = {"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter", "Broadcast": "broadcast",
          "Reduce": "reduce", "SendRecv": "send_recv"}  # fmt: skip


def load_trace(path: str | Path) -> dict[str, Any]:
    """The trace JSON (gzip allowed); one clear error when it is not a Chrome trace."""
    path = Path(path)
    if path.is_dir():
        raise CollsimError(f"trace {str(path)!r} is a directory; give a trace file")
    if not path.is_file():
        raise CollsimError(f"trace {str(path)!r}: file not found")
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        data = json.loads(raw)
    except (OSError, ValueError) as error:
        raise CollsimError(f"trace {str(path)!r}: not a (gzipped) Chrome trace JSON ({error})") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if isinstance(events, list) and not events:
        raise CollsimError(f"trace {str(path)!r}: its traceEvents list is empty (the profiler recorded nothing); profile at least one step")
    if not isinstance(events, list):
        raise CollsimError(f"trace {str(path)!r}: no 'traceEvents' list; expected a torch.profiler export_chrome_trace file")
    return {
        "traceEvents": [e for e in events if isinstance(e, dict)],
        **({k: v for k, v in data.items() if k != "traceEvents"} if isinstance(data, dict) else {}),
    }


def _spans(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))]


def _end(event: dict[str, Any]) -> float:
    return float(event["ts"]) + float(event["dur"])


def _inside(event: dict[str, Any], start: float, end: float) -> bool:
    return float(event["ts"]) >= start - 1e-3 and _end(event) <= end + 1e-3


def _nbytes(args: dict[str, Any]) -> int | None:
    """Bytes of a collective from its args: record_param_comms' nelems, else the input dims."""
    dtype = args.get("dtype") or (args.get("Input type") or [None])[0]
    size = _DTYPE_BYTES.get(str(dtype), 4)
    for key in ("In msg nelems", "Out msg nelems"):
        if isinstance(args.get(key), (int, float)) and args[key] > 0:
            return int(args[key]) * size
    dims = args.get("Input Dims")
    if isinstance(dims, list) and dims and isinstance(dims[0], list) and dims[0]:
        return math.prod(int(d) for d in dims[0]) * size
    return None


def collectives(events: list[dict[str, Any]], start: float, end: float) -> list[dict[str, Any]]:
    """Collectives in the step window: op, source event name, start/duration (s, from step start), bytes."""
    rows = []
    for event in _spans(events):
        if not start - 1e-3 <= float(event["ts"]) <= end:  # started in the step (a comm thread may record its end later)
            continue
        name, args = str(event.get("name", "")), event.get("args") or {}
        match, kernel = _COLLECTIVE.match(name), _KERNEL.match(name)
        if match:
            op = match.group(1)
        elif kernel:
            op = _SNAKE.get(kernel.group(1), kernel.group(1).lower())
        elif name == "record_param_comms" and args.get("Collective name"):
            op = str(args["Collective name"]).removeprefix("_").removesuffix("_base")
        else:
            continue
        op = {
            "allreduce": "all_reduce",
            "allgather": "all_gather",
            "reduce_scatter_tensor": "reduce_scatter",
            "all_gather_into_tensor": "all_gather",
        }.get(op, op)
        rows.append({"op": op, "event": name, "start_s": (float(event["ts"]) - start) * 1e-6, "duration_s": float(event["dur"]) * 1e-6,
                     "bytes": _nbytes(args), "device": "gpu" if kernel else "cpu"})  # fmt: skip
    rows.sort(key=lambda row: row["start_s"])
    return _dedupe(rows)


def _dedupe(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Prefer GPU kernels when a trace has them (the annotations then time only the launch);
    drop record_param_comms rows that duplicate a gloo/nccl annotation of the same call."""
    if any(row["device"] == "gpu" for row in rows):
        return [row for row in rows if row["device"] == "gpu"]
    named = [row for row in rows if row["event"] != "record_param_comms"]
    return named or rows


def _step_window(events: list[dict[str, Any]]) -> tuple[float, float, str]:
    steps = [e for e in _spans(events) if str(e.get("name", "")).startswith("ProfilerStep#")]
    if steps:
        step = max(steps, key=lambda e: float(e["dur"]))
        return float(step["ts"]), _end(step), str(step["name"])
    ops = [e for e in _spans(events) if e.get("cat") in ("cpu_op", "user_annotation")]
    if not ops:
        raise CollsimError("trace: no CPU ops; record with torch.profiler (ProfilerActivity.CPU)")
    return min(float(e["ts"]) for e in ops), max(_end(e) for e in ops), "whole trace"


def _annotation(events: list[dict[str, Any]], name: str, start: float, end: float) -> dict[str, Any] | None:
    found = [e for e in _spans(events) if e.get("name") == name and e.get("cat") == "user_annotation" and _inside(e, start, end)]
    return min(found, key=lambda e: float(e["ts"])) if found else None


def phases(events: list[dict[str, Any]], start: float, end: float) -> dict[str, float]:
    """Absolute µs: forward_start, backward_start, backward_end (compute), optimizer_start, optimizer_end."""
    spans = [e for e in _spans(events) if _inside(e, start, end)]
    autograd = [e for e in spans if str(e.get("name", "")).startswith("autograd::engine::evaluate_function")]
    if not autograd:
        raise CollsimError("trace: no autograd::engine::evaluate_function ops in the step; was backward profiled?")
    forward, backward, optimizer = (_annotation(events, name, start, end) for name in ("forward", "backward", "optimizer"))
    backward_start = float(backward["ts"]) if backward else min(float(e["ts"]) for e in autograd)
    backward_end = max(_end(e) for e in autograd)
    optim = [e for e in spans if str(e.get("name", "")).startswith(("Optimizer.step#", "Optimizer.zero_grad#"))]
    if optimizer:
        optimizer_start, optimizer_end = float(optimizer["ts"]), _end(optimizer)
    elif optim:
        optimizer_start, optimizer_end = min(float(e["ts"]) for e in optim), max(_end(e) for e in optim)
    else:
        optimizer_start = optimizer_end = max(backward_end, float(backward["ts"]) + float(backward["dur"]) if backward else backward_end)
    forward_start = float(forward["ts"]) if forward else start
    return {"forward_start": forward_start, "backward_start": backward_start, "backward_end": backward_end, "optimizer_start": optimizer_start,
            "optimizer_end": optimizer_end}  # fmt: skip


def grad_ready(events: list[dict[str, Any]], start: float, end: float) -> list[tuple[float, tuple[int, ...]]]:
    """(end µs, gradient shape) of every AccumulateGrad op in the step, in time order."""
    rows = []
    for event in _spans(events):
        if event.get("name") == "torch::autograd::AccumulateGrad" and _inside(event, start, end):
            dims = (event.get("args") or {}).get("Input Dims")
            shape = tuple(int(d) for d in dims[0]) if isinstance(dims, list) and dims and isinstance(dims[0], list) else ()
            rows.append((_end(event), shape))
    if not rows:
        raise CollsimError("trace: no torch::autograd::AccumulateGrad ops: record with record_shapes=True and profile a backward pass")
    return sorted(rows)


def _match_params(
    ready: list[tuple[float, tuple[int, ...]]], params: list[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The parameter list and, per ready event, the parameter name (by shape; ties: the latest
    registered first, as gradients arrive in reverse registration order)."""
    if params is None:
        count = len(ready)
        names = [f"grad.{count - 1 - k}" for k in range(count)]  # registration order = reverse ready order
        plist = [{"name": f"grad.{i}", "shape": list(ready[count - 1 - i][1]), "numel": max(1, math.prod(ready[count - 1 - i][1])), "element_bytes": 4}
                 for i in range(count)]  # fmt: skip
        return plist, names
    if len(params) != len(ready):
        raise CollsimError(f"trace: {len(ready)} AccumulateGrad ops but the parameter list has {len(params)} tensors")
    free = list(range(len(params)))
    names = []
    for _, shape in ready:
        numel = math.prod(shape) if shape else None
        candidates = [i for i in free if numel is None or params[i]["numel"] == numel]
        if not candidates:
            raise CollsimError(f"trace: a gradient of shape {list(shape)} matches no remaining parameter of the list")
        chosen = max(candidates)
        free.remove(chosen)
        names.append(params[chosen]["name"])
    return params, names


def fit_comm(rows: list[dict[str, Any]]) -> dict[str, float] | None:
    """(o, w) of the all-reduces with known sizes: a least-squares line time = o + bytes / w."""
    from sim.training.overhead import fit_ow

    points = [(row["bytes"], row["duration_s"]) for row in rows if row["op"] == "all_reduce" and row["bytes"]]
    if len({size for size, _ in points}) < 2:
        if len(points) >= 1:
            size = sum(s for s, _ in points) / len(points)
            time_s = sum(t for _, t in points) / len(points)
            return {"o_s": 0.0, "w_Bps": size / time_s, "points": len(points)}
        return None
    o_s, w_Bps = fit_ow([s for s, _ in points], [t for _, t in points])
    if not (w_Bps > 0 and math.isfinite(w_Bps)) or o_s < 0:  # a line through noisy points: fall back to the mean rate
        return {"o_s": 0.0, "w_Bps": sum(s for s, _ in points) / sum(t for _, t in points), "points": len(points)}
    return {"o_s": o_s, "w_Bps": w_Bps, "points": len(points)}


def import_trace(path: str | Path, params: list[dict[str, Any]] | None = None, model: str | None = None) -> dict[str, Any]:
    """A ``collsim-ddp-profile`` document from a Kineto trace (see the module docstring)."""
    data = load_trace(path)
    events = data["traceEvents"]
    start, end, step_name = _step_window(events)
    p = phases(events, start, end)
    ready = grad_ready(events, start, end)
    plist, names = _match_params(ready, params)
    backward_start = p["backward_start"]
    grad_rows = [event_row(0, -1, "compute:0", "grad_ready", max(0.0, (t - backward_start) * 1e-6), max(0.0, (t - backward_start) * 1e-6),
                           0, 0, name=name) for (t, _), name in zip(ready, names)]  # fmt: skip
    layers, previous = [], backward_start
    for (t, _), name in zip(ready, names):
        layers.append({"name": name, "backward_s": max(0.0, (t - previous) * 1e-6)})
        previous = t
    comm = collectives(events, start, end)
    timeline = measured_rows(p, comm, (start - backward_start) * 1e-6)
    info = data.get("distributedInfo") or {}
    return {
        "kind": PROFILE_KIND,
        "model": model or f"imported from {Path(path).name}",
        "params": plist,
        "forward_s": (backward_start - p["forward_start"]) * 1e-6,
        "backward_s": (p["backward_end"] - backward_start) * 1e-6,
        "optimizer_s": (p["optimizer_end"] - p["optimizer_start"]) * 1e-6,
        "events": sorted(grad_rows + timeline, key=lambda row: (row["start_s"], row["kind"])),
        "trace": {
            "source": str(Path(path).name),
            "step": step_name,
            "step_s": (end - start) * 1e-6 if step_name != "whole trace" else (p["optimizer_end"] - p["forward_start"]) * 1e-6,
            "phase_step_s": (p["optimizer_end"] - p["forward_start"]) * 1e-6,
            "backward_wall_s": (p["optimizer_start"] - backward_start) * 1e-6,
            "backend": info.get("backend"),
            "world_size": info.get("world_size"),
            "rank": info.get("rank"),
            "layer_backward": layers,
            "collectives": comm,
            "ow": fit_comm(comm),
        },
    }


def measured_rows(phase_us: dict[str, float], comm: list[dict[str, Any]], step_offset_s: float) -> list[dict[str, Any]]:
    """A measured step's phases (forward, backward, optimizer on ``compute:0``) and collectives
    (``comm:0``) as event rows, seconds since backward start, as every timeline collsim writes
    (``sim.collective.results.EVENT_COLUMNS``); ``step_offset_s``: the step start in that clock."""
    origin = phase_us["backward_start"]
    rows = [
        event_row(0, -1, "compute:0", kind, (phase_us[start] - origin) * 1e-6, (phase_us[end] - origin) * 1e-6, name=kind)
        for kind, start, end in (("forward", "forward_start", "backward_start"), ("backward", "backward_start", "backward_end"),
                                 ("optimizer", "optimizer_start", "optimizer_end"))
    ]  # fmt: skip
    for row in comm:
        start_s = row["start_s"] + step_offset_s
        rows.append(event_row(0, -1, "comm:0", "comm", start_s, start_s + row["duration_s"], row["bytes"] or 0, name=row["op"]))
    return rows


def measured_trace(profile: dict[str, Any]) -> dict[str, Any]:
    """The Chrome trace of a measured timeline (a ``collsim-ddp-profile``'s event rows), by the
    writer every simulated result uses (:func:`sim.trace.chrome_trace`)."""
    events = profile.get("events") if isinstance(profile, dict) else None
    if not isinstance(events, list) or not events:
        raise CollsimError("measured_trace: the profile has no event rows; give a collsim-ddp-profile with 'events'")
    return chrome_trace(events)


# --- recording ----------------------------------------------------------------------------


def trace_worker(ctx: Any, payload: dict[str, Any]) -> None:
    """A few warm-up DDP steps, then one profiled step (CPU activities, shapes); rank 0 writes the trace."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from real.models import fresh_model, global_batch, model_spec, shard

    spec = model_spec(payload["model"])
    device = ctx.torch_device()
    model = torch.nn.parallel.DistributedDataParallel(fresh_model(spec, 0, device))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step(index: int) -> None:
        inputs, targets = global_batch(spec, 0, index, device, ctx.world_size)
        inputs, targets = shard(inputs, ctx.rank, ctx.world_size), shard(targets, ctx.rank, ctx.world_size)
        with record_function("forward"):
            loss = spec.loss(model, inputs, targets)
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    for index in range(payload["warmup"]):
        ctx.status(f"trace warm-up step {index}")
        step(index)
    torch.distributed.barrier()
    ctx.status("profiled step")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities, record_shapes=True) as prof:
        with record_function(f"ProfilerStep#{payload['warmup']}"):
            step(payload["warmup"])
        torch.distributed.barrier()  # gloo's worker threads finish recording before the profiler stops
    if ctx.rank == 0:
        out = Path(payload["path"])
        if out.suffix == ".gz":
            plain = out.with_suffix("")
            prof.export_chrome_trace(str(plain))
            out.write_bytes(gzip.compress(plain.read_bytes()))
            plain.unlink()
        else:
            prof.export_chrome_trace(str(out))
        ctx.report({"path": str(out)})
    torch.distributed.barrier()


def record_ddp_trace(path: str, launch_config: Any, model: str = "small", warmup: int = 3) -> list[dict[str, Any]]:
    from real.launcher import launch

    return launch(trace_worker, {"path": path, "model": model, "warmup": warmup}, launch_config)
