"""No --algorithm: an op with one algorithm runs it anywhere; with a GPU preset every op runs what
NCCL would (broadcast/reduce: its Ring pick on its data path; all_to_all: grouped send/recv, as
``direct``); elsewhere the message names the op's algorithms. The explorer gives the CLI's number."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.algorithms.registry import ops
from sim.cli import cli
from sim.collective.pick import scenario_for_pick
from sim.hardware.presets import list_presets, load_preset
from sim.scenario import CollectiveScenario

GPU_PRESETS = [name for name in list_presets() if load_preset(name).nccl is not None]


def _run(*args: str):
    return CliRunner().invoke(cli, ["sim", "collective", *args])


@pytest.mark.parametrize(
    ("op", "algorithm"), [("gather", "binomial"), ("scatter", "binomial"), ("barrier", "dissemination"), ("send_recv", "direct")]
)
def test_an_op_with_one_algorithm_needs_none_named(op, algorithm, tmp_path):
    result = _run("--op", op, "--ranks", "4", "--bandwidth", "10GB/s", "--size", "1MiB", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["algorithm"] == algorithm
    path = tmp_path / "s.yaml"
    path.write_text(f"op: {op}\nranks: 4\nbandwidth: 10GB/s\nsize: 1MiB\n")
    assert json.loads(_run("--scenario", str(path), "--json").output)["algorithm"] == algorithm
    assert CollectiveScenario.load(path).algorithm == algorithm


def test_a_missing_algorithm_names_the_ops_algorithms():
    result = _run("--op", "broadcast", "--ranks", "4", "--bandwidth", "10GB/s", "--size", "1MiB")
    assert result.exit_code != 0
    assert "missing --algorithm for broadcast; allowed: linear, binomial, pipelined_chain, scatter_allgather" in result.output
    assert "Traceback" not in result.output
    both = _run("--op", "reduce", "--bandwidth", "10GB/s")
    assert "missing --algorithm, --ranks" in both.output and "--algorithm for reduce is one of linear, binomial" in both.output
    with pytest.raises(Exception, match="missing required field.*algorithm; algorithm for all_to_all is one of pairwise, direct, bruck"):
        CollectiveScenario.from_dict({"op": "all_to_all", "ranks": 4, "size": "1MiB", "bandwidth": "1GB/s"})


def test_all_to_all_on_a_preset_runs_nccls_p2p_path_and_says_so():
    args = ("--hardware", "dgx-h100", "--nodes", "2", "--op", "all_to_all", "--size", "16MiB")
    text = _run(*args)
    assert text.exit_code == 0, text.output
    assert "all_to_all/nccl_p2p" in text.output and "grouped ncclSend/ncclRecv" in text.output
    summary = json.loads(_run(*args, "--json").output)
    given = json.loads(_run(*args, "--algorithm", "nccl_p2p", "--json").output)
    plain = json.loads(_run(*args, "--algorithm", "direct", "--json").output)  # the datasheet's links, no NCCL latencies
    assert summary["time_s"] == given["time_s"] and "ncclSend" in summary["note"] and "note" not in plain
    assert plain["time_s"] < summary["time_s"]
    assert "NCCL_ALGO" in _run(*args, "--nccl-algo", "Ring").output


def test_the_explorer_gives_the_clis_number_for_a_preset_broadcast():
    """As tests/training/test_one_answer.py: the explorer's functions with NCCL's pick."""
    from webapp import collective as explorer

    result = _run("--hardware", "dgx-h100", "--nodes", "2", "--op", "broadcast", "--size", "64MiB", "--json")
    assert result.exit_code == 0, result.output
    pick, why = scenario_for_pick("dgx-h100", 2, "broadcast", 64 * 2**20)
    assert pick is not None and pick.algorithm.startswith("nccl_ring"), why
    # the pick's sharing (the data path's fifo): under fair a chain's first rank sends its 8 slots at once
    form = {**explorer.DEFAULTS, **explorer.hardware_form("dgx-h100", "16"), "hardware": "dgx-h100", "op": "broadcast",
            "algorithm": pick.algorithm, "chunks": str(pick.chunks), "size": "64MiB", "reduce_bandwidth": "",
            "sharing": pick.sharing}  # fmt: skip
    scenario, errors = explorer.parse_form(form)
    assert not errors, errors
    outcome = explorer.run(scenario, frames=False)
    assert outcome.mode == "simulated"
    assert outcome.result.time_s == pytest.approx(json.loads(result.output)["time_s"], rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("hardware", GPU_PRESETS)
def test_the_default_answer_never_refuses_on_a_shipped_gpu_preset(hardware):
    """Every op, 1 and 2 nodes (where the preset has them), a small and a bandwidth-bound size."""
    nodes = [n for n in (1, 2) if load_preset(hardware).max_nodes is None or n <= load_preset(hardware).max_nodes]
    for n in nodes:
        for op in ops():
            for size in ("4KiB", "64MiB"):
                result = _run("--hardware", hardware, "--nodes", str(n), "--op", op, "--size", size, "--json")
                assert result.exit_code == 0, (n, op, size, result.output)


def test_the_crossover_row_of_nccls_pick_for_broadcast_is_the_clis_number():
    args = ["sim", "crossover", "--op", "broadcast", "--hardware", "dgx-h100", "--nodes", "2", "--sizes", "4MiB", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    (row,) = [row for row in json.loads(result.output) if row["algorithm"] == "nccl"]
    cli_s = json.loads(_run("--hardware", "dgx-h100", "--nodes", "2", "--op", "broadcast", "--size", "4MiB", "--json").output)["time_s"]
    assert row["time_s"] == pytest.approx(cli_s, rel=1e-12) and row["method"].startswith("des (nccl_ring")


@pytest.mark.parametrize("op", [op for op in ops() if op != "send_recv"])
def test_the_gloo_cpu_preset_runs_what_gloo_runs_for_every_op(op):
    from sim.algorithms.registry import backend_choice

    result = _run("--hardware", "cpu-ethernet-25g", "--nodes", "3", "--op", op, "--size", "1MiB", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    choice = backend_choice("gloo", op)  # the record that says what gloo runs
    if choice is not None:
        assert summary["algorithm"] == choice.spec.name
        assert summary.get("note") == (choice.run.note or None)  # said where it is not gloo's own algorithm, silent where it is
    assert "ncclSend" not in result.output


def test_the_gloo_preset_refuses_nccl_restrictions():
    result = _run("--hardware", "cpu-ethernet-25g", "--nodes", "2", "--op", "all_reduce", "--size", "1MiB", "--nccl-proto", "LL")
    assert result.exit_code != 0 and "--nccl-algo/--nccl-proto" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("op", ["all_to_all", "send_recv"])
def test_the_explorer_gives_the_clis_number_for_a_preset_p2p_op(op):
    """Choosing a preset sets NCCL's pick and its sharing (p2p's fair): the explorer's number is the CLI's."""
    from webapp import collective as explorer

    result = _run("--hardware", "dgx-h100", "--nodes", "2", "--op", op, "--size", "16MiB", "--json")
    assert result.exit_code == 0, result.output
    form = {**explorer.DEFAULTS, **explorer.hardware_form("dgx-h100", "16"), "hardware": "dgx-h100", "op": op, "size": "16MiB",
            **explorer.pick_form("dgx-h100", op)}  # fmt: skip
    scenario, errors = explorer.parse_form(form)
    assert not errors and scenario.algorithm == "nccl_p2p", errors
    outcome = explorer.run(scenario, frames=False)
    assert outcome.result.time_s == pytest.approx(json.loads(result.output)["time_s"], rel=1e-12)
