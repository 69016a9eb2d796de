"""The DES runs NCCL's pick: every (algorithm, protocol) of NCCL's model on NCCL's data path.

The algorithms registered here run :mod:`sim.nccl.path` (Ring, Tree, PAT) and
:mod:`sim.nccl.nvls` (NVLS, NVLSTree); the ``chunks`` field carries NCCL's channel count
(the communicator's; fewer for small calls, as topoGetAlgoInfo). On a hardware preset they run on
the topology of :mod:`sim.nccl.topo` (effective link rates, NCCL's per-hop latencies for
the protocol); elsewhere on the scenario's own links with NCCL's slots and protocol formats.

:func:`pick_fields` maps NCCL's choice (restricted like NCCL_ALGO / NCCL_PROTO) to a
scenario; CollNet is the one algorithm refused (no SHARP switch in the model).
"""

from __future__ import annotations

from collections.abc import Generator

from sim.algorithms.call import Call
from sim.algorithms.phases import RING_ALL_GATHER, RING_REDUCE_SCATTER, RS_THEN, THEN_AG
from sim.algorithms.registry import Phase, register
from sim.nccl.counts import nvls_counts, ring_counts, tree_counts
from sim.nccl.nvls import nvls
from sim.nccl.path import NAMES, channel_ring, channel_tree, ring, tree
from sim.network import Network

__all__ = ["NAMES", "channel_ring", "channel_tree", "data_path_sharing", "pick_fields"]
_AR, _RS, _AG = ("reduce_scatter", "all_gather"), ("reduce_scatter",), ("all_gather",)
# How messages share links on NCCL's data path, per algorithm (:func:`data_path_sharing`). A
# channel's slices on a link take turns (one SM block drives a channel's connection): fifo for
# Ring, PAT, NVLS and NVLSTree, where fair gives the same times (one connection a channel on a
# link) at more CPU (NVLSTree's lanes at 8 GiB on 8 x hgx-h100-nvls: 19.7 s against 2 s). A Tree
# runs fair: a chain GPU sends up and down at once (runTreeSplit's two thread groups,
# src/device/all_reduce.h), interleaved on its NVLink, while fifo holds a message's whole route,
# so up and down sends waited on each other's receivers and left the busiest NVLink 9.5 % idle at
# 8 GiB on 2 x gcp-a3-mega (fair: 2.5 %; 56.21 -> 52.17 ms, the log 47.5).
DATA_PATH_SHARING = "fifo"
TREE_SHARING = "fair"


def data_path_sharing(nccl_algorithm: str) -> str:
    """The sharing NCCL's ``nccl_algorithm`` (Ring, Tree, NVLS, NVLSTree, PAT) runs under by default."""
    return TREE_SHARING if nccl_algorithm == "Tree" else DATA_PATH_SHARING


# The records (sim.algorithms.registry) of NCCL's algorithms: none has a closed form (slots,
# protocols and channels sharing ports are the DES's to answer); counts from sim.nccl.counts.
_RING_FORM = "the channels' rings move NCCL's slices through 8 slots per connection, sharing every port: the DES is the model"
_TREE_FORM = "each channel pipelines its slice in NCCL's tree chunks through a chain and a double binary tree: the DES is the model"
_NVLS_FORM = "the NVSwitch reduces and multicasts at its own rate, a resource outside the alpha-beta links: the DES is the model"
_PHASES = {_AR: (RS_THEN, THEN_AG), _RS: (RING_REDUCE_SCATTER,), _AG: (RING_ALL_GATHER,)}
_TREE_PHASES = (Phase("reduce up and broadcast down the channels' trees", "each channel's ranks send partial sums of their slice up the tree and the reduced chunks back down"),)  # fmt: skip
_NVLS_PHASES = (Phase("reduce and multicast in the switch", "the switch adds every GPU's copy of a chunk and sends the sum back to all of them"),)  # fmt: skip


def _one_slice(s) -> bool:
    """Buffer frames from one scaled run: NCCL's ring cuts a channel's block in loops and 1 MiB
    slices, whole cells only when there is one."""
    return s.size_bytes <= s.ranks * s.chunks * (1 << 20)


def _whole_tree_chunks(s) -> bool:
    """A channel's slice (p cells) cut into whole Simple tree chunks."""
    from sim.nccl.proto import SIMPLE

    return s.ranks % -(-(s.size_bytes // s.chunks) // SIMPLE.step_bytes) == 0


def _ring_record(op: str, phases: tuple, protocol: str, algorithm: str = "Ring", **more) -> dict:
    whole = _one_slice if (protocol, algorithm) == ("Simple", "Ring") else False
    return dict(chunked=True, splits=True, form=_RING_FORM, counts=ring_counts(op, phases, protocol, algorithm),
                phases=_PHASES[phases], whole_cells=whole, **more)  # fmt: skip


def _tree_record(protocol: str, **more) -> dict:
    whole = _whole_tree_chunks if protocol == "Simple" else False
    return dict(chunked=True, splits=True, form=_TREE_FORM, counts=tree_counts(protocol), phases=_TREE_PHASES, whole_cells=whole, **more)


def _nvls_record(op: str, algorithm: str) -> dict:
    return dict(chunked=True, splits=True, form=_NVLS_FORM, counts=nvls_counts(op, algorithm), phases=_NVLS_PHASES, whole_cells=False,
                listed=False, needs=_needs_nvls_switch)  # fmt: skip


def _needs_nvls_switch(s) -> str | None:
    """NVLS and NVLSTree reduce and multicast in the NVSwitch (NVLink SHARP): only a GPU preset
    that has it runs them. Elsewhere no link carries the reduction: the run sent no message and
    answered in about the call's latency, faster than any algorithm through the ports (issue 36)."""
    from sim.hardware.presets import load_preset
    from sim.nccl.model import nvls_presets

    name = getattr(s, "hardware", None)
    system = load_preset(name).nccl if name else None
    if system is not None and system.nvls:
        return None
    where = f"hardware {name} has none" if name else f"a {s.topology} topology without a hardware preset has none"
    return (
        f"algorithm: NVLS ({s.algorithm}) reduces and multicasts in an NVLink SHARP switch, and {where}; "
        f"give --hardware with a preset that has it ({', '.join(nvls_presets())}) or choose another algorithm"
    )


@register("all_reduce", "nccl_ring", **_ring_record("all_reduce", _AR, "Simple"))
def nccl_ring_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AR, "Simple")


@register("all_reduce", "nccl_ring_ll", **_ring_record("all_reduce", _AR, "LL", listed=False))
def nccl_ring_ll_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AR, "LL")


