"""What a new user hit in `collsim sim ...` and `collsim sweep` (issue 36's trial): lost work,
tracebacks on a full disk or an overflowing size, inputs silently read another way, and
messages that named the wrong thing. Each test is one trap, named by the behaviour it wants."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.errors import CollsimError
from sim.scenario import CollectiveScenario
from sim.units import MAX_SIZE_BYTES, parse_bandwidth, parse_size

ROOT = Path(__file__).resolve().parents[2]
RING = ["sim", "collective", "--op", "all_reduce", "--algorithm", "ring", "--ranks", "4", "--bandwidth", "25GB/s"]
DDP_OW = ["sim", "ddp", "--preset", "small", "--backward-time", "120ms", "--o", "50us", "--w", "10GB/s"]
FSDP_OW = ["sim", "fsdp", "--preset", "small", "--backward-time", "120ms", "--o", "50us", "--w", "10GB/s", "--ranks", "8"]
BASE = {"op": "all_reduce", "algorithm": "ring", "ranks": 4, "size": "1MiB", "bandwidth": "25GB/s"}


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_error_line(result, *fragments: str) -> str:
    """Exit 2 with one ``error`` line (no traceback) holding every fragment."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error"), result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def collsim(*args: str, stdout=subprocess.PIPE, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", "from sim.cli import main; main()", *args]
    return subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, timeout=timeout)


# --- lost work -----------------------------------------------------------------------------


def test_a_collective_without_size_is_refused_naming_size():
    """Forgetting --size simulated 0 bytes and answered '0 s' with exit 0."""
    one_error_line(invoke(*RING), "--size")


def test_a_barrier_needs_no_size_and_an_explicit_zero_size_still_runs():
    barrier = invoke("sim", "collective", "--op", "barrier", "--ranks", "4", "--bandwidth", "25GB/s", "--json")
    assert barrier.exit_code == 0, barrier.output
    zero = invoke(*RING, "--size", "0", "--json")
    assert zero.exit_code == 0 and json.loads(zero.output)["size_bytes"] == 0, zero.output


# --- sizes that overflow -----------------------------------------------------------------


@pytest.mark.parametrize("size", ["1e19", "1e20", 1e300, 10**20, "1025TiB"])
def test_a_size_beyond_one_pib_is_refused_naming_the_bound(size):
    with pytest.raises(CollsimError, match="1 PiB"):
        parse_size(size)


def test_the_largest_size_is_taken():
    assert parse_size("1024TiB") == MAX_SIZE_BYTES == 2**50


def test_a_json_size_of_1e300_is_one_error_line_not_a_traceback(tmp_path):
    scenario = tmp_path / "big.json"
    scenario.write_text(json.dumps({**BASE, "size": 1e300}))
    one_error_line(invoke("sim", "collective", "--scenario", str(scenario)), "1 PiB")


@pytest.mark.parametrize("size", ["1e19", "1e20"])
def test_a_huge_size_flag_is_one_error_line(size):
    one_error_line(invoke(*RING, "--size", size), "size", "1 PiB")


# --- units read another way --------------------------------------------------------------


@pytest.mark.parametrize("text", ["1gb", "1 gb", "64mb", "1kb", "2tb", "1gib"])
def test_a_lower_case_size_unit_is_refused_not_read_as_bits(text):
    with pytest.raises(CollsimError) as error:
        parse_size(text)
    letter = text.strip()[-3 if text.endswith("ib") else -2].upper()
    for spelling in (f"{letter}B", f"{letter}iB", f"{letter}b"):
        assert spelling in str(error.value)


def test_a_lower_case_bandwidth_unit_is_refused_but_bps_stays_bits():
    with pytest.raises(CollsimError, match="GB/s.*GiB/s.*Gb/s"):
        parse_bandwidth("1gb/s")
    assert parse_bandwidth("8gbps") == 1e9 and parse_bandwidth("8Gb/s") == 1e9 and parse_bandwidth("8GB/s") == 8e9


def test_size_1gb_on_the_command_line_is_one_error_line():
    one_error_line(invoke(*RING, "--size", "1gb"), "GB", "GiB", "Gb")


