"""What the CLI and the closed forms promise a user: chunked forms that are the simulated time,
verify with repetitions, one error line for unwritable outputs and bare numbers without units,
misspelt keys named with the nearest, readable one-rank summaries, the README's commands as
written, and a `collsim --help` that imports only what it needs."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.collective import analytic
from sim.collective.collapsed import run as run_in_mode
from sim.collective.runner import run_collective
from sim.errors import CollsimError
from sim.scenario import CollectiveScenario

ROOT = Path(__file__).resolve().parents[2]
COLLECTIVE = ["sim", "collective"]
DDP_OW = ["sim", "ddp", "--preset", "small", "--backward-time", "120ms", "--o", "50us", "--w", "10GB/s"]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def assert_one_error_line(result, *fragments: str) -> str:
    """Exit 2 with one ``error:`` line (no traceback) that contains every fragment."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.output.splitlines() if line.strip() and not line.startswith("# ")]  # "# " notes: which store
    assert len(lines) == 1 and lines[0].startswith("error"), result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def summary(*args: str) -> dict:
    result = invoke(*COLLECTIVE, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


# --- wrong answers -------------------------------------------------------------------------


def test_ring_all_gather_closed_form_does_not_ignore_chunks():
    """with 64 chunks ring all_gather's closed form carries k, (p-1) k a + (p-1)/p n b,
    and collapsed mode gives the full simulation's time (it used the one-chunk form: 5.063 ms
    against 6.953 ms, below the port-occupancy bound)."""
    args = ["--op", "all_gather", "--algorithm", "ring", "--ranks", "4", "--size", "64MiB", "--bandwidth", "10GB/s",
            "--latency", "10us", "--chunks", "64"]  # fmt: skip
    full, collapsed = summary(*args), summary(*args, "--mode", "collapsed")
    bound = 3 * 64 * 10e-6 + 3 / 4 * 64 * 2**20 / 10e9  # each rank sends (p-1) k messages of n/(p k) bytes, one at a time
    assert full["time_s"] == pytest.approx(bound, rel=1e-9)
    assert full["analytic_time_s"] == pytest.approx(bound, rel=1e-12)
    assert collapsed["time_s"] == pytest.approx(full["time_s"], rel=1e-9)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter"])
@pytest.mark.parametrize("p,k", [(2, 3), (3, 2), (5, 4)])
def test_chunked_ring_forms_are_the_simulated_time(op, p, k):
    """the ring forms with k chunks equal the DES, with or without slow reductions;
    where p k does not divide the elements there is no closed form, and the note says so."""
    base = dict(op=op, algorithm="ring", ranks=p, bandwidth_Bps=1e9, latency_s=2e-6, reduce_bandwidth_Bps=0.5e9, chunks=k)
    even = CollectiveScenario(size_bytes=4 * p * k * 25, **base)
    assert run_collective(even).time_s == pytest.approx(analytic.for_scenario(even), rel=1e-9)
    uneven = CollectiveScenario(size_bytes=4 * (p * k * 25 + 1), **base)
    assert analytic.for_scenario(uneven) is None
    assert f"does not split evenly into {p * k} pieces" in analytic.why_no_closed_form(uneven)
    assert run_in_mode(uneven, "collapsed").time_s == pytest.approx(run_collective(uneven).time_s, rel=1e-12)


@pytest.mark.parametrize("op,algorithm", sorted((spec.op, spec.name) for spec in analytic.with_forms()))
def test_every_closed_form_carries_chunks_or_is_none(op, algorithm):
    """a form without a k term gives None for k > 1; a form with one changes with k."""
    one = analytic.closed_form(op, algorithm, 4, 4096.0, 1e-6, 1e-9, 0.0, 1)
    two = analytic.closed_form(op, algorithm, 4, 4096.0, 1e-6, 1e-9, 0.0, 2)
    if analytic.form_of(op, algorithm).chunked:
        assert two is not None and two != one
    else:
        assert two is None


def test_recursive_doubling_all_gather_uneven_split_has_no_closed_form():
    """36 B (9 elements) over 8 ranks: full 40 ns, the closed form said 31.5 ns, and
    collapsed mode reported that impossible time. Now: no closed form, a note saying why."""
    args = ["--op", "all_gather", "--algorithm", "recursive_doubling", "--ranks", "8", "--size", "36B", "--bandwidth", "1GB/s"]
    full, collapsed = summary(*args), summary(*args, "--mode", "collapsed")
    assert full["analytic_time_s"] is None
    assert "does not split evenly into 8 pieces" in full["analytic_note"]
    assert collapsed["time_s"] == pytest.approx(full["time_s"], rel=1e-12)


def _audit_cases():
    for op, algorithm in sorted((spec.op, spec.name) for spec in analytic.with_forms()):
        for elements in (8 * 5 + 3, 8 * 6):  # uneven and even over 8 ranks (and over 3 chunks)
            yield op, algorithm, elements


@pytest.mark.parametrize("op,algorithm,elements", list(_audit_cases()))
def test_a_closed_form_that_applies_is_the_simulated_time(op, algorithm, elements):
    """Item 2 audit: on switch(8), whatever the split, ``for_scenario`` is None or the DES's time."""
    from sim.algorithms.registry import algorithm_spec

    spec = algorithm_spec(op, algorithm)
    chunks = 3 if spec is not None and spec.chunked else 1
    scenario = CollectiveScenario(
        op=op, algorithm=algorithm, ranks=8, size_bytes=4 * elements, bandwidth_Bps=1e9, latency_s=1e-6,
        reduce_bandwidth_Bps=4e9, chunks=chunks, overhead_s=1e-6,
    )  # fmt: skip
    closed = analytic.for_scenario(scenario)
    if closed is None:
        assert analytic.why_no_closed_form(scenario)
    else:
        assert run_collective(scenario).time_s == pytest.approx(closed, rel=1e-9)


@pytest.mark.parametrize(
    "op,algorithm",
    [("all_reduce", "ring"), ("all_reduce", "recursive_doubling"), ("reduce", "binomial"), ("reduce_scatter", "ring")],
)
def test_verify_with_repetitions(op, algorithm):
    """each repetition starts from fresh input buffers, so reductions verify."""
    scenario = CollectiveScenario(
        op=op, algorithm=algorithm, ranks=4, size_bytes=4 * 64, bandwidth_Bps=1e9, latency_s=1e-6, repetitions=2, verify=True
    )
    assert run_collective(scenario).verified is True


def test_two_level_needs_ranks_that_fill_nodes_of_eight():
    """12 ranks on two_level used to become one node without a NIC, ignoring --bandwidth."""
    result = invoke(*COLLECTIVE, "--op", "all_reduce", "--algorithm", "hierarchical", "--ranks", "12", "--topology", "two_level",
                    "--size", "1MiB", "--bandwidth", "1GB/s")  # fmt: skip
    assert_one_error_line(result, "gpus_per_node", "12 ranks", "nodes of 8")
    slow = CollectiveScenario(op="all_reduce", algorithm="hierarchical", ranks=12, size_bytes=2**20, bandwidth_Bps=1e9,
                              topology="two_level", gpus_per_node=4, intra_bandwidth_Bps=100e9)  # fmt: skip
    fast = slow.replace(bandwidth_Bps=100e9)
    assert run_collective(slow).time_s > run_collective(fast).time_s  # the NIC bandwidth matters again
    assert CollectiveScenario(**{**slow.to_dict(), "ranks": 16, "gpus_per_node": None, "stragglers": ()}).gpus_per_node_resolved == 8


# --- tracebacks ----------------------------------------------------------------------------


def test_one_rank_readable_summary():
    """one rank, no --json: the readable summary used to fail formatting a None error."""
    result = invoke(*COLLECTIVE, "--op", "all_reduce", "--algorithm", "ring", "--ranks", "1", "--size", "64MiB", "--bandwidth", "25GB/s")
    assert result.exit_code == 0, result.output
    assert "simulated time   0 s" in result.output and "closed form" in result.output


def test_readable_summary_names_why_there_is_no_closed_form():
    """without a closed form the text summary says why (analytic_note)."""
    result = invoke(*COLLECTIVE, "--op", "all_reduce", "--algorithm", "ring", "--ranks", "12", "--size", "64MiB", "--bandwidth", "25GB/s")
    assert result.exit_code == 0, result.output
    assert "does not split evenly into 12 pieces" in result.output


def test_unwritable_outputs_are_one_error_line(tmp_path):
    """--trace/--csv into a missing directory, for collective and ddp, before running."""
    base = ["--op", "all_reduce", "--algorithm", "ring", "--ranks", "4", "--size", "1MiB", "--bandwidth", "25GB/s"]
    assert_one_error_line(invoke(*COLLECTIVE, *base, "--trace", "/nonexistent/dir/t.json"), "--trace", "/nonexistent/dir")
    assert_one_error_line(invoke(*COLLECTIVE, *base, "--csv", str(tmp_path)), "--csv", "is a directory")
    assert_one_error_line(invoke(*DDP_OW, "--csv", "/nonexistent/x.csv"), "--csv", "/nonexistent")
    assert_one_error_line(invoke(*DDP_OW, "--trace", "/nonexistent/t.json"), "--trace")


def test_write_errors_after_the_run_are_one_error_line(tmp_path):
    """an OSError while writing (here: the target is a directory) is a CollsimError."""
    result = run_collective(CollectiveScenario(op="broadcast", algorithm="binomial", ranks=2, size_bytes=8, bandwidth_Bps=1e9))
    with pytest.raises(CollsimError, match="--trace: cannot write"):
        result.write_trace(tmp_path)
    with pytest.raises(CollsimError, match="--csv: cannot write"):
        result.to_csv(tmp_path)


def test_sweep_store_and_directories_are_one_error_line(tmp_path):
    """Item 8, the same trap elsewhere: an unusable --db for sweep, a directory as scenario file."""
    grid = str(ROOT / "docs" / "examples" / "sweeps" / "crossover.yaml")
    assert_one_error_line(invoke("sweep", grid, "--db", "/nonexistent/x.sqlite"), "--db", "SQLite")
    not_sqlite = tmp_path / "grid.yaml"
    not_sqlite.write_text("kind: collective\n")
    assert_one_error_line(invoke("sweep", grid, "--db", str(not_sqlite)), "--db", "not a database")
    assert_one_error_line(invoke(*COLLECTIVE, "--scenario", str(tmp_path)), "is a directory")


@pytest.mark.parametrize("extra", [[], ["--jitter", "1us"]])
def test_negative_seed(extra):
    """--seed -1 crashed in numpy's default_rng, with or without jitter."""
    result = invoke(*COLLECTIVE, "--op", "all_reduce", "--algorithm", "ring", "--ranks", "4", "--size", "1MiB",
                    "--bandwidth", "25GB/s", "--seed", "-1", *extra)  # fmt: skip
    assert_one_error_line(result, "seed", "-1")


# --- traps ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--latency", "5"], "latency: '5' has no unit"),
        (["--latency", "1e-6"], "has no unit"),
        (["--overhead", "3"], "overhead: '3' has no unit"),
        (["--jitter", "2"], "jitter"),
        (["--straggler", "1:2"], "has no unit"),
        (["--reduce-bandwidth", "1e9"], "reduce_bandwidth: '1e9' has no unit"),
    ],
)
def test_bare_times_and_bandwidths_are_errors(args, fragment):
    """--latency 5 was 5 s (a 70 s all-reduce); now an error naming the units."""
    result = invoke(*COLLECTIVE, "--op", "all_reduce", "--algorithm", "ring", "--ranks", "4", "--size", "1MiB",
                    "--bandwidth", "25GB/s", *args)  # fmt: skip
    line = assert_one_error_line(result, fragment)
    assert re.search(r"5us|25GB/s", line)


