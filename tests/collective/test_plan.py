"""A scenario is resolved once (sim.collective.plan): its preset loaded once, a preset file read
once per run. Before, one explorer form (dgx-h100, 2 nodes, algorithm nccl, 1 MiB) made 18
load_preset calls and 10 scenarios (9 of them to check boxes alone), and a preset file given by
the user was read and parsed at every one of those calls."""

from __future__ import annotations

import shutil
import sys
from collections import Counter

import pytest
from click.testing import CliRunner

import sim.files
import sim.hardware.presets as presets
from sim.cli import cli
from sim.collective.pick import describe
from sim.collective.plan import resolve
from sim.collective.runner import run
from sim.hardware.presets import HERE, load_preset, scenario_fields
from sim.scenario import CollectiveScenario
from webapp import collective as explorer

EXPLORER_QUERY = "?op=all_reduce&algorithm=nccl&size=1MiB&nodes=2&hardware="


@pytest.fixture
def counted(monkeypatch):
    """Counts of load_preset calls (under every name it is imported as), YAML files read, scenarios built."""
    counts: Counter[str] = Counter()
    load, read, from_dict = presets.load_preset, sim.files.read_text, CollectiveScenario.from_dict.__func__

    def counting_load(name):
        counts["load_preset"] += 1
        return load(name)

    def counting_read(path, what, *args, **kwargs):
        counts[f"read {path}"] += 1
        return read(path, what, *args, **kwargs)

    def counting_from_dict(cls, data):
        counts["from_dict"] += 1
        return from_dict(cls, data)

    for module in list(sys.modules.values()):
        if getattr(module, "load_preset", None) is load:
            monkeypatch.setattr(module, "load_preset", counting_load)
    monkeypatch.setattr(sim.files, "read_text", counting_read)
    monkeypatch.setattr(CollectiveScenario, "from_dict", classmethod(counting_from_dict))
    return counts


def preset_file(tmp_path) -> str:
    """dgx-h100 as a user's own preset file (a fresh path: nothing of it parsed yet)."""
    path = tmp_path / "my-h100.yaml"
    shutil.copy(HERE / "dgx-h100.yaml", path)
    return str(path)


def explorer_flow(hardware: str):
    """What the explorer does with one form: read it, run it, say what NCCL's pick ran."""
    scenario, errors = explorer.parse_form(explorer.form_from_query(EXPLORER_QUERY + hardware))
    assert not errors and scenario.algorithm.startswith("nccl_")
    outcome = explorer.run(scenario, frames=True)
    return outcome, explorer.pick_info(outcome.scenario, True, preset=outcome.preset)  # as the page's callback does


def reads(counts: Counter, path: str) -> int:
    return sum(count for key, count in counts.items() if key.startswith("read ") and key.endswith(path))


def test_a_preset_file_is_read_once_for_an_explorer_form(tmp_path, counted):
    path = preset_file(tmp_path)
    outcome, info = explorer_flow(path)
    assert outcome.result is not None and info is not None
    assert counted["load_preset"] >= 2  # the flow does look at its preset several times
    assert reads(counted, path) == 1, dict(counted)  # was 18 reads


def test_an_explorer_form_loads_its_preset_a_few_times_and_builds_two_scenarios(counted):
    explorer.parse_form(explorer.form_from_query(EXPLORER_QUERY + "dgx-h100&ranks=16"))  # warm: the form's own reading
    counted.clear()
    explorer_flow("dgx-h100")
    # was 18, then 9, then 5: reading the form 2 (webapp hardware_form, NCCL's fill_pick), its run 1 (its pick reads the run's)
    assert counted["load_preset"] <= 3, dict(counted)
    assert counted["from_dict"] <= 2, dict(counted)  # was 10: one scenario per box checked alone


def test_an_explorer_run_and_its_pick_load_the_preset_twice(counted):
    scenario, errors = explorer.parse_form(explorer.form_from_query(EXPLORER_QUERY + "dgx-h100"))
    counted.clear()
    outcome = explorer.run(scenario.replace(repetitions=1, seed=7), frames=True)  # a scenario not run before here
    explorer.pick_info(scenario, True)
    assert outcome.mode == "simulated"
    # the run resolves once (budget, probes, frames and run read its preset), pick_info once: was 6
    assert counted["load_preset"] <= 2, dict(counted)


@pytest.fixture
def builds(monkeypatch):
    """The scenarios whose NCCL topology was built (sim.nccl.topo.unfinished: the graph before its channels)."""
    import sim.nccl.topo as nccl_topo

    built: list[CollectiveScenario] = []
    unfinished = nccl_topo.unfinished

    def counting(scenario, preset=None):
        built.append(scenario)
        return unfinished(scenario, preset)

    monkeypatch.setattr(nccl_topo, "unfinished", counting)
    return built


