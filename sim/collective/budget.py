"""How much time and memory a request will take, told before it starts, and the limits beyond
which every entry point refuses (CLI ``sim collective``, ``sim crossover``, ``sim ddp`` sweeps
and repetitions, ``sweep``, the explorer's background jobs and crossover helper).

The unit of work is the *message-visit*: one point-to-point message costs one, and under fair
sharing every flow a re-share touches costs one more (a message that joins or leaves a busy
link re-shares every flow connected to it, so a tree algorithm with many chunks in flight pays
for hundreds of flows per message; :func:`sim.collective.explore.work` counts messages only).
The visits per message of a scenario come from small probe runs of the same scenario (8 and
16 ranks, few chunks), extrapolated to its ranks and chunks with the growth exponents the
probes show (on a hardware preset: two and four nodes; NCCL's trees also grow with their pieces;
NCCL's all_to_all across nodes as the power 1.25 of its nodes: :func:`_all_to_all_visits`);
``tests/sim/test_budget.py`` (every listed algorithm on a switch) and
``tests/collective/test_budget_presets.py`` (every ``nccl_*`` algorithm on a preset) check the
estimate against counted runs under both sharing modes (within 2x).

Limits (:data:`MAX_SECONDS`, :data:`MAX_MEMORY_BYTES`) are stated in each refusal together with
the setting that would fit (fewer chunks or ranks, ``--mode collapsed``, a coarser sweep).
Pure model code: no torch, dash or plotly.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sim.errors import CollsimError

if TYPE_CHECKING:
    from sim.collective.plan import Plan

SECONDS_PER_VISIT = 6e-6  # 2-vCPU VM (shared), 2026-11-24: fair-sharing re-share visits cost 3.6-8 us, messages 3-15 us
A2A_SECONDS_PER_VISIT = 15e-6  # NCCL's all_to_all across nodes: 9-15 us at 8-16 nodes, 15-21 at 32; a tree 5.8
SECONDS_PER_MESSAGE = 8e-6
MAX_SECONDS = 600.0  # a CLI run refused beyond about ten minutes of simulation
MAX_MEMORY_BYTES = 2 * 2**30  # and beyond 2 GiB of memory
BACKGROUND_MAX_SECONDS = 120.0  # the explorer's background jobs
CROSSOVER_MAX_MESSAGES = 20_000_000  # replayed/closed points of one crossover: messages handled by numpy, all sizes
MAX_SWEEP_POINTS = 10_000  # points of one sweep (sim ddp --sweep-bucket-sizes, collsim sweep)
MAX_REPETITIONS = 100_000  # back-to-back calls of one scenario
NOTE_FROM_SECONDS = 10.0  # a run within the limits but estimated longer than this says so first and shows its progress

ROW_BYTES = 64  # one recorded message (7 columns) in a RecordTable
IN_FLIGHT_BYTES = 900  # a posted message waiting for its stream: event, flow, tuple, deque slot
ROUTE_BYTES = 400  # a cached route per sender-receiver pair
RANK_BYTES = 4_000  # a rank's process, generator frames, topology node and ports
BASE_BYTES = 150 * 2**20  # the interpreter with numpy, simpy and the model loaded
PROBE_RANKS = (8, 16)
TREE_RANK_GROWTH = 0.4  # the least growth in ranks of re-sharing per message on NCCL's trees (_visits_per_message)
A2A_PROBE_NODES, A2A_HEAVY, A2A_NODE_GROWTH = (2, 4), 2.0, 1.25  # NCCL's all_to_all across nodes: _all_to_all_visits
PROBE_MAX_CHUNKS = 16  # probes run at most this many chunks (and a quarter of it for the growth)
PROBE_MAX_BYTES = 16 * 2**20
PROBE_MAX_VISITS = 300_000  # a 32-rank probe runs only when it costs less than about a second
# a scenario within the probes' ranks and of at most this many messages is its own probe (counted at
# its own size): re-sharing hangs on which flows start together, which a size's growth cannot carry
# (NVLS across 4 x dgx-h100: 1.46 re-shares a message at 16 MiB, 7.46 at 64 MiB)
PROBE_WHOLE_MESSAGES = 2_000
# Routes on a graph that is not a tree (a hardware preset's GPUs reach their node's switch and their
# NIC) are searched from each destination: about SEARCH_FILL entries (settled nodes and heap) per
# node of the graph and destination, each SECONDS_PER_SEARCH_ENTRY of CPU and SEARCH_ENTRY_BYTES
# while kept (sim.network.topology keeps SEARCH_ENTRIES at most). Measured 2026-11-24 on 32-128 x
# dgx-h100: 1.19-1.22 entries, 0.84-1.44 us and 94-127 B each.
SEARCH_FILL = 1.2
SECONDS_PER_SEARCH_ENTRY = 1.0e-6
SEARCH_ENTRY_BYTES = 110
# A route found alone (an NCCL channel's pairs: Topology.paths) costs its neighbourhood: 21-33 us
# a pair on 64-1,024 x dgx-h100 (2026-11-24), and is kept (a tuple of its nodes).
SECONDS_PER_PAIR_ROUTE = 30e-6
PAIR_ROUTE_BYTES = 250


@dataclass(frozen=True)
class Estimate:
    """Work and memory of one per-message simulation, told without running it."""

    messages: int
    visits: int  # message-visits: messages plus flows touched by fair re-sharing
    memory_bytes: int
    exact_messages: bool
    route_entries: int = 0  # entries of the route searches from destinations (0: none searched whole)
    route_pairs: int = 0  # routes found alone, pair by pair
    visit_seconds: float = SECONDS_PER_VISIT  # a re-share visit's CPU (A2A_SECONDS_PER_VISIT: NCCL's all_to_all across nodes)

    @property
    def seconds(self) -> float:
        return self.messages * SECONDS_PER_MESSAGE + (self.visits - self.messages) * self.visit_seconds + self.route_seconds

    @property
    def route_seconds(self) -> float:
        return self.route_entries * SECONDS_PER_SEARCH_ENTRY + self.route_pairs * SECONDS_PER_PAIR_ROUTE

    def describe(self) -> str:
        from sim.units import format_size

        routes = self.route_seconds
        searched = f", route searches ~{format_seconds(routes)} of it" if routes >= 1 else ""
        return (
            f"about {self.messages:,} messages, {self.visits:,} message-visits "
            f"(~{format_seconds(self.seconds)} here{searched}) and {format_size(self.memory_bytes)} of memory"
        )


def format_seconds(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.2g} s"


def _needs_probes(s: Any, max_seconds: float, preset: Any, layout: Any) -> bool:
    """False when even the bound (every message re-sharing every flow of its call) fits the
    time limit: then no probe need run. ``layout``: :func:`_p2p_layout`'s."""
    messages = _messages(s, preset, layout).messages
    per_call = messages / max(1, s.repetitions)
    return s.sharing == "fair" and messages * (1 + per_call) * _visit_seconds(s, layout) > max_seconds