def test_bare_bandwidth_on_the_cli():
    """--bandwidth 25 is not 25 B/s."""
    result = invoke(*COLLECTIVE, "--op", "all_reduce", "--algorithm", "ring", "--ranks", "4", "--size", "1MiB", "--bandwidth", "25")
    assert_one_error_line(result, "bandwidth: '25' has no unit", "25GB/s")


@pytest.mark.parametrize("flag,value", [("--backward-time", "120"), ("--o", "50"), ("--w", "10"), ("--forward-time", "40"),
                                        ("--layer-times", "layers.0:2")])  # fmt: skip
def test_ddp_bare_numbers(flag, value):
    """--backward-time 120 was 120 s."""
    args = [*DDP_OW]
    if flag in args:
        index = args.index(flag)
        args[index + 1] = value
    elif flag == "--layer-times":
        args = ["sim", "ddp", "--preset", "small", "--o", "50us", "--w", "10GB/s", flag, value]
    else:
        args += [flag, value]
    assert_one_error_line(invoke(*args), "has no unit")


def test_zero_bare_sizes_and_canonical_numbers_still_work(tmp_path):
    """Item 11, what stays allowed: 0 without a unit, sizes in bare bytes, canonical keys with
    plain numbers in files and Python (latency_s: 5.0e-6), and the JSON round trip."""
    assert summary("--op", "all_reduce", "--algorithm", "ring", "--ranks", "4", "--size", "4096", "--latency", "0",
                   "--bandwidth", "25GB/s")["size_bytes"] == 4096  # fmt: skip
    path = tmp_path / "s.yaml"
    path.write_text("op: all_reduce\nalgorithm: ring\nranks: 4\nsize_bytes: 4096\nlatency_s: 5.0e-6\nbandwidth_Bps: 1e9\n")
    assert summary("--scenario", str(path))["scenario"]["latency_s"] == 5e-6
    scenario = CollectiveScenario(op="all_reduce", algorithm="ring", ranks=4, size_bytes=64, bandwidth_Bps=1e9, latency_s=5e-6,
                                  stragglers=((1, 1e-6),))  # fmt: skip
    assert CollectiveScenario.from_json(scenario.to_json()) == scenario
    assert CollectiveScenario.from_yaml(scenario.to_yaml()) == scenario


