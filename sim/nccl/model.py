"""NCCL's own cost model and choice, as in NCCL v2.27.7-1 (tag ``v2.27.7-1`` of NVIDIA/nccl).

Follows ``src/graph/tuning.cc`` (``ncclTopoTuneModel``: per-(function, algorithm, protocol)
latency in us and bandwidth in GB/s; ``ncclTopoGetAlgoTime``: ``time = lat + nBytes / (1000 *
bw)`` with the tree correction factors and the ring plateau factor) and ``src/enqueue.cc``
(``updateCollCostTable`` skips what the communicator cannot run; ``topoGetAlgoInfo`` takes the
smallest time, algorithms outer, protocols inner, the first one on ties). The machine side (the
channel graphs NCCL's topology search finds, compute capability, CPU vendor, NVLS/CollNet
support) comes from a hardware preset (:mod:`sim.hardware.presets`). Computed in double
precision (NCCL uses float: times agree to about 1e-7 relative).

Other release lines (2.19 to 2.29) are records in :mod:`sim.nccl.versions`: ``predict(...,
nccl_version="2.21")`` reads that line's constants and rules; the module constants below are the
default record's (the DES's hop latencies read them). Not modelled: tuner plugins, aggregated launches
(numPipeOps = 1), fp8 datatypes, user buffer registration.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.algorithms.registry import busbw_factor
from sim.errors import CollsimError
from sim.hardware.presets import PATH_TYPES, Graph, NcclSystem, Preset, effective, list_presets, load_preset
from sim.nccl.p2p import refuse_selection
from sim.nccl.p2p_model import P2P_OPS, p2p_terms
from sim.nccl.proto import parse_selection
from sim.nccl.versions import NcclVersion
from sim.nccl.versions import nccl_version as nccl_version_record

NCCL_VERSION = "2.27.7-1"  # the default record's (sim.nccl.versions.DEFAULT); --nccl-version picks another
ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")  # NCCL_ALGO_* order
PROTOCOLS = ("LL", "LL128", "Simple")  # NCCL_PROTO_* order
FUNCTIONS = ("broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce")  # ncclFunc_t order
TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT = range(7)
LL, LL128, SIMPLE = range(3)
NVLINK, PCI, NET = range(3)

# The default record's tables (sim.nccl.versions cites each line). Latencies in us, rows Tree, Ring,
# CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT; bandwidth rows Volta, Ampere, Hopper, Blackwell
# (llMaxBws rows 1-3 for multi-node: Intel, AMD), columns N1, N2, N4. The Blackwell rows of the
# per-channel caps are NCCL v2.29.2-1's (measured values), where v2.27.7-1 had 2 x Hopper placeholders.
_DEFAULT = nccl_version_record()
BASE_LAT = _DEFAULT.base_lat
HW_LAT = _DEFAULT.hw_lat
LL_MAX_BWS = _DEFAULT.ll_max_bws
PER_CH_MAX_RING_LL128_BWS = _DEFAULT.per_ch_max_ring_ll128_bws
PER_CH_MAX_TREE_LL128_BWS = _DEFAULT.per_ch_max_tree_ll128_bws
PER_CH_MAX_TREE_BWS = _DEFAULT.per_ch_max_tree_bws
# Powers of two, 64 B to 256 MB, per protocol
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0),
    (0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9),
)
# 2.29: 24 factors (one more power of two, 512 MB), read by NVLSTree's correction only (tuning.cc:581-585)
TREE_CORRECTION_24 = tuple((*row, last) for row, last in zip(TREE_CORRECTION, (1.0, 1.0, 0.9)))
MAX_NVLS_ARITY = 32
MAXCHANNELS = 32
_PATH = {name: index for index, name in enumerate(PATH_TYPES)}


@dataclass(frozen=True)
class Candidate:
    algorithm: str
    protocol: str
    time_s: float


@dataclass(frozen=True)
class Prediction:
    """NCCL's choice for one call and every (algorithm, protocol) it weighed."""

    hardware: str
    nodes: int
    ranks: int
    op: str
    size_bytes: int
    nccl_algorithm: str
    nccl_protocol: str
    time_s: float
    algbw_GBps: float | None
    busbw_GBps: float | None
    candidates: tuple[Candidate, ...]
    nccl_version: str = NCCL_VERSION  # the tag of the record used, without its "v"

    def to_dict(self) -> dict:
        return {
            "model": "nccl",
            "nccl_version": self.nccl_version,
            "hardware": self.hardware,
            "nodes": self.nodes,
            "ranks": self.ranks,
            "op": self.op,
            "size_bytes": self.size_bytes,
            "nccl_algorithm": self.nccl_algorithm,
            "nccl_protocol": self.nccl_protocol,
            "time_s": self.time_s,
            "algbw_GBps": self.algbw_GBps,
            "busbw_GBps": self.busbw_GBps,
            "candidates": [{"algorithm": c.algorithm, "protocol": c.protocol, "time_s": c.time_s} for c in self.candidates],
        }


