"""NCCL's pick as a scenario's algorithm: ``algorithm: nccl`` on a GPU preset.

:func:`fill_pick` turns a scenario mapping whose algorithm is ``nccl`` (or absent, as the CLI's
default on a preset) into the algorithm NCCL would pick on NCCL's data path
(:func:`scenario_for_pick`, on :func:`sim.nccl.des.pick_fields`), restricted by ``nccl_algo`` / ``nccl_proto``
as NCCL_ALGO / NCCL_PROTO (parsed once, by :func:`sim.nccl.proto.parse_selection`).
:func:`describe` says what an ``nccl_*`` scenario ran (NCCL's algorithm, protocol, channels) and
NCCL's own model's time for it; :func:`lines` is the two lines every surface prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sim.errors import CollsimError

__all__ = [
    "NCCL",
    "NCCL_OPS",
    "PICK_KEYS",
    "PICKED_OPS",
    "PickInfo",
    "describe",
    "fill_pick",
    "lines",
    "runs_as_picked",
    "scenario_for_pick",
    "wants_pick",
]

NCCL = "nccl"  # the algorithm meaning "what NCCL would pick, on its channels" (sim.training.comm uses this one)
PICK_KEYS = ("nccl_algo", "nccl_proto")  # scenario keys restricting the pick, as NCCL_ALGO / NCCL_PROTO
NCCL_OPS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")  # NCCL's tuner picks for these
PICKED_OPS = (*NCCL_OPS, "all_to_all", "send_recv")  # what NCCL runs for these: grouped send/recv (sim.nccl.p2p)
_FLAGS = "nccl_algo/nccl_proto (--nccl-algo/--nccl-proto)"


def wants_pick(data: dict[str, Any]) -> bool:
    """Whether a scenario mapping asks for NCCL's pick: ``algorithm: nccl``."""
    return str(data.get("algorithm", "")).strip().lower() == NCCL


def fill_pick(data: dict[str, Any], nccl_algo: str | None = None, nccl_proto: str | None = None) -> None:
    """Set ``data``'s algorithm (and channels as ``chunks`` unless given, and the data path's
    sharing unless given) to NCCL's pick for its op and size on its hardware preset. On a gloo
    preset with no algorithm asked, what gloo runs (sim.hardware.gloo); an op without NCCL's pick
    gets its only algorithm (else the caller's "missing algorithm" message)."""
    from sim.algorithms.registry import algorithms_for, ops
    from sim.hardware.presets import load_preset
    from sim.scenario import fill_only_algorithm
    from sim.units import parse_size

    name = data.get("hardware")
    if not name:
        raise CollsimError(
            f"algorithm: {NCCL!r} (NCCL's pick) needs a GPU hardware preset (hardware NAME; collsim hardware list)", field="algorithm"
        )
    preset = load_preset(name)
    if data.get("algorithm") is not None and not wants_pick(data):
        raise CollsimError(
            f"{_FLAGS}: restrict NCCL's pick; give algorithm {NCCL!r} (or none) instead of {data['algorithm']!r}", field="nccl_algo"
        )
    asked = data.pop("algorithm", None) is not None
    if preset.nccl is None and not (asked or nccl_algo or nccl_proto):
        from sim.hardware.gloo import gloo_default

        if gloo_default(data.get("op")) is not None:  # CPU ranks: what gloo runs (sim/hardware/gloo.py)
            data["algorithm"] = gloo_default(data.get("op"))
            return
    if preset.nccl is None or data.get("op") not in PICKED_OPS:
        if nccl_algo or nccl_proto:
            raise CollsimError(
                f"{_FLAGS}: NCCL's tuner picks for {', '.join(NCCL_OPS)} on a GPU preset, not {data.get('op')} on {name}",
                field="nccl_proto",
            )
        fill_only_algorithm(data)
        if asked and "algorithm" not in data and data.get("op") in ops():
            raise CollsimError(
                f"algorithm: {NCCL!r} (NCCL's pick) needs a GPU preset; {name} runs gloo: choose one of {', '.join(algorithms_for(data['op']))}",
                field="algorithm",
            )
        return
    size = data.get("size_bytes", data.get("size", 0))
    size_bytes = size if isinstance(size, int) else parse_size(size, "size")
    nodes = _nodes(data, preset)
    try:
        scenario, why = scenario_for_pick(name, nodes, data["op"], size_bytes, nccl_algo, nccl_proto)
    except CollsimError as error:
        raise CollsimError(str(error), field=_wrong_restriction(name, nodes, data["op"], size_bytes, nccl_algo, nccl_proto)) from None
    if scenario is None:
        raise CollsimError(
            f"algorithm: {why}; choose an algorithm (e.g. ring, hierarchical) or exclude it: --nccl-algo ^CollNetDirect,CollNetChain",
            field="algorithm",
        )
    data["algorithm"] = scenario.algorithm
    if data.get("chunks") in (None, ""):
        data["chunks"] = scenario.chunks
    if data.get("sharing") in (None, ""):
        data["sharing"] = scenario.sharing


def scenario_for_pick(hardware: str, nodes: int, op: str, size_bytes: int, nccl_algo: str | None = None,
                      nccl_proto: str | None = None, **fields):  # fmt: skip
    """(scenario, None) running NCCL's pick in the DES, or (None, reason) where there is no
    counterpart (CollNet). ``nccl_algo``/``nccl_proto`` restrict the pick as NCCL_ALGO/NCCL_PROTO;
    ``fields`` override scenario fields (sharing, eager_limit, ...): sim.nccl.des.pick_fields."""
    from sim.nccl.des import pick_fields
    from sim.scenario import CollectiveScenario

    data, why = pick_fields(hardware, nodes, op, size_bytes, nccl_algo, nccl_proto, **fields)
    return (CollectiveScenario.from_dict(data) if data is not None else None), why