def test_short_keys_in_files_need_units(tmp_path):
    """scenario files and sweep grids: ``latency: 5`` is an error, ``latency: 5us`` is not."""
    path = tmp_path / "s.yaml"
    path.write_text("op: all_reduce\nalgorithm: ring\nranks: 4\nsize: 4KiB\nlatency: 5\nbandwidth: 25GB/s\n")
    assert_one_error_line(invoke(*COLLECTIVE, "--scenario", str(path)), "latency: '5' has no unit")
    with pytest.raises(CollsimError, match="bandwidth: '1000000000' has no unit"):
        CollectiveScenario.from_dict({"op": "all_reduce", "algorithm": "ring", "ranks": 4, "size": 64, "bandwidth": 1_000_000_000})
    with pytest.raises(CollsimError, match="stragglers 3: '1' has no unit"):
        CollectiveScenario.from_dict({"op": "all_reduce", "algorithm": "ring", "ranks": 4, "size": 64, "bandwidth": "1GB/s",
                                      "stragglers": {3: 1}})  # fmt: skip
    assert CollectiveScenario.from_dict({"op": "all_reduce", "algorithm": "ring", "ranks": 4, "size": 64, "bandwidth": "1GB/s",
                                         "stragglers": {3: "1ms"}}).stragglers == ((3, 1e-3),)  # fmt: skip
    from sim.training.ddp import DDPScenario

    with pytest.raises(CollsimError, match="backward_time: '120' has no unit"):
        DDPScenario.from_dict({"preset": "small", "backward_time": 120, "o": "50us", "w": "10GB/s"})


