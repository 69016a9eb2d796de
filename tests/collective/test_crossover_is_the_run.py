"""A crossover point for algorithm A at size S is the time ``sim collective --algorithm A --size S``
gives for the same inputs: one number everywhere (issue 36, E1 and E2)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.collective import explore
from sim.collective.runner import run_collective
from sim.hardware.presets import scenario_fields
from sim.scenario import CollectiveScenario

ALGORITHMS = ("ring", "hierarchical", "recursive_doubling", "double_binary_tree", "nccl_ring")
SIZES = ("1KiB", "256KiB", "4MiB")
EXACT = {"closed form", "replayed", "simulated"}  # "extrapolated" points are a line through two runs (labelled so)


def _invoke(*args: str) -> object:
    out = CliRunner().invoke(cli, list(args))
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


@pytest.mark.slow
@pytest.mark.parametrize("hardware, nodes", [("dgx-h100", 2), ("dgx-a100", 2)])
def test_cli_crossover_points_are_the_times_sim_collective_gives(hardware, nodes):
    """Before: the crossover ran the preset with --latency 0 (its own default overrode the
    preset's 14 us): ring 102 us against 420 us at 1 KiB on 2 x dgx-h100."""
    where = ["--op", "all_reduce", "--hardware", hardware, "--nodes", str(nodes)]
    rows = _invoke("sim", "crossover", *where, "--sizes", ",".join(SIZES), "--json")
    table = {(row["algorithm"], row["size_bytes"]): row for row in rows}
    compared = 0
    for algorithm in ALGORITHMS:
        for size in SIZES:
            run = _invoke("sim", "collective", *where, "--algorithm", algorithm, "--size", size, "--json")
            row = table[(algorithm, run["size_bytes"])]
            assert row["time_s"] is not None, row
            if row["method"] in EXACT:
                assert row["time_s"] == pytest.approx(run["time_s"], rel=1e-9), (algorithm, size, row)
                compared += 1
    assert compared >= len(ALGORITHMS) * len(SIZES) - 2


def test_crossover_of_nccls_pick_compares_the_others_at_their_own_defaults():
    """The explorer with algorithm nccl: the pick runs on 16 channels with its data path's
    sharing; a ring's or a tree's point must not inherit them (ring 6.72 ms at 1 KiB on
    2 x dgx-h100 with 16 chunks, against the 420 us that choosing ring gives)."""
    fields = {**scenario_fields("dgx-h100", 2), "op": "all_reduce", "size": "4MiB"}
    picked = CollectiveScenario.from_dict({**fields, "algorithm": "nccl"})
    assert picked.algorithm.startswith("nccl_") and picked.chunks > 1
    sizes = (1024, 4 << 20)
    rows = explore.crossover(picked, sizes)
    table = {(row["algorithm"], row["size_bytes"]): row for row in rows}
    for algorithm in ("ring", "double_binary_tree", "recursive_doubling"):
        for size in sizes:
            own = CollectiveScenario.from_dict({**fields, "algorithm": algorithm, "size": str(size)})
            assert table[(algorithm, size)]["time_s"] == pytest.approx(run_collective(own).time_s, rel=1e-9)
    same = CollectiveScenario.from_dict({**fields, "algorithm": "ring", "size": "1KiB"})
    assert explore.crossover_key(picked) == explore.crossover_key(same)


def test_a_scenario_given_chunks_keeps_them_for_every_algorithm():
    """Chunks the user chose (not NCCL's pick's channels) are an input every algorithm shares."""
    fields = {**scenario_fields("dgx-h100", 2), "op": "all_reduce", "size": "1MiB", "chunks": 4}
    ring = CollectiveScenario.from_dict({**fields, "algorithm": "ring"})
    rows = explore.crossover(ring, (1 << 20,))
    point = next(row for row in rows if row["algorithm"] == "ring")
    assert point["time_s"] == pytest.approx(run_collective(ring).time_s, rel=1e-9)


@pytest.mark.parametrize("budget", [10_000, 30_000, 60_000])
def test_an_algorithm_left_out_at_a_size_is_left_out_at_every_larger_one(budget):
    """Before, on 2 x dgx-h100 with the explorer's budget, recursive doubling had no time at 4 KiB
    but one at 16 KiB, and every algorithm but ring was skipped at 1, 16 and 256 MiB, so ring,
    the slowest curve, was named the fastest there."""
    s = CollectiveScenario.from_dict({**scenario_fields("dgx-h100", 2), "op": "all_reduce", "algorithm": "ring", "size": "4MiB"})
    rows = explore.crossover(s, explore.CROSSOVER_SIZES, max_messages=budget)
    curves: dict[str, list[dict]] = {}
    for row in rows:
        curves.setdefault(row["algorithm"], []).append(row)
    for name, curve in curves.items():
        shown = [row["time_s"] is not None for row in sorted(curve, key=lambda row: row["size_bytes"])]
        assert shown == sorted(shown, reverse=True), (name, shown)  # a prefix of the sizes
        assert all(row["why"] == explore.TOO_LARGE for row in curve if row["time_s"] is None)
    for entry in explore.fastest(rows):
        here = [row for row in rows if row["size_bytes"] == entry["size_bytes"]]
        timed = {row["algorithm"]: row["time_s"] for row in here if row["time_s"] is not None}
        assert entry["time_s"] == min(timed.values()) and timed[entry["algorithm"]] == entry["time_s"]
        assert set(entry["missing"]) == {row["algorithm"] for row in here if row["time_s"] is None}
    assert all(curve[0]["time_s"] is not None for curve in curves.values()) or budget < 30_000  # every curve starts
