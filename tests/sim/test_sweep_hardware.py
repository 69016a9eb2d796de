"""collsim sweep on a hardware preset: a grid's ``hardware`` and ``nodes`` resolve as the CLI's
flags do (ranks, links and NCCL's pick from the preset), so a point answers what
``collsim sim collective --hardware H --nodes N`` (or ``sim ddp --hardware``) answers, with its 80 %
interval. Before, every such point failed with "missing required field(s): bandwidth_Bps"."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.sweep import Grid, load_grid, points, run_sweep


def _rows(db: Path) -> dict[str, dict]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT params, status, time_s, result, error FROM sweep_points").fetchall()
    return {
        params: {"status": status, "time_s": time_s, "result": json.loads(result), "error": error}
        for params, status, time_s, result, error in rows
    }


def _cli_json(*args: str) -> dict:
    done = CliRunner().invoke(cli, [*args, "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


def test_a_collective_grid_on_a_preset_answers_as_sim_collective(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("name: hw\nkind: collective\nbase: {op: all_reduce, hardware: dgx-h100}\ngrid:\n  nodes: [1, 2]\n  size: [1MiB]\n")
    db = tmp_path / "sweep.sqlite"
    counts = run_sweep(load_grid(path), db, workers=1)
    assert counts["ok"] == 2 and counts["error"] == 0
    rows = _rows(db)
    for nodes in (1, 2):
        row = rows[json.dumps({"nodes": nodes, "size": "1MiB"})]
        alone = _cli_json("sim", "collective", "--hardware", "dgx-h100", "--nodes", str(nodes), "--op", "all_reduce", "--size", "1MiB")
        assert row["result"]["algorithm"] == alone["algorithm"]  # NCCL's pick on the preset
        assert row["result"]["ranks"] == 8 * nodes
        assert row["time_s"] == pytest.approx(alone["time_s"], rel=1e-12)
        assert row["result"]["time_interval_s"] == pytest.approx(alone["time_interval_s"], rel=1e-12)


def test_a_preset_point_is_identified_by_what_it_resolves_to_and_nic_overrides_are_a_variant() -> None:
    def grid(**base: object) -> Grid:
        return Grid("x", "collective", "full", {"op": "all_reduce", "hardware": "dgx-h100", "size": "1MiB", **base}, {})

    two_nodes, said_twice = next(points(grid(nodes=2))), next(points(grid(nodes=2, ranks=16)))
    assert two_nodes.error is None and two_nodes.point_id == said_twice.point_id
    assert two_nodes.scenario["ranks"] == 16 and two_nodes.scenario["bandwidth_Bps"] > 0  # the preset's links
    wrong = next(points(grid(nodes=2, ranks=8)))  # as the CLI: ranks that the nodes do not give are refused
    assert wrong.error == "ranks: --hardware dgx-h100 --nodes 2 gives 16 ranks, got --ranks 8; drop --ranks or change --nodes"
    variant = next(points(grid(nodes=2, nics_per_node=4)))
    assert variant.error is None and variant.scenario["hardware"] == "dgx-h100:4x400Gbps"
    restricted = next(points(grid(nodes=2, nccl_algo="Ring", nccl_proto="Simple")))
    assert restricted.error is None and restricted.scenario["algorithm"] == "nccl_ring"


def test_preset_keys_without_a_preset_are_one_clear_error_per_point() -> None:
    point = next(points(Grid("x", "collective", "full", {"op": "all_reduce", "size": "1MiB", "nodes": 2}, {})))
    assert point.error == "--nodes needs --hardware NAME (collsim hardware list)"
    nics = next(points(Grid("x", "ddp", "full", {"preset": "gpt2", "nics_per_node": 4}, {})))
    assert nics.error is not None and "give --hardware NAME too" in nics.error


def test_a_misspelt_key_is_still_refused_before_anything_runs(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("kind: collective\nbase: {op: all_reduce, hardware: dgx-h100}\ngrid:\n  node: [1, 2]\n  size: [1MiB]\n")
    with pytest.raises(Exception, match="unknown field 'node'"):
        load_grid(path)


def test_a_ddp_grid_on_a_preset_carries_the_step_interval_as_sim_ddp(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text(
        "name: d\nkind: ddp\nbase: {preset: gpt2, hardware: dgx-h100, nodes: 1, backward_time: 120ms}\ngrid:\n  bucket_size: [25MiB]\n"
    )
    db = tmp_path / "sweep.sqlite"
    assert run_sweep(load_grid(path), db, workers=1)["ok"] == 1
    (row,) = _rows(db).values()
    alone = _cli_json(
        "sim", "ddp", "--preset", "gpt2", "--hardware", "dgx-h100", "--nodes", "1", "--backward-time", "120ms", "--bucket-size", "25MiB"
    )
    assert row["time_s"] == pytest.approx(alone["step_time_s"], rel=1e-12)
    assert row["result"]["step_time_interval_s"] == pytest.approx(alone["step_time_interval_s"], rel=1e-12)