def test_two_delays_for_one_straggler_rank_are_refused():
    """The runner kept one of them without a word."""
    one_error_line(invoke(*RING, "--size", "1MiB", "--straggler", "1:1ms", "--straggler", "1:2ms"), "rank 1", "one delay per rank")
    with pytest.raises(CollsimError, match="one delay per rank"):
        CollectiveScenario(**{**CollectiveScenario.from_dict(BASE).to_dict(), "stragglers": ((1, 1e-3), (1, 2e-3))})


@pytest.mark.parametrize("stragglers", [[[1, 1]], {1: 1}, "1:1"])
def test_a_straggler_delay_without_a_unit_is_refused_in_every_form(stragglers):
    with pytest.raises(CollsimError, match="has no unit"):
        CollectiveScenario.from_dict({**BASE, "stragglers": stragglers})


def test_stragglers_round_trip_through_to_dict_with_their_unit():
    scenario = CollectiveScenario.from_dict({**BASE, "stragglers": [[1, "1ms"], [2, 0]]})
    assert scenario.stragglers == ((1, 1e-3), (2, 0.0))
    assert CollectiveScenario.from_dict(scenario.to_dict()) == scenario
    assert CollectiveScenario.from_dict(json.loads(scenario.to_json())) == scenario


@pytest.mark.parametrize("flag,value", [("--intra-bandwidth", "1GB/s"), ("--intra-latency", "1us")])
def test_an_intra_node_link_on_a_switch_is_refused(flag, value):
    """--intra-bandwidth on a switch changed nothing and said nothing."""
    one_error_line(invoke(*RING, "--size", "1MiB", flag, value), flag[2:].replace("-", "_"), "two_level")


def test_an_intra_node_link_on_two_level_still_counts():
    args = [*RING, "--size", "1MiB", "--ranks", "8", "--topology", "two_level", "--gpus-per-node", "4", "--json"]
    slow, fast = invoke(*args, "--intra-bandwidth", "1GB/s"), invoke(*args, "--intra-bandwidth", "100GB/s")
    assert json.loads(slow.output)["time_s"] > json.loads(fast.output)["time_s"]


# --- a full disk, stdout or a file ---------------------------------------------------------

FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full here")


@needs_dev_full
@pytest.mark.parametrize(
    "args",
    [
        [*RING, "--size", "1MiB", "--json"],
        ["hardware", "list"],
        ["sim", "crossover", "--op", "all_reduce", "--ranks", "4", "--bandwidth", "25GB/s", "--sizes", "1KiB,1MiB"],
        ["sim", "crossover", "--op", "all_reduce", "--ranks", "4", "--bandwidth", "25GB/s", "--sizes", "1KiB", "--csv"],
    ],
)
def test_stdout_on_a_full_disk_is_one_error_line_naming_it(args):
    with FULL.open("w") as full:
        done = collsim(*args, stdout=full)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == ["error: cannot write standard output: No space left on device"]


@needs_dev_full
@pytest.mark.parametrize(
    "args,flag",
    [
        ([*RING, "--size", "1MiB", "--trace", str(FULL)], "--trace"),
        ([*RING, "--size", "1MiB", "--csv", str(FULL)], "--csv"),
        ([*DDP_OW, "--trace", str(FULL)], "--trace"),
        ([*FSDP_OW, "--csv", str(FULL)], "--csv"),
    ],
)
def test_an_output_file_on_a_full_disk_is_one_error_line_naming_the_flag(args, flag):
    one_error_line(invoke(*args), flag, str(FULL), "No space left")


# a parameter list on a full disk: the commands that write one name their flag (tests/training/test_params_cli_traps.py)