def test_an_explorer_run_builds_its_topology_once_for_the_budget_and_the_run(builds):
    scenario, _ = explorer.parse_form(explorer.form_from_query(EXPLORER_QUERY + "dgx-h100"))
    scenario = scenario.replace(seed=11)  # not run (nor probed) before here
    outcome = explorer.run(scenario, frames=True)
    assert outcome.mode == "simulated" and outcome.frames
    mine = [built for built in builds if built.replace(record=scenario.record) == scenario]
    assert len(mine) == 1, builds  # was 3: the budget's route work and its probe (the scenario recording less) built their own
    assert len(builds) == 2, builds  # and the frames' miniature (1 MiB on 16 ranks does not cut into whole cells)
    assert builds[1].size_bytes < scenario.size_bytes


def test_sim_collective_loads_its_preset_once_beside_building_the_scenario(counted):
    args = ["sim", "collective", "--hardware", "dgx-h100", "--nodes", "2", "--algorithm", "nccl", "--op", "all_reduce", "--size", "1MiB"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    # apply_hardware (building the scenario), and resolve (budget, run, NCCL's pick and note, and the
    # 80 % interval's spread): was 9, then 3 (the spread loaded its own)
    assert counted["load_preset"] <= 2, dict(counted)


def test_a_plan_shares_its_topology_with_a_variant_only_where_no_topology_differs(builds):
    scenario = CollectiveScenario.from_dict({**scenario_fields("dgx-h100", 2), "op": "all_reduce", "size": "1MiB", "algorithm": "nccl"})
    plan = resolve(scenario)
    assert plan.route_work() is not None
    recorded_fully = plan.with_scenario(scenario.replace(record="full", element_bytes=8))
    assert recorded_fully.topology is plan.topology
    assert len(builds) == 1
    larger = plan.with_scenario(scenario.replace(size_bytes=64 * 2**20))
    assert larger.preset is plan.preset
    assert larger.topology is not plan.topology
    elsewhere = plan.with_scenario(
        CollectiveScenario.from_dict({**scenario_fields("hgx-h100-nvls", 1), "op": "all_reduce", "size": "1MiB", "algorithm": "nccl"})
    )
    assert elsewhere.preset.name == "hgx-h100-nvls"


def test_a_run_after_its_budget_on_one_plan_keeps_the_time_of_before():
    from sim.collective.budget import check_run

    hardware, nodes, op, size, algorithm, _, time_s = PINNED[0]
    scenario = CollectiveScenario.from_dict({**scenario_fields(hardware, nodes), "op": op, "size": size, "algorithm": algorithm})
    plan = resolve(scenario)
    check_run(scenario, plan=plan)  # its route work reads the topology's parts before the channels partition the links
    assert run(scenario, plan=plan).time_s == time_s


def test_p2p_fields_and_pick_note_read_the_preset_given(counted):
    from sim.nccl.p2p import p2p_fields
    from sim.nccl.rooted import pick_note

    preset = load_preset("dgx-h100")
    counted.clear()
    fields = p2p_fields("dgx-h100", 2, "all_to_all", 2**20, preset=preset)
    scenario = CollectiveScenario.from_dict(fields)
    assert pick_note(scenario, preset)
    assert counted["load_preset"] == 0, dict(counted)


def test_a_nic_variant_is_built_once_and_follows_its_edited_base_file(tmp_path):
    path = preset_file(tmp_path)
    first = load_preset(f"{path}:16x200Gbps")
    assert load_preset(f"{path}:16x200Gbps") is first  # built once while the base is unchanged
    text = open(path).read().replace(load_preset(path).description, "my own H100 nodes, edited")
    open(path, "w").write(text + "\n# edited\n")  # longer: its size moves on
    edited = load_preset(f"{path}:16x200Gbps")
    assert edited.description.startswith("my own H100 nodes, edited")  # was the variant of the file as first read
    assert edited.nics_per_node == 16


def test_a_preset_file_is_read_once_for_sim_collective(tmp_path, counted):
    path = preset_file(tmp_path)
    args = ["sim", "collective", "--hardware", path, "--nodes", "2", "--algorithm", "nccl", "--op", "all_reduce", "--size", "1MiB"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "NCCL picks" in result.output
    assert reads(counted, path) == 1, dict(counted)


def test_an_edited_preset_file_is_read_again(tmp_path):
    path = preset_file(tmp_path)
    first = load_preset(path)
    with open(path, "a") as handle:  # a longer file: its size (and mtime) moves on
        handle.write("\n# edited\n")
    text = open(path).read().replace(first.description, "my own H100 nodes")
    open(path, "w").write(text)
    assert load_preset(path).description == "my own H100 nodes"
    assert load_preset(path) is load_preset(path)  # unchanged since: the parsed one


# time_s and the rates line of NCCL's pick before the plan (main at 42093d7), to the last bit
PINNED = [
    ("dgx-h100", 2, "all_reduce", "1MiB", "nccl", "nccl_tree_ll128", 6.769283515359556e-05),
    ("dgx-h100", 2, "all_gather", "16MiB", "nccl", "nccl_ring_ll128", 0.00010267364468419623),
    ("hgx-h100-nvls", 1, "all_reduce", "64MiB", "nccl", "nccl_nvls", 0.0003204721726675881),
    ("dgx-h100", 2, "all_reduce", "4MiB", "ring", "ring", 0.0005772863999999999),
    ("file", 2, "reduce_scatter", "8MiB", "nccl", "nccl_ring_ll128", 7.588745599209808e-05),
    # issue 33 item 5 (fix-a2a): PXN's NVLink hop before the 7 cross-rail sends (was 3.4949350817391305e-05)
    ("dgx-h100", 2, "all_to_all", "1MiB", "nccl", "nccl_p2p", 3.709947976521739e-05),
]
DGX_2_NODES_1MIB_RATES = (
    "runs at NVLink 360 GB/s a GPU = 0.8 (default) x 450 GB/s; network 46 GB/s a GPU = 0.92 (default) x 50 GB/s; "
    "LL128 at most 293.6 GB/s a GPU (NCCL's table); hops NVLink 1.314 us, network 8.937 us, call 14.72 us: "
    "NCCL's Tree/LL128 tables x 1.05 (fitted)"
)


@pytest.mark.parametrize(("hardware", "nodes", "op", "size", "algorithm", "ran", "time_s"), PINNED)
def test_runs_on_a_plan_give_the_times_of_before_to_the_bit(tmp_path, hardware, nodes, op, size, algorithm, ran, time_s):
    hardware = preset_file(tmp_path) if hardware == "file" else hardware
    scenario = CollectiveScenario.from_dict({**scenario_fields(hardware, nodes), "op": op, "size": size, "algorithm": algorithm})
    assert scenario.algorithm == ran
    assert run(scenario).time_s == time_s


def test_a_plan_builds_its_topology_once_and_describes_what_the_scenario_would(counted):
    scenario = CollectiveScenario.from_dict({**scenario_fields("dgx-h100", 2), "op": "all_reduce", "size": "1MiB", "algorithm": "nccl"})
    counted.clear()
    plan = resolve(scenario)
    assert plan.topology is plan.topology
    info = plan.describe()
    assert counted["load_preset"] == 1, dict(counted)  # resolve's, and nothing below it
    assert info == describe(scenario)
    assert info.rates == DGX_2_NODES_1MIB_RATES
    assert plan.route_work() is not None


def test_boxes_checked_alone_keep_their_own_messages():
    form = explorer.form_from_query("?op=all_reduce&algorithm=ring&ranks=8&size=3B&latency=5&bandwidth=0GB/s")
    scenario, errors = explorer.parse_form(form)
    assert scenario is None
    assert errors["size"].startswith("size: 3 bytes is not a multiple of the element size")  # a whole scenario's check
    assert errors["latency"].startswith("latency")  # a time needs its unit
    assert errors["bandwidth"].startswith("bandwidth: must be a positive")


def test_a_background_run_loads_its_preset_once_and_its_pick_reads_that(counted):
    scenario, _ = explorer.parse_form(explorer.form_from_query(EXPLORER_QUERY + "dgx-h100"))
    counted.clear()
    outcome = explorer.run_with_progress(scenario.replace(seed=13), lambda fraction, text: None)
    info = explorer.pick_info(outcome.scenario, True, preset=outcome.preset)  # as the page's summary does
    assert outcome.mode == "simulated" and info is not None
    assert counted["load_preset"] == 1, dict(counted)  # was 2: start_collective's own resolve, the pick's own load


def test_comparing_two_runs_resolves_each_once(counted):
    from webapp.pages.collectives.views import compare_panel

    scenario, _ = explorer.parse_form(explorer.form_from_query(EXPLORER_QUERY + "dgx-h100"))
    counted.clear()
    shown = compare_panel("nccl_ring_ll128", "algorithm", scenario.replace(seed=17).to_dict())
    assert shown["style"] == {} and "B takes" in shown["note"]
    # was 10: each run's estimate and the run itself resolved apart; decompose's 3 variants of each still resolve their own
    assert counted["load_preset"] <= 8, dict(counted)
