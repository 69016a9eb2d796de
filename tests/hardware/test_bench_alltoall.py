"""`collsim real bench --ops all_to_all`: nccl-tests' size and busbw conventions."""

import json
import subprocess
import sys

import pytest

from real.bench import OPS, busbw_factor, effective_size


def test_all_to_all_is_benchmarked_like_nccl_tests():
    assert "all_to_all" in OPS
    assert busbw_factor("all_to_all", 8) == pytest.approx(7 / 8)
    assert effective_size("all_to_all", 1000, 3, 4) == 996  # whole blocks of p elements, as nccl-tests' count


@pytest.mark.torch
@pytest.mark.slow
def test_gloo_all_to_all_runs():
    pytest.importorskip("torch")
    args = ["real", "bench", "--ops", "all_to_all", "--sizes", "4KiB", "--iters", "2", "--warmup", "1", "--ranks", "2", "--no-db", "--json"]
    result = subprocess.run([sys.executable, "-m", "sim.cli", *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    (row,) = json.loads(result.stdout)
    assert row["op"] == "all_to_all" and row["size_bytes"] == 4096 and row["world_size"] == 2
    assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] / 2)