def log2i(n: int) -> int:
    """NCCL's log2i: floor(log2 n), -1 for n <= 0."""
    return n.bit_length() - 1 if n > 0 else -1


@dataclass(frozen=True)
class Tables:
    """comm->bandwidths and comm->latencies for one communicator: [function][algorithm][protocol]."""

    bandwidths: tuple
    latencies: tuple
    nodes: int
    ranks: int
    comm_channels: int
    compute_capability: int
    version: NcclVersion = _DEFAULT
    x86: bool = True  # comm->cpuArch == x86 (2.29's NVLSTree correction)


def tune(system: NcclSystem, nodes: int, gpus_per_node: int, version: NcclVersion = _DEFAULT) -> Tables:
    """ncclTopoTuneModel plus the enable/disable rules that follow it in tuning.cc, as ``version`` has them."""
    v = version
    ranks = nodes * gpus_per_node
    graphs = _graphs(system, nodes)
    bandwidths = [[[0.0] * 3 for _ in ALGORITHMS] for _ in FUNCTIONS]
    latencies = [[[0.0] * 3 for _ in ALGORITHMS] for _ in FUNCTIONS]
    if ranks > 1:
        for func in range(len(FUNCTIONS)):
            for algo in range(len(ALGORITHMS)):
                if not _considered(func, algo, v) or graphs[algo] is None:
                    continue
                for proto in range(3):
                    if not _considered_proto(system, func, algo, proto, nodes, ranks, v):
                        continue
                    bandwidths[func][algo][proto] = _bandwidth(system, graphs, func, algo, proto, nodes, ranks, v)
                    latencies[func][algo][proto] = _latency(system, func, algo, proto, nodes, ranks, v)
        _disable(system, graphs, bandwidths, nodes, ranks, v)
    channels = comm_channels(system, nodes, v)
    return Tables(_freeze(bandwidths), _freeze(latencies), nodes, ranks, channels, system.compute_capability, v, system.cpu_arch == "x86")


def comm_channels(system: NcclSystem, nodes: int, version: NcclVersion = _DEFAULT) -> int:
    """comm->nChannels, the channels topoGetAlgoInfo starts a Ring/Tree call from (enqueue.cc:1831,
    v2.27.7-1), as ncclTopoPostset sets it (connect.cc:452-495): the ring/tree graphs' channels
    doubled (at most 32); doubled again on SM90+ (2.21-2.24: SM90 only) across nodes while the ring graph's bwIntra > 45
    and fewer than 16 ("4 compute channels per search channel", :466-468); then, up to 2.27, raised
    to the NVLS channels where NVLS is on (:493-495, copies of the rings: 32 on 2 x hgx-b200, where
    the graphs give 16; 2.28 dropped the copy). No NCCL_MIN/MAX_NCHANNELS (defaults)."""
    ring, tree = system.graph("ring", nodes), system.graph("tree", nodes)
    channels = min(ring.n_channels, tree.n_channels) if ring and tree else (ring or tree).n_channels
    channels = min(MAXCHANNELS, 2 * channels)
    cc, release = system.compute_capability, _release(version)
    hopper_on = cc == 90 if release <= (2, 24) else cc >= 90  # "minCompCap == 90" up to 2.24 (v2.24.3-1 :468)
    if hopper_on and nodes > 1 and ring is not None and ring.bw_intra > 45.0 and channels < 16:
        channels *= 2
    if system.nvls and _nvls_copies_channels(version):
        channels = max(channels, nvls_channels(cc, nodes, version))
    return channels


