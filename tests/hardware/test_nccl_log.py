"""nccl-tests logs a fit or an import must not take as they are (issue 36): a failed run, wrong
results, negative or NaN times, a truncated log, a file that is no log at all."""

from __future__ import annotations

import itertools

import pytest

from sim.collective.nccl_fit import read_checked, read_log
from sim.errors import CollsimError

HEAD = """# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
# Collective test starting: all_reduce_perf
#  Rank  0 Group  0 Pid  11111 on node01 device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  11112 on node01 device  1 [0x0b] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
"""
ROWS = [
    "        1024           256     float     sum      -1    20.10    0.05    0.05      0    20.00    0.05    0.05      0",
    "       65536         16384     float     sum      -1    30.00    2.18    2.18      0    29.50    2.22    2.22      0",
    "     1048576        262144     float     sum      -1   100.00   10.49   10.49      0    99.00   10.59   10.59      0",
]
TAIL = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 4.2\n#\n"


def _log(tmp_path, rows=ROWS, tail=TAIL, name="all_reduce.txt"):
    path = tmp_path / name
    path.write_text(HEAD + "\n".join(rows) + "\n" + tail)
    return path


def test_a_whole_log_is_read_without_warnings(tmp_path):
    op, rows, checks = read_checked(_log(tmp_path))
    assert op == "all_reduce" and [size for size, _, _ in rows] == [1024, 65536, 1048576]
    assert rows[2][1] == pytest.approx(100e-6) and rows[2][2] == pytest.approx(99e-6)
    assert checks.rank_count == 2 and checks.warnings() == []


def test_a_failed_run_is_refused_naming_its_line(tmp_path):
    failure = "node01: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '"
    path = _log(tmp_path, ROWS[:2] + [failure, " .. node01 pid 11111: Test failure common.cu:1044"], tail="")
    with pytest.raises(CollsimError, match=r"line 8: the run failed .*Test NCCL failure"):
        read_checked(path)


def test_sizes_with_wrong_results_are_left_out_with_a_warning_naming_them(tmp_path):
    wrong = ROWS[1].replace("      0    29.50", "     12    29.50")
    op, rows, checks = read_checked(_log(tmp_path, [ROWS[0], wrong, ROWS[2]]))
    assert [size for size, _, _ in rows] == [1024, 1048576]
    (warning,) = checks.warnings()
    assert "left out 1 size(s) whose #wrong column is above 0" in warning and "line 7 (65536 B)" in warning


@pytest.mark.parametrize("time_text, what", [("-30.00", "negative"), ("   nan", "not a finite number"), ("   inf", "not a finite number")])
def test_a_negative_or_nan_time_is_refused_naming_its_line(tmp_path, time_text, what):
    bad = ROWS[1].replace("    30.00", "   " + time_text, 1)
    with pytest.raises(CollsimError, match=rf"line 7: time .* us is {what}"):
        read_checked(_log(tmp_path, [ROWS[0], bad, ROWS[2]]))


def test_a_nan_in_place_time_is_refused_too(tmp_path):
    bad = ROWS[2].replace("    99.00", "      nan")
    with pytest.raises(CollsimError, match="line 8: time nan us is not a finite number"):
        read_checked(_log(tmp_path, [ROWS[0], ROWS[1], bad]))


def test_a_truncated_log_is_read_with_a_warning(tmp_path):
    _, rows, checks = read_checked(_log(tmp_path, ROWS[:2], tail=""))
    assert len(rows) == 2
    (warning,) = checks.warnings()
    assert "looks truncated" in warning and "line 7" in warning and "2 size(s) read" in warning


def test_a_file_that_is_no_nccl_tests_output_says_so(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# My notes\n\nSome text, 12 34 and a table | a | b |\n")
    with pytest.raises(CollsimError, match=r"notes.md is not an nccl-tests output: it has no nccl-tests result lines"):
        read_log(path)


def test_every_size_wrong_is_refused(tmp_path):
    rows = [row[: row.index("      0")] + "      3" + row[row.index("      0") + 7 :] for row in ROWS]
    with pytest.raises(CollsimError, match="every size has #wrong above 0"):
        read_checked(_log(tmp_path, rows))


def test_the_reader_takes_lines_as_they_come():
    """A log is read line by line: the first rows of an endless log come back (a reader that held
    the file whole would never return)."""
    from sim.nccl.log import LogChecks, results

    endless = (f"{1024 * n:12d}  {256 * n:12d}  float  sum  -1  20.0  0.1  0.1  0  20.0  0.1  0.1  0" for n in itertools.count(1))
    first = list(itertools.islice(results(endless, LogChecks("endless")), 5))
    assert [row.size_bytes for row in first] == [1024, 2048, 3072, 4096, 5120]


def test_an_nccl_tests_json_file_is_named_as_json_not_as_no_log(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"version": 2, "results": []}')
    with pytest.raises(CollsimError, match="is JSON .*reads the text log"):
        read_log(path)
