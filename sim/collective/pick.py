"""NCCL's pick as a scenario's algorithm: ``algorithm: nccl`` on a GPU preset.

:func:`fill_pick` (:mod:`sim.nccl.pick`, named here too) turns a scenario mapping whose algorithm
is ``nccl`` into the algorithm NCCL would pick on NCCL's data path; :func:`scenario_for_pick` is
that pick as a scenario (on :func:`sim.nccl.des.pick_fields`).
:func:`describe` says what an ``nccl_*`` scenario ran (NCCL's algorithm, protocol, channels) and
NCCL's own model's time for it; :func:`lines` is the two lines every surface prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sim.nccl.pick import NCCL, NCCL_OPS, PICK_KEYS, PICKED_OPS, fill_pick, wants_pick

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
    channels = default_channels(preset, max(1, scenario.ranks // preset.gpus_per_node), getattr(scenario, "nccl_version", None))
    return scenario.chunks == channels and scenario.sharing == data_path_sharing(PAIR_OF[scenario.algorithm][0])


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


def describe(scenario, picked: bool = True, preset=None) -> PickInfo | None:
    """NCCL's algorithm, protocol and channels of an ``nccl_*`` scenario on a GPU preset, and
    NCCL's model's time for the same (algorithm, protocol); None for any other scenario.
    ``preset``: the scenario's, loaded already (sim.collective.plan)."""
    if scenario.hardware and scenario.algorithm == "nccl_p2p" and scenario.op in PICKED_OPS:
        return _describe_p2p(scenario, picked, preset)
    if not scenario.hardware or not scenario.algorithm.startswith("nccl_") or scenario.op not in NCCL_OPS:
        return None  # before the imports: a plain run loads no preset reader (yaml)
    from sim.hardware.presets import load_preset
    from sim.nccl.model import predict
    from sim.nccl.path import PAIR_OF
    from sim.nccl.topo import path_params, rates_line

    if scenario.algorithm not in PAIR_OF:
        return None
    preset = preset or load_preset(scenario.hardware)
    if preset.nccl is None:
        return None
    algorithm, protocol = PAIR_OF[scenario.algorithm]
    nodes = max(1, scenario.ranks // preset.gpus_per_node)
    model = predict(preset, nodes, scenario.op, scenario.size_bytes, algorithm, protocol, scenario.nccl_version)
    best = predict(preset, nodes, scenario.op, scenario.size_bytes, nccl_version=scenario.nccl_version)
    channels = path_params(scenario, preset).channels
    return PickInfo(
        picked, algorithm, protocol, channels, model.time_s, f"{best.nccl_algorithm}/{best.nccl_protocol}", gap_why(scenario.op, algorithm),
        rates_line(scenario, preset),
    )  # fmt: skip


def _describe_p2p(scenario, picked: bool, preset=None) -> PickInfo | None:
    """all_to_all / send_recv on NCCL's p2p path and the closed form of it (sim.nccl.p2p_model)."""
    from sim.hardware.presets import load_preset
    from sim.nccl.model import predict

    preset = preset or load_preset(scenario.hardware)
    if preset.nccl is None:
        return None
    from sim.nccl.p2p import peer_bytes
    from sim.nccl.p2p_plan import rank_layout
    from sim.nccl.topo import p2p_path_params, rates_line

    model = predict(preset, max(1, scenario.ranks // preset.gpus_per_node), scenario.op, scenario.size_bytes)
    pair = f"{model.nccl_algorithm}/{model.nccl_protocol}"
    why = "NCCL's p2p closed form charges the DES's bottleneck (a rank's NVLink bytes or its share of the NICs), its batches' latencies and PXN's hop; a gap is link sharing the closed form does not see"
    nbytes = peer_bytes(scenario.op, scenario.ranks, scenario.size_bytes)
    channels, layout = rank_layout(p2p_path_params(scenario, preset).plan, scenario.op, nbytes)
    rates = rates_line(scenario, preset) + (f"; {layout}" if layout else "")
    return PickInfo(picked, model.nccl_algorithm, model.nccl_protocol, channels, model.time_s, pair, why, rates)


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
