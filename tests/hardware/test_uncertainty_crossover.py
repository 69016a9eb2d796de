"""The crossover carries the same 80 % interval per point as ``sim collective`` (issue 33, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..cli_in_process import collsim_in_process


def _cli(*args: str) -> object:
    done = collsim_in_process("sim", *args, "--json", cwd=Path.cwd())  # what it prints: no Python start-up needed
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_crossover_rows_carry_the_interval_sim_collective_gives_the_same_point():
    preset = ("--hardware", "dgx-h100", "--nodes", "2", "--op", "all_reduce")
    rows = _cli("crossover", *preset, "--sizes", "4KiB,64MiB")
    checked = 0
    for algorithm, size in (("ring", 4096), ("hierarchical", 64 * 2**20), ("nccl", 4096)):
        row = next(row for row in rows if row["algorithm"] == algorithm and row["size_bytes"] == size)
        single = _cli("collective", *preset, "--algorithm", algorithm, "--size", str(size))
        assert row["time_s"] == pytest.approx(single["time_s"], rel=1e-9)
        assert row["time_interval_s"] == pytest.approx(single["time_interval_s"], rel=1e-9)
        low, high = row["time_interval_s"]
        assert low < row["time_s"] < high
        checked += 1
    assert checked == 3


def test_crossover_rows_without_a_preset_have_no_interval():
    from sim.collective.explore import crossover
    from sim.scenario import CollectiveScenario

    scenario = CollectiveScenario.from_dict({"op": "all_reduce", "algorithm": "ring", "ranks": 4, "size": "1KiB", "bandwidth": "10GB/s"})
    rows = crossover(scenario, (4096, 2**20))
    assert rows and all(row["time_interval_s"] is None for row in rows)


def test_a_preset_crossover_has_an_interval_on_every_timed_point_and_its_level_in_the_table():
    from sim.collective.explore import crossover
    from sim.crossover_cli import format_table
    from sim.nccl.pick import apply_hardware
    from sim.scenario import CollectiveScenario

    data = {"op": "all_reduce", "algorithm": "ring", "size": "1KiB", "hardware": "dgx-h100", "nodes": 1}
    apply_hardware(data)
    rows = crossover(CollectiveScenario.from_dict(data), (4096, 2**20))
    timed = [row for row in rows if row["time_s"] is not None]
    assert timed and all(row["time_interval_s"][0] < row["time_s"] < row["time_interval_s"][1] for row in timed)
    assert "80 % interval" in format_table(rows)
