"""How long flows ending at one instant take to ask whether their component needs re-sharing.

    python bench/fair_end_speed.py [--rounds 3] [--nodes 10]

Runs the DES of ``collsim sim collective --hardware dgx-h100 --nodes N --op all_to_all --size
1GiB`` in this process, interleaved: with the instant's memo (sim.network.flows.Reach, what ships)
and with a fresh search for every flow (what ran before), and prints each round's seconds, the
medians and their ratio, with the searches counted. The simulated time must be the same.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import sim.network.flows as flows
from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective


def _once(nodes: int, remember: bool) -> tuple[float, float, int]:
    counts = [0]
    search, asks = flows.reaches, flows.Reach.asks

    def counting(flow, active, marked):
        counts[0] += 1
        return search(flow, active, marked)

    def fresh(self, flow, active, marked):
        return asks(flows.Reach(), flow, active, marked)

    flows.reaches = counting
    if not remember:
        flows.Reach.asks = fresh
    try:
        scenario, why = scenario_for_pick("dgx-h100", nodes, "all_to_all", 2**30)
        assert scenario is not None, why
        start = time.perf_counter()
        result = run_collective(scenario)
        return time.perf_counter() - start, result.time_s, counts[0]
    finally:
        flows.reaches, flows.Reach.asks = search, asks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=10)
    args = parser.parse_args()
    seconds: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(args.rounds):
        for remember in (False, True):
            wall, simulated, searches = _once(args.nodes, remember)
            seconds[remember].append(wall)
            label = "memo  " if remember else "fresh "
            print(f"round {round_ + 1} {label} {wall:7.2f} s  simulated {simulated!r} s  searches {searches}")
    fresh, kept = statistics.median(seconds[False]), statistics.median(seconds[True])
    print(f"median fresh {fresh:.2f} s (spread {min(seconds[False]):.2f}-{max(seconds[False]):.2f}), "
          f"memo {kept:.2f} s (spread {min(seconds[True]):.2f}-{max(seconds[True]):.2f}): x{fresh / kept:.1f}; "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