def _release(version: NcclVersion) -> tuple[int, int]:
    """(major, minor) of a record's release line ("2.26.2" -> (2, 26))."""
    major, minor = version.name.split(".")[:2]
    return int(major), int(minor)


def _nvls_copies_channels(version: NcclVersion) -> bool:
    """connect.cc copies the rings up to comm->nvlsChannels in 2.21-2.27 (v2.27.7-1 :493-495);
    v2.28.3-1 connect.cc has no such copy."""
    return _release(version) <= (2, 27)


def nvls_channels(compute_capability: int, nodes: int, version: NcclVersion = _DEFAULT) -> int:
    """comm->nvlsChannels (src/transport/nvls.cc ncclNvlsInit): NCCL_NVLS_NCHANNELS' default 16 up
    to 2.24 (v2.24.3-1 nvls.cc:146); from 2.25 NVLS_NCHANNELS_SM90 16 and SM100 32 (v2.25.1-1
    :144-145); from 2.27 SM100 24 within one node or NVLink domain (v2.27.7-1 :147-149, 193)."""
    release = _release(version)
    if release <= (2, 24) or compute_capability < 100:
        return 16
    return 24 if nodes == 1 and release >= (2, 27) else 32


def _freeze(table: list) -> tuple:
    return tuple(tuple(tuple(row) for row in algos) for algos in table)


def _graphs(system: NcclSystem, nodes: int) -> list[Graph | None]:
    ring, tree = system.graph("ring", nodes), system.graph("tree", nodes)
    nvls = system.graph("nvls", nodes) if system.nvls else None
    if ring is None or tree is None:
        raise CollsimError(f"hardware: the preset has no NCCL ring/tree graph for {nodes} node(s)")
    # init.cc: graphs = { tree, ring, collNetDirect, collNetChain, nvls, nvls, tree }; no CollNet graph without SHARP
    collnet = ring if system.collnet else None
    return [tree, ring, collnet, collnet, nvls, nvls, tree]


def _considered(func: int, algo: int, version: NcclVersion = _DEFAULT) -> bool:
    name = FUNCTIONS[func]
    if algo == PAT and not version.pat:
        return False
    if name in ("broadcast", "reduce") and algo != RING:
        return False
    if name in ("reduce_scatter", "all_gather") and algo not in (PAT, RING, NVLS, COLLNET_DIRECT):
        return False
    if name in ("reduce_scatter", "all_gather") and algo == COLLNET_DIRECT and not version.collnet_direct_ag_rs:
        return False
    return not (name == "all_reduce" and algo == PAT)


def _considered_proto(
    system: NcclSystem, func: int, algo: int, proto: int, nodes: int, ranks: int, version: NcclVersion = _DEFAULT
) -> bool:
    if algo in (NVLS, NVLS_TREE) and proto != SIMPLE:
        return False
    if FUNCTIONS[func] in ("reduce_scatter", "all_gather") and algo == PAT:
        # ncclPatEnable: SM60+ (2.26+), one GPU per node, host-driven network
        return proto == SIMPLE and system.compute_capability >= version.pat_min_cc and nodes == ranks
    return True


def compcap_index(cc: int) -> int:
    """The compute-capability row of NCCL's bandwidth tables (tuning.cc compCapIndex: Volta,
    Ampere, Hopper, Blackwell)."""
    return 3 if cc >= 100 else 2 if cc >= 90 else 1 if cc >= 80 else 0


