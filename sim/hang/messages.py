"""What each tool prints for a rank, in torch's own words (formats read from torch's source and
checked against real gloo ranks by ``tests/real/test_hang_real.py``; quirks kept: the DETAIL
fingerprint counts from 0 and writes ``ALLREDUCEvs BROADCAST``, a barrier's fingerprint has no
comma before ``OpType``, NCCL's barrier is a one-element all-reduce)."""

from __future__ import annotations

from sim.hang.match import Blocked, Mismatch, wrapper_view
from sim.hang.programs import DTYPES, Call, Programs

__all__ = [
    "SCALAR_NAMES",
    "WATCHDOG_POLL_MS",
    "detail_fingerprint",
    "detail_barrier_peer",
    "detail_mismatch",
    "detail_monitored_barrier",
    "gloo_size_abort",
    "gloo_timeout",
    "nccl_op_type",
    "nccl_streams_note",
    "nccl_watchdog",
    "numel",
    "pg_prefix",
]

WATCHDOG_POLL_MS = 100  # ProcessGroupNCCL's watchdog checks its work list this often
_NCCL_OP = {
    "all_gather": "_ALLGATHER_BASE",
    "reduce_scatter": "_REDUCE_SCATTER_BASE",
    "all_to_all": "ALLTOALL_BASE",
    "barrier": "ALLREDUCE",
}
_WRAPPER_OP = {"all_gather": "ALLGATHER", "reduce_scatter": "_REDUCE_SCATTER_BASE", "all_to_all": "ALLTOALL_BASE"}
SCALAR_NAMES = {  # c10's ScalarType names, as fingerprints and flight-recorder dumps print dtypes
    "float32": "Float",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "float64": "Double",
    "int64": "Long",
    "int32": "Int",
    "uint8": "Byte",
}
_OPTIONS = "TensorOptions(dtype=float (default), device={device}, layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))"


def nccl_op_type(call: Call) -> str:
    """WorkNCCL's OpType for a call (FSDP's all-gather and reduce-scatter are the tensor forms)."""
    return _NCCL_OP.get(call.op, call.op.replace("_", "").upper())


def numel(call: Call, group_size: int) -> tuple[int, int]:
    """(NumelIn, NumelOut) of a call on a group of ``group_size`` ranks."""
    if call.op == "barrier":
        return 1, 1
    if call.op == "all_gather":
        return call.count, call.count * group_size
    if call.op == "reduce_scatter":
        return call.count, call.count // group_size
    return call.count, call.count


def pg_prefix(programs: Programs, group: str, rank: int) -> str:
    """ProcessGroupNCCL's log prefix: the world is PG 0 'default_pg', new groups count from 1."""
    names = ["world"] + sorted(name for name in programs.groups if name != "world")
    index = names.index(group)
    return f"[PG ID {index} PG GUID {index}(default_pg) Rank {rank}] " if index == 0 else f"[PG ID {index} PG GUID {index} Rank {rank}] "


def nccl_watchdog(programs: Programs, blocked: Blocked, last_completed: int) -> list[str]:
    """The two lines NCCL's watchdog logs for a rank blocked past the timeout."""
    timeout_ms = round(programs.timeout_for("nccl") * 1000)
    numel_in, numel_out = numel(blocked.call, len(programs.groups[blocked.call.group]))
    prefix = pg_prefix(programs, blocked.call.group, blocked.rank)
    work = f"WorkNCCL(SeqNum={blocked.seq}, OpType={nccl_op_type(blocked.call)}, NumelIn={numel_in}, NumelOut={numel_out}, Timeout(ms)={timeout_ms})"
    return [
        f"{prefix}Watchdog caught collective operation timeout: {work} ran for {timeout_ms + WATCHDOG_POLL_MS} milliseconds before timing out.",
        f"{prefix}Timeout at NCCL work: {blocked.seq}, last enqueued NCCL work: {blocked.seq}, last completed NCCL work: {last_completed}.",
    ]


def nccl_streams_note(groups: list[str]) -> str:
    """When a wait-for cycle across process groups hangs NCCL: each group is its own
    communicator on its own CUDA stream, and a rank enqueues a collective without waiting for it."""
    names = " and ".join(groups)
    return (
        f"groups {names} are separate NCCL communicators, each on its own CUDA stream, and a rank enqueues a call without "
        "waiting for it: with async_op=False (the default) the current stream waits for the first call and the second "
        "group's stream waits for the current stream, so the GPUs deadlock (the timeouts below) though no host thread "
        "blocks; issued with async_op=True before either wait(), the second not using the first's output, the two calls "
        "may both run and complete (NCCL does not promise to run two communicators' kernels at once). gloo blocks the "
        "host in the first call and always deadlocks"
    )