def estimate(scenario: Any, probe: bool = True, plan: Plan | None = None) -> Estimate:
    """Messages, message-visits and peak memory of a full (message-by-message) run; with
    ``probe=False`` the visits are the bound (every message re-shares every flow of its call).
    ``plan``: the scenario's (sim.collective.plan.resolve) or one on its hardware
    (:meth:`Plan.with_scenario`): its preset is read, and its topology's route work, which the run then uses."""
    from sim.collective.plan import resolve

    plan = resolve(scenario) if plan is None else plan.with_scenario(scenario)
    return _estimate(scenario, probe, plan, _p2p_layout(scenario, plan.preset))


def _estimate(s: Any, probe: bool, plan: Plan, layout: Any) -> Estimate:
    """:func:`estimate` with NCCL's p2p plan looked up already (:func:`_p2p_layout`: once an estimate)."""
    from sim.algorithms.registry import algorithm_spec

    spec = algorithm_spec(s.op, s.algorithm)
    chunks = s.chunks if spec is not None and spec.chunked else 1
    told = _messages(s, plan.preset, layout)
    messages = int(told.messages)
    visits = messages
    if s.sharing == "fair" and messages:
        per_call = messages / max(1, s.repetitions)  # a re-share touches at most the flows of one call
        visits = int(messages * (1 + min(_visits_per_message(s, chunks, plan, layout) if probe else per_call, per_call)))
    entries, alone = _route_work(s, plan)
    memory = _memory(s, messages, told.pairs, chunks) + min(entries, _search_limit()) * SEARCH_ENTRY_BYTES
    visit = _visit_seconds(s, layout)
    return Estimate(messages, visits, memory + alone * PAIR_ROUTE_BYTES, told.exact, entries, alone, visit)