def _bandwidth(
    system: NcclSystem, graphs: list, func: int, algo: int, proto: int, nodes: int, ranks: int, version: NcclVersion = _DEFAULT
) -> float:
    v, graph, name = version, graphs[algo], FUNCTIONS[func]
    cc_index = v.compcap_index(system.compute_capability)
    index2 = nodes - 1 if nodes <= 2 else 2
    index1 = cc_index if nodes == 1 else (1 if system.cpu_vendor == "amd" else 0)
    ll_max_bw = v.ll_max_bws[index1][index2]
    ppn = ranks / nodes
    collnet = algo in (COLLNET_DIRECT, COLLNET_CHAIN)
    bw = graph.bw_intra if nodes <= 2 or collnet else graph.bw_inter
    if algo in (NVLS, NVLS_TREE):
        bw = _nvls_bw(v, graph, name == "all_reduce", algo, nodes, ppn, cc_index, index2)
    bus_bw = graph.n_channels * bw
    if algo == RING and proto == LL:
        bus_bw = min(ll_max_bw, bus_bw * v.ring_ll_factor(nodes, name))
    if algo == RING and proto == LL128:
        factor = v.ring_ll128_ppn1_factor if ppn < 2 else 0.92  # <= 2.22: 0.7 at one GPU per node
        bus_bw = min(bus_bw * factor, graph.n_channels * v.per_ch_max_ring_ll128_bws[cc_index][index2])
    if algo == TREE and name == "all_reduce":
        bus_bw = min(bus_bw * 0.92, graph.n_channels * v.per_ch_max_tree_bws[cc_index][index2])
    if algo == TREE and proto == LL:
        bus_bw = min(bus_bw * 1.0 / 3.8, ll_max_bw)
    if algo == TREE and proto == LL128:
        bus_bw = min(
            bus_bw * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), graph.n_channels * v.per_ch_max_tree_ll128_bws[cc_index][index2]
        )
    # maxTreePattern == NCCL_TOPO_PATTERN_TREE (x0.85) only where the tree search falls back to a
    # plain tree; the presets' trees are balanced trees
    if algo == PAT:
        bus_bw *= v.pat_bw_factor
    if collnet and proto != SIMPLE:
        bus_bw = 0.0
    if algo == COLLNET_DIRECT and proto == SIMPLE:
        if name in ("all_gather", "reduce_scatter"):
            bus_bw = ppn * min(graph.bw_intra, graph.bw_inter * 0.9)
        else:
            factor = ppn / graph.n_channels
            factor -= (factor - 1) / 2
            bus_bw /= factor
            if system.compute_capability >= 90:
                bus_bw *= 0.85
    if algo in (NVLS, COLLNET_DIRECT) and proto == SIMPLE and name in ("all_gather", "reduce_scatter") and nodes > 1:
        bus_bw = 0.0  # needs a collnet plugin with iallgather/ireducescatter and 1:1 GPU:NIC heads
    if not (algo != RING and name in ("all_gather", "reduce_scatter")) or (v.nvls_ratio_ag_rs and algo == NVLS):
        nsteps = _nsteps(name, ranks)
        if algo == RING or (algo in (NVLS, NVLS_TREE) and v.nvls_bw == "efficiency"):
            ratio = ranks / nsteps
        elif algo in (NVLS, NVLS_TREE):
            ratio = 5.0 / 6.0
        else:
            ratio = 0.5
        bus_bw *= ratio
    return bus_bw


def _nvls_bw(v: NcclVersion, graph: Graph, all_reduce: bool, algo: int, nodes: int, ppn: float, cc_index: int, index2: int) -> float:
    """The per-channel bw NVLS / NVLSTree start from: min(intra, inter) (<= 2.26); 2.27 splits
    all_gather/reduce_scatter; 2.28+ scales bwIntra by nvlsEfficiency and needs 2 channels."""
    if v.nvls_bw == "efficiency":
        if graph.n_channels < 2:
            return 0.0
        intra = graph.bw_intra * v.nvls_efficiency[cc_index] * (graph.n_channels - 1) / graph.n_channels
        intra *= 2.0 if all_reduce else (ppn - 1) / ppn  # all_reduce pipelines two operations
        inter = graph.bw_inter * (2 if nodes <= 2 and algo == NVLS_TREE else 1)
        return min(intra, inter, v.per_ch_max_nvls_tree_bws[cc_index][index2] if algo == NVLS_TREE else float("inf"))
    if algo == NVLS_TREE:
        return min(graph.bw_intra, graph.bw_inter if nodes <= 2 else graph.bw_inter / 2)
    if all_reduce or v.nvls_bw == "min":
        return min(graph.bw_intra, graph.bw_inter)
    return min(graph.bw_intra * (ppn - 1.0) / ppn, graph.bw_inter * 0.9)


