"""A collective's result is plain data: it pickles, dumps to JSON, and holds no live object of
the run (network, environment, events); its link table and routes say what the network did.
Every timeline, simulated or measured, becomes a Chrome trace by one writer and one schema."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import simpy

from real.trace import import_trace, measured_trace
from sim.collective.results import CollectiveResult, Table, utilisation
from sim.collective.runner import run_collective
from sim.network import Network
from sim.scenario import CollectiveScenario
from sim.trace import chrome_trace, trace_problems
from sim.training.ddp import DDPScenario, run_ddp

TRACE = Path(__file__).resolve().parents[2] / "real" / "data" / "trace_ddp_small_gloo_2ranks.json.gz"
TWO_LEVEL = {"op": "all_reduce", "algorithm": "ring", "ranks": 8, "size": "1MiB", "topology": "two_level", "gpus_per_node": 4,
             "latency": "5us", "bandwidth": "10GB/s", "intra_bandwidth": "100GB/s", "intra_latency": "1us"}  # fmt: skip
LIVE = (Network, simpy.Environment, simpy.Event)


def result_of(**changes) -> CollectiveResult:
    return run_collective(CollectiveScenario.from_dict({**TWO_LEVEL, **changes}))


def live_objects(value, path="result", seen=None) -> list[str]:
    """Paths of every live engine object reachable through attributes, items and elements."""
    seen = set() if seen is None else seen
    if id(value) in seen or isinstance(value, (str, bytes, int, float, bool, type(None), np.generic)):
        return []
    seen.add(id(value))
    if isinstance(value, LIVE):
        return [path]
    found = []
    if isinstance(value, np.ndarray):
        items = enumerate(value.tolist()) if value.dtype == object else ()
    elif isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = enumerate(value)
    else:
        items = getattr(value, "__dict__", {}).items()
    for key, item in items:
        found += live_objects(item, f"{path}.{key}", seen)
    return found


def test_a_result_holds_no_live_object_and_round_trips_through_pickle_and_json():
    result = result_of()
    assert live_objects(result) == []
    again = pickle.loads(pickle.dumps(result))
    assert again.summary() == result.summary() and list(again.messages) == list(result.messages)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["time_s"] == result.time_s and data["scenario"] == result.scenario.to_dict()
    assert data["records"]["messages"]["src"] == result.messages["src"].tolist()
    assert len(data["records"]["routes"]) == len(result.routes) == 8  # the ring's 8 neighbour pairs


def test_the_walker_finds_a_live_object():
    assert live_objects({"a": [1, simpy.Environment()]}) == ["result.a.1"]


def test_links_carry_metadata_and_every_crossing():
    result = result_of()
    links = result.links
    assert set(links.names) == {"name", "src", "dst", "bandwidth_Bps", "latency_s", "kind", "messages", "bytes"}
    intra = [i for i, kind in enumerate(links["kind"]) if kind == "up" and links["dst"][i].startswith("node")]
    assert intra and all(links["bandwidth_Bps"][i] == 100e9 for i in intra)
    crossings = {}  # recount the crossings from the recorded messages and the routes
    for src, dst, *_ in result.messages:
        for index in result.routes[(src, dst)]:
            crossings[index] = crossings.get(index, 0) + 1
    assert {i: int(n) for i, n in enumerate(links["messages"]) if n} == crossings
    assert [(s.link, s.messages) for s in result.link_stats] == [(str(links["name"][i]), n) for i, n in sorted(crossings.items())]


def test_aggregated_runs_keep_their_totals_in_the_tables():
    full, capped = result_of(record="full"), result_of(max_events=10)
    assert capped.truncated and len(capped.messages) == 10
    assert int(capped.overflow["messages"].sum()) == capped.message_count - 10
    assert capped.links["messages"].tolist() == full.links["messages"].tolist()
    assert capped.pairs["nbytes"].tolist() == full.pairs["nbytes"].tolist()


def test_table_reads_as_rows_and_columns():
    table = Table({"src": np.array([0, 1]), "name": np.array(["a", "b"], dtype=object)})
    assert list(table) == [(0, "a"), (1, "b")] and table[1] == (1, "b") and table[:1] == [(0, "a")]
    assert table["src"].tolist() == [0, 1] and table.rows()[0] == {"src": 0, "name": "a"}


def test_utilisation_is_busy_over_span():
    assert utilisation(0.25, 1.0) == 0.25 and utilisation(1.0, 0.0) == 0.0
    result = result_of()
    assert all(0 < stats.utilisation <= 1 for stats in result.link_stats)


def test_collective_ddp_and_measured_traces_pass_one_schema_check():
    collective = result_of(reduce_bandwidth="20GB/s").chrome_trace()
    ddp = run_ddp(DDPScenario.from_dict({"param_bytes": [2**20] * 4, "strategy": "bucketed", "bucket_size": "2MiB",
                                         "backward_time": "10ms", "comm": "ow", "o": "50us", "w": "10GB/s"})).chrome_trace()  # fmt: skip
    measured = measured_trace(import_trace(TRACE))
    for trace in (collective, ddp, measured):
        assert trace_problems(trace) == [] and trace_problems(json.loads(json.dumps(trace))) == []
    kinds = [{event["cat"] for event in trace["traceEvents"] if event["ph"] != "M"} for trace in (collective, ddp, measured)]
    assert (
        {"send", "reduce"} <= kinds[0] and {"comm", "grad_ready", "backward"} <= kinds[1] and {"comm", "grad_ready", "backward"} <= kinds[2]
    )
    names = {event["args"]["name"] for event in collective["traceEvents"] if event["name"] == "process_name"}
    assert names == {"ranks: sends", "ranks: compute", "links"}
    assert any(event["ph"] == "i" and event["name"].startswith("ready ") for event in measured["traceEvents"])


def test_the_schema_check_names_what_is_wrong():
    assert trace_problems({"events": []}) == ["no 'traceEvents' list"]
    trace = chrome_trace([{"rank": 0, "peer": -1, "resource": "compute:0", "kind": "backward", "start_s": 1.0, "end_s": 0.5}])
    assert any("dur >= 0" in problem for problem in trace_problems(trace))
