"""Load test for the explorer: N concurrent clients hitting its callbacks on 127.0.0.1.

Each client loops for ``--seconds``: it picks a random collective scenario (2-64 ranks, random
op/algorithm/size), asks the server to validate it, simulate it (timelines, player data, numbers)
and draw the crossover and the first player step, exactly the requests a browser sends after
an input change. Prints request counts, errors and latency percentiles per callback; exits 1
on any error. A benchmark, not a test: numbers depend on the machine.

    python bench/load_webapp.py --clients 8 --seconds 20
    python bench/load_webapp.py --url http://127.0.0.1:8050   # against a running `collsim ui`
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
import urllib.request
from collections import defaultdict

from webapp import collective as model
from webapp.pages.collectives import ids


def start_server() -> tuple[str, object]:
    import logging

    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one log line per request otherwise

    from webapp.app import create_app

    server = make_server("127.0.0.1", 0, create_app().server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


def dependencies(url: str) -> list[dict]:
    with urllib.request.urlopen(url + "/_dash-dependencies", timeout=30) as response:
        return json.load(response)


def find(deps: list[dict], output_fragment: str) -> dict:
    return next(dep for dep in deps if output_fragment in dep["output"])


def body(dep: dict, values: dict[str, object]) -> bytes:
    """The JSON a browser posts to /_dash-update-component for callback ``dep``."""

    def ref(item: dict) -> dict:
        return {"id": item["id"], "property": item["property"], "value": values.get(f"{item['id']}.{item['property']}")}

    outputs = [{"id": part.split(".")[0], "property": part.split(".")[1].split("@")[0]} for part in dep["output"].strip(".").split("...")]
    payload = {
        "output": dep["output"],
        "outputs": outputs if dep["output"].startswith("..") else outputs[0],
        "inputs": [ref(item) for item in dep["inputs"]],
        "changedPropIds": [f"{dep['inputs'][0]['id']}.{dep['inputs'][0]['property']}"],
        "state": [ref(item) for item in dep.get("state", [])],
    }
    return json.dumps(payload).encode()


def post(url: str, data: bytes) -> dict:
    request = urllib.request.Request(url + "/_dash-update-component", data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}")
        return json.load(response)


def random_form(rng: random.Random) -> dict[str, str]:
    from sim.algorithms.registry import algorithm_spec, algorithms_for

    op = rng.choice(["all_reduce", "all_reduce", "broadcast", "all_gather", "reduce_scatter", "reduce"])
    algorithm = rng.choice([a for a in algorithms_for(op) if not algorithm_spec(op, a).topology])
    ranks = rng.choice([2, 4, 8, 16, 32, 64] if algorithm_spec(op, algorithm).power_of_two else [2, 3, 5, 8, 12, 16, 24, 32, 48, 64])
    size = rng.choice(["4KiB", "256KiB", "1MiB", "16MiB", "64MiB", "256MiB"])
    return {**model.DEFAULTS, "op": op, "algorithm": algorithm, "ranks": str(ranks), "size": size}


def client(url: str, deps: list[dict], seconds: float, seed: int, latencies: dict, errors: list) -> None:
    rng = random.Random(seed)
    validate = find(deps, f"{ids.COLL_SCENARIO}.data")
    simulate = find(deps, f"{ids.COLL_NOTICE}.children")
    crossover = find(deps, f"{ids.COLL_CROSSOVER}.figure")
    player = find(deps, f"{ids.COLL_TOPOLOGY}.figure")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        form = random_form(rng)
        values = {f"{ids.field_id(name)}.value": value for name, value in form.items()}
        try:
            start = time.perf_counter()
            answer = post(url, body(validate, values))
            latencies["validate"].append(time.perf_counter() - start)
            scenario = answer["response"][ids.COLL_SCENARIO]["data"]
            values[f"{ids.COLL_SCENARIO}.data"] = scenario
            values[f"{ids.COLL_COLOR_BY}.value"] = "step"
            start = time.perf_counter()
            answer = post(url, body(simulate, values))
            latencies["simulate"].append(time.perf_counter() - start)
            if ids.COLL_PLAYER_STORE not in answer["response"]:  # a background job, a closed form or a refusal
                latencies["not simulated directly"].append(0.0)
                continue
            values[f"{ids.COLL_PLAYER_STORE}.data"] = answer["response"][ids.COLL_PLAYER_STORE]["data"]
            values[f"{ids.COLL_STEP}.value"] = 1
            start = time.perf_counter()
            post(url, body(player, values))
            latencies["player step"].append(time.perf_counter() - start)
            start = time.perf_counter()
            post(url, body(crossover, values))
            latencies["crossover"].append(time.perf_counter() - start)
            latencies["whole update"].append(sum(latencies[name][-1] for name in ("validate", "simulate", "player step")))
        except Exception as error:  # noqa: BLE001 - every failure is counted and reported
            errors.append(f"{form['op']}/{form['algorithm']} p={form['ranks']}: {type(error).__name__}: {error}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--url", default=None, help="a running server; default: start one in-process on 127.0.0.1")
    args = parser.parse_args()
    url, server = (args.url.rstrip("/"), None) if args.url else start_server()
    deps = dependencies(url)
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    threads = [threading.Thread(target=client, args=(url, deps, args.seconds, seed, latencies, errors)) for seed in range(args.clients)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    total = sum(len(values) for name, values in latencies.items() if name != "whole update")
    print(f"{args.clients} clients, {elapsed:.1f} s, {total} requests ({total / elapsed:.1f}/s), {len(errors)} errors")
    print(f"{'callback':<14} {'count':>6} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name in ("validate", "simulate", "player step", "crossover", "whole update"):
        values = latencies.get(name) or [float("nan")]
        print(
            f"{name:<14} {len(latencies.get(name, [])):>6} {percentile(values, 50) * 1e3:>8.1f} {percentile(values, 90) * 1e3:>8.1f} {percentile(values, 99) * 1e3:>8.1f} {max(values) * 1e3:>8.1f}"
        )
    if latencies.get("not simulated directly"):
        print(
            f"{len(latencies['not simulated directly'])} updates answered without a direct simulation (background job, closed form or refusal)"
        )
    if latencies.get("simulate"):
        print(f"simulate mean {statistics.mean(latencies['simulate']) * 1e3:.1f} ms")
    for error in errors[:10]:
        print("error:", error)
    if server is not None:
        server.shutdown()
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