@needs_dev_full
def test_a_sweep_csv_on_a_full_disk_is_one_error_line(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("base: {op: all_reduce, algorithm: ring, bandwidth: 25GB/s, size: 1MiB}\ngrid: {ranks: [2, 4]}\n")
    result = invoke("sweep", str(grid), "--db", str(tmp_path / "s.sqlite"), "--workers", "1", "--quiet", "--csv", str(FULL))
    one_error_line(result, "--csv", "No space left")


# --- empty values are refused, not read as "not given" -------------------------------------


@pytest.mark.parametrize(
    "args,flag",
    [
        ([*RING, "--size", "1MiB", "--trace", ""], "--trace"),
        ([*RING, "--size", "1MiB", "--csv", ""], "--csv"),
        ([*DDP_OW, "--trace", ""], "--trace"),
        ([*DDP_OW, "--sweep-bucket-sizes", ""], "--sweep-bucket-sizes"),
        ([*FSDP_OW, "--compare", ""], "--compare"),
        (["sim", "crossover", "--op", "all_reduce", "--ranks", "4", "--bandwidth", "25GB/s", "--sizes", ""], "--sizes"),
    ],
)
def test_an_empty_value_is_refused_naming_its_flag(args, flag):
    one_error_line(invoke(*args), flag)


def test_an_empty_sweep_csv_is_refused(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("base: {op: all_reduce, algorithm: ring, bandwidth: 25GB/s, size: 1MiB}\ngrid: {ranks: [2]}\n")
    one_error_line(invoke("sweep", str(grid), "--db", str(tmp_path / "s.sqlite"), "--csv", ""), "--csv", "empty")


# --- one limit, one meaning ----------------------------------------------------------------


@pytest.mark.parametrize("command", [DDP_OW, FSDP_OW])
def test_ranks_beyond_the_limit_are_refused_under_the_ow_model_too(command):
    one_error_line(invoke(*command, "--ranks", "100000"), "ranks", "65536")


def test_optimizer_state_bytes_is_per_element_and_a_size_is_refused():
    one_error_line(invoke(*FSDP_OW, "--optimizer-state-bytes", "8GB"), "optimizer_state_bytes", "per parameter element")
    plain, with_b = (invoke(*FSDP_OW, "--optimizer-state-bytes", value, "--json") for value in ("12", "12B"))
    assert json.loads(plain.output)["memory"] == json.loads(with_b.output)["memory"]


@pytest.mark.parametrize("command", [["sim", "collective"], ["sim", "crossover"]])
def test_op_help_lists_every_registered_op(command):
    from sim.algorithms.registry import ops

    text = " ".join(invoke(*command, "--help").output.split())
    assert "all_to_all" in ops()
    for op in ops():
        assert op in text, op


# --- file arguments said as what they are ----------------------------------------------------


@pytest.mark.parametrize("path,said", [("/dev/null", "is not a regular file"), ("/tmp", "is a directory")])
@pytest.mark.parametrize(
    "args",
    [
        [*DDP_OW[:2], "--backward-time", "1ms", "--o", "50us", "--w", "10GB/s", "--params"],
        [*RING, "--size", "1MiB", "--topology"],
        [*DDP_OW, "--layer-times"],
    ],
)
def test_a_directory_or_device_given_as_a_file_is_said_as_such(args, path, said):
    if not Path(path).exists():
        pytest.skip(f"no {path} here")
    one_error_line(invoke(*args, path), path, said)


# --- Ctrl-C in a sweep ---------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_in_a_sweep_exits_at_once_and_keeps_the_finished_points(tmp_path):
    """It took about a minute (the pool ran every queued point) and said only "aborted"."""
    grid, db = tmp_path / "grid.yaml", tmp_path / "s.sqlite"
    grid.write_text(
        textwrap.dedent("""\
            base: {op: all_reduce, algorithm: ring, bandwidth: 25GB/s, size: 64MiB, chunks: 8}
            grid: {ranks: [2, 3, 200, 201, 202, 203, 204, 205, 206, 207]}
        """)
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", "from sim.cli import main; main()", "sweep", str(grid), "--db", str(db), "--workers", "2", "--quiet"]
    sweep = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _rows(db) < 2:
        time.sleep(0.2)
    assert _rows(db) >= 2, "the two small points never finished"
    os.killpg(sweep.pid, signal.SIGINT)
    interrupted = time.monotonic()
    _, stderr = sweep.communicate(timeout=60)
    assert time.monotonic() - interrupted < 10, stderr
    assert sweep.returncode == 130, stderr
    kept = _rows(db)
    assert f"kept the {kept} point(s) that finished in {db}" in stderr and kept < 10, stderr


def _rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as connection:
            return connection.execute("SELECT COUNT(*) FROM sweep_points").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not there yet
        return 0
