"""NCCL's protocols and chunking as data (NCCL v2.27.7-1), and NCCL_ALGO / NCCL_PROTO parsing.

Everything here is a fact of NCCL's source, cited in docs/nccl-model.md:

- ``src/include/device.h``: NCCL_STEPS = 8 slots per connection; the buffers per protocol
  (Simple DEFAULT_BUFFSIZE 4 MiB, LL 8 lines x 512 threads x 8 steps x 16 B = 512 KiB, LL128
  120 elements x 640 threads x 8 steps x 8 B = 4,915,200 B); LL lines carry 8 data bytes in 16
  (4 of every 8), LL128 lines 120 of 128 bytes.
- ``src/include/collectives.h``: ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS = NCCL_STEPS/2,
  SLICESTEPS = NCCL_STEPS/4 (Simple ring only; everything else steps one slot at a time).
- ``src/enqueue.cc`` (``calcCollChunking``): chunkSize = stepSize x chunkSteps, halved for LL,
  x 15/16 for LL128; NVLS/NVLSTree chunk 128 KiB (nvlsChunkSize) and their small-size cuts.
- ``src/enqueue.cc`` (``topoGetAlgoInfo``): Ring/Tree drop channels while nBytes < nc x nt x
  threadThreshold (thresholds 64 Simple, 8 LL x nRanks for Ring, 8 LL128; nt 512/512/640).
- ``src/transport/nvls.cc``: NVLS_NCHANNELS_SM90 16, SM100 32 (24 on one NVL domain).
- ``src/graph/tuning.cc`` (``parseList``): NCCL_ALGO / NCCL_PROTO syntax.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.errors import CollsimError

NCCL_STEPS = 8
ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
PROTOCOLS = ("LL", "LL128", "Simple")
FUNCTION_NAMES = {"broadcast": "Broadcast", "reduce": "Reduce", "all_gather": "AllGather",
                  "reduce_scatter": "ReduceScatter", "all_reduce": "AllReduce"}  # fmt: skip


@dataclass(frozen=True)
class Protocol:
    """One protocol's wire format and buffer."""

    name: str
    buff_bytes: int  # comm->buffSizes[proto]
    data_per_wire: float  # useful bytes per byte on the wire
    max_threads: int  # comm->maxThreads[Ring][proto]
    thread_threshold: int  # NCCL_*_THREAD_THRESHOLD

    @property
    def step_bytes(self) -> int:
        return self.buff_bytes // NCCL_STEPS


SIMPLE = Protocol("Simple", 1 << 22, 1.0, 512, 64)
LL = Protocol("LL", 8 * 512 * NCCL_STEPS * 16, 0.5, 512, 8)
LL128 = Protocol("LL128", 120 * 640 * NCCL_STEPS * 8, 120 / 128, 640, 8)
BY_NAME = {p.name: p for p in (SIMPLE, LL, LL128)}
NVLS_CHUNK = 128 * 1024  # comm->nvlsChunkSize (NCCL_NVLS_CHUNKSIZE default)


