"""collsim real train --compare: a measured 2-rank PP and TP run on gloo beside collsim sim train
fed its measured compute and collective times (real.train_sim.simulate_train)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

TINY = ["--layers", "2", "--hidden", "64", "--heads", "4", "--seq-len", "16", "--micro-batch", "2", "--global-batch", "8",
        "--steps", "3", "--warmup", "1"]  # fmt: skip


def _run(layout: list[str]) -> dict:
    from real.train_cli import train

    result = CliRunner().invoke(train, [*layout, *TINY, "--compare", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _ops(streams: list[dict], key: str, kinds: tuple[str, ...]) -> Counter:
    return Counter({(row["rank"], row["stream"]): row[key] for row in streams if row["stream"] in kinds})


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize(
    "layout, streams",
    [(["--tp", "1", "--pp", "2"], ("compute", "pp")), (["--tp", "2", "--pp", "1"], ("tp",))],
    ids=["pp2", "tp2"],
)
def test_compare_sets_sim_train_beside_the_measured_step_with_the_same_operations(layout, streams):
    profile = _run(layout)
    comparison = profile["compare"]
    measured, simulated = comparison["measured_step_s"], comparison["simulated_step_s"]
    assert 0 < comparison["measured_min_s"] <= measured <= comparison["measured_max_s"]
    assert simulated > 0
    # the simulated step is replayed from the measured compute, so it cannot exceed the measured
    # step by more than the spread; it may fall short by what the layer times leave out (the loss,
    # the schedule's own work), which this loaded machine makes larger (figures in the report)
    assert simulated <= comparison["measured_max_s"] * 1.5
    # every rank's operations a step: each TP all-reduce, each PP send and receive, each compute op (without TP)
    assert _ops(comparison["streams"], "measured_ops", streams) == _ops(comparison["streams"], "simulated_ops", streams)
    assert sum(_ops(comparison["streams"], "simulated_ops", streams).values()) > 0
