"""The plain functions behind the collectives page: form parsing, URL round trip, runs, frames."""

from __future__ import annotations

import pytest

from sim.collective.player import player_data, topology_layout
from sim.collective.runner import run_collective
from sim.scenario import CollectiveScenario
from webapp import collective as model
from webapp import helper


def form(**changes: str) -> dict[str, str]:
    return {**model.DEFAULTS, **changes}


def scenario(**changes: str) -> CollectiveScenario:
    result, errors = model.parse_form(form(**changes))
    assert not errors, errors
    return result


def test_defaults_make_the_landing_scenario():
    s = scenario()
    assert (s.op, s.algorithm, s.ranks, s.size_bytes, s.bandwidth_Bps, s.latency_s) == ("all_reduce", "ring", 8, 64 * 2**20, 25e9, 5e-6)


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"ranks": "abc"}, "ranks", "whole number"),
        ({"ranks": "1"}, "ranks", "2 to 1024"),
        ({"ranks": "4096"}, "ranks", "2 to 1024"),
        ({"bandwidth": "0"}, "bandwidth", "positive"),
        ({"bandwidth": "fast"}, "bandwidth", "cannot read"),
        ({"size": "12 parsecs"}, "size", "unknown unit"),
        ({"latency": "-5us"}, "latency", ">= 0"),
        ({"chunks": "two"}, "chunks", "whole number"),
        ({"reduce_bandwidth": "0GB/s"}, "reduce_bandwidth", "positive"),
        ({"ranks": "12", "algorithm": "recursive_doubling"}, "ranks", "power-of-two"),
        ({"chunks": "4", "algorithm": "recursive_doubling"}, "chunks", "chunks"),
        ({"stragglers": "99:1ms"}, "stragglers", "rank in 0..7"),
        ({"topology": "two_level", "gpus_per_node": "3"}, "gpus_per_node", "divide"),
        ({"size": "6B"}, "size", "multiple of the element size"),
    ],
)
def test_bad_input_names_its_field(changes, field, words):
    result, errors = model.parse_form(form(**changes))
    assert result is None
    assert field in errors, errors
    assert words in errors[field]


def test_several_bad_fields_each_get_a_message():
    _, errors = model.parse_form(form(ranks="x", bandwidth="0", latency="soon"))
    assert set(errors) == {"ranks", "bandwidth", "latency"}


def test_url_round_trip_keeps_only_changes():
    values = form(ranks="16", size="1MiB", stragglers="3:1ms")
    query = model.query_from_form(values)
    assert query.startswith("?") and "ranks=16" in query and "op=" not in query
    assert model.form_from_query(query) == values
    assert model.query_from_form(model.DEFAULTS) == ""
    assert model.form_from_query("?nonsense=1&ranks=4")["ranks"] == "4"


def test_run_matches_the_simulator_and_the_closed_form():
    s = scenario()
    outcome = model.run(s)
    assert outcome.mode == "simulated"
    assert outcome.result.time_s == pytest.approx(run_collective(s).time_s, rel=1e-12)
    if outcome.analytic_time_s is not None:
        assert outcome.result.time_s == pytest.approx(outcome.analytic_time_s, rel=1e-9)
        assert sum(outcome.breakdown.values()) == pytest.approx(outcome.analytic_time_s, rel=1e-9)
        assert outcome.breakdown["alpha (latency)"] == pytest.approx(2 * 7 * 5e-6, rel=1e-9)


def test_huge_scenarios_fall_back_to_the_closed_form_or_are_refused():
    outcome = model.run(scenario(ranks="1024"))
    assert outcome.mode in ("closed form", "refused")
    assert outcome.result is None
    assert "command line" in outcome.note


def test_empty_required_fields_get_a_message_not_a_default():
    for name in ("ranks", "size", "latency", "bandwidth"):
        result, errors = model.parse_form(form(**{name: ""}))
        assert result is None and errors[name].startswith(f"{name}: required")
    result, errors = model.parse_form(form(chunks="", overhead=""))
    assert not errors and result.chunks == 1 and result.overhead_s == 0


def test_uneven_split_is_an_approximate_closed_form_with_the_true_reason():
    outcome = model.run(scenario(ranks="12"))
    assert outcome.analytic_time_s is not None and not outcome.closed_exact
    assert "do not divide into 12 equal pieces" in outcome.closed_note
    assert outcome.result.time_s == pytest.approx(outcome.analytic_time_s, rel=1e-3)


def test_cost_estimate_grows_with_ranks():
    assert model.estimate_cost(scenario(ranks="64")) < model.estimate_cost(scenario(ranks="512"))
    assert model.estimate_cost(scenario(ranks="512", op="broadcast", algorithm="binomial")) < model.MAX_SIM_MESSAGES


def frames_of(s):
    return model.run(s).frames


