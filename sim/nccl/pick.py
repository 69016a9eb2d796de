"""NCCL's pick as a scenario mapping's algorithm: ``algorithm: nccl`` on a GPU preset.

:func:`fill_pick` turns a scenario mapping whose algorithm is ``nccl`` (or absent, as the CLI's
default on a preset) into the algorithm NCCL would pick on NCCL's data path
(:func:`sim.nccl.des.pick_fields`), restricted by ``nccl_algo`` / ``nccl_proto`` as NCCL_ALGO /
NCCL_PROTO (parsed once, by :func:`sim.nccl.proto.parse_selection`), with the tuning model of the
mapping's ``nccl_version`` (:mod:`sim.nccl.versions`; none: 2.27). It works on the mapping, so
sim.scenario, a layer up, calls it while it builds a scenario; :mod:`sim.collective.pick` says
what a picked scenario ran.
"""

from __future__ import annotations

from typing import Any

from sim.errors import CollsimError

__all__ = ["NCCL", "NCCL_OPS", "PICKED_OPS", "PICK_KEYS", "apply_hardware", "fill_pick", "wants_pick"]

NCCL = "nccl"  # the algorithm meaning "what NCCL would pick, on its channels" (sim.training.comm uses this one)
PICK_KEYS = ("nccl_algo", "nccl_proto")  # scenario keys restricting the pick, as NCCL_ALGO / NCCL_PROTO
NCCL_OPS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")  # NCCL's tuner picks for these
PICKED_OPS = (*NCCL_OPS, "all_to_all", "send_recv")  # what NCCL runs for these: grouped send/recv (sim.nccl.p2p)
_FLAGS = "nccl_algo/nccl_proto (--nccl-algo/--nccl-proto)"


def wants_pick(data: dict[str, Any]) -> bool:
    """Whether a scenario mapping asks for NCCL's pick: ``algorithm: nccl``."""
    return str(data.get("algorithm", "")).strip().lower() == NCCL


def fill_pick(data: dict[str, Any], nccl_algo: str | None = None, nccl_proto: str | None = None, preset=None) -> None:
    """Set ``data``'s algorithm (and channels as ``chunks`` unless given, and the data path's
    sharing unless given) to NCCL's pick for its op and size on its hardware preset. On a gloo
    preset with no algorithm asked, what gloo runs (sim.hardware.gloo); an op without NCCL's pick
    gets its only algorithm (else the caller's "missing algorithm" message). ``preset``: the
    hardware's, loaded already."""
    from sim.algorithms.registry import algorithms_for, fill_only_algorithm, ops
    from sim.hardware.presets import load_preset
    from sim.nccl.des import pick_fields
    from sim.units import parse_size

    name = data.get("hardware")
    if not name:
        raise CollsimError(
            f"algorithm: {NCCL!r} (NCCL's pick) needs a GPU hardware preset (hardware NAME; collsim hardware list)", field="algorithm"
        )
    preset = preset or load_preset(name)
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
        picked, why = pick_fields(
            name, nodes, data["op"], size_bytes, nccl_algo, nccl_proto, nccl_version=data.get("nccl_version"), preset=preset
        )
    except CollsimError as error:
        raise CollsimError(str(error), field=_wrong_restriction(name, nodes, data["op"], size_bytes, nccl_algo, nccl_proto)) from None
    if picked is None:
        raise CollsimError(
            f"algorithm: {why}; choose an algorithm (e.g. ring, hierarchical) or exclude it: --nccl-algo ^CollNetDirect,CollNetChain",
            field="algorithm",
        )
    data["algorithm"] = picked["algorithm"]
    if data.get("chunks") in (None, ""):
        data["chunks"] = picked["chunks"]
    if data.get("sharing") in (None, ""):
        data["sharing"] = picked["sharing"]


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


_SHORT = {
    "bandwidth_Bps": "bandwidth",
    "latency_s": "latency",
    "intra_bandwidth_Bps": "intra_bandwidth",
    "intra_latency_s": "intra_latency",
}


def apply_hardware(data: dict[str, Any], pick: bool = True, nccl_algo: str | None = None, nccl_proto: str | None = None) -> None:
    """Fill a collective scenario mapping from ``hardware`` and ``nodes`` (values given win);
    with ``pick`` and no algorithm (or ``nccl``), the algorithm NCCL would pick (restricted by ``nccl_algo`` /
    ``nccl_proto`` as NCCL_ALGO / NCCL_PROTO), run on NCCL's data path."""
    name, nodes = data.get("hardware"), data.pop("nodes", None)
    if name is None:
        if nodes is None and not (nccl_algo or nccl_proto):  # a scenario file's "hardware: null"
            return
        raise CollsimError(
            ("--nodes" if nodes is not None else "--nccl-algo/--nccl-proto") + " needs --hardware NAME (collsim hardware list)"
        )
    from sim.hardware.presets import load_preset, scenario_fields

    if (nccl_algo or nccl_proto) and "algorithm" in data and not wants_pick(data):
        raise CollsimError("--nccl-algo/--nccl-proto restrict NCCL's pick; drop them or drop --algorithm")
    nodes = 1 if nodes is None else int(nodes)
    preset = load_preset(name)  # once, for the fields and NCCL's pick
    fields = scenario_fields(name, nodes, preset)
    ranks = data.get("ranks")
    if ranks is not None and int(ranks) != fields["ranks"]:
        raise CollsimError(
            f"ranks: --hardware {name} --nodes {nodes} gives {fields['ranks']} ranks, got --ranks {ranks}; drop --ranks or change --nodes"
        )
    for key, value in fields.items():
        if key not in data and _SHORT.get(key) not in data:
            data[key] = value
    if pick and ("algorithm" not in data or wants_pick(data)) and "op" in data:
        fill_pick(data, nccl_algo, nccl_proto, preset)  # NCCL's pick on its data path (above)
