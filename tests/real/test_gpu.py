"""NCCL and gloo-with-CUDA paths: run where each rank has its own GPU, skipped with a reason elsewhere."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
NCCL = torch.distributed.is_available() and torch.distributed.is_nccl_available()

pytestmark = pytest.mark.gpu
two_gpus = pytest.mark.skipif(GPUS < 2, reason=f"needs 2 CUDA GPUs (one per rank); this machine has {GPUS}")
nccl = pytest.mark.skipif(not NCCL, reason="this torch build has no NCCL (CPU-only build)")
one_gpu = pytest.mark.skipif(GPUS < 1, reason="needs a CUDA GPU; this machine has none")


@nccl
@two_gpus
def test_nccl_bench_rows():
    from real.bench import BenchSpec, run_bench
    from real.launcher import LaunchConfig

    rows = run_bench(
        BenchSpec(("all_reduce", "all_gather", "reduce_scatter"), (1 << 20, 16 << 20), iters=10, warmup=3),
        LaunchConfig(2, "nccl", "cuda"),
        {"run_id": "gpu-test"},
    )
    assert len(rows) == 6
    for row in rows:
        assert row["backend"] == "nccl" and row["device"] == "cuda" and row["time_s"] > 0
        factor = 1.0 if row["op"] == "all_reduce" else 0.5
        assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * factor)


@nccl
@two_gpus
def test_nccl_ddp_weights_match_single_process():
    from real.ddp_bench import check_equality
    from real.launcher import LaunchConfig

    for row in check_equality(LaunchConfig(2, "nccl", "cuda")):
        assert row["allclose"], row


@one_gpu
def test_gloo_with_cuda_tensors():
    """Two ranks may share one GPU with gloo (CUDA tensors are staged through host memory)."""
    from real.bench import BenchSpec, run_bench
    from real.launcher import LaunchConfig

    rows = run_bench(BenchSpec(("all_reduce",), (1 << 20,), iters=5, warmup=1), LaunchConfig(2, "gloo", "cuda"), {"run_id": "gpu-test"})
    assert rows[0]["device"] == "cuda" and rows[0]["time_s"] > 0
