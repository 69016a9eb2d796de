"""The run-size budget's estimate (sim.collective.budget) of NCCL's all_to_all against counted runs.

    python bench/budget_all_to_all.py [--presets dgx-h100,...] [--nodes 2,4,8] [--sizes 1,4,16,64,256]
                                      [--repeats 1] [--op all_to_all,all_reduce] [--no-count]
    python bench/budget_all_to_all.py --nodes 32 --sizes 64 --stop-after 420

For each op (NCCL's pick; several: interleaved), preset, node count and size (MiB) of ``collsim sim collective --hardware P --nodes N --op
OP --size S`` (NCCL's pick, record aggregate): the estimate (messages, message-visits, seconds) with
the probes' own cost (their cache cleared first), then ``budget.count_visits`` of the run, its wall
and CPU seconds, and the cost of a re-share visit that run shows (CPU seconds less the messages at
``SECONDS_PER_MESSAGE`` and the route work, over the visits beyond the messages). With
``--repeats R`` the cases run R rounds, interleaved, and the medians are printed. Prints markdown
table rows (bench/results/budget_all_to_all.md). ``--stop-after S`` runs each case with the
count's observer instead and stops it after S seconds of wall time, printing how far it got (a run
too long to finish: its simulated time, settles and visits so far).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from sim.collective import budget
from sim.collective.pick import scenario_for_pick


def _estimate(scenario) -> tuple[budget.Estimate, float]:
    budget.clear_probes()
    start = time.perf_counter()
    told = budget.estimate(scenario)
    return told, time.perf_counter() - start


def _count(scenario) -> tuple[int, int, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    messages, visits = budget.count_visits(scenario)
    return messages, visits, time.perf_counter() - wall, time.process_time() - cpu


class _Stop(Exception):
    pass


def _partial(scenario, limit_s: float) -> str:
    """Run ``scenario`` counting its re-share visits, stopped after ``limit_s`` of wall time."""
    from sim.collective.runner import no_gc, planned_topology, start_collective

    wall, cpu = time.perf_counter(), time.process_time()
    started = start_collective(scenario, planned_topology(scenario, None))
    seen = {"settles": 0, "visits": 0, "now": 0.0}

    def counting(flows, now: float) -> None:
        seen["settles"] += 1
        seen["visits"] += len(flows)
        seen["now"] = now
        if time.perf_counter() - wall > limit_s:
            raise _Stop

    started.net.reshare_observers.append(counting)
    try:
        with no_gc():
            started.env.run()
        done = "finished"
    except _Stop:
        done = "stopped"
    return (
        f"{done} after {time.perf_counter() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU: last settle at "
        f"{seen['now'] * 1e6:.1f} us simulated, {seen['settles']:,} settles, {seen['visits']:,} visits beyond the messages"
    )


def _visit_cost(told: budget.Estimate, messages: int, visits: int, cpu: float) -> float:
    beyond = visits - messages
    rest = cpu - messages * budget.SECONDS_PER_MESSAGE - told.route_seconds
    return rest / beyond if beyond > 0 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="dgx-h100,hgx-h100-nvls,gb200-nvl72")
    parser.add_argument("--nodes", default="2,4,8")
    parser.add_argument("--sizes", default="1,4,16,64,256", help="MiB, comma-separated")
    parser.add_argument("--op", default="all_to_all", help="comma-separated")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-count", action="store_true", help="estimates only")
    parser.add_argument("--stop-after", type=float, help="run each case for at most this many seconds, saying how far it got")
    args = parser.parse_args()
    cases = [
        (op, preset, int(nodes), float(size))
        for op in args.op.split(",")
        for preset in args.presets.split(",")
        for nodes in args.nodes.split(",")
        for size in args.sizes.split(",")
    ]
    print(
        f"load {os.getloadavg()[0]:.1f}; SECONDS_PER_MESSAGE {budget.SECONDS_PER_MESSAGE:g}, SECONDS_PER_VISIT {budget.SECONDS_PER_VISIT:g}, "
        f"A2A_SECONDS_PER_VISIT {budget.A2A_SECONDS_PER_VISIT:g}, A2A_NODE_GROWTH {budget.A2A_NODE_GROWTH:g}"
    )
    print("| op | preset | nodes | size | est. visits | counted visits | ratio | est. s | wall s | CPU s | us a visit | probes s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rounds: dict[tuple, list[tuple]] = {case: [] for case in cases}
    for _ in range(args.repeats):
        for case in cases:
            op, preset, nodes, size = case
            scenario, why = scenario_for_pick(preset, nodes, op, int(size * 2**20))
            if scenario is None:
                print(f"| {op} | {preset} | {nodes} | {size:g} MiB | {why} |")
                continue
            scenario = scenario.replace(record="aggregate")
            if args.stop_after:
                print(f"{op} {preset} {nodes} x {size:g} MiB: {_partial(scenario, args.stop_after)}", flush=True)
                continue
            told, probes = _estimate(scenario)
            counted = (0, 0, float("nan"), float("nan")) if args.no_count else _count(scenario)
            rounds[case].append((told, probes, *counted))
            if args.repeats == 1:
                _row(case, rounds[case])
    for case, runs in rounds.items():
        if runs and args.repeats > 1:
            _row(case, runs)


def _row(case: tuple, runs: list[tuple]) -> None:
    op, preset, nodes, size = case
    told = runs[0][0]
    messages, visits = runs[0][2], runs[0][3]
    probes = statistics.median(run[1] for run in runs)
    wall = statistics.median(run[4] for run in runs)
    cpu = statistics.median(run[5] for run in runs)
    ratio = f"{told.visits / visits:.2f}" if visits else "-"
    cost = _visit_cost(told, messages, visits, cpu) * 1e6 if visits else float("nan")
    print(
        f"| {op} | {preset} | {nodes} | {size:g} MiB | {told.visits:,} | {visits:,} | {ratio} | {told.seconds:.2f} | {wall:.2f} | {cpu:.2f} "
        f"| {cost:.1f} | {probes:.2f} |",
        flush=True,
    )


if __name__ == "__main__":
    main()
