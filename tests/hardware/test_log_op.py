"""Which collective an nccl-tests log timed: the program it names (all_gather_perf, ...), else
the op the caller gives; a log that names none is refused, never taken for all_reduce (every
nccl-tests binary prints the same columns, so the columns cannot tell)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from real import nccl_tests
from sim.collective.nccl_fit import read_log
from sim.errors import CollsimError
from sim.hardware.cli import hardware

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted([*(ROOT / "real/data/nccl-tests").glob("*.txt"), *(ROOT / "bench/heldout/nccl-tests").glob("*.txt")])
# an 8-rank all_to_all (alltoall_perf): no redop, like all_gather's, so nothing in a row says which
ROWS = """#
#  Rank  0 Group  0 Pid  100 on node0 device  0 [0x00] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid  107 on node0 device  7 [0x07] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576        262144     float    none      -1    40.10   26.15   22.88      0    39.80   26.35   23.05      0
     4194304       1048576     float    none      -1    90.20   46.50   40.69      0    89.90   46.66   40.82      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 31.9
"""
NAMED = {"allreduce": "all_reduce", "all_reduce": "all_reduce", "allgather": "all_gather", "all_gather": "all_gather",
         "alltoall": "all_to_all", "reduce_scatter": "reduce_scatter"}  # fmt: skip


def _log(tmp_path: Path, head: str = "", name: str = "cluster_run.txt") -> Path:
    path = tmp_path / name
    path.write_text(head + ROWS)
    return path


def test_a_log_that_names_no_program_is_refused_not_read_as_all_reduce(tmp_path):
    path = _log(tmp_path)
    with pytest.raises(CollsimError, match="cannot tell which collective") as error:
        read_log(path)
    assert str(path) in str(error.value) and "all_gather_perf" in str(error.value)


def test_a_log_without_a_program_takes_the_callers_op(tmp_path):
    op, rows = read_log(_log(tmp_path), op="all_to_all")
    assert op == "all_to_all" and [size for size, _ in rows] == [1048576, 4194304]


def test_the_program_a_log_names_wins_over_the_callers_op(tmp_path):
    assert read_log(_log(tmp_path, "# Collective test starting: alltoall_perf\n"), op="all_reduce")[0] == "all_to_all"


@pytest.mark.parametrize(
    "head, op",
    [("# Collective test starting: sendrecv_perf\n", "send_recv"), ("$ ./build/all_gather_perf -b 8 -e 4M -f 2 -g 8\n", "all_gather"),
     ("# Collective test starting: reduce_perf\n", "reduce"), ("mpirun -np 8 /opt/nccl-tests/build/reduce_scatter_perf -b 1M\n", "reduce_scatter")],
)  # fmt: skip
def test_the_program_named_anywhere_in_the_header_tells_the_op(tmp_path, head, op):
    """sendrecv_perf was read as all_reduce (the fit's own list lacked it); a command line counts too."""
    assert read_log(_log(tmp_path, head))[0] == op
    assert nccl_tests.read(_log(tmp_path, head))["meta"]["op"] == op


@pytest.mark.parametrize("path", SHIPPED, ids=[path.name for path in SHIPPED])
def test_every_shipped_log_reads_the_op_its_file_name_says(path):
    said = {NAMED[word] for word in re.findall(r"all_?reduce|all_?gather|alltoall|reduce_scatter", path.name)}
    assert len(said) == 1, path.name
    assert read_log(path)[0] == nccl_tests.read(path)["meta"]["op"] == said.pop()


def test_hardware_fit_names_the_file_and_the_missing_program(tmp_path):
    path = _log(tmp_path)
    error = CliRunner().invoke(hardware, ["fit", str(path), "--hardware", "dgx-h100"]).exception
    assert isinstance(error, CollsimError) and f"LOG {path}: cannot tell which collective" in str(error)


@pytest.mark.slow
def test_real_import_refuses_a_log_without_a_program_unless_given_op(tmp_path):
    path, db = _log(tmp_path), tmp_path / "store.sqlite"
    run = [sys.executable, "-m", "sim.cli", "real", "import", str(path), "--db", str(db)]
    done = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "cannot tell which collective" in done.stderr and "--op all_gather" in done.stderr
    done = subprocess.run([*run, "--op", "all_to_all"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "imported 2 all_to_all row(s), p = 8" in done.stdout


def test_a_json_file_without_the_programs_args_is_refused_unless_given_op(tmp_path):
    document = {"version": 2, "args": [], "results": [{"size": 1024, "count": 256, "type": "float", "redop": "none", "root": -1,
                "out_of_place": {"time": 10.0, "alg_bw": 0.1, "bus_bw": 0.09, "nwrong": 0}}]}  # fmt: skip
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CollsimError, match=f"{re.escape(str(path))}: cannot tell which collective.*--op"):
        nccl_tests.read(path)
    assert nccl_tests.read(path, op="all_gather", world_size=8)["rows"][0]["op"] == "all_gather"


def test_an_exported_table_keeps_its_own_op_even_one_nccl_tests_has_no_binary_for():
    """collsim real export writes a barrier table as barrier_perf; it was read back as the file's
    first op (all_reduce)."""
    rows = [{"op": "", "size_bytes": n, "count": n // 4, "type": "float32", "redop": "none", "root": -1, "time_s": 1e-4, "algbw_GBps": 0.0,
             "busbw_GBps": 0.0} for n in (0, 4)]  # fmt: skip
    text = "".join(
        f"# collsim export: source measured, backend gloo, device cpu, world size {p}\n"
        + nccl_tests.to_text([{**row, "op": op} for row in rows])
        for op, p in (("all_reduce", 2), ("barrier", 4))
    )
    found = {(row["op"], row["world_size"]) for row in nccl_tests.parse_text(text)["rows"]}
    assert found == {("all_reduce", 2), ("barrier", 4)}
    without = text.replace("# Collective test starting: barrier_perf\n", "")
    with pytest.raises(CollsimError, match="cannot tell which collective"):  # not the first table's op
        nccl_tests.parse_text(without)
