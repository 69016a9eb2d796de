"""Concurrent collectives on disjoint groups of ranks that share one network.

A scenario's ``groups`` split ranks 0..p-1 into disjoint groups; each group runs the scenario's
op and algorithm on its members at the same time, renumbered 0..m-1 inside the group (member i
of the group is its local rank i), e.g. the data-parallel all-reduces of four tensor-parallel
shards crossing the same NICs. A group's program sees a :class:`GroupNet`: the run's network
with local ranks mapped to global ones, so its messages contend with every other group's on the
shared links and ports, and records carry global ranks.

Group specs (:func:`resolve_groups`): ``"4x8"`` is four groups of 8 consecutive ranks,
``"strided:4"`` four groups g = {g, g+4, g+8, ...}, ``"0,2;1,3"`` or a list of lists explicit
groups. Groups must be disjoint and cover every rank exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from sim.algorithms.call import Call
from sim.collective.verify import initial_buffers, prepare


class GroupTopology:
    """The topology as one group sees it: ranks numbered 0..m-1 inside the group."""

    def __init__(self, topology: Any, members: Sequence[int]) -> None:
        self.topology = topology
        self.members = tuple(members)
        self.ranks = len(self.members)
        self.name = topology.name

    def node_of(self, rank: int) -> int:
        return self.topology.node_of(self.members[rank])

    @property
    def gpus_per_node(self) -> int | None:
        """The group's ranks per node, when every node it uses holds the same number and local
        rank r sits on the group's node r // that number (how NCCL lays out its rings and trees
        over nodes); None otherwise, and NCCL's algorithms treat the group as one flat node."""
        nodes = self._node_ranks
        size = len(nodes[0]) if nodes else 0
        if not size or any(sorted(ranks) != list(range(index * size, (index + 1) * size)) for index, ranks in enumerate(nodes)):
            return None
        return size

    def node_ranks(self) -> list[list[int]]:
        """The group's local ranks on each node it uses, nodes in order, ranks in endpoint order."""
        return [list(ranks) for ranks in self._node_ranks]

    @cached_property
    def _node_ranks(self) -> tuple[tuple[int, ...], ...]:
        by_node: dict[int, list[int]] = {}
        for local in sorted(range(self.ranks), key=lambda local: self.topology.endpoint(self.members[local])):
            by_node.setdefault(self.node_of(local), []).append(local)
        return tuple(tuple(by_node[node]) for node in sorted(by_node))


class GroupNet:
    """A network view for one group: every method that takes ranks maps local to global."""

    def __init__(self, net: Any, members: Sequence[int]) -> None:
        self.net = net
        self.members = tuple(members)
        self.env = net.env
        self.gamma = net.gamma
        self.topology = GroupTopology(net.topology, self.members)

    def send(self, src: int, dst: int, nbytes: int, payload: Any = None, step: int = -1, chunk: int = -1, tag: int = 0) -> Any:
        members = self.members
        return self.net.send(members[src], members[dst], nbytes, payload, step, chunk, tag)

    def recv(self, src: int, dst: int, tag: int = 0) -> Any:
        return self.net.recv(self.members[src], self.members[dst], tag)

    def reduce(self, rank: int, nbytes: int, step: int = -1, chunk: int = -1) -> Any:
        return self.net.reduce(self.members[rank], nbytes, step, chunk)

    def last_send(self, rank: int) -> Any:
        return self.net.last_send(self.members[rank])

    def share_wire(self, src: int, dst: int, tags: range) -> None:
        self.net.share_wire(self.members[src], self.members[dst], tags)


def group_programs(scenario: Any, net: Any) -> tuple[list[tuple[GroupNet, int, Call]], list[Call]]:
    """For every global rank, (its group's network view, its local rank, its group's call), and
    the calls, one per group. With ``verify`` each group's inputs are drawn from the scenario's
    seed plus the group's index, so groups of one size hold different data."""
    s = scenario
    per_rank: list[Any] = [None] * s.ranks
    calls = []
    for index, members in enumerate(s.groups):
        call = Call(s.op, len(members), s.size_bytes, s.element_bytes, s.chunks, s.root)
        if s.verify:
            prepare(call, initial_buffers(s.op, len(members), s.elements, s.root, s.seed + index), s.repetitions)
        view = GroupNet(net, members)
        calls.append(call)
        for local, rank in enumerate(members):
            per_rank[rank] = (view, local, call)
    return per_rank, calls


def group_times(scenario: Any, ends: Sequence[float]) -> list[float]:
    """Each group's time per call: when its last member finished, over the repetitions."""
    return [max(ends[rank] for rank in members) / scenario.repetitions for members in scenario.groups]


def group_closed_form(scenario: Any) -> float | None:
    """The closed form of one group where it holds for every group: on switch, groups share no
    port, so groups of one size each take the closed form of that size; None elsewhere."""
    s = scenario
    sizes = {len(group) for group in s.groups}
    if s.topology != "switch" or len(sizes) != 1 or s.stragglers:
        return None
    from sim.collective import analytic

    return analytic.for_scenario(s.replace(ranks=sizes.pop(), groups=(), verify=False))