@register("all_reduce", "nccl_ring_ll128", **_ring_record("all_reduce", _AR, "LL128", listed=False))
def nccl_ring_ll128_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AR, "LL128")


@register("reduce_scatter", "nccl_ring", **_ring_record("reduce_scatter", _RS, "Simple"))
def nccl_ring_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _RS, "Simple")


@register("reduce_scatter", "nccl_ring_ll", **_ring_record("reduce_scatter", _RS, "LL", listed=False))
def nccl_ring_ll_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _RS, "LL")


@register("reduce_scatter", "nccl_ring_ll128", **_ring_record("reduce_scatter", _RS, "LL128", listed=False))
def nccl_ring_ll128_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _RS, "LL128")


@register("all_gather", "nccl_ring", **_ring_record("all_gather", _AG, "Simple"))
def nccl_ring_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AG, "Simple")


@register("all_gather", "nccl_ring_ll", **_ring_record("all_gather", _AG, "LL", listed=False))
def nccl_ring_ll_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AG, "LL")


@register("all_gather", "nccl_ring_ll128", **_ring_record("all_gather", _AG, "LL128", listed=False))
def nccl_ring_ll128_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AG, "LL128")


@register("all_reduce", "nccl_tree", **_tree_record("Simple"))
def nccl_tree_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from tree(net, rank, call, "Simple")


@register("all_reduce", "nccl_tree_ll", **_tree_record("LL", listed=False))
def nccl_tree_ll_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from tree(net, rank, call, "LL")


@register("all_reduce", "nccl_tree_ll128", **_tree_record("LL128", listed=False))
def nccl_tree_ll128_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from tree(net, rank, call, "LL128")


@register("all_reduce", "nccl_nvls", **_nvls_record("all_reduce", "NVLS"))
def nccl_nvls_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from nvls(net, rank, call, "all_reduce", "NVLS")


@register("all_gather", "nccl_nvls", **_nvls_record("all_gather", "NVLS"))
def nccl_nvls_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from nvls(net, rank, call, "all_gather", "NVLS")


@register("reduce_scatter", "nccl_nvls", **_nvls_record("reduce_scatter", "NVLS"))
def nccl_nvls_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from nvls(net, rank, call, "reduce_scatter", "NVLS")


@register("all_reduce", "nccl_nvls_tree", **_nvls_record("all_reduce", "NVLSTree"))
def nccl_nvls_tree_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from nvls(net, rank, call, "all_reduce", "NVLSTree")


@register("all_gather", "nccl_pat", **_ring_record("all_gather", _AG, "Simple", "PAT", listed=False))
def nccl_pat_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AG, "Simple", "PAT")


@register("reduce_scatter", "nccl_pat", **_ring_record("reduce_scatter", _RS, "Simple", "PAT", listed=False))
def nccl_pat_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _RS, "Simple", "PAT")


def pick_fields(hardware: str, nodes: int, op: str, size_bytes: int, nccl_algo: str | None = None,
                nccl_proto: str | None = None, nccl_version: str | None = None, preset=None, **fields):  # fmt: skip
    """(fields, None): the scenario mapping that runs NCCL's pick in the DES, or (None, reason)
    where there is no counterpart (CollNet). ``nccl_algo``/``nccl_proto`` restrict the pick as
    NCCL_ALGO/NCCL_PROTO, ``nccl_version`` picks with that release's tuning model (kept in the
    mapping); ``fields`` override scenario fields (sharing, eager_limit, ...).
    :func:`sim.collective.pick.scenario_for_pick` builds the scenario (a layer up); ``preset``:
    ``hardware``'s, loaded already."""
    from sim.hardware.presets import load_preset, scenario_fields
    from sim.nccl.model import predict
    from sim.nccl.topo import default_channels

    if op in ("all_to_all", "send_recv"):  # no tuner pick: NCCL runs them as grouped point-to-point (sim.nccl.p2p)
        from sim.nccl.p2p import p2p_fields

        return p2p_fields(hardware, nodes, op, size_bytes, nccl_algo, nccl_proto, preset, **fields), None
    preset = preset or load_preset(hardware)
    pick = predict(preset, nodes, op, size_bytes, nccl_algo, nccl_proto, nccl_version)
    name = NAMES.get((pick.nccl_algorithm, pick.nccl_protocol))
    if name is None:
        return (
            None,
            f"NCCL picks {pick.nccl_algorithm}/{pick.nccl_protocol} for {op}; the DES has no CollNet (in-network SHARP reduction) counterpart",
        )
    channels = default_channels(preset, nodes, nccl_version) if preset.nccl is not None else 1
    base = {**scenario_fields(hardware, nodes, preset), "op": op, "size_bytes": size_bytes, "algorithm": name, "chunks": channels,
            "sharing": data_path_sharing(pick.nccl_algorithm), **fields}  # fmt: skip
    if nccl_version is not None:
        base["nccl_version"] = nccl_version
    return base, None
