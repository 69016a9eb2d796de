"""Print every algorithm's messages, step by step, as markdown tables (p = 4 or 8, n = 4 KiB).

Run: python docs/examples/step_tables.py  (its output is committed as step_tables.expected.md)
"""

from collections import defaultdict

from sim.algorithms.registry import algorithm_spec, algorithms_for, ops
from sim.collective.runner import run_collective
from sim.scenario import CollectiveScenario


def table(op: str, algorithm: str) -> str:
    spec = algorithm_spec(op, algorithm)
    p = 8 if spec.topology else 4
    scenario = CollectiveScenario(
        op=op,
        algorithm=algorithm,
        ranks=p,
        size_bytes=4096,
        bandwidth_Bps=1e9,
        latency_s=1e-6,
        chunks=2 if algorithm in ("pipelined_chain", "double_binary_tree") else 1,
        topology=spec.topology or "switch",
        gpus_per_node=4 if spec.topology else None,
    )
    result = run_collective(scenario)
    steps = defaultdict(list)
    for src, dst, _, _, nbytes, step, chunk in sorted(result.messages, key=lambda m: (m[5], m[2], m[0], m[1])):
        label = f"{src}->{dst} {nbytes}B" + (f" c{chunk}" if chunk >= 0 and scenario.chunks > 1 else "")
        steps[step].append(label)
    lines = [
        f"### {op} / {algorithm} (p = {p}{', chunks = 2' if scenario.chunks > 1 else ''}): {result.time_s * 1e6:.3f} us, {result.message_count} messages",
        "",
        "| step | messages |",
        "|---|---|",
    ]
    lines += [f"| {step} | {', '.join(labels)} |" for step, labels in sorted(steps.items())]
    return "\n".join(lines) + "\n"


def main() -> None:
    print("# Every algorithm, step by step\n")
    print("n = 4 KiB (4096 bytes), a = 1 us, B = 1 GB/s on switch(p); hierarchical on two_level (2 nodes x 4).\n")
    for op in ops():
        for algorithm in algorithms_for(op):
            print(table(op, algorithm))


if __name__ == "__main__":
    main()