@dataclass(frozen=True)
class Chunking:
    """How one channel moves its data: messages (slices) of ``slice_bytes`` data bytes, each
    holding ``slice_steps`` of the connection's NCCL_STEPS slots (so NCCL_STEPS // slice_steps
    may be in flight per peer)."""

    chunk_bytes: int
    slice_bytes: int
    slice_steps: int

    @property
    def in_flight(self) -> int:
        return max(1, NCCL_STEPS // self.slice_steps)


def chunking(algorithm: str, protocol: str, nbytes: int, channels: int, nodes: int, ranks: int, heads: int = 1,
             simple_buff_bytes: int | None = None) -> Chunking:  # fmt: skip
    """calcCollChunking's chunk and slice for ``algorithm``/``protocol`` (data bytes); ``heads``:
    NVLS's heads a channel (``nvls.nHeads``), for the NVLS/NVLSTree cuts; ``simple_buff_bytes``:
    NCCL_BUFFSIZE where the machine sets it (Simple's stepSize = buffSizes / NCCL_STEPS)."""
    proto = BY_NAME[protocol]
    ring_simple = algorithm == "Ring" and protocol == "Simple"
    chunk_steps = NCCL_STEPS // 2 if ring_simple else 1
    slice_steps = NCCL_STEPS // 4 if ring_simple else 1
    step = (simple_buff_bytes or proto.buff_bytes) // NCCL_STEPS if protocol == "Simple" else proto.step_bytes
    chunk = step * chunk_steps
    if protocol == "LL":
        chunk //= 2
    elif protocol == "LL128":
        chunk = chunk // 16 * 15  # (chunkSize / NCCL_LL128_LINEELEMS) * NCCL_LL128_DATAELEMS
    if algorithm in ("NVLS", "NVLSTree"):
        chunk = _nvls_chunk(algorithm, nbytes, channels * heads, nodes)
    elif algorithm == "Tree" and protocol == "LL128":
        ppn = ranks / nodes
        steps = 1 + max(nodes.bit_length() - 1, 0) + 0.1 * ppn
        while nbytes // (channels * chunk) < steps * 64 / ppn and chunk > 131072:
            chunk //= 2
        while nbytes // (channels * chunk) < steps * 16 / ppn and chunk > 32768:
            chunk //= 2
    slice_bytes = chunk * slice_steps // chunk_steps
    return Chunking(chunk, max(slice_bytes, 1), slice_steps)


def _nvls_chunk(algorithm: str, nbytes: int, ops: int, nodes: int) -> int:
    """enqueue.cc:2003-2027 (v2.27.7-1): ``ops`` = concurrentOps = nChannels x nvls.nHeads, the
    heads being the NVLS graph's distinct head GPUs (connect.cc:73-86, 254), 8 on an H100 node."""
    chunk = NVLS_CHUNK
    if algorithm == "NVLSTree":
        if nodes >= 4:
            chunk = 65536
        cuts = ((32, 262144), (16, 131072), (4, 65536), (1, 32768))
    else:
        cuts = ((64, 65536), (8, 32768), (2, 16384))
    for factor, size in cuts:
        if nbytes < factor * ops * chunk and chunk > size:
            chunk = size
    return chunk


def channels_used(algorithm: str, protocol: str, nbytes: int, channels: int, ranks: int) -> int:
    """topoGetAlgoInfo's channel count for Ring and Tree: fewer channels for small calls."""
    if algorithm not in ("Ring", "Tree"):
        return channels
    proto = BY_NAME[protocol]
    threshold = proto.thread_threshold * (ranks if algorithm == "Ring" and protocol == "LL" else 1)
    nc = channels
    while nbytes < nc * proto.max_threads * threshold and nc >= 2:
        nc -= 1
    return nc


def parse_selection(text: str | None, names: tuple[str, ...], what: str, op: str) -> set[str]:
    """The names NCCL_ALGO / NCCL_PROTO = ``text`` leave enabled for ``op`` (tuning.cc parseList):
    a comma list, case-insensitive, ``^`` in front to exclude the list instead; entries after
    the first may be ``Function:list``, separated by ``;``. None or empty: all."""
    enabled = set(names)
    if not text or not text.strip():
        return enabled
    function = FUNCTION_NAMES.get(op, op)
    for index, token in enumerate(text.split(";")):
        prefix, _, items = token.rpartition(":")
        if not prefix and index:
            raise CollsimError(f"--{what}: every entry after the first needs a 'Function:' prefix, got {token!r} in {text!r}")
        if prefix and prefix.strip().lower() not in {f.lower() for f in FUNCTION_NAMES.values()}:
            raise CollsimError(f"--{what}: unknown function {prefix!r}; allowed: {', '.join(FUNCTION_NAMES.values())}")
        if prefix and prefix.strip().lower() != function.lower():
            continue
        exclude = items.strip().startswith("^")
        listed = set()
        for item in items.strip().lstrip("^").split(","):
            match = [name for name in names if name.lower() == item.strip().lower()]
            if not match:
                raise CollsimError(
                    f"--{what}: unknown {what.split('-')[-1]} {item.strip()!r}; allowed: {', '.join(names)} (comma list, ^ to exclude)"
                )
            listed.add(match[0])
        enabled = set(names) - listed if exclude else listed
    return enabled