def test_compare_spec_short_keys_need_units(tmp_path):
    """``w: 10`` in a DDP compare spec was 10 B/s."""
    pytest.importorskip("real.compare")
    path = tmp_path / "spec.yaml"
    path.write_text((ROOT / "real" / "data" / "compare_ddp_small.yaml").read_text() + "\no: 50us\nw: 10\n")
    assert_one_error_line(invoke("compare", str(path)), "w: '10' has no unit")


def test_help_says_which_numbers_need_units():
    """--help says sizes may be bare bytes and times/bandwidths need units."""
    text = " ".join(invoke(*COLLECTIVE, "--help").output.split())
    assert "a bare number is bytes" in text and "need a unit" in text
    assert "need a unit" in " ".join(invoke("sim", "ddp", "--help").output.split())


def test_misspelt_scenario_key_names_the_nearest(tmp_path):
    """``rank: 8`` said "missing --ranks"; now the key and the nearest valid one."""
    path = tmp_path / "s.yaml"
    path.write_text("op: all_reduce\nalgorithm: ring\nrank: 8\nsize: 4KiB\nbandwidth: 25GB/s\n")
    assert_one_error_line(invoke(*COLLECTIVE, "--scenario", str(path)), "unknown field 'rank'", "did you mean 'ranks'")
    ddp = tmp_path / "d.yaml"
    ddp.write_text("preset: small\nbackward_time: 120ms\no: 50us\nw: 10GB/s\nbucket_sise: 4MiB\n")
    assert_one_error_line(invoke("sim", "ddp", "--scenario", str(ddp)), "'bucket_sise'", "did you mean 'bucket_size'")