def _nsteps(name: str, ranks: int) -> int:
    if name == "all_reduce":
        return 2 * (ranks - 1)
    if name in ("reduce_scatter", "all_gather"):
        return ranks - 1
    return ranks


def net_overhead_us(system: NcclSystem, protocol: str = "LL") -> float:
    """What NCCL's model charges a multi-node ring for each step's network post, in us:
    getNetOverhead (v2.27.7-1 src/graph/tuning.cc:204-209: 2 on x86 AMD, else 1; the same in
    2.19-2.29), x 3 for Simple (:351). The ring's step costs at least this ("Inter-node rings still
    have to launch nsteps * net overhead", :347-353); the DES charges it on the proxy thread
    that posts the sends (sim.nccl.path.Proxy)."""
    return (2.0 if system.cpu_vendor == "amd" else 1.0) * (3 if protocol == "Simple" else 1)


def _latency(system: NcclSystem, func: int, algo: int, proto: int, nodes: int, ranks: int, version: NcclVersion = _DEFAULT) -> float:
    v, name = version, FUNCTIONS[func]
    intra_hw = NVLINK if system.type_intra == "NVL" else PCI
    hw = intra_hw if nodes == 1 else NET
    ppn = ranks / nodes
    latency = v.base_lat[algo][proto]
    intra_lat = v.hw_lat[intra_hw][algo][proto]
    inter_lat = v.hw_lat[NET][TREE][proto] if ppn == 1 and v.inter_lat_tree_at_ppn1 else v.hw_lat[NET][algo][proto]
    inter_lat += system.latency_inter_us
    if proto == SIMPLE:
        inter_lat += system.latency_inter_us  # the flush
    nsteps = _nsteps(name, ranks)
    local = ranks // nodes
    if algo == RING:
        lat = v.hw_lat[hw][algo][proto]
        if name in ("reduce", "broadcast"):
            if system.same_channels:
                return latency + lat
            if proto == SIMPLE:
                lat = v.hw_lat[hw][TREE][proto]
            return latency + nsteps * lat
        net_overhead = net_overhead_us(system, PROTOCOLS[proto]) if nodes > 1 else 0.0
        intra_lat = max(intra_lat, net_overhead)
        inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if name == "all_reduce" else nodes - 1
        if v.legacy_inter_steps and name == "all_reduce" and nodes > 1:
            inter_steps = 2 * nodes  # <= 2.22's nInterSteps
        return latency + (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat
    if algo == TREE:
        if name == "all_reduce":
            latency += 2 * ((local - 1) * intra_lat + log2i(nodes) * inter_lat)
        return latency
    if algo == COLLNET_DIRECT:
        return latency + 2 * (min(1, local - 1) * intra_lat + (local - 1) * 0.4) + inter_lat
    if algo == COLLNET_CHAIN:
        return latency + 2 * (local - 1) * intra_lat + inter_lat
    if algo == NVLS:
        return intra_lat + (inter_lat if nodes > 1 else 0.0)
    if algo == NVLS_TREE:
        return latency + intra_lat + 2 * log2i(nodes) * inter_lat
    if algo == PAT and name in ("all_gather", "reduce_scatter"):
        return latency + v.pat_base_lat_us + log2i(nodes) * (inter_lat / 3.5) + ranks * 2.8
    return latency


def _disable(system: NcclSystem, graphs: list, bandwidths: list, nodes: int, ranks: int, version: NcclVersion = _DEFAULT) -> None:
    """Algorithm and protocol enables (tuning.cc) and updateCollCostTable's skips (enqueue.cc)."""
    arity = version.nvls_ag_rs_arity
    cc = system.compute_capability
    for func in range(len(FUNCTIONS)):
        for algo in range(len(ALGORITHMS)):
            off = (
                (nodes == 1 and algo == NVLS_TREE)
                or (not system.collnet and (algo in (COLLNET_DIRECT, COLLNET_CHAIN) or (algo == NVLS and nodes > 1)))
                or (not system.nvswitch and algo == COLLNET_DIRECT)
                or (
                    algo in (NVLS, NVLS_TREE)
                    and (not system.nvls or (arity and FUNCTIONS[func] != "all_reduce" and ranks // nodes > MAX_NVLS_ARITY))
                )
            )
            for proto in range(3):
                if off or (proto == LL128 and not _ll128(system, graphs[algo], cc, version)):
                    bandwidths[func][algo][proto] = 0.0


def _ll128(system: NcclSystem, graph: Graph | None, cc: int, version: NcclVersion = _DEFAULT) -> bool:
    """LL128 on by default only on NVLink-class paths of Volta and later (NCCL_LL128_C2C=1); up to
    2.26 only on the SMs its switch lists (70, 80, 90; 2.25+: 100, 120)."""
    inter_ok = _PATH[system.type_inter] <= (_PATH["PXN"] if cc >= 90 else _PATH["PXB"])
    sm_ok = cc in version.ll128_compcaps if version.ll128_compcaps is not None else cc >= 70
    return inter_ok and _PATH[system.type_intra] <= _PATH["NVB"] and sm_ok


def algo_time_us(tables: Tables, func: int, algo: int, proto: int, nbytes: int) -> float:
    """ncclTopoGetAlgoTime with numPipeOps = 1: -1 when the pair is not available."""
    bw = tables.bandwidths[func][algo][proto]
    lat = tables.latencies[func][algo][proto]
    if bw == 0:
        return -1.0
    log_size = log2i(nbytes >> 6)
    if algo == TREE and FUNCTIONS[func] == "all_reduce" and 0 <= log_size < 23:
        bw *= TREE_CORRECTION[proto][log_size]
    if algo == NVLS_TREE and tables.version.nvls_tree_correction and FUNCTIONS[func] == "all_reduce" and 0 <= log_size < 24:
        if tables.compute_capability >= 100 and tables.x86:
            bw *= TREE_CORRECTION_24[proto][log_size]
    if (
        algo == RING
        and proto == SIMPLE
        and tables.nodes > 1
        and FUNCTIONS[func] == "all_reduce"
        and nbytes // (tables.comm_channels * tables.ranks) >= 64
    ):
        lat *= 1.9 if tables.compute_capability < 80 else 1.4  # the ring's plateau
    return lat + nbytes / (1000 * bw)


def nccl_presets() -> list[str]:
    """The bundled presets whose GPUs run NCCL (every one with an ``nccl:`` block)."""
    return [name for name in list_presets() if load_preset(name).nccl is not None]


def nvls_presets() -> list[str]:
    """The bundled presets with NVLink SHARP (an NVSwitch that reduces and multicasts: NVLS)."""
    return [name for name in list_presets() if (nccl := load_preset(name).nccl) is not None and nccl.nvls]


def predict(
    hardware: str | Preset,
    nodes: int,
    op: str,
    size_bytes: int,
    nccl_algo: str | None = None,
    nccl_proto: str | None = None,
    nccl_version: str | None = None,
) -> Prediction:
    """NCCL's pick for ``op`` on ``size_bytes`` (all_gather: the gathered size; reduce_scatter: the
    input size, as nccl-tests' size column) on ``nodes`` nodes of a preset, with every candidate.
    ``nccl_algo`` / ``nccl_proto`` restrict the pick as NCCL_ALGO / NCCL_PROTO do (tuning.cc
    parseList: comma lists, case-insensitive, ^ to exclude); candidates lists what stays.
    ``nccl_version``: the release line's tuning model (sim.nccl.versions; None: 2.27)."""
    version = nccl_version_record(nccl_version)
    preset = hardware if isinstance(hardware, Preset) else load_preset(hardware)
    preset.check_nodes(nodes)
    if preset.nccl is None:
        raise CollsimError(f"--model nccl: hardware {preset.name} runs gloo, not NCCL; pick a GPU preset: {', '.join(nccl_presets())}")
    if op not in (*FUNCTIONS, *P2P_OPS):
        raise CollsimError(f"--model nccl: op {op!r} has no NCCL model; allowed: {', '.join((*FUNCTIONS, *P2P_OPS))}")
    if size_bytes < 0:
        raise CollsimError(f"size: must be >= 0 bytes, got {size_bytes}")
    if op in P2P_OPS:
        return _predict_p2p(preset, nodes, op, size_bytes, nccl_algo, nccl_proto)
    tables = _tables(preset, nodes, version)
    tag = version.tag.removeprefix("v")
    func = FUNCTIONS.index(op)
    ranks = nodes * preset.gpus_per_node
    if ranks == 1:  # updateCollCostTable: one rank, Ring/Simple at no cost
        return Prediction(
            preset.name, nodes, ranks, op, size_bytes, "Ring", "Simple", 0.0, None, None, (Candidate("Ring", "Simple", 0.0),), tag
        )
    algos = parse_selection(nccl_algo, ALGORITHMS, "nccl-algo", op)
    protos = parse_selection(nccl_proto, PROTOCOLS, "nccl-proto", op)
    candidates = []
    for algo in range(len(ALGORITHMS)):
        for proto in range(3):
            time_us = algo_time_us(tables, func, algo, proto, size_bytes)
            if time_us >= 0 and ALGORITHMS[algo] in algos and PROTOCOLS[proto] in protos:
                candidates.append(Candidate(ALGORITHMS[algo], PROTOCOLS[proto], time_us * 1e-6))
    if not candidates:
        raise CollsimError(
            f"--nccl-algo/--nccl-proto: no algorithm/protocol left for {op} on {nodes} x {preset.name} "
            f"(NCCL would fail: 'no algorithm/protocol available'); left: algorithms {sorted(algos)}, protocols {sorted(protos)}"
        )
    best = min(candidates, key=lambda c: c.time_s)  # min keeps the first of equals, as NCCL's strict <
    algbw = size_bytes / best.time_s / 1e9 if best.time_s > 0 else None
    busbw = algbw * busbw_factor(op, ranks) if algbw is not None else None
    return Prediction(
        preset.name, nodes, ranks, op, size_bytes, best.algorithm, best.protocol, best.time_s, algbw, busbw, tuple(candidates), tag
    )


_FREE = 1e18  # the GPU-to-hub link: no constraint


def hop_latencies_s(preset, algorithm: str, protocol: str, nodes: int = 2) -> tuple[float, float, float]:
    """(intra hop, inter hop, call start) in seconds: NCCL's hwLat/baseLat x latency scale
    (LL128's hops also x its own scale, NVLS/NVLSTree's x theirs; + the fitted base latency on
    the start where the call crosses the network, ``nodes`` > 1: every preset's base is fitted
    on multi-node logs, and gcp-a3-mega's 126 us is TCPXO's per-call floor, which a call inside
    one node never meets; charged there too it made 1-node 4 KiB calls 8x NCCL's model)."""
    eff = effective(preset)
    a, p = ALGORITHMS.index(algorithm), PROTOCOLS.index(protocol)
    intra_hw = NVLINK if preset.nccl is None or preset.nccl.type_intra == "NVL" else PCI
    net_algo = a if algorithm != "PAT" else ALGORITHMS.index("Tree")
    intra = HW_LAT[intra_hw][a][p] or HW_LAT[intra_hw][ALGORITHMS.index("Ring")][p]
    inter = HW_LAT[NET][net_algo][p]
    start = BASE_LAT[a][p] * eff.latency_scale + (eff.base_latency_us if nodes > 1 else 0.0)
    hop_scale = eff.latency_scale * (eff.ll128_latency_scale if protocol == "LL128" else 1.0)
    if algorithm in ("NVLS", "NVLSTree"):
        hop_scale *= eff.nvls_latency_scale
    return intra * hop_scale * 1e-6, inter * hop_scale * 1e-6, start * 1e-6


def through_cpu_Bps(preset, algorithm: str, nodes: int) -> float:
    """A GPU's rate to the other GPUs of its node where NCCL's paths between them cross the CPU
    (type_intra PHB or SYS: the root complex, or the CPUs' SMP link, e.g. GPUs without P2P): the
    graph's nChannels x bwIntra, which NCCL's search reserved on every link of the path
    (src/graph/search.cc, ncclTopoCompute; e.g. 1 x 5 GB/s on 8 RTX 4090 through SYS, where the
    GPUs' own PCIe links would carry 25); unbounded (_FREE) where GPUs reach each other directly
    (NVLink, PCIe switches), whose links the topology already models."""
    system = preset.nccl
    if system is None or system.type_intra not in ("PHB", "SYS"):
        return _FREE
    graph = system.graph("tree" if algorithm == "Tree" else "ring", nodes)
    return graph.n_channels * graph.bw_intra * 1e9 if graph else _FREE


def link_rates(scenario, preset, algorithm: str) -> tuple[float, float, int]:
    """(a GPU's intra-node rate, a GPU's network rate, a domain's NICs) in bytes/s as the DES's
    links carry them: the scenario's datasheet rates (the form's fields) x the preset's effective
    efficiencies, the intra rate bounded where NCCL's paths cross the CPU."""
    s, eff = scenario, effective(preset)
    nodes, gpus = _domains(preset, s.ranks)
    intra_bw = min((s.intra_bandwidth_Bps or s.bandwidth_Bps) * eff.intra_efficiency, through_cpu_Bps(preset, algorithm, nodes))
    nics = max(preset.nics_per_node * gpus // preset.gpus_per_node, 1)  # a domain's NICs
    return intra_bw, s.bandwidth_Bps * eff.inter_efficiency * max(1.0, nics / gpus), nics


def _domains(preset, ranks: int) -> tuple[int, int]:
    """(NCCL's nodes, GPUs each): a multi-node NVLink domain (GB200 NVL72) is one node to NCCL."""
    return preset.nccl_nodes(max(ranks // preset.gpus_per_node, 1))


P2P_ALGORITHM = "P2P"  # what --model nccl names grouped ncclSend/ncclRecv (no NCCL_ALGO selects it)


def _predict_p2p(preset: Preset, nodes: int, op: str, size_bytes: int, nccl_algo: str | None, nccl_proto: str | None) -> Prediction:
    """all_to_all / send_recv: the closed form of NCCL's p2p channels (sim.nccl.p2p_model)."""
    refuse_selection(op, nccl_algo, nccl_proto)
    terms = p2p_terms(preset, nodes, op, size_bytes, hop_latencies_s, link_rates, comm_channels)
    ranks = nodes * preset.gpus_per_node
    algbw = size_bytes / terms.time_s / 1e9 if terms.time_s > 0 else None
    busbw = algbw * busbw_factor(op, ranks) if algbw is not None else None
    only = (Candidate(P2P_ALGORITHM, terms.protocol, terms.time_s),)
    return Prediction(preset.name, nodes, ranks, op, size_bytes, P2P_ALGORITHM, terms.protocol, terms.time_s, algbw, busbw, only)


_TABLES: dict[tuple[int, int, str], tuple[Preset, Tables]] = {}  # (id(preset), nodes, version); the preset kept alive


def _tables(preset: Preset, nodes: int, version: NcclVersion = _DEFAULT) -> Tables:
    key = (id(preset), nodes, version.name)
    if key not in _TABLES:  # NVLink domains are NCCL's nodes
        _TABLES[key] = (preset, tune(effective(preset).nccl, *preset.nccl_nodes(nodes), version))
    return _TABLES[key][1]


def crossover(hardware: str, nodes: int, op: str, sizes: list[int]) -> list[Prediction]:
    """NCCL's pick at each size (for the webapp's crossover plot)."""
    return [predict(hardware, nodes, op, size) for size in sizes]