def test_ring_all_reduce_buffers_step_by_step():
    frames = frames_of(scenario(ranks="4"))
    counts = [[[bin(v).count("1") for v in row] for row in frame["cells"]] for frame in frames]
    assert counts[0] == [[1] * 4] * 4  # every rank holds its own data
    # after reduce-scatter step 0 each rank holds a 2-rank partial sum in exactly one piece
    assert all(sorted(row) == [1, 1, 1, 2] for row in counts[1])
    # after the reduce-scatter (3 steps) each rank holds one fully reduced piece
    assert all(row.count(4) == 1 for row in counts[3])
    assert counts[-1] == [[4] * 4] * 4
    assert [frame["step"] for frame in frames] == [-1, 0, 1, 2, 3, 4, 5]


def test_broadcast_buffers_spread_from_the_root():
    frames = frames_of(scenario(op="broadcast", algorithm="binomial", ranks="8"))
    holders = [sum(1 for row in frame["cells"] if row[0]) for frame in frames]
    assert holders == [1, 2, 4, 8]


def test_player_data_lists_messages_per_step_and_routes():
    s = scenario(ranks="4")
    outcome = model.run(s)
    player = player_data(s, outcome.result, outcome.frames)
    assert player["steps"] == list(range(6))
    assert all(len(messages) == 4 for messages in player["messages"])
    assert player["routes"]["0>1"] == [["0", "switch"], ["switch", "1"]]
    assert len(player["buffers"]) == 7
    # each message names the piece it carried (read from the buffers) and the step's phase
    assert sorted(message[6] for message in player["messages"][0]) == ["p0", "p1", "p2", "p3"]
    assert player["phases"] == ["reduce-scatter"] * 3 + ["all-gather"] * 3
    assert player["sentences"][0].startswith("Each rank sends one piece to its right neighbour") and "16 MiB" in player["sentences"][0]
    assert {node["id"] for node in player["layout"]["nodes"]} == {"0", "1", "2", "3", "switch"}


def test_large_runs_get_the_aggregate_player():
    s = scenario(ranks="128")
    player = player_data(s, run_collective(s))
    assert player["aggregate"] and sum(group["size"] for group in player["layout"]["groups"]) == 128
    assert player["buffers"] is None and "routes" not in player  # no per-rank drawing data at this size


def test_crossover_covers_every_runnable_algorithm():
    from sim.algorithms.registry import algorithms_for

    rows = helper.crossover(scenario())
    names = {row["algorithm"] for row in rows}
    assert names == set(algorithms_for("all_reduce"))
    ring = [row for row in rows if row["algorithm"] == "ring"]
    assert [row["size_bytes"] for row in ring] == list(model.CROSSOVER_SIZES)
    assert all(row["time_s"] > 0 for row in ring)
    assert any(row["time_s"] is None and "two_level" in row["why"] for row in rows if row["algorithm"] == "hierarchical")


def test_crossover_simulates_off_the_switch():
    rows = helper.crossover(scenario(topology="ring", ranks="8"))
    assert {row["method"] for row in rows if row["time_s"] is not None} <= {
        "simulated",
        "replayed",
        "extrapolated",
    }  # no closed form off the switch


def test_topology_layouts():
    for changes in (
        {"topology": "switch"},
        {"topology": "ring"},
        {"topology": "torus2d", "ranks": "16"},
        {"topology": "two_level", "ranks": "16", "gpus_per_node": "4"},
    ):
        layout = topology_layout(scenario(**changes))
        ranks = [node for node in layout["nodes"] if node["rank"] is not None]
        assert len(ranks) == int(changes.get("ranks", "8"))
        assert len({(node["x"], node["y"]) for node in ranks}) == len(ranks)  # no two ranks on one spot


def test_the_crossover_helper_process_gives_the_same_rows():
    """The served app computes crossovers in a helper process (the other core, beside the
    simulation); its rows are the in-process ones, and it really is another process."""
    import os

    from sim.collective import explore

    s = model.parse_form({**model.DEFAULTS, "ranks": "11", "size": "3MiB"})[0]
    here = explore.crossover(s, model.CROSSOVER_SIZES, max_messages=helper.CROSSOVER_MESSAGES)
    helper.start_helper()
    try:
        pid = helper.helper_pid()
        assert pid is not None and pid != os.getpid()
        assert helper.crossover(s) == here
        cached = helper._crossover.cache_info().currsize
        assert helper.crossover(s.replace(size_bytes=2**20, algorithm="nccl_tree")) == here  # same network and ranks
        assert helper._crossover.cache_info().currsize == cached
    finally:
        helper.stop_helper()
    assert helper.helper_pid() is None


def test_the_crossover_helper_exits_when_its_server_is_killed():
    """A server killed by a signal runs no exit handler: its helper process notices the parent
    is gone and exits instead of waiting forever."""
    import os
    import signal
    import subprocess
    import sys
    import time

    code = "from webapp import helper as c; c.start_helper(); print(c.helper_pid(), flush=True); import time; time.sleep(60)"
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        helper = int(server.stdout.readline())
        os.kill(helper, 0)  # alive
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
        for _ in range(100):
            try:
                os.kill(helper, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            os.kill(helper, signal.SIGKILL)
            raise AssertionError("the helper outlived its server by 10 s")
    finally:
        server.kill()