def test_new_fields_are_valid_keys_automatically():
    """the valid keys come from the dataclass fields (sharing, eager_limit...)."""
    from sim.scenario import check_keys

    check_keys(CollectiveScenario, {"sharing": "fifo", "eager_limit": "64KiB", "eager_limit_bytes": 0, "size": 1})
    with pytest.raises(CollsimError, match="did you mean 'sharing'"):
        check_keys(CollectiveScenario, {"shareing": "fifo"})


def test_sweep_grid_keys(tmp_path):
    """a misspelt key in a grid (top level or a scenario field) stops it before running."""
    grid = tmp_path / "g.yaml"
    grid.write_text("kind: collective\nbase: {op: all_reduce, algorithm: ring, bandwidth: 1GB/s}\ngird: {ranks: [2, 4]}\n")
    assert_one_error_line(invoke("sweep", str(grid), "--db", str(tmp_path / "s.sqlite")), "'gird'", "did you mean 'grid'")
    grid.write_text("kind: collective\nbase: {op: all_reduce, algorithm: ring, bandwith: 1GB/s}\ngrid: {ranks: [2, 4]}\n")
    assert_one_error_line(invoke("sweep", str(grid), "--db", str(tmp_path / "s.sqlite")), "'bandwith'", "did you mean 'bandwidth'")
    assert not (tmp_path / "s.sqlite").exists()


def test_calibration_keys(tmp_path):
    """calibration files: a misspelt top-level key names the nearest valid one."""
    path = tmp_path / "cal.yaml"
    path.write_text("kind: collsim-calibration\nversion: 1\ncollectivs: []\n")
    result = invoke(*COLLECTIVE, "--op", "all_reduce", "--ranks", "2", "--size", "1MiB", "--calibration", str(path))
    assert_one_error_line(result, "'collectivs'", "did you mean 'collectives'")


def test_compare_spec_keys(tmp_path):
    """``rank: 2`` in a compare spec compared "0 ranks"; now it names 'ranks'."""
    pytest.importorskip("real.compare")
    spec = (ROOT / "real" / "data" / "compare_all_reduce_gloo_2.yaml").read_text().replace("\nranks:", "\nrank:")
    assert "\nrank: 2" in spec
    path = tmp_path / "spec.yaml"
    path.write_text(spec)
    assert_one_error_line(invoke("compare", str(path)), "compare spec", "'rank'", "did you mean 'ranks'")


def test_calibration_entry_without_canonical_keys(tmp_path):
    """Item 12 (calibration files): an entry missing a key was a KeyError traceback."""
    path = tmp_path / "cal.yaml"
    path.write_text(
        "kind: collsim-calibration\nversion: 1\ncollectives:\n"
        "  - {op: all_reduce, backend: gloo, world_size: 2, scenario: {algorithm: ring, latency: 5us}}\n"
    )
    result = invoke(*COLLECTIVE, "--op", "all_reduce", "--ranks", "2", "--size", "1MiB", "--calibration", str(path))
    assert_one_error_line(result, "calibration file", "overhead_s")


