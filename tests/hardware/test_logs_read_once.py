"""`collsim hardware fit` and `collsim validate nccl-tests` read each log once: the fit takes the
rows sim.collective.nccl_fit.log_runs read (it read every log twice; validate three times a fitted
log). The DES is replaced by a closed form (the readings do not depend on it) to keep this short."""

from __future__ import annotations

import builtins
import io
from collections import Counter
from pathlib import Path

import pytest

from real.validate_nccl import SHIPPED
from sim.collective import nccl_fit

from ..cli_in_process import collsim_in_process
from ..real.test_validate_nccl import closed_form  # a stand-in DES reading the constants in force

LOGS = [SHIPPED / "h100_1node_allreduce_nvls_nccl-tests290.txt", SHIPPED / "hgx-h100_2node_ib400_nccl2.26.2_allreduce_default.txt"]


@pytest.fixture
def openings(monkeypatch) -> Counter:
    """How many times each shipped log is opened (every reader opens through io.open / open)."""
    seen: Counter = Counter()
    real_open = io.open

    def counting(file, *args, **kwargs):
        if isinstance(file, str | Path) and Path(file).name in {log.name for log in LOGS}:
            seen[Path(file).name] += 1
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting)
    monkeypatch.setattr(builtins, "open", counting)
    monkeypatch.setattr(nccl_fit, "des_time", closed_form)
    return seen


@pytest.mark.slow
def test_hardware_fit_reads_each_log_once(openings, tmp_path):
    done = collsim_in_process("hardware", "fit", *map(str, LOGS), "--hardware", "hgx-h100-nvls", "--stride", "4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "fitted:" in done.stdout
    assert openings == {log.name: 1 for log in LOGS}, dict(openings)


def test_validate_nccl_tests_reads_each_log_once(openings, tmp_path):
    arguments = ["validate", "nccl-tests", *map(str, LOGS), "--hardware", "hgx-h100-nvls", "--stride", "4"]
    done = collsim_in_process(*arguments, "--out", str(tmp_path / "report"), "--plotlyjs", "cdn", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report" / "summary.json").exists()
    assert openings == {log.name: 1 for log in LOGS}, dict(openings)
