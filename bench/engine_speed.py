"""Engine speed: ring all-reduce under fair and fifo sharing beside a bare SimPy ring of the same schedule.

    python bench/engine_speed.py                 # p = 8, 64, 256, 1024 (+ 2048, 4096 with --large)
    python bench/engine_speed.py --repeats 5 --json out.json
    python bench/engine_speed.py --only-engines   # skip the collapsed and DDP comparisons

Every round runs, for each p, in fresh subprocesses and in this order: the bare SimPy event rate
(one process yielding ``env.timeout(1)``), collsim under ``fair`` (the default), collsim under
``fifo``, and ``simpy ring``: a 40-line SimPy program with one process per rank sending the ring
all-reduce's 2 p (p - 1) messages, one event each, at the same simulated times (no routes,
mailboxes, rendezvous or records: the floor of a SimPy message simulator). Rounds interleave the
configurations, so ratios compare numbers taken under the same load; medians and min..max are
printed. "CPU / fifo" is the run's CPU time (time.process_time) over fifo's in the same round: on
a shared machine it moves far less with the load than wall time does. Peak memory is the subprocess's peak RSS growth (resource.getrusage) during the run.
A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time

CHILD = r"""
import gc, json, resource, sys, time
kind, arg = sys.argv[1], json.loads(sys.argv[2])
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
if kind == "bare":
    import simpy
    env = simpy.Environment()
    def loop(env, n):
        timeout = env.timeout
        for _ in range(n):
            yield timeout(1)
    env.process(loop(env, arg["events"]))
    gc.disable()
    start = time.perf_counter(); env.run(); wall = time.perf_counter() - start
    print(json.dumps({"wall_s": wall, "events": arg["events"]}))
elif kind == "simpy_ring":
    import simpy
    p, steps, delay = arg["p"], 2 * (arg["p"] - 1) * arg["repetitions"], arg["latency_s"] + arg["nbytes"] / arg["bandwidth_Bps"]
    env = simpy.Environment()
    box = {}  # (dst, step) -> the message's arrival (a Timeout) or the receive waiting for it
    def send(dst, step):
        arrival = env.timeout(delay)
        waiting = box.pop((dst, step), None)
        if waiting is None:
            box[(dst, step)] = arrival
        else:
            arrival.callbacks.append(lambda _, waiting=waiting: waiting.succeed())
    def recv(dst, step):
        arrival = box.pop((dst, step), None)
        if arrival is None:
            arrival = box[(dst, step)] = env.event()
        return arrival
    def rank(r):
        right = (r + 1) % p
        send(right, 0)
        for step in range(steps):
            yield recv(r, step)
            if step + 1 < steps:
                send(right, step + 1)
    for r in range(p):
        env.process(rank(r))
    gc.disable()
    cpu = time.process_time(); start = time.perf_counter(); env.run(); wall = time.perf_counter() - start
    print(json.dumps({"wall_s": wall, "cpu_s": time.process_time() - cpu, "messages": p * steps, "time_s": env.now / arg["repetitions"], "peak_rss_growth_B": 0}))
else:
    from sim.collective.collapsed import run
    from sim.scenario import CollectiveScenario
    scenario = CollectiveScenario.from_dict(arg["scenario"])
    before = rss()
    cpu = time.process_time(); start = time.perf_counter(); result = run(scenario, arg["mode"]); wall = time.perf_counter() - start
    cpu = time.process_time() - cpu
    summary = result.summary()
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "messages": summary["messages"], "peak_rss_growth_B": rss() - before,
                      "time_s": summary["time_s"], "events_recorded": summary["events_recorded"]}))
"""


def child(kind: str, arg: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, json.dumps(arg)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def simpy_ring(p: int, repetitions: int) -> dict:
    """The bare SimPy ring's arguments for ``ring(p, repetitions)``: every message p * 4096 / p B."""
    return {"p": p, "repetitions": repetitions, "nbytes": 4096, "latency_s": 5e-6, "bandwidth_Bps": 25e9}


