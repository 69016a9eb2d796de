"""``collsim hardware fit`` on a new user's mistakes (issue 36): --stride, --nodes that do not
match the log, a file that is no nccl-tests output, an --output that cannot be written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.errors import CollsimError
from sim.hardware.cli import hardware


def _head(ranks: int) -> str:
    return "# Collective test starting: all_reduce_perf\n" + "".join(
        f"#  Rank {r:2d} Group  0 Pid  {100 + r} on node{r // 8} device  {r % 8} [0x{r:02x}] NVIDIA H100 80GB HBM3\n" for r in range(ranks)
    )


TAIL = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n"


def _log(tmp_path: Path, sizes_times: list[tuple[int, float]], name: str = "sixteen_ranks.txt", ranks: int = 16) -> Path:
    rows = "".join(f"{size:12d}  {size // 4:12d}  float  sum  -1  {t * 1e6:9.2f}  0.00  0.00  0  {t * 1e6:9.2f}  0.00  0.00  0\n"
                   for size, t in sizes_times)  # fmt: skip
    path = tmp_path / name
    path.write_text(_head(ranks) + rows + TAIL)
    return path


def _fit(*args: str) -> BaseException | None:
    return CliRunner().invoke(hardware, ["fit", *args]).exception


@pytest.mark.parametrize("stride", ["0", "-1"])
def test_a_stride_below_one_is_refused(tmp_path, stride):
    error = _fit(str(_log(tmp_path, [(1024, 30e-6), (4096, 40e-6)])), "--hardware", "dgx-h100", "--stride", stride)
    assert isinstance(error, CollsimError) and f"--stride: must be >= 1 (use every Nth size of each log), got {stride}" in str(error)


@pytest.mark.parametrize("nodes, said", [("3", "3 x 8 GPUs = 24 ranks, but"), ("4", "give --nodes 2"), ("0", "must be >= 1"),
                                         ("two", "expected whole numbers")])  # fmt: skip
def test_nodes_that_do_not_match_the_logs_rank_lines_are_refused(tmp_path, nodes, said):
    error = _fit(str(_log(tmp_path, [(1024, 30e-6), (4096, 40e-6)])), "--hardware", "dgx-h100", "--nodes", nodes)
    assert isinstance(error, CollsimError) and said in str(error)
    if nodes == "3":
        assert "'#  Rank' lines list 16 ranks" in str(error)


def test_a_rank_count_that_is_not_whole_nodes_is_refused(tmp_path):
    error = _fit(str(_log(tmp_path, [(1024, 30e-6), (4096, 40e-6)], ranks=12)), "--hardware", "dgx-h100")
    assert isinstance(error, CollsimError) and "lists 12 ranks, not a whole number of dgx-h100 nodes of 8 GPUs" in str(error)


def test_a_file_that_is_no_nccl_tests_output_is_named_as_such(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# collsim\n\nA simulator of collectives.\n")
    done = subprocess.run([sys.executable, "-m", "sim.cli", "hardware", "fit", str(readme), "--hardware", "dgx-h100"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "README.md is not an nccl-tests output" in done.stderr and "Rank" not in done.stderr


def test_an_output_in_a_missing_folder_is_refused_before_the_fit(tmp_path):
    error = _fit(str(tmp_path / "no_such.txt"), "--hardware", "dgx-h100", "-o", str(tmp_path / "nodir" / "x.yaml"))
    # refused for the output although the log does not exist either: the output is checked first
    assert isinstance(error, CollsimError) and "--output: cannot write" in str(error) and "does not exist" in str(error)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_fitted_constants_are_printed_when_the_output_cannot_be_written(tmp_path):
    from sim.collective.nccl_fit import des_time

    log = _log(tmp_path, [(size, des_time("dgx-h100", 2, "all_reduce", size)[0] + 40e-6) for size in (1024, 16384)])
    done = subprocess.run([sys.executable, "-m", "sim.cli", "hardware", "fit", str(log), "--hardware", "dgx-h100", "--fit", "base_latency_us",
                           "-o", "/dev/full"], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--output: cannot write '/dev/full'" in done.stderr and "printed above" in done.stderr
    assert "fitted:" in done.stdout and "base_latency_us:" in done.stdout and "value:" in done.stdout


def test_a_truncated_log_warns_on_stderr(tmp_path):
    log = _log(tmp_path, [(1024, 30e-6), (4096, 40e-6)])
    log.write_text(log.read_text().replace(TAIL, ""))
    result = CliRunner().invoke(hardware, ["fit", str(log), "--hardware", "dgx-h100", "--fit", "speed"])  # stops at --fit, after the logs
    assert isinstance(result.exception, CollsimError) and "unknown constant" in str(result.exception)
    assert "warning:" in result.stderr and "looks truncated" in result.stderr and "sixteen_ranks.txt" in result.stderr
