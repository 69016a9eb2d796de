"""The fair engine's public interface: what budget probes and tests read instead of its private
state (reshare observers, the flows sharing a resource, their rates)."""

from __future__ import annotations

import pytest
import simpy

from sim.network import FairNetwork, make_network
from sim.network import topology as topo


def _two_senders_to_one():
    """0 -> 1 and 2 -> 1, 4 B each, sent at 0 on switch(4) (1 s route latency, 1 B/s links):
    both join the link switch -> 1 at 1 s and share it at 0.5 B/s, ending at 9 s."""
    env = simpy.Environment()
    net = make_network(env, topo.switch(4, 1.0, 1.0), "fair")
    ends = {}

    def sender(src):
        yield net.send(src, 1, 4)
        ends[src] = env.now

    env.process(sender(0))
    env.process(sender(2))
    return env, net, ends


def test_reshare_observers_see_each_re_sharing_with_its_component_and_time():
    env, net, ends = _two_senders_to_one()
    assert isinstance(net, FairNetwork)
    seen = []
    net.reshare_observers.append(lambda flows, now: seen.append((sorted(flow.message[0] for flow in flows), now)))
    env.run()
    assert ends == {0: pytest.approx(9.0), 2: pytest.approx(9.0)}
    assert seen == [([0, 2], 1.0)]  # one re-sharing: both joined at 1 s; they end together, nothing is left to share


def test_active_flows_and_rates_show_the_max_min_shares_while_flows_move():
    env, net, _ = _two_senders_to_one()
    looks = {}

    def look(at):
        yield env.timeout(at)
        shared = [index for index in range(net.resource_count) if len(net.active_flows(index)) == 2]
        looks[at] = (sorted(net.rates().values()), [net.resource_capacity[index] for index in shared])

    env.process(look(0.5))  # both still wait out their latency: nothing shares yet
    env.process(look(2.0))
    env.run()
    assert looks[0.5] == ([], [])
    assert looks[2.0] == ([0.5, 0.5], [1.0])  # the one link both cross, split equally


def test_take_marked_hands_over_the_resources_to_re_share_once():
    env, net, _ = _two_senders_to_one()
    marked = []
    net.schedule_settle = lambda: marked.append(net.take_marked())  # this network only: no re-sharing
    env.run(until=1.5)
    assert len(marked) == 1 and marked[0]  # the resources both flows joined at 1 s
    assert net.take_marked() == {}
