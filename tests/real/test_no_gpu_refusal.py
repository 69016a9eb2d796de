"""Without GPUs, NCCL and CUDA choices are refused with a clear message before anything starts."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from real.launcher import LaunchConfig, check_devices  # noqa: E402
from sim.errors import CollsimError  # noqa: E402

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0


def test_nccl_needs_one_gpu_per_rank():
    with pytest.raises(CollsimError, match="nccl"):
        check_devices(LaunchConfig(GPUS + 1, "nccl", "cuda"))


@pytest.mark.skipif(GPUS > 0, reason="checks the message on a machine without GPUs")
def test_cuda_device_without_gpus():
    with pytest.raises(CollsimError, match="no CUDA GPU visible"):
        check_devices(LaunchConfig(2, "gloo", "cuda"))