def runs_as_picked(scenario) -> bool:
    """Whether an ``nccl_*`` scenario on a GPU preset runs with the channels (``chunks``) and the
    sharing that :func:`fill_pick` sets for NCCL's pick: the communicator's channels and the data
    path's sharing. Those two are then the pick's own, not inputs another algorithm shares (a
    ring's ``chunks`` are pipeline chunks, not channels): the crossover compares the other
    algorithms at what ``sim collective --algorithm A`` runs without them."""
    if not scenario.hardware or not scenario.algorithm.startswith("nccl_"):
        return False
    from sim.hardware.presets import load_preset
    from sim.nccl.des import data_path_sharing
    from sim.nccl.path import PAIR_OF
    from sim.nccl.topo import default_channels

    preset = load_preset(scenario.hardware)
    if preset.nccl is None or scenario.algorithm not in PAIR_OF:
        return False
    channels = default_channels(preset, max(1, scenario.ranks // preset.gpus_per_node))
    return scenario.chunks == channels and scenario.sharing == data_path_sharing(PAIR_OF[scenario.algorithm][0])


def _wrong_restriction(name: str, nodes: int, op: str, size_bytes: int, nccl_algo: str | None, nccl_proto: str | None) -> str:
    """The field a refused restriction is about: nccl_algo when it fails alone, else nccl_proto."""
    from sim.nccl.model import predict

    if not nccl_algo or not nccl_proto:
        return "nccl_algo" if nccl_algo else "nccl_proto"
    try:
        predict(name, nodes, op, size_bytes, nccl_algo)
    except CollsimError:
        return "nccl_algo"
    return "nccl_proto"


def _nodes(data: dict[str, Any], preset) -> int:
    if data.get("nodes") is not None:
        return int(data["nodes"])
    ranks = data.get("ranks")
    return max(1, int(ranks) // preset.gpus_per_node) if str(ranks or "").strip().isdigit() else 1


@dataclass(frozen=True)
class PickInfo:
    """What an ``nccl_*`` scenario on a GPU preset ran and what NCCL's own model says of it."""

    picked: bool  # NCCL's pick (algorithm nccl) rather than an nccl_* algorithm named
    nccl_algorithm: str  # Ring, Tree, NVLS, NVLSTree, PAT
    nccl_protocol: str  # Simple, LL, LL128
    channels: int  # NCCL's channels for this call (the communicator's, fewer for small calls)
    model_time_s: float  # NCCL's tuning model's time for this (algorithm, protocol)
    model_pick: str  # what NCCL's model picks unrestricted, "Ring/LL128"
    why: str  # one line: why the DES and NCCL's model differ
    rates: str  # one line: the effective rates and latencies the DES ran at, and where each comes from

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def describe(scenario, picked: bool = True) -> PickInfo | None:
    """NCCL's algorithm, protocol and channels of an ``nccl_*`` scenario on a GPU preset, and
    NCCL's model's time for the same (algorithm, protocol); None for any other scenario."""
    if not scenario.hardware or not scenario.algorithm.startswith("nccl_") or scenario.op not in NCCL_OPS:
        return None  # before the imports: a plain run loads no preset reader (yaml)
    from sim.hardware.presets import load_preset
    from sim.nccl.model import predict
    from sim.nccl.path import PAIR_OF
    from sim.nccl.topo import path_params, rates_line

    if scenario.algorithm not in PAIR_OF:
        return None
    preset = load_preset(scenario.hardware)
    if preset.nccl is None:
        return None
    algorithm, protocol = PAIR_OF[scenario.algorithm]
    nodes = max(1, scenario.ranks // preset.gpus_per_node)
    model = predict(preset, nodes, scenario.op, scenario.size_bytes, algorithm, protocol)
    best = predict(preset, nodes, scenario.op, scenario.size_bytes)
    channels = path_params(scenario, preset).channels
    return PickInfo(
        picked, algorithm, protocol, channels, model.time_s, f"{best.nccl_algorithm}/{best.nccl_protocol}", gap_why(scenario.op, algorithm),
        rates_line(scenario),
    )  # fmt: skip


def gap_why(op: str, nccl_algorithm: str) -> str:
    """Why the DES's time differs from NCCL's model (docs/nccl-model.md)."""
    if op in ("broadcast", "reduce"):
        return "NCCL's model charges one hop of latency and no pipeline fill; the DES's chain sends its first piece across p - 1 hops"
    if nccl_algorithm in ("NVLS", "NVLSTree"):
        return "the DES moves each channel's chunks through the switch and the NICs at the channel's share, NCCL_STEPS in flight (pipeline fill); NCCL's closed formula has no fill"
    return "the DES moves each slice through NCCL's 8 slots a connection on links the channels share (pipeline fill, link sharing); NCCL's closed formula averages them"


def lines(info: PickInfo, des_time_s: float | None) -> tuple[str, str, str]:
    """What ran ("NCCL picks Ring/LL128 on 8 channels"), NCCL's model time beside the DES's, and
    the effective rates and latencies it ran at (the form's datasheet figures x fitted constants)."""
    from sim.units import format_time

    word = "NCCL picks" if info.picked else f"runs (NCCL would pick {info.model_pick}):"
    ran = f"{word} {info.nccl_algorithm}/{info.nccl_protocol} on {info.channels} channel{'s' if info.channels != 1 else ''}"
    model = f"NCCL's model {format_time(info.model_time_s)}"
    if des_time_s is None or not info.model_time_s:
        return ran, model, info.rates
    gap = des_time_s / info.model_time_s - 1
    return ran, f"{model}, DES {format_time(des_time_s)} ({gap:+.1%}): {info.why}", info.rates