@pytest.mark.parametrize(
    "args,kind",
    [
        ([*COLLECTIVE, "--op", "all_reduce", "--ranks", "2", "--calibration", "nope.yaml"], "calibration file 'nope.yaml' not found"),
        (["sweep", "nope.yaml"], "sweep grid 'nope.yaml' not found"),
        (["sim", "ddp", "--profile", "nope.json", "--o", "50us", "--w", "10GB/s"], "profile file 'nope.json' not found"),
        ([*COLLECTIVE, "--scenario", "nope.yaml"], "scenario file 'nope.yaml' not found"),
        (["compare", "nope.yaml"], "compare spec 'nope.yaml' not found"),
    ],
)
def test_missing_files_are_named_by_kind(args, kind):
    """every missing file was "scenario file ... not found"."""
    assert_one_error_line(invoke(*args), kind)


def test_repetitions_time_is_per_call():
    """time_s is per call (total / repetitions) in the CLI help, the summary and the docs."""
    base = ["--op", "all_reduce", "--algorithm", "ring", "--ranks", "4", "--size", "1MiB", "--latency", "5us", "--bandwidth", "25GB/s"]
    one, three = summary(*base), summary(*base, "--repetitions", "3")
    assert three["time_s"] == pytest.approx(three["rank_end_s"]["max"] / 3, rel=1e-12)
    assert three["time_s"] == pytest.approx(one["time_s"], rel=1e-9)  # no skew: calls do not overlap
    assert "time_s is per call" in " ".join(invoke(*COLLECTIVE, "--help").output.split())
    doc = " ".join((ROOT / "docs" / "network-model.md").read_text().split())
    assert "total time divided by the repetitions" in doc


def _readme_command(prefix: str) -> list[str]:
    """The README's command that starts with ``prefix``, continuation lines joined."""
    text = (ROOT / "README.md").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if line.strip().startswith(prefix):
            return shlex.split(line.split("#")[0])
    raise AssertionError(f"README has no command starting {prefix!r}")


@pytest.mark.parametrize("prefix", ["collsim sim ddp --profile", "collsim sweep"])
def test_readme_commands_run_as_written(prefix, tmp_path):
    """README commands name bundled files, and run from the repository root."""
    command = _readme_command(prefix)
    (tmp_path / "docs").symlink_to(ROOT / "docs")  # relative paths as in a fresh clone; outputs land in tmp_path
    if command[1] == "sweep":
        command += ["--quiet", "--workers", "1"]
    result = subprocess.run([sys.executable, "-m", "sim.cli", *command[1:]], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_readme_shows_the_import_and_docs_cite_only_the_repository():
    """the README shows the public Python import; docs/ddp.md cited "DESIGN §4/§5"."""
    assert "from sim import CollectiveScenario, run_collective" in (ROOT / "README.md").read_text()
    for doc in (ROOT / "docs").glob("**/*.md"):
        assert "DESIGN §" not in doc.read_text(), doc


def _imported(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_help_and_a_collective_import_only_what_they_need():
    """``collsim --help`` loads no numpy/networkx/yaml; a collective without files no yaml or pandas."""
    help_modules = _imported(
        "import sys; sys.argv = ['collsim', '--help']\nfrom sim.cli import cli\ntry:\n    cli()\nexcept SystemExit:\n    pass"
    )
    assert not help_modules & {"numpy", "networkx", "yaml", "pandas", "simpy", "torch", "dash", "plotly"}
    args = ["collsim", "sim", "collective", "--op", "all_reduce", "--algorithm", "ring", "--ranks", "8", "--size", "1MiB",
            "--latency", "5us", "--bandwidth", "25GB/s", "--json"]  # fmt: skip
    collective_modules = _imported(
        f"import sys; sys.argv = {args!r}\nfrom sim.cli import cli\ntry:\n    cli()\nexcept SystemExit:\n    pass"
    )
    assert "simpy" in collective_modules  # it did run
    assert not collective_modules & {"yaml", "pandas", "torch", "dash", "plotly", "scipy", "tqdm"}
    assert (ROOT / "bench" / "startup.py").is_file()