def _route_work(s: Any, plan: Plan) -> tuple[int, int]:
    """(entries of the searches from destinations, routes found alone) for a hardware preset's
    topology (the plan's: built once, for the run as well) or a user graph; (0, 0) where routes
    are climbed or walked. A search from a destination holds about :data:`SEARCH_FILL` x the graph's nodes."""
    from sim.network.graph_files import load_graph
    from sim.network.topology import TOPOLOGIES

    work = plan.route_work()
    if work is not None:
        whole, nodes, alone = work
    elif s.topology not in TOPOLOGIES:  # a user graph file: its pairs are asked for as the run goes
        graph = load_graph(s.topology)
        (whole, alone), nodes = graph.route_plan(), graph.graph.number_of_nodes()
    else:
        return 0, 0
    return int(SEARCH_FILL * whole * nodes), alone


def _search_limit() -> int:
    from sim.network.topology import SEARCH_ENTRIES

    return SEARCH_ENTRIES


def messages_of(s: Any, preset: Any = None) -> Any:
    """:func:`sim.collective.explore.work` (messages and routes; it probes at most
    ``PROBE_MAX_CHUNKS`` chunks and scales linearly in chunks). NCCL's algorithms on a hardware
    preset run only the channels that are not copies of another (``sim.nccl.topo``):
    the records count every channel, so their count is scaled to the channels run; NCCL's
    all_to_all sends a peer's bytes in the parts of its p2p plan (:func:`_p2p_layout`). ``preset``:
    the scenario's, loaded already."""
    return _messages(s, preset, _p2p_layout(s, preset))


