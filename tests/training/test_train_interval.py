"""`collsim sim train`'s step carries its 80 % interval on a hardware preset, as `sim ddp` and
`sim fsdp` do (issue 33, item 2): the step simulated again with every collective and every
pipeline send at its own interval's low, then high end; none with --free-comm, saying why."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.hardware.uncertainty import spread
from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.interval import ScaledCosts, simulate_with_interval
from sim.training.parallel.step import comm_costs

pytestmark = pytest.mark.slow  # each case simulates its step three times

# the Parallelism page's default: TP inside a node, two stages and two replicas across nodes
EXAMPLE = tuple("--hardware dgx-a100 --nodes 4 --model megatron-22b --tp 8 --pp 2 --dp 2 --global-batch 32".split())
SMALL = dict(hardware="dgx-a100", nodes=2, layers=16, hidden=1024, heads=16, seq_len=512, vocab=0, micro_batch=1)


def _train(*args: str) -> str:
    done = CliRunner().invoke(cli, ["sim", "train", *args])
    assert done.exit_code == 0, done.output
    return done.stdout


def _comm_seconds(result) -> dict[tuple, float]:
    """Each comm row's seconds by what it is: (stream, op, bytes, nodes its group or send spans)."""
    gpn = result.layout["gpus_per_node"]
    seconds = {}
    for row in result.events:
        if row["stream"] != "compute" and row["end_s"] > row["start_s"]:
            ranks = row["group"] if row["peer"] < 0 else [row["rank"], row["peer"]]
            seconds[row["stream"], row["kind"], row["nbytes"], len({rank // gpn for rank in ranks})] = row["end_s"] - row["start_s"]
    return seconds


def test_the_interval_holds_the_step_and_is_strict_when_comm_is_on_the_critical_path():
    summary = json.loads(_train(*EXAMPLE, "--json"))
    low, high = summary["step_time_interval_s"]
    assert low < summary["step_time_s"] < high  # TP's all-reduces sit on every layer's critical path
    assert summary["step_interval_level"] == 0.8
    assert "every collective and pipeline send" in summary["step_interval_basis"] and "compute as given" in summary["step_interval_basis"]
    # compute as given: only the comm moves, so even the low end is slower than the step with free comm
    free = json.loads(_train(*EXAMPLE, "--free-comm", "--json"))["step_time_s"]
    assert free < low and high - low < 2 * (summary["tp_s"] + summary["pp_exposed_s"] + summary["dp_exposed_s"])


def test_the_text_prints_the_interval_of_the_json_under_the_step_line():
    summary = json.loads(_train(*EXAMPLE, "--json"))
    lines = _train(*EXAMPLE).splitlines()
    low, high = summary["step_time_interval_s"]
    assert lines[0].startswith(f"step: {summary['step_time_s']:.3f} s ")
    assert lines[1].startswith(f"80 % interval: {low:.3f} – {high:.3f} s (every collective and pipeline send")


def test_free_comm_has_no_interval_and_says_why():
    args = ("--hardware", "dgx-a100", "--nodes", "1", "--layers", "16", "--hidden", "1024", "--heads", "16", "--seq-len", "512",
            "--vocab", "0", "--global-batch", "8", "--pp", "4", "--free-comm")  # fmt: skip
    summary = json.loads(_train(*args, "--json"))
    assert summary["step_time_interval_s"] is None and summary["step_interval_level"] is None
    assert "--free-comm" in summary["step_interval_basis"]
    assert "80 % interval" not in _train(*args)


def test_every_collective_and_pipeline_send_runs_at_its_own_intervals_end():
    """Each comm row of the step at an end is its exact seconds x its own op's factor ** end:
    TP all-reduces on one node, PP sends between nodes (send_recv), DP all-reduces across nodes."""
    scenario = TrainScenario.from_dict({**SMALL, "nodes": 4, "tp": 8, "pp": 2, "dp": 2, "global_batch": 8, "scatter_gather": False})
    costs = comm_costs(scenario)
    exact = _comm_seconds(simulate(scenario, events=True, costs=costs))
    assert {key[0] for key in exact} == {"tp", "pp", "dp"}
    for end in (-1, 1):
        scaled = _comm_seconds(simulate(scenario, events=True, costs=ScaledCosts(costs, end)))
        assert scaled.keys() == exact.keys()
        for (stream, op, nbytes, nodes), seconds in scaled.items():
            factor = spread("dgx-a100", nodes * 8, int(nbytes), op)[0]
            assert seconds == pytest.approx(exact[stream, op, nbytes, nodes] * factor**end, rel=1e-9), (stream, op, nbytes)


def test_hidden_gradient_buckets_widen_the_step_less_than_their_own_interval():
    """DP buckets reduced under the last micro-batch's backward: the step is simulated again at each
    end, so only what stays exposed moves it, far less than scaling every bucket's seconds would."""
    scenario = TrainScenario.from_dict({**SMALL, "dp": 16, "global_batch": 128, "micro_batch": 8})
    result, interval = simulate_with_interval(scenario, events=True)
    low, high = interval["step_time_interval_s"]
    buckets = [row for row in result.events if row["stream"] == "dp"]
    assert len(buckets) > 1
    slowest = max(buckets, key=lambda row: row["end_s"] - row["start_s"])
    factor = spread("dgx-a100", 16, int(slowest["nbytes"]), "all_reduce")[0]
    assert low < result.step_time_s < high
    assert (high - low) / result.step_time_s < 0.1 * (factor - 1 / factor)  # the slowest bucket's own relative width
    every_bucket = sum(row["end_s"] - row["start_s"] for row in buckets)
    assert high - result.step_time_s < 0.1 * (factor - 1) * every_bucket


def test_the_sweep_gives_the_interval_of_its_first_layout_and_its_json_alone_on_stdout():
    args = ("--hardware", "dgx-a100", "--nodes", "1", "--layers", "8", "--hidden", "512", "--heads", "8", "--seq-len", "256",
            "--vocab", "0", "--global-batch", "8", "--sweep")  # fmt: skip
    rows = json.loads(_train(*args, "--json"))  # the progress bar's label on stderr, not before the JSON
    first = rows[0]
    assert first["step_time_interval_s"][0] < first["step_time_s"] < first["step_time_interval_s"][1]
    assert all("step_time_interval_s" not in row for row in rows[1:])
    alone = json.loads(_train(*args[:-1], *(f"--{key}={first[key]}" for key in ("tp", "pp", "dp", "ep")), "--json"))
    assert alone["step_time_interval_s"] == pytest.approx(first["step_time_interval_s"], rel=1e-12)
    low, high = first["step_time_interval_s"]
    assert f"the first layout's 80 % interval: {low:.3f} – {high:.3f} s" in _train(*args)
