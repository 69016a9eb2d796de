"""Bounded by design: the work and memory of a request are told before it starts
(sim.collective.budget), checked here against counted runs, and every entry point refuses what
would take the machine down, naming the setting that would fit."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from sim.algorithms.registry import algorithm_spec, algorithms_for, ops
from sim.collective import budget
from sim.errors import CollsimError
from sim.scenario import CollectiveScenario


def _cases():
    for sharing in ("fair", "fifo"):
        for op in ops():
            for algorithm in algorithms_for(op):
                yield pytest.param(op, algorithm, sharing, id=f"{sharing}-{op}-{algorithm}")


@pytest.mark.parametrize(("op", "algorithm", "sharing"), list(_cases()))
def test_estimated_work_is_within_2x_of_a_counted_run_for_every_algorithm_and_sharing(op, algorithm, sharing):
    chunked = algorithm_spec(op, algorithm).chunked
    fields = {"op": op, "algorithm": algorithm, "ranks": 24, "size": "4MiB", "bandwidth": "25GB/s", "latency": "5us"}
    fields.update(chunks=8 if chunked else 1, sharing=sharing, record="aggregate")
    for change in ({}, {"ranks": 32}, {"topology": "two_level", "gpus_per_node": 8}):  # power-of-two, two-level algorithms
        try:
            scenario = CollectiveScenario.from_dict({**fields, **change})
            break
        except CollsimError:
            continue
    told = budget.estimate(scenario)
    messages, visits = budget.count_visits(scenario)
    assert 0.5 <= told.messages / messages <= 2.0
    assert 0.5 <= told.visits / visits <= 2.0, (told, messages, visits)


@pytest.mark.parametrize(("ranks", "chunks"), [(40, 16), (64, 4)])
def test_fair_sharing_tree_work_is_estimated_beyond_the_probes(ranks, chunks):
    """The issue's miss: message counts alone were 25x off for trees under fair sharing."""
    scenario = CollectiveScenario.from_dict(
        {
            "op": "all_reduce",
            "algorithm": "double_binary_tree",
            "ranks": ranks,
            "size": "16MiB",
            "bandwidth": "25GB/s",
            "latency": "5us",
            "chunks": chunks,
            "record": "aggregate",
        }
    )
    told = budget.estimate(scenario)
    messages, visits = budget.count_visits(scenario)
    assert told.messages == messages
    assert visits > 2 * messages  # the re-sharing is most of the work here
    assert 0.5 <= told.visits / visits <= 2.0


def test_estimated_memory_of_a_recorded_run_is_within_2x_of_its_peak():
    import tracemalloc

    scenario = CollectiveScenario.from_dict(
        {"op": "all_reduce", "algorithm": "ring", "ranks": 16, "size": "64MiB", "bandwidth": "25GB/s", "chunks": 64, "record": "full"}
    )
    told = budget.estimate(scenario)
    budget.count_visits(scenario.replace(ranks=4, chunks=2))  # imports and caches outside the measurement
    tracemalloc.start()
    try:
        budget.count_visits(scenario)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grown = told.memory_bytes - budget.BASE_BYTES  # the interpreter's own share is not traced
    assert 0.5 <= grown / peak <= 2.0, (grown, peak)


def test_a_run_beyond_the_limits_is_refused_with_the_setting_that_fits():
    scenario = CollectiveScenario.from_dict(
        {"op": "all_reduce", "algorithm": "double_binary_tree", "ranks": 1024, "size": "1GiB", "bandwidth": "25GB/s", "chunks": 64}
    )
    with pytest.raises(CollsimError, match=r"--chunks \d+ or --ranks \d+ would fit") as error:
        budget.check_run(scenario, "sim collective")
    assert error.value.field == "chunks"


def test_too_many_repetitions_are_refused_before_anything_runs():
    scenario = CollectiveScenario.from_dict(
        {"op": "all_reduce", "algorithm": "ring", "ranks": 8, "size": "1MiB", "bandwidth": "25GB/s", "repetitions": 1_000_000}
    )
    with pytest.raises(CollsimError, match="repetitions: 1,000,000") as error:
        budget.check_run(scenario)
    assert error.value.field == "repetitions"


def test_a_size_range_with_too_many_points_is_refused_with_a_coarser_factor():
    from sim.units import parse_size_list

    with pytest.raises(CollsimError, match=r"138,\d{3} points.*factor of at least"):
        parse_size_list("1KiB:1GiB:x1.0001", "--sweep-bucket-sizes")


WORST = [  # command lines, split on spaces
    "sim crossover --op all_reduce --ranks 65536 --bandwidth 25GB/s".split(),
    "sim crossover --op all_reduce --ranks 8 --bandwidth 25GB/s --chunks 1000000".split(),
    "sim collective --op all_reduce --algorithm ring --ranks 8 --size 1MiB --chunks 1000000 --bandwidth 25GB/s".split(),
    "sim collective --op all_reduce --algorithm ring --ranks 8 --size 1MiB --chunks 1000000 --bandwidth 25GB/s --mode collapsed".split(),
    "sim collective --op all_reduce --algorithm double_binary_tree --ranks 1024 --size 1GiB --chunks 64 --bandwidth 25GB/s".split(),
    "sim collective --op all_reduce --algorithm nccl_ring --ranks 8 --size 1GiB --chunks 1000000 --bandwidth 25GB/s".split(),
    "sim collective --op all_reduce --algorithm ring --ranks 8 --size 1MiB --repetitions 1000000 --bandwidth 25GB/s".split(),
    "sim ddp --preset small --sweep-bucket-sizes 1KiB:1GiB:x1.0001 --bandwidth 25GB/s".split(),
    "sim ddp --preset gpt2 --backward-time 120ms --comm network --algorithm double_binary_tree --ranks 1024 --chunks 64 --latency 5us --bandwidth 25GB/s --mode full".split(),
]

LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))
sys.argv = ["collsim", *sys.argv[1:]]
from sim.cli import main
main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("args", WORST, ids=lambda args: " ".join(args[:2] + args[-4:]))
def test_the_worst_inputs_are_refused_cleanly_under_a_4gib_address_space(args):
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", LIMITED, *args], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    assert time.monotonic() - started < 60


def test_a_sweep_point_beyond_the_limits_is_stored_failed_with_the_reason_and_the_rest_run(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "kind: collective\nbase: {op: all_reduce, algorithm: double_binary_tree, bandwidth: 25GB/s, size: 1GiB, chunks: 64}\n"
        "grid: {ranks: [4, 1024]}\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "sim.cli", "sweep", str(grid), "--db", str(tmp_path / "s.sqlite"), "--workers", "1", "--quiet"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1 and "1 ran, 1 invalid or failed" in done.stdout
    assert "ranks=1024: sweep point:" in done.stderr and "would fit" in done.stderr
    assert time.monotonic() - started < 60


def test_a_sweep_grid_of_too_many_points_is_refused_before_anything_runs(tmp_path):
    from sim.sweep import load_grid

    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "kind: collective\nbase: {op: all_reduce, algorithm: ring, bandwidth: 25GB/s}\n"
        f"grid: {{ranks: {list(range(2, 202))}, size: {[f'{k}KiB' for k in range(1, 101)]}}}\n"
    )
    with pytest.raises(CollsimError, match="20,000 points is beyond the limit of 10,000"):
        load_grid(grid)
