"""The held-out nccl-tests logs (bench/heldout/nccl-tests, issue 33) and their bench
(bench/nccl_heldout.py): every log reads, names a preset that exists with the log's own rank
count, repeats no calibration log, and the bench predicts it with the default command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from real.nccl_tests import read as read_any
from sim.collective.nccl_fit import compare, read_checked, read_columns
from sim.hardware.presets import list_presets, load_preset

ROOT = Path(__file__).resolve().parents[2]
HELD_OUT = sorted((ROOT / "bench" / "heldout" / "nccl-tests").glob("*.txt"))
CALIBRATION = sorted((ROOT / "real" / "data" / "nccl-tests").glob("*.txt"))
SMALL = "h100-ib400_2node_nccl2.29.2_alltoall.txt"  # three sizes, 2 x 8 ranks: the DES runs in about a second


def _bench():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import nccl_heldout
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return nccl_heldout


def test_there_are_held_out_logs_of_several_ops():
    ops = {read_checked(path)[0] for path in HELD_OUT}
    assert len(HELD_OUT) >= 10 and {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"} <= ops


@pytest.mark.parametrize("path", HELD_OUT, ids=lambda p: p.name)
def test_every_held_out_log_reads_and_names_a_preset_with_its_rank_count(path):
    setup = _bench().read_setup(path)
    assert setup.preset in list_presets()
    op, rows, checks = read_checked(path)
    text = path.read_text()
    expected = ["looks truncated"] if "(reader warns: truncated)" in text else []  # a README that cut the closing lines, said so
    assert rows and [w for w in checks.warnings() if not any(e in w for e in expected)] == []
    whole = read_any(path)  # the results-store reader: same op, and the world size nccl-tests' busbw/algbw implies
    assert whole["meta"]["op"] == op
    assert {row["world_size"] for row in whole["rows"]} == {setup.nodes * load_preset(setup.preset).gpus_per_node}
    for field in ("# source:", "# machine:", "# date:", "# licence:", "# NCCL:", "# uncertain:", "# ==== LOG (verbatim"):
        assert field in text, f"{path.name}: no {field!r} line in its header"


def test_an_alltoall_log_is_read_as_all_to_all_not_all_reduce():
    """nccl_fit's reader named every op it did not know all_reduce: an alltoall_perf log was then
    fitted and compared as an all_reduce of the same sizes."""
    path = next(p for p in HELD_OUT if "alltoall" in p.name)
    assert "alltoall_perf" in path.read_text()
    assert read_columns(path)[0] == "all_to_all"


def test_an_alltoall_log_is_compared_on_the_des_p2p_path_not_a_traceback(tmp_path):
    """With alltoall logs read as all_to_all, `collsim hardware fit` and the comparison reach the
    DES's nccl_p2p, which has no NCCL Algo/Proto pair: the label is the DES algorithm (was a KeyError)."""
    log = tmp_path / "alltoall.txt"  # a made-up 1-node table: the held-out logs are never fitted on
    log.write_text("# Collective test starting: alltoall_perf\n"
                   "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                   "     1048576         32768     float    none      -1    20.00   52.43   45.88      0    20.00   52.43   45.88    N/A\n"
                   "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 45.88\n")  # fmt: skip
    (point,) = compare(log, "hgx-h100-nvls", 1)
    assert point.op == "all_to_all" and point.pick == "nccl_p2p" and point.des_s > 0


def test_no_held_out_log_repeats_a_calibration_log():
    """A held-out check on a table the shipped presets were fitted on would be in-sample."""
    calibration = {frozenset((size, out) for size, out, _ in read_columns(path)[1]) for path in CALIBRATION}
    for path in HELD_OUT:
        mine = frozenset((size, out) for size, out, _ in read_columns(path)[1])
        assert not any(mine & other for other in calibration), f"{path.name} shares rows with a calibration log"


def test_a_header_without_a_preset_line_is_named():
    from sim.errors import CollsimError

    with pytest.raises(CollsimError, match="no '# preset:"):
        _bench().read_setup(CALIBRATION[0])


@pytest.mark.slow
def test_the_bench_predicts_a_log_as_the_default_command_does(tmp_path):
    bench = _bench()
    path = next(p for p in HELD_OUT if p.name == SMALL)
    points = bench.predict_log(path)
    assert [p.size_bytes for p in points] == [size for size, _, _ in read_columns(path)[1]]
    first = points[0]
    command = [sys.executable, "-m", "sim.cli", "sim", "collective", "--hardware", "hgx-h100-nvls", "--nodes", "2",
               "--op", "all_to_all", "--size", str(first.size_bytes), "--json"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    assert first.des_s == pytest.approx(cli["time_s"], rel=1e-9)
    assert [first.low_s, first.high_s] == pytest.approx(cli["time_interval_s"], rel=1e-9)
    assert first.model_s is not None and first.covered is not None
    record = tmp_path / "heldout.md"
    bench.main(["--log", SMALL, "--record", str(record)])
    text = record.read_text()
    assert "- date:" in text and "- machine:" in text and f"--log {SMALL}" in text
    assert "all_to_all" in text and ">= 256 MiB" in text and "80% covered" in text
    record.write_text(text + "what the numbers show, by hand\n")  # a rewrite keeps the notes under bench.NOTES
    bench.main(["--log", SMALL, "--record", str(record)])
    assert record.read_text().endswith(bench.NOTES + "\nwhat the numbers show, by hand\n")
