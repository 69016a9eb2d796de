"""An outside check: collsim's ``sharing: fair`` beside SimGrid's flow model on the same scenarios.

    python bench/simgrid_check.py                      # every case, a Markdown table
    python bench/simgrid_check.py --only ring          # cases whose name contains "ring"
    python bench/simgrid_check.py --sharing fifo       # collsim's other semantics in the same table
    python bench/simgrid_check.py --simgrid-model LV08  # SimGrid's default model, factors and all
    SIMGRID_PYTHON=/path/to/python python bench/simgrid_check.py

A one-off check (issue 9, item 8), not run by CI or pytest. collsim runs in this process; each
SimGrid case runs in a child process of a Python that has the ``simgrid`` package (default
/work/simgrid-venv/bin/python, or $SIMGRID_PYTHON, or --simgrid-python), because SimGrid's
engine is a singleton per process. The child imports only simgrid and the standard library.

SimGrid side, built independently of collsim's code (not from its graphs), from the same scenario
dict:

- ``network/model:raw`` (SimGrid 4.1's "size/bw + lat with fair sharing" model) and, spelled out,
  latency and bandwidth factors 1, ``network/weight-S:0``, ``network/TCP-gamma:0`` (no window
  limit) and ``network/crosstraffic:0`` (no reverse ACK traffic); ``precision/timing``
  1e-13 s (``--timing-precision``; SimGrid's 1e-9 s merges events less than 1 ns apart);
- switch(p): each rank one split-duplex link (latency/2, bandwidth) into the switch; a route is
  the sender's link UP and the receiver's link DOWN, each direction its own SHARED resource;
- two_level: each GPU a split-duplex link (intra latency/2, intra bandwidth) to its node, each
  node a split-duplex NIC link (latency/2, bandwidth) to the core; inter-node routes are
  GPU UP, NIC UP, NIC DOWN, GPU DOWN, as in sim/network/topology.py;
- a user graph file that is a tree: one split-duplex link per edge, routes the unique paths;
- messages are mailbox put/get pairs, one mailbox per (sender, receiver): a transfer starts only
  once both sides are posted, as collsim with ``eager_limit_bytes: 0``;
- reductions (when ``reduce_bandwidth_Bps`` is set) are ``this_actor.execute(nbytes)`` on a host
  whose speed is the reduce bandwidth;
- the algorithms send the same messages in the same order as sim/algorithms: ring all-reduce
  with non-blocking sends, MPICH's binomial broadcast and reduce with blocking sends, pairwise
  and direct all-to-all.

docs/dev/simgrid-check.md has the table, how SimGrid was built, and why the differences arise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_SIMGRID_PYTHON = "/work/simgrid-venv/bin/python"
SIMGRID_CONFIG = (
    ("network/model", "raw"),
    ("network/latency-factor", "1.0"),
    ("network/bandwidth-factor", "1.0"),
    ("network/weight-S", "0"),
    ("network/TCP-gamma", "0"),
    ("network/crosstraffic", "0"),
)
GB = 1e9
US = 1e-6
MiB = 2**20


# -- cases: one scenario dict each, read by both sides ---------------------------------------------


def _switch(op: str, algorithm: str, ranks: int, size_bytes: int, **extra: object) -> dict:
    case = {"op": op, "algorithm": algorithm, "ranks": ranks, "size_bytes": size_bytes}
    case.update(topology="switch", bandwidth_Bps=10 * GB, latency_s=5 * US)
    case.update(extra)
    return case


def _two_level(ranks: int, gpus: int, size_bytes: int, placement: str, op: str = "all_reduce", algorithm: str = "ring") -> dict:
    case = {"op": op, "algorithm": algorithm, "ranks": ranks, "size_bytes": size_bytes}
    case.update(topology="two_level", gpus_per_node=gpus, bandwidth_Bps=12.5 * GB, latency_s=5 * US)
    case.update(intra_bandwidth_Bps=50 * GB, intra_latency_s=1 * US, placement=placement)
    return case


def cases() -> list[tuple[str, dict]]:
    """(label, scenario) pairs: switch(p) ring, binomial broadcast and reduce (odd p too); on
    two_level, ring all-reduce where round_robin placement makes the ring share the NICs, binomial
    trees whose concurrent sends share them, and concurrent groups, of equal and of unequal sizes
    (unequal: flows on one NIC end at different times, so the max-min rates change mid-flow)."""
    out: list[tuple[str, dict]] = []
    for p in (2, 4, 5, 8, 16):
        for size in (1 * MiB, 64 * MiB):
            out.append((f"ring all_reduce switch({p})", _switch("all_reduce", "ring", p, size)))
    out.append(("ring all_reduce switch(7) gamma", _switch("all_reduce", "ring", 7, 16 * MiB, reduce_bandwidth_Bps=20 * GB)))
    for p in (4, 5, 7, 8, 13):
        for size in (1 * MiB, 16 * MiB):
            out.append((f"binomial broadcast switch({p})", _switch("broadcast", "binomial", p, size)))
    for p in (4, 5, 7, 8, 13):
        out.append((f"binomial reduce switch({p})", _switch("reduce", "binomial", p, 16 * MiB)))
        out.append((f"binomial reduce switch({p}) gamma", _switch("reduce", "binomial", p, 16 * MiB, reduce_bandwidth_Bps=20 * GB)))
    out.append(("binomial reduce switch(6) root 3", _switch("reduce", "binomial", 6, 16 * MiB, root=3)))
    for placement in ("block", "round_robin"):
        for nodes, gpus in ((2, 4), (4, 2)):
            for size in (1 * MiB, 64 * MiB):
                label = f"ring all_reduce two_level {nodes}x{gpus} {placement}"
                out.append((label, _two_level(nodes * gpus, gpus, size, placement)))
    for size in (1 * MiB, 64 * MiB):  # four rings at once, each crossing every NIC
        case = _two_level(16, 4, size, "round_robin")
        case["groups"] = [list(range(g * 4, g * 4 + 4)) for g in range(4)]
        out.append(("4 ring all_reduces two_level 4x4 round_robin groups 4x4", case))
        case = _two_level(8, 4, size, "round_robin")
        case["groups"] = [[0, 1, 2, 3, 4, 5], [6, 7]]
        out.append(("ring all_reduces of 6 and 2 ranks two_level 2x4 round_robin", case))
    for op in ("broadcast", "reduce"):
        out.append((f"binomial {op} two_level 2x4 round_robin", _two_level(8, 4, 16 * MiB, "round_robin", op, "binomial")))
        out.append((f"binomial {op} two_level 4x4 round_robin", _two_level(16, 4, 16 * MiB, "round_robin", op, "binomial")))
    out += _all_to_all_cases()
    return out


def _all_to_all_cases() -> list[tuple[str, dict]]:
    """Many flows per port at once (direct), and exchanges (pairwise). On two_level, direct mixes
    intra-node and inter-node flows on one GPU link: routes of unequal latency (see the doc)."""
    out = []
    for p in (5, 8):
        for algorithm in ("pairwise", "direct"):
            out.append((f"{algorithm} all_to_all switch({p})", _switch("all_to_all", algorithm, p, 16 * MiB)))
    for placement in ("block", "round_robin"):
        case = _two_level(8, 4, 16 * MiB, placement, "all_to_all", "direct")
        out.append((f"direct all_to_all two_level 2x4 {placement}", case))
    case = _two_level(8, 4, 16 * MiB, "block", "all_to_all", "direct")
    case.update(latency_s=0.0, intra_latency_s=0.0)
    out.append(("direct all_to_all two_level 2x4 block, zero latency", case))
    for latency_s in (1 * US, 10 * US):
        for algorithm in ("pairwise", "direct"):
            case = _switch("all_to_all", algorithm, 4, 16 * MiB, topology=_dumbbell(latency_s))
            out.append((f"{algorithm} all_to_all dumbbell, ranks 1, 3 links {latency_s / US:g} us", case))
    return out


def _dumbbell(far_latency_s: float) -> str:
    """Ranks 0, 1 on switch A, ranks 2, 3 on switch B, one A-B link between them; every link
    10 GB/s and 1 us except ranks 1 and 3's, which have ``far_latency_s``: the A-B link then
    carries flows of unequal route latency at once (written as a collsim user graph file)."""
    links = [{"source": "A", "target": "B", "bandwidth": 10 * GB, "latency": 1 * US}]
    for rank, switch in ((0, "A"), (1, "A"), (2, "B"), (3, "B")):
        links.append({"source": rank, "target": switch, "bandwidth": 10 * GB, "latency": far_latency_s if rank % 2 else 1 * US})
    nodes = [{"id": node} for node in (0, 1, 2, 3, "A", "B")]
    graph = {"directed": False, "multigraph": False, "graph": {}, "nodes": nodes, "links": links}
    path = Path(tempfile.gettempdir()) / f"collsim_simgrid_check_dumbbell_{far_latency_s:g}.json"
    path.write_text(json.dumps(graph))
    return str(path)


# -- the SimGrid side (runs in the child; simgrid and the standard library only) ---------------------


def split_bytes(size_bytes: int, element_bytes: int, parts: int) -> list[int]:
    """Byte sizes of ``parts`` near-equal element ranges, the first ones one element larger
    (collsim's split rule, sim/algorithms/call.py)."""
    base, extra = divmod(size_bytes // element_bytes, parts)
    return [(base + (1 if index < extra else 0)) * element_bytes for index in range(parts)]


def endpoint_of(case: dict, rank: int) -> int:
    """The endpoint (host index) of ``rank``: block keeps rank order; round_robin deals ranks to
    nodes in turn (rank r on node r mod nodes, slot r div nodes)."""
    if case.get("topology") != "two_level" or case.get("placement", "block") == "block":
        return rank
    gpus = case["gpus_per_node"]
    nodes = case["ranks"] // gpus
    return (rank % nodes) * gpus + rank // nodes


def _build_switch(zone, case: dict) -> list:
    from simgrid import LinkInRoute

    p, half = case["ranks"], case["latency_s"] / 2
    hosts = [zone.add_host(f"h{e}", case.get("reduce_bandwidth_Bps") or 1e9).seal() for e in range(p)]
    links = [zone.add_split_duplex_link(f"port{e}", case["bandwidth_Bps"]).set_latency(half).seal() for e in range(p)]
    up, down = LinkInRoute.Direction.UP, LinkInRoute.Direction.DOWN
    for a in range(p):
        for b in range(p):
            if a != b:
                zone.add_route(hosts[a], hosts[b], [LinkInRoute(links[a], up), LinkInRoute(links[b], down)], False)
    return hosts


def _build_two_level(zone, case: dict) -> list:
    from simgrid import LinkInRoute

    p, gpus = case["ranks"], case["gpus_per_node"]
    intra_bandwidth = case.get("intra_bandwidth_Bps") or case["bandwidth_Bps"]
    intra_latency = case["latency_s"] if case.get("intra_latency_s") is None else case["intra_latency_s"]
    hosts = [zone.add_host(f"h{e}", case.get("reduce_bandwidth_Bps") or 1e9).seal() for e in range(p)]
    gpu = [zone.add_split_duplex_link(f"gpu{e}", intra_bandwidth).set_latency(intra_latency / 2).seal() for e in range(p)]
    nic = [zone.add_split_duplex_link(f"nic{n}", case["bandwidth_Bps"]).set_latency(case["latency_s"] / 2).seal() for n in range(p // gpus)]
    up, down = LinkInRoute.Direction.UP, LinkInRoute.Direction.DOWN
    for a in range(p):
        for b in range(p):
            if a == b:
                continue
            route = [LinkInRoute(gpu[a], up), LinkInRoute(gpu[b], down)]
            if a // gpus != b // gpus:
                route[1:1] = [LinkInRoute(nic[a // gpus], up), LinkInRoute(nic[b // gpus], down)]
            zone.add_route(hosts[a], hosts[b], route, False)
    return hosts


def _build_tree_graph(zone, case: dict) -> list:
    """A user graph (collsim's JSON node-link file) that is a tree: one split-duplex link per
    edge, each route the unique path (collsim's rule for trees: docs/routes-placement.md)."""
    from simgrid import LinkInRoute

    data = json.loads(Path(case["topology"]).read_text())
    hosts = [zone.add_host(f"h{e}", case.get("reduce_bandwidth_Bps") or 1e9).seal() for e in range(case["ranks"])]
    up, down = LinkInRoute.Direction.UP, LinkInRoute.Direction.DOWN
    neighbours: dict[object, list] = {}
    for index, edge in enumerate(data["links"]):
        link = zone.add_split_duplex_link(f"edge{index}", float(edge["bandwidth"])).set_latency(float(edge.get("latency", 0))).seal()
        neighbours.setdefault(edge["source"], []).append((edge["target"], LinkInRoute(link, up)))
        neighbours.setdefault(edge["target"], []).append((edge["source"], LinkInRoute(link, down)))
    for a in range(case["ranks"]):
        came_from, frontier = {a: None}, [a]
        for node in frontier:  # breadth first; in a tree every node is reached once
            for other, hop in neighbours.get(node, []):
                if other not in came_from:
                    came_from[other] = (node, hop)
                    frontier.append(other)
        for b in range(case["ranks"]):
            route, node = [], b
            while came_from[node] is not None:
                node, hop = came_from[node]
                route.append(hop)
            if a != b:
                zone.add_route(hosts[a], hosts[b], route[::-1], False)
    return hosts


class Messages:
    """Point-to-point messages between ranks as SimGrid mailbox comms (rendezvous). Programs
    name ranks inside their group; ``members`` maps them to global ranks (one mailbox per global
    sender and receiver)."""

    def __init__(self, reduce: bool, members: list[int]) -> None:
        from simgrid import Mailbox, this_actor

        self._mailbox, self._actor, self._reduce, self._members = Mailbox.by_name, this_actor, reduce, members

    def send(self, src: int, dst: int, nbytes: int):
        return self._mailbox(f"{self._members[src]}->{self._members[dst]}").put_async(None, nbytes)

    def recv(self, src: int, dst: int) -> None:
        self._mailbox(f"{self._members[src]}->{self._members[dst]}").get()

    def recv_async(self, src: int, dst: int):
        return self._mailbox(f"{self._members[src]}->{self._members[dst]}").get_async()

    def reduce(self, nbytes: int) -> None:
        if self._reduce and nbytes:
            self._actor.execute(nbytes)


def sg_ring_all_reduce(io: Messages, rank: int, case: dict) -> None:
    """sim/algorithms/ring.py's ring all-reduce, one chunk: sends do not wait, receives do."""
    p = case["ranks"]
    if p == 1:
        return
    pieces = split_bytes(case["size_bytes"], case.get("element_bytes", 4), p)
    right, left = (rank + 1) % p, (rank - 1) % p
    pending = [io.send(rank, right, pieces[(rank - 1) % p])]
    for step in range(p - 1):
        nbytes = pieces[(rank - step - 2) % p]
        io.recv(left, rank)
        io.reduce(nbytes)
        if step < p - 2:
            pending.append(io.send(rank, right, nbytes))
    pending.append(io.send(rank, right, pieces[rank]))
    for step in range(p - 1):
        io.recv(left, rank)
        if step < p - 2:
            pending.append(io.send(rank, right, pieces[(rank - step - 1) % p]))
    for comm in pending:
        comm.wait()


def sg_binomial_broadcast(io: Messages, rank: int, case: dict) -> None:
    """MPICH MPIR_Bcast_binomial: receive from the parent, then blocking sends to the children,
    farthest subtree first."""
    p, root, nbytes = case["ranks"], case.get("root", 0), case["size_bytes"]
    v, mask = (rank - root) % p, 1
    while mask < p:
        if v & mask:
            io.recv((v - mask + root) % p, rank)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if v + mask < p:
            io.send(rank, (v + mask + root) % p, nbytes).wait()
        mask >>= 1


def sg_binomial_reduce(io: Messages, rank: int, case: dict) -> None:
    """MPICH MPIR_Reduce_binomial: receive and combine from children in increasing distance,
    then one blocking send to the parent."""
    p, root, nbytes = case["ranks"], case.get("root", 0), case["size_bytes"]
    v, mask = (rank - root) % p, 1
    while mask < p:
        if v & mask:
            io.send(rank, (v - mask + root) % p, nbytes).wait()
            return
        if v + mask < p:
            io.recv((v + mask + root) % p, rank)
            io.reduce(nbytes)
        mask <<= 1


def sg_pairwise_all_to_all(io: Messages, rank: int, case: dict) -> None:
    """sim/algorithms/alltoall.py pairwise: per step send without waiting, receive, then wait
    for the send."""
    p = case["ranks"]
    block = (case["size_bytes"] // case.get("element_bytes", 4) // p) * case.get("element_bytes", 4)
    power_of_two = p & (p - 1) == 0
    for step in range(1, p):
        dst = rank ^ step if power_of_two else (rank + step) % p
        src = rank ^ step if power_of_two else (rank - step) % p
        sent = io.send(rank, dst, block)
        io.recv(src, rank)
        sent.wait()


def sg_direct_all_to_all(io: Messages, rank: int, case: dict) -> None:
    """sim/algorithms/alltoall.py direct: every send and receive posted at once."""
    p = case["ranks"]
    block = (case["size_bytes"] // case.get("element_bytes", 4) // p) * case.get("element_bytes", 4)
    sends = [io.send(rank, (rank + offset) % p, block) for offset in range(1, p)]
    receives = [io.recv_async((rank - offset) % p, rank) for offset in range(1, p)]
    for comm in receives + sends:
        comm.wait()


SG_PROGRAMS = {
    ("all_to_all", "pairwise"): sg_pairwise_all_to_all,
    ("all_to_all", "direct"): sg_direct_all_to_all,
    ("all_reduce", "ring"): sg_ring_all_reduce,
    ("broadcast", "binomial"): sg_binomial_broadcast,
    ("reduce", "binomial"): sg_binomial_reduce,
}


def simgrid_run(case: dict, config: list[tuple[str, str]]) -> dict:
    """Simulate one case in SimGrid with ``config`` (key, value) settings; returns its time (the
    last rank's end) and per-rank ends."""
    import simgrid
    from simgrid import Engine

    args = ["simgrid_check"] + [f"--cfg={key}:{value}" for key, value in config] + ["--log=root.thres:warning"]
    engine = Engine(args)
    zone = engine.netzone_root
    build = {"switch": _build_switch, "two_level": _build_two_level}.get(case["topology"], _build_tree_graph)
    hosts = build(zone, case)
    zone.seal()
    program = SG_PROGRAMS[(case["op"], case["algorithm"])]
    ends = [0.0] * case["ranks"]

    def rank_main(io: Messages, local: int, group_case: dict) -> None:
        program(io, local, group_case)
        ends[io._members[local]] = Engine.clock

    for members in case.get("groups") or [list(range(case["ranks"]))]:
        io = Messages(bool(case.get("reduce_bandwidth_Bps")), members)
        group_case = {**case, "ranks": len(members)}
        for local, rank in enumerate(members):
            hosts[endpoint_of(case, rank)].add_actor(f"rank{rank}", rank_main, io, local, group_case)
    engine.run()
    return {"time_s": max(ends), "rank_end_s": ends, "simgrid_version": simgrid.simgrid_version}


# -- the collsim side and the table -------------------------------------------------------------------


def collsim_run(case: dict, sharing: str) -> dict:
    from sim.collective.runner import run_collective
    from sim.scenario import CollectiveScenario

    scenario = CollectiveScenario.from_dict({**case, "sharing": sharing, "eager_limit_bytes": 0})
    result = run_collective(scenario)
    return {"time_s": result.time_s, "rank_end_s": list(result.rank_end_s), "analytic_s": result.analytic_time_s}


def simgrid_env(python: str) -> dict[str, str]:
    """The child's environment: the pip-built extension module needs libsimgrid.so.4.1, which
    pip puts beside it in site-packages, but it carries no RPATH to find it there."""
    out = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"], capture_output=True, text=True)
    env = dict(os.environ)
    if out.returncode == 0:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [out.stdout.strip(), env.get("LD_LIBRARY_PATH")]))
    return env


def simgrid_child(python: str, env: dict[str, str], case: dict, config: list[tuple[str, str]]) -> dict:
    command = [python, __file__, "--simgrid-case", json.dumps({"case": case, "config": config})]
    out = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if out.returncode != 0:
        tail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-6:])
        raise RuntimeError(f"SimGrid child failed (exit {out.returncode}):\n{tail}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _size(nbytes: int) -> str:
    return f"{nbytes // MiB} MiB" if nbytes % MiB == 0 else f"{nbytes} B"


def _rel(value: float, reference: float) -> str:
    return f"{(value - reference) / reference:+.1e}" if reference else "n/a"


def row(label: str, case: dict, sharing: str, python: str, env: dict[str, str], config: list[tuple[str, str]]) -> str:
    mine = collsim_run(case, sharing)
    theirs = simgrid_child(python, env, case, config)
    analytic = mine["analytic_s"]
    ranks_apart = max(abs(a - b) for a, b in zip(mine["rank_end_s"], theirs["rank_end_s"]))
    cells = [label, _size(case["size_bytes"]), f"{mine['time_s'] * 1e6:.3f}", f"{theirs['time_s'] * 1e6:.3f}"]
    cells += [_rel(mine["time_s"], theirs["time_s"]), f"{ranks_apart * 1e6:.3g}"]
    cells += [f"{analytic * 1e6:.3f}" if analytic is not None else "-"]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| case | size | collsim {sharing} (us) | SimGrid (us) | rel. diff | max rank-end gap (us) | closed form (us) |\n"
    "|---|---|---|---|---|---|---|"
)


def _positive(text: str) -> bool:
    try:
        return float(text) > 0
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simgrid-python", default=os.environ.get("SIMGRID_PYTHON", DEFAULT_SIMGRID_PYTHON))
    parser.add_argument("--sharing", choices=("fair", "fifo"), default="fair")
    parser.add_argument("--only", default="", help="run only cases whose label contains this text")
    parser.add_argument(
        "--timing-precision",
        default="1e-13",
        help="SimGrid's precision/timing in seconds (its own default is 1e-9: events closer than that coalesce); 'default' keeps SimGrid's",
    )
    parser.add_argument(
        "--simgrid-model",
        choices=("raw", "LV08", "CM02"),
        default="raw",
        help="raw (default): the plain max-min model with every factor spelled out as 1; LV08 or CM02: that SimGrid model with its own defaults",
    )
    parser.add_argument("--simgrid-case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.simgrid_case:
        job = json.loads(args.simgrid_case)
        print(json.dumps(simgrid_run(job["case"], job["config"])))
        return 0
    if args.timing_precision != "default" and not _positive(args.timing_precision):
        print(
            f"error: --timing-precision: must be a time in seconds > 0 such as 1e-13, or 'default'; got {args.timing_precision!r}",
            file=sys.stderr,
        )
        return 2
    if not Path(args.simgrid_python).is_file():
        print(f"error: --simgrid-python: {args.simgrid_python} not found; give a Python that has the simgrid package", file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    env = simgrid_env(args.simgrid_python)
    probe = [args.simgrid_python, "-c", "import simgrid; print(simgrid.simgrid_version)"]
    version = subprocess.run(probe, capture_output=True, text=True, env=env)
    if version.returncode != 0:
        why = (version.stderr.strip().splitlines() or ["no output"])[-1]
        print(
            f"error: --simgrid-python: {args.simgrid_python} cannot import simgrid ({why}); build it as docs/dev/simgrid-check.md says",
            file=sys.stderr,
        )
        return 2
    config = (list(SIMGRID_CONFIG) if args.simgrid_model == "raw" else [("network/model", args.simgrid_model)]) + (
        [] if args.timing_precision == "default" else [("precision/timing", args.timing_precision)]
    )
    print(f"SimGrid {version.stdout.strip()} ({', '.join(f'{k}:{v}' for k, v in config)}); collsim sharing {args.sharing}, eager_limit 0")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, {platform.processor() or platform.machine()}")
    print()
    print(HEADER.format(sharing=args.sharing))
    for label, case in cases():
        if args.only in label:
            try:
                print(row(label, case, args.sharing, args.simgrid_python, env, config), flush=True)
            except RuntimeError as error:  # the SimGrid child failed: say which case and how
                print(f"error: {label}: {error}", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