def ring(p: int, repetitions: int = 1, record: str = "auto", gamma: bool = False) -> dict:
    scenario = {"op": "all_reduce", "algorithm": "ring", "ranks": p, "size": f"{p * 4096}B", "latency": "5us", "bandwidth": "25GB/s"}
    scenario.update(repetitions=repetitions, record=record)
    if gamma:
        scenario["reduce_bandwidth"] = "100GB/s"
    return scenario


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):>11,.0f} ({min(values):,.0f}..{max(values):,.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--large", action="store_true", help="add p = 2048 and 4096")
    parser.add_argument("--json", default=None, help="write the raw numbers here")
    parser.add_argument("--only-engines", action="store_true", help="skip the collapsed and DDP comparisons")
    args = parser.parse_args()
    # repetitions so that every p simulates a few hundred thousand messages at least
    configs = [(8, 2000), (64, 40), (256, 4), (1024, 1)]
    rows: dict[str, dict[str, list[float]]] = {}
    bare: list[float] = []
    plan = [configs] * args.repeats + ([[(2048, 1), (4096, 1)]] if args.large else [])  # large: once
    for batch in plan:
        for p, reps in batch:
            bare_run = child("bare", {"events": 500_000})
            bare.append(bare_run["events"] / bare_run["wall_s"])
            walls = {}
            for engine in ("fair", "fifo", "simpy ring"):
                if engine == "simpy ring":
                    run = child("simpy_ring", simpy_ring(p, reps))
                else:
                    run = child("full", {"scenario": {**ring(p, reps), "sharing": engine}, "mode": "full"})
                row = rows.setdefault(
                    f"p={p} {engine}", {"rate": [], "ratio": [], "wall": [], "rss": [], "messages": [], "time_s": [], "to_fifo": []}
                )
                rate = run["messages"] / run["wall_s"]
                walls[engine] = run["cpu_s"]
                row["rate"].append(rate)
                row["ratio"].append(rate / bare[-1])
                row["wall"].append(run["wall_s"])
                row["rss"].append(run["peak_rss_growth_B"])
                row["messages"].append(run["messages"])
                row["time_s"].append(run["time_s"])
            for engine in ("fair", "fifo", "simpy ring"):  # CPU time over fifo's, same round (robust to load)
                rows[f"p={p} {engine}"]["to_fifo"].append(walls[engine] / walls["fifo"])
    print(f"# engine speed, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, {args.repeats} interleaved runs, median (min..max)")  # fmt: skip
    print(f"bare SimPy timeout events/s: {spread(bare)}")
    print(
        f"{'config':<20} {'messages':>10} {'messages/s':>30} {'ratio to bare':>18} {'wall s':>20} {'CPU / fifo':>18} {'peak RSS MB':>12} {'simulated s':>14}"
    )
    for name, row in rows.items():
        ratio = f"{statistics.median(row['ratio']):.2f} ({min(row['ratio']):.2f}..{max(row['ratio']):.2f})"
        wall = f"{statistics.median(row['wall']):.2f} ({min(row['wall']):.2f}..{max(row['wall']):.2f})"
        to_fifo = f"{statistics.median(row['to_fifo']):.2f} ({min(row['to_fifo']):.2f}..{max(row['to_fifo']):.2f})"
        print(
            f"{name:<20} {int(row['messages'][0]):>10,} {spread(row['rate']):>30} {ratio:>18} {wall:>20} {to_fifo:>18}"
            f" {statistics.median(row['rss']) / 2**20:>12.0f} {row['time_s'][0]:>14.9g}"
        )
    if args.only_engines:
        if args.json:
            with open(args.json, "w") as handle:
                json.dump({"bare": bare, "rows": rows}, handle, indent=1)
        return
    collapsed = compare_collapsed(args.repeats)
    ddp = ddp_step(args.repeats)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"bare": bare, "rows": rows, "collapsed": collapsed, "ddp": ddp}, handle, indent=1)


DDP_CHILD = r"""
import json, sys, time
import sim.training.ddp as ddp
scenario = ddp.DDPScenario(preset="2.7B", strategy="bucketed", backward_time_s=0.5, comm="network", ranks=512, mode=sys.argv[1],
                           bandwidth_Bps=25e9, latency_s=5e-6, intra_bandwidth_Bps=150e9, topology="two_level", algorithm="ring")
start = time.perf_counter(); result = ddp.run_ddp(scenario); wall = time.perf_counter() - start
summary = result.summary()
print(json.dumps({"wall_s": wall, "step": {k: v for k, v in summary.items() if isinstance(v, float)}}))
"""


def ddp_step(repeats: int) -> dict:
    """A DDP step of the 2.7B preset on 512 ranks (two_level, ring): per-message vs collapsed comm."""
    walls: dict[str, list[float]] = {"full": [], "collapsed": []}
    steps = {}
    for mode in ["collapsed"] * repeats + ["full"]:  # full is slow: once
        out = subprocess.run([sys.executable, "-c", DDP_CHILD, mode], capture_output=True, text=True, check=True)
        run = json.loads(out.stdout)
        walls[mode].append(run["wall_s"])
        steps[mode] = run["step"]
    same = steps["full"] == steps["collapsed"]
    print(f"\nDDP step, 2.7B preset, 512 ranks, two_level, ring: full {statistics.median(walls['full']):.2f} s, "
          f"collapsed {statistics.median(walls['collapsed']):.3f} s ({min(walls['collapsed']):.3f}..{max(walls['collapsed']):.3f}), "
          f"identical step numbers: {same}")  # fmt: skip
    return {"walls": walls, "same": same}


def compare_collapsed(repeats: int) -> dict:
    """Full vs collapsed wall time for the same scenarios (the times themselves agree)."""
    cases = {
        "ring p=256": ring(256),
        "ring p=1024": ring(1024),
        "rabenseifner p=1024": {**ring(1024), "algorithm": "rabenseifner"},
    }
    print(f"\n{'collapsed vs full':<22} {'full wall s':>20} {'collapsed wall s':>22} {'speed-up':>10} {'same time':>10}")
    out = {}
    for name, scenario in cases.items():
        full, fast = [], []
        same = True
        for _ in range(repeats):
            a = child("full", {"scenario": scenario, "mode": "full"})
            b = child("full", {"scenario": scenario, "mode": "collapsed"})
            full.append(a["wall_s"])
            fast.append(b["wall_s"])
            same &= abs(a["time_s"] - b["time_s"]) <= 1e-9 * a["time_s"]
        speedup = statistics.median(full) / statistics.median(fast)
        print(
            f"{name:<22} {statistics.median(full):>11.3f} ({min(full):.2f}..{max(full):.2f}) {statistics.median(fast) * 1e3:>15.3f} ms {speedup:>10,.0f}x {str(same):>10}"
        )
        out[name] = {"full": full, "collapsed": fast, "same_time": same}
    return out


if __name__ == "__main__":
    main()
