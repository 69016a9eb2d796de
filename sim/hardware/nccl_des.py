"""The DES runs NCCL's pick: every (algorithm, protocol) of NCCL's model on NCCL's data path.

The algorithms registered here run :mod:`sim.hardware.nccl_path` (Ring, Tree, PAT) and
:mod:`sim.hardware.nccl_nvls` (NVLS, NVLSTree); the ``chunks`` field carries NCCL's channel count
(the communicator's; fewer for small calls, as topoGetAlgoInfo). On a hardware preset they run on
the topology of :mod:`sim.hardware.nccl_topo` (effective link rates, NCCL's per-hop latencies for
the protocol); elsewhere on the scenario's own links with NCCL's slots and protocol formats.

:func:`scenario_for_pick` maps NCCL's choice (restricted like NCCL_ALGO / NCCL_PROTO) to a
scenario; CollNet is the one algorithm refused (no SHARP switch in the model).
"""

from __future__ import annotations

from collections.abc import Generator

from sim.algorithms.registry import register
from sim.collective.call import Call
from sim.hardware.nccl_nvls import nvls
from sim.hardware.nccl_path import NAMES, channel_ring, channel_tree, ring, tree
from sim.network import Network

__all__ = ["NAMES", "channel_ring", "channel_tree", "scenario_for_pick"]
_AR, _RS, _AG = ("reduce_scatter", "all_gather"), ("reduce_scatter",), ("all_gather",)
# A channel's slices on a link take turns (one SM block drives a channel's connection): fifo
# sharing; on the channel-partitioned links of nccl_topo it is also 10-100x faster than fair.
DATA_PATH_SHARING = "fifo"


@register("all_reduce", "nccl_ring", chunked=True, splits=True)
def nccl_ring_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AR, "Simple")


@register("all_reduce", "nccl_ring_ll", chunked=True, splits=True, listed=False)
def nccl_ring_ll_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AR, "LL")


@register("all_reduce", "nccl_ring_ll128", chunked=True, splits=True, listed=False)
def nccl_ring_ll128_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AR, "LL128")


@register("reduce_scatter", "nccl_ring", chunked=True, splits=True)
def nccl_ring_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _RS, "Simple")


@register("reduce_scatter", "nccl_ring_ll", chunked=True, splits=True, listed=False)
def nccl_ring_ll_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _RS, "LL")


@register("reduce_scatter", "nccl_ring_ll128", chunked=True, splits=True, listed=False)
def nccl_ring_ll128_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _RS, "LL128")


@register("all_gather", "nccl_ring", chunked=True, splits=True)
def nccl_ring_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AG, "Simple")


@register("all_gather", "nccl_ring_ll", chunked=True, splits=True, listed=False)
def nccl_ring_ll_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AG, "LL")


@register("all_gather", "nccl_ring_ll128", chunked=True, splits=True, listed=False)
def nccl_ring_ll128_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AG, "LL128")


@register("all_reduce", "nccl_tree", chunked=True, splits=True)
def nccl_tree_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from tree(net, rank, call, "Simple")


@register("all_reduce", "nccl_tree_ll", chunked=True, splits=True, listed=False)
def nccl_tree_ll_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from tree(net, rank, call, "LL")


@register("all_reduce", "nccl_tree_ll128", chunked=True, splits=True, listed=False)
def nccl_tree_ll128_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from tree(net, rank, call, "LL128")


@register("all_reduce", "nccl_nvls", chunked=True, splits=True, listed=False)
def nccl_nvls_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from nvls(net, rank, call, "all_reduce", "NVLS")


@register("all_gather", "nccl_nvls", chunked=True, splits=True, listed=False)
def nccl_nvls_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from nvls(net, rank, call, "all_gather", "NVLS")


@register("reduce_scatter", "nccl_nvls", chunked=True, splits=True, listed=False)
def nccl_nvls_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from nvls(net, rank, call, "reduce_scatter", "NVLS")


@register("all_reduce", "nccl_nvls_tree", chunked=True, splits=True, listed=False)
def nccl_nvls_tree_all_reduce(net: Network, rank: int, call: Call) -> Generator:
    yield from nvls(net, rank, call, "all_reduce", "NVLSTree")


@register("all_gather", "nccl_pat", chunked=True, splits=True, listed=False)
def nccl_pat_all_gather(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _AG, "Simple", "PAT")


@register("reduce_scatter", "nccl_pat", chunked=True, splits=True, listed=False)
def nccl_pat_reduce_scatter(net: Network, rank: int, call: Call) -> Generator:
    yield from ring(net, rank, call, _RS, "Simple", "PAT")


def scenario_for_pick(hardware: str, nodes: int, op: str, size_bytes: int, nccl_algo: str | None = None,
                      nccl_proto: str | None = None, **fields):  # fmt: skip
    """(scenario, None) running NCCL's pick in the DES, or (None, reason) where there is no
    counterpart (CollNet). ``nccl_algo``/``nccl_proto`` restrict the pick as NCCL_ALGO/NCCL_PROTO;
    ``fields`` override scenario fields (sharing, eager_limit, ...)."""
    from sim.hardware.nccl_model import predict
    from sim.hardware.nccl_topo import default_channels
    from sim.hardware.presets import load_preset, scenario_fields
    from sim.scenario import CollectiveScenario

    preset = load_preset(hardware)
    pick = predict(preset, nodes, op, size_bytes, nccl_algo, nccl_proto)
    name = NAMES.get((pick.nccl_algorithm, pick.nccl_protocol))
    if name is None:
        return None, f"NCCL picks {pick.nccl_algorithm}/{pick.nccl_protocol} for {op}; the DES has no CollNet (in-network SHARP reduction) counterpart"
    channels = default_channels(preset, nodes) if preset.nccl is not None else 1
    base = {**scenario_fields(hardware, nodes), "op": op, "size_bytes": size_bytes, "algorithm": name, "chunks": channels,
            "sharing": DATA_PATH_SHARING, **fields}  # fmt: skip
    return CollectiveScenario.from_dict(base), None