def _messages(s: Any, preset: Any, layout: Any) -> Any:
    """:func:`messages_of` with NCCL's p2p plan looked up already (:func:`_p2p_layout`)."""
    from sim.collective.explore import work

    told = work(s)
    if s.op == "all_to_all" and s.algorithm == "nccl_p2p" and getattr(s, "hardware", None):  # by its DES run's p2p plan
        from sim.nccl.p2p import all_to_all_messages

        return replace(told, messages=all_to_all_messages(layout, s.ranks, s.elements, s.element_bytes) * s.repetitions)
    params = _preset_path(s, preset)
    if params is None or params.simulated >= params.channels:
        return told
    try:
        counted = work(s.replace(chunks=params.channels)) if params.channels != s.chunks else told
    except CollsimError:
        counted = told
    messages = -(-counted.messages * params.simulated // params.channels)
    if params.algorithm == "Tree" and params.max_tree_pieces:  # each run channel sends at most this many pieces up and down
        messages = min(messages, 2 * (s.ranks - 1) * params.simulated * params.max_tree_pieces * s.repetitions)
    return replace(counted, messages=messages)


def _p2p_layout(s: Any, preset: Any = None) -> Any:
    """The p2p plan NCCL's all_to_all on a preset runs by (sim.nccl.p2p_plan: None inside one NCCL node), None for any
    other scenario: looked up once an estimate and passed to what reads it (messages, re-sharing, a visit's CPU)."""
    if s.op != "all_to_all" or s.algorithm != "nccl_p2p" or not getattr(s, "hardware", None):
        return None
    from sim.hardware.presets import load_preset
    from sim.nccl.topo import p2p_path_params

    return getattr(p2p_path_params(s, preset or load_preset(s.hardware)), "plan", None)


def _preset_path(s: Any, preset: Any = None) -> Any:
    """NCCL's data-path parameters (channels, channels run, tree pieces) of an ``nccl_*``
    scenario on a hardware preset; None for any other scenario."""
    from sim.nccl.path import PAIR_OF

    if not getattr(s, "hardware", None) or s.algorithm not in PAIR_OF:
        return None
    from sim.hardware.presets import load_preset
    from sim.nccl.topo import path_params

    return path_params(s, preset or load_preset(s.hardware))


def _probe_ranks(s: Any) -> tuple[int, int]:
    """Ranks of the two probes: 8 and 16, or two and four nodes of a hardware preset (a node
    alone has no traffic between nodes: NVLS then sends no message at all)."""
    gpus = _node_gpus(s)
    if gpus:
        return 2 * gpus, 4 * gpus
    return PROBE_RANKS


def _memory(s: Any, messages: int, pairs: int, chunks: int) -> int:
    recorded = {"full": messages, "aggregate": 0}.get(s.record, min(messages, s.max_events))
    per_call = messages // max(1, s.repetitions)
    in_flight = min(per_call, s.ranks * chunks * 2)  # chunked programs post their chunks at once
    payload = 3 * s.size_bytes * (s.ranks if s.verify else 0)
    return BASE_BYTES + recorded * ROW_BYTES + in_flight * IN_FLIGHT_BYTES + pairs * ROUTE_BYTES + s.ranks * RANK_BYTES + payload


def _visits_per_message(s: Any, chunks: int, plan: Plan | None = None, layout: Any = None) -> float:
    """Flows touched by re-sharing per message, from probes (extrapolated in ranks and chunks)."""
    size = min(s.size_bytes, PROBE_MAX_BYTES)
    key = s.replace(stragglers=(), repetitions=1, record="aggregate", jitter_s=0.0, verify=False, root=0, size_bytes=size, groups=())
    try:  # the probes set ranks and chunks themselves: one cache entry whatever the scenario's
        key = key.replace(
            ranks=PROBE_RANKS[-1],
            chunks=1,
            size_bytes=size - size % (PROBE_RANKS[-1] * key.element_bytes) or key.element_bytes * PROBE_RANKS[-1],
        )
    except CollsimError:
        pass
    probe_k = min(chunks, PROBE_MAX_CHUNKS)
    probe_ranks = _probe_ranks(s)
    ranks = [p for p in probe_ranks if p < s.ranks] or [s.ranks]
    if s.ranks <= probe_ranks[-1] and chunks <= PROBE_MAX_CHUNKS:
        whole = key.replace(size_bytes=s.size_bytes - s.size_bytes % key.element_bytes)
        if size < s.size_bytes and 0 < _messages_at(whole, s.ranks, chunks) <= PROBE_WHOLE_MESSAGES:
            return _probe(whole, s.ranks, chunks, whole.size_bytes, plan)
        return _probe(key, s.ranks, chunks, size, plan) * _size_growth(key, s, s.ranks, chunks, size)
    if _p2p_across_nodes(s, layout) is not None:
        return _all_to_all_visits(s, key, plan)
    base_p = ranks[-1]
    v_base = _probe(key, base_p, probe_k, size, plan)
    growth_p = 0.0
    if len(ranks) > 1 and s.ranks > base_p:
        growth_p = _exponent(_probe(key, ranks[0], probe_k, size, plan), v_base, base_p / ranks[0])
        wider = 2 * base_p
        if s.ranks > wider and v_base * 2**growth_p * _messages_at(key, wider, probe_k) <= PROBE_MAX_VISITS:
            v_wider = _probe(key, wider, probe_k, size, plan)  # the growth from 16 to 32 ranks is nearer the target's
            if v_wider > 0:
                growth_p = _exponent(v_base, v_wider, 2.0)
                v_base, base_p = v_wider, wider
    if s.algorithm.startswith("nccl_tree") and s.ranks > base_p:
        # a tree's re-sharing keeps growing with its depth beyond the probes' nodes, which show
        # none (64 MiB on dgx-h100: 1.97-2.07 a message at 4-8 nodes, but counted 10.9, 13.9 and
        # 18.3 at 16, 32 and 64 nodes, x1.28 and x1.32 a doubling): at least the power 0.4
        growth_p = max(growth_p, TREE_RANK_GROWTH)
    growth_k = 0.0
    if chunks > probe_k:
        growth_k = _exponent(_probe(key, base_p, probe_k // 4, size, plan), v_base, 4.0)
    value = v_base * (s.ranks / base_p) ** growth_p * (chunks / probe_k) ** growth_k
    return value * _size_growth(key, s, base_p, probe_k, size)


def _visit_seconds(s: Any, layout: Any) -> float:  # a re-share visit's CPU
    return A2A_SECONDS_PER_VISIT if _p2p_across_nodes(s, layout) is not None else SECONDS_PER_VISIT


def _p2p_across_nodes(s: Any, layout: Any) -> Any:
    """``layout`` (:func:`_p2p_layout`'s) if NCCL's all_to_all across a preset's nodes (_all_to_all_visits), else None."""
    gpus = _node_gpus(s)
    return layout if layout is not None and gpus and layout.gpus == gpus else None


def _all_to_all_visits(s: Any, key: Any, plan: Plan | None) -> float:
    """Re-sharing per message of NCCL's all_to_all beyond the probes' nodes, from a probe of 2 nodes at
    its own size (1-2 parts a peer whatever the size), or of 4 where 2 show under :data:`A2A_HEAVY`
    flows a message. Every message is in flight at once, one component, each settle re-shares all
    of it; since the engine finishes an instant's settled ends together (sim/network/fair.py), the
    settles grow less than the square of the nodes: counted on dgx-h100, 4.1, 14, 16, 62 a message
    at 2-16 nodes (16 MiB), 3.1, 14, 19, 60 (64 MiB), 38 at 32 nodes (64 MiB): the power
    :data:`A2A_NODE_GROWTH` of the nodes, sizes scattering 2-3x (bench/results/budget_all_to_all.md).
    No term for a channel's later batches (32 nodes and more): at 32 nodes, where each channel runs
    two, 64 MiB and 1 GiB counted fewer flows a message (38, 34) than 16 nodes at 64-256 MiB (60-67)."""
    gpus = _node_gpus(s)
    for nodes in A2A_PROBE_NODES:
        value = _probe(key, nodes * gpus, 1, s.size_bytes, plan)
        if value >= A2A_HEAVY:
            break
    return value * (s.ranks / (nodes * gpus)) ** (A2A_NODE_GROWTH if value >= A2A_HEAVY else 1.0)  # linear under A2A_HEAVY


def _size_growth(key: Any, s: Any, ranks: int, chunks: int, size: int) -> float:
    """The factor by which re-sharing per message grows from the probes' size to the scenario's,
    for NCCL's trees, whose messages are pieces of a fixed size: with the pieces (more in flight,
    more flows to re-share), as their power 3/4 (one solve per instant serves the pieces in flight, but a connection's
    slots join the sharing one by one); NVLS's and NVLSTree's in proportion to them, since their
    chunks follow NCCL's size rule (heads x channels) and each head's one simulated channel
    carries every channel's share, so each more in flight meets every other (NVLSTree grew so
    once its channels became lanes). Rings show no such growth (tests/collective/test_budget_presets.py)."""
    if s.size_bytes <= size or not (s.algorithm.startswith("nccl_tree") or s.algorithm.startswith("nccl_nvls")):
        return 1.0
    full = _messages_at(key.replace(size_bytes=s.size_bytes - s.size_bytes % key.element_bytes), ranks, chunks)
    probed = _messages_at(key, ranks, chunks)
    # fair sharing re-shares once per instant (issue 23): the pieces in flight at one instant
    # share one solve (a square root), but a tree connection's slots take turns on the wire
    # (Network.share_wire), each joining the sharing on its own: counted 16 -> 64 MiB at
    # 4 x dgx-h100, visits per message grew x1.9 (Simple), x1.7 (LL), x4.9 (LL128) for x4
    # pieces, so the power 3/4 (x2.8). NVLS's in proportion (its chunks wait for no slot beyond
    # the switch's, so each more in flight across nodes meets every other: counted 2.05x at
    # 4 x dgx-h100, 16 -> 64 MiB)
    # LL128's trees grow faster than that (x4.9 for x4 pieces: its power 1.15), and since NCCL's
    # Tree runs fair by default (sim.nccl.des.data_path_sharing) its estimate at 64 MiB
    # on 16 x dgx-h100 read 5.2 re-shares a message where the run counted 10.9
    exponent = 1.0 if s.algorithm.startswith("nccl_nvls") else 1.15 if s.algorithm == "nccl_tree_ll128" else 0.75
    return (full / probed) ** exponent if full > probed > 0 else 1.0


def _messages_at(s: Any, ranks: int, chunks: int) -> int:
    from sim.algorithms.registry import algorithm_spec
    from sim.collective.explore import work

    spec = algorithm_spec(s.op, s.algorithm)
    try:
        return work(s.replace(ranks=ranks, chunks=chunks if spec is not None and spec.chunked else 1)).messages
    except CollsimError:
        return 0


def _exponent(small: float, large: float, apart: float) -> float:
    """The growth exponent two probes ``apart`` times apart show (shrinking allowed), in [-2, 2]."""
    if small <= 0 or large <= 0:
        return 0.0 if large <= 0 else 1.0
    return max(-2.0, min(2.0, math.log(large / small) / math.log(apart)))


PROBES_KEPT = 512
_probes: OrderedDict[tuple, float] = OrderedDict()  # by (scenario, ranks, chunks, nbytes): what _probe found
_probes_lock = threading.Lock()


def clear_probes() -> None:
    """Forget what the probes found (a measurement of their cost: bench/budget_all_to_all.py)."""
    with _probes_lock:
        _probes.clear()


def _probe(s: Any, ranks: int, chunks: int, nbytes: int, plan: Plan | None = None) -> float:
    """Flows touched by re-sharing per message in a run of ``s`` at ``ranks`` and ``chunks``,
    kept for the :data:`PROBES_KEPT` latest; ``plan``: the estimated scenario's (its preset, and
    its topology where the probe is the scenario itself but for what it records)."""
    key = (s, ranks, chunks, nbytes)
    with _probes_lock:
        if key in _probes:
            _probes.move_to_end(key)
            return _probes[key]
    value = _probed(s, ranks, chunks, nbytes, plan)
    with _probes_lock:
        _probes[key] = value
        while len(_probes) > PROBES_KEPT:
            _probes.popitem(last=False)
    return value


def _probed(s: Any, ranks: int, chunks: int, nbytes: int, plan: Plan | None) -> float:
    from sim.algorithms.registry import algorithm_spec

    changes: dict[str, Any] = {"ranks": ranks}
    spec = algorithm_spec(s.op, s.algorithm)
    if spec is not None and spec.chunked:
        changes["chunks"] = chunks
    unit = ranks * max(1, changes.get("chunks", 1)) * s.element_bytes
    changes["size_bytes"] = max(unit, nbytes - nbytes % unit)
    if s.topology == "two_level":
        changes["gpus_per_node"] = min(s.gpus_per_node_resolved, ranks)
        if ranks % changes["gpus_per_node"]:
            return 0.0
    if s.topology == "torus2d" or getattr(s, "placement", None) not in (None, "block", "round_robin"):
        changes.pop("ranks")  # the shape or a placement file fixes the ranks: probe as given
        changes["size_bytes"] = s.size_bytes
    try:
        probe = s.replace(**changes)
        messages, visits = count_visits(probe, plan)
    except CollsimError:
        return 0.0
    return (visits - messages) / messages if messages else 0.0


def count_visits(scenario: Any, plan: Plan | None = None) -> tuple[int, int]:
    """(messages, flows touched by fair re-sharing) of a real run of ``scenario``: what the
    estimate predicts, counted (used by the probes and by the tests); ``plan``: one on its
    hardware (sim.collective.runner.planned_topology)."""
    from sim.collective.runner import collect, no_gc, planned_topology, start_collective

    started = start_collective(scenario, planned_topology(scenario, plan))
    net = started.net
    touched = [0]
    observers = getattr(net, "reshare_observers", None)  # fair sharing only (FairNetwork.reshare)
    if observers is not None:

        def counting(flows: Any, now: float) -> None:
            touched[0] += len(flows)

        observers.append(counting)
    with no_gc():
        started.env.run()
    result = collect(started)
    return result.message_count, result.message_count + touched[0]


# --------------------------------------------------------------------------- refusals


def check_run(
    scenario: Any, what: str = "this run", max_seconds: float = MAX_SECONDS, max_memory: int = MAX_MEMORY_BYTES, plan: Plan | None = None
) -> Estimate:
    """Refuse (CollsimError naming the setting that would fit) a per-message run beyond the limits.
    ``plan``: the scenario's (sim.collective.plan.resolve), whose topology the run then uses."""
    from sim.collective.plan import resolve

    s = scenario
    plan = resolve(s) if plan is None else plan.with_scenario(s)
    if s.repetitions > MAX_REPETITIONS:
        raise CollsimError(
            f"repetitions: {s.repetitions:,} back-to-back calls is beyond the limit of {MAX_REPETITIONS:,}; "
            "time_s is per call, so a few repetitions give the same figure (e.g. --repetitions 10)",
            field="repetitions",
        )
    layout = _p2p_layout(s, plan.preset)  # once for the checks and the estimate
    _check_replay_size(s, int(_messages(s, plan.preset, layout).messages))
    # probed where the bound passes the limit, or the note of a long run (long_run_note) would go by the bound alone:
    # a 64-rank 1 MiB ring all_reduce's bound is 6.5 min, its run half a second
    told = _estimate(s, _needs_probes(s, min(max_seconds, NOTE_FROM_SECONDS), plan.preset, layout), plan, layout)
    if told.seconds <= max_seconds and told.memory_bytes <= max_memory:
        return told
    from sim.units import format_size

    limit = f"limit ~{format_seconds(max_seconds)} and {format_size(max_memory)}"
    hint = _hint(s, told, max_seconds, max_memory, plan)
    raise CollsimError(f"{what}: {s.op}/{s.algorithm} on {_where(s)} needs {told.describe()}; {limit}. {hint}", field=_field(s))


def long_run_note(scenario: Any, told: Estimate | None) -> str | None:
    """What a run that :func:`check_run` let through says before it starts when it is estimated
    to take more than :data:`NOTE_FROM_SECONDS` (a 32 x dgx-h100 all_to_all of 1 GiB: minutes):
    the estimate and the ways to a quicker answer; None for a shorter run."""
    if told is None or told.seconds < NOTE_FROM_SECONDS:
        return None
    s = scenario
    fewer = "--nodes" if _node_gpus(s) else "--ranks"
    quicker = "--model nccl answers from NCCL's own model at once" if getattr(s, "hardware", None) else "--mode collapsed may answer sooner"
    return f"{s.op}/{s.algorithm} on {_where(s)} needs {told.describe()}; progress follows (Ctrl-C stops). Fewer {fewer}, or {quicker}"


def _where(s: Any) -> str:
    gpus = _node_gpus(s)
    return f"{s.ranks // gpus} x {s.hardware} ({s.ranks:,} ranks)" if gpus else f"{s.ranks} ranks"


def _field(s: Any) -> str:
    return "chunks" if s.chunks > 1 else "ranks"


def _hint(s: Any, told: Estimate, max_seconds: float, max_memory: int, plan: Plan | None = None) -> str:
    hints = []
    for name in ("chunks", "ranks"):
        fitting = _largest_fitting(s, name, max_seconds, max_memory, plan)
        if fitting is not None:
            gpus = _node_gpus(s)
            hints.append(f"--nodes {fitting // gpus}" if name == "ranks" and gpus else f"--{name} {fitting}")
    if s.repetitions > 1:
        hints.append("--repetitions 1")
    if s.record == "full":
        hints.append("--record auto")
    fits = (" or ".join(hints) + " would fit; ") if hints else ""
    model = "--model nccl answers from NCCL's own model; " if getattr(s, "hardware", None) else ""
    return f"{fits}{model}--mode collapsed answers from the closed form or a replay where one applies"


def _largest_fitting(s: Any, name: str, max_seconds: float, max_memory: int, plan: Plan | None = None) -> int | None:
    """The largest value of ``name`` (chunks or ranks), halving from the scenario's, whose run
    fits the limits (probes are cached, so each try costs little); None when none does."""
    value = getattr(s, name) // 2
    gpus = _node_gpus(s) if name == "ranks" else 0
    if gpus:  # a hardware preset's ranks are whole nodes: --nodes halves
        value = max(s.ranks // gpus // 2, 1) * gpus if s.ranks > gpus else 0
    while value >= (1 if name == "chunks" else 2):
        try:
            told = estimate(s.replace(**{name: value}), plan=plan)  # the plan's preset: loaded once
        except CollsimError:  # e.g. a power-of-two algorithm: keep halving
            told = None
        if told is not None and told.seconds <= max_seconds and told.memory_bytes <= max_memory:
            return value
        value = (value // gpus // 2) * gpus if gpus else value // 2
    return None


def _node_gpus(s: Any) -> int:
    """GPUs a node of the scenario's hardware preset (its ranks come in whole nodes: ``--nodes``), else 0."""
    if getattr(s, "hardware", None) and s.topology == "two_level":
        return s.gpus_per_node_resolved
    return 0


def _check_replay_size(s: Any, messages: int) -> None:
    """Replays and closed forms hold every message (``messages``: :func:`work_messages`) in numpy arrays: bound them as well."""
    if messages > CROSSOVER_MAX_MESSAGES * 50:
        raise CollsimError(
            f"{_field(s)}: {s.op}/{s.algorithm} on {s.ranks} ranks with {s.chunks} chunks sends {messages:,} messages; "
            f"beyond {CROSSOVER_MAX_MESSAGES * 50:,} nothing here can simulate or replay it (use fewer ranks or chunks)",
            field=_field(s),
        )


def check_collapsed(scenario: Any, preset: Any = None) -> None:
    """A collapsed call (closed form, replay or one cached simulation) is bounded by the size of
    its replay arrays and, where it simulates, by :func:`check_run` at one repetition; ``preset``:
    the scenario's, loaded already."""
    messages = work_messages(scenario, preset)
    _check_replay_size(scenario, messages)
    from sim.collective import analytic

    if analytic.for_scenario(scenario) is None and messages > CROSSOVER_MAX_MESSAGES:
        raise CollsimError(
            f"{_field(scenario)}: a collapsed {scenario.op}/{scenario.algorithm} on {scenario.ranks} ranks with {scenario.chunks} chunks "
            f"replays {messages:,} messages (limit {CROSSOVER_MAX_MESSAGES:,}); use fewer ranks or chunks",
            field=_field(scenario),
        )


def work_messages(scenario: Any, preset: Any = None) -> int:
    return int(messages_of(scenario, preset).messages)


def check_crossover(scenario: Any, sizes: tuple[int, ...]) -> None:
    """Refuse a crossover whose replays alone (every algorithm, every size) would move more than
    :data:`CROSSOVER_MAX_MESSAGES` messages through numpy, or build a topology too large.
    The per-message points of a crossover are bounded by its own message budget."""
    from sim.algorithms.registry import algorithm_spec, algorithms_for

    worst, name = 0, ""
    largest = max(sizes) if sizes else scenario.size_bytes
    for algorithm in algorithms_for(scenario.op):
        spec = algorithm_spec(scenario.op, algorithm)
        try:
            point = scenario.replace(algorithm=algorithm, chunks=scenario.chunks if spec.chunked else 1)
            point = point.replace(size_bytes=max(largest - largest % point.element_bytes, point.element_bytes * point.ranks * point.chunks))
            messages = work_messages(point)
        except CollsimError:
            continue
        if messages > worst:
            worst, name = messages, algorithm
    if worst > CROSSOVER_MAX_MESSAGES:
        fit_ranks = scenario.ranks
        while fit_ranks > 2 and worst * (fit_ranks / scenario.ranks) ** 2 > CROSSOVER_MAX_MESSAGES:
            fit_ranks //= 2
        hint = f"--chunks {max(1, scenario.chunks * CROSSOVER_MAX_MESSAGES // worst)}" if scenario.chunks > 1 else f"--ranks {fit_ranks}"
        raise CollsimError(
            f"{_field(scenario)}: a crossover on {scenario.ranks} ranks with {scenario.chunks} chunks would handle "
            f"{worst:,} messages for {name} alone (limit {CROSSOVER_MAX_MESSAGES:,}); {hint} fits, or time one "
            "algorithm with 'collsim sim collective --mode collapsed'",
            field=_field(scenario),
        )


def check_points(count: int, what: str, setting: str, limit: int = MAX_SWEEP_POINTS) -> None:
    """Refuse a sweep of more than ``limit`` points, naming the setting and a coarser one."""
    if count > limit:
        raise CollsimError(
            f"{what}: {count:,} points is beyond the limit of {limit:,}; {setting}",
            field=what.split()[0].lstrip("-").replace("-", "_"),
        )