def detail_fingerprint(call: Call, seq: int, device: str = "cpu") -> str:
    """ProcessGroupWrapper's CollectiveFingerPrint (``seq``: 1-based; the wrapper counts from 0)."""
    op = _WRAPPER_OP.get(call.op, call.op.replace("_", "").upper())
    if call.op == "barrier":
        return f"CollectiveFingerPrint(SequenceNumber={seq - 1}OpType={op})"
    return (
        f"CollectiveFingerPrint(SequenceNumber={seq - 1}, OpType={op}, TensorShape=[{call.count}], "
        f"TensorDtypes={SCALAR_NAMES[call.dtype]}, TensorDeviceTypes={_OPTIONS.format(device=device)})"
    )


def detail_mismatch(mismatch: Mismatch, rank: int, device: str = "cpu") -> str:
    """The error ``rank`` raises under TORCH_DISTRIBUTED_DEBUG=DETAIL: its fingerprint against the
    lowest rank whose fingerprint differs."""
    own = mismatch.calls[rank]
    own_view = wrapper_view(own)
    other_rank = next(r for view, r in mismatch.first_ranks.items() if view != own_view)
    other = mismatch.calls[other_rank]
    return (
        f"Detected mismatch between collectives on ranks. Rank {rank} is running collective: "
        f"{detail_fingerprint(own, mismatch.seq, device)}, but Rank {other_rank} is running collective: "
        f"{detail_fingerprint(other, mismatch.seq, device)}.{_differences(own, other)}"
    )


def _differences(own: Call, other: Call) -> str:
    text = "Collectives differ in the following aspects: "
    if own.op != other.op:
        text += f"  Op type: {_WRAPPER_OP.get(own.op, own.op.replace('_', '').upper())}vs {_WRAPPER_OP.get(other.op, other.op.replace('_', '').upper())}"
    if own.count != other.count and "barrier" not in (own.op, other.op):
        text += f"  Tensor Tensor shapes: {own.count}vs {other.count}"
    if own.dtype != other.dtype and "barrier" not in (own.op, other.op):
        text += f"  Tensor Tensor dtypes: {SCALAR_NAMES[own.dtype]}vs {SCALAR_NAMES[other.dtype]}"
    return text


def detail_monitored_barrier(timeout_s: float, missing: list[int]) -> str:
    """What rank 0 of a group raises under DETAIL when ranks never reach the collective."""
    return f"[Rank 0]: Ranks {', '.join(map(str, missing))} failed to pass monitoredBarrier in {round(timeout_s * 1000)} ms"


def detail_barrier_peer(timeout_s: float, group_rank: int, first: int = 0) -> str:
    """What the other ranks of that group raise under DETAIL: its rank 0 never answered them."""
    return (
        f"Rank {group_rank} successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank {first}. "
        f"Please check rank {first} logs for faulty rank. Original exception: Timed out waiting {round(timeout_s * 1000)}ms for send operation to complete"
    )


def gloo_timeout(timeout_s: float, op: str = "recv") -> str:
    """gloo's error for a call whose peer never answers (a send waits on the send side)."""
    return f"Timed out waiting {round(timeout_s * 1000)}ms for {'send' if op == 'send' else 'recv'} operation to complete"


def gloo_size_abort(received: Call, expected: Call, group_size: int) -> str:
    """gloo's abort on the rank that receives more bytes than it posted: its ring all-reduce cuts
    a buffer into 2 x group-size segments of whole elements, the first ceil(count / segments)
    each (checked on gloo ranks: 1003 against 1000 floats gives "1004 vs 1000", 4096 against 1
    gives "4096 vs 4")."""
    segments = 2 * group_size
    big = -(-received.count // segments) * DTYPES[received.dtype]
    small = -(-expected.count // segments) * DTYPES[expected.dtype]
    return (
        f"op.preamble.length <= op.nbytes. {big} vs {small}. Received data size doesn't match expected size. "
        "Is there a distributed collective mismatch in your code?"
    )
