"""`collsim validate` checks its flags without torch: its plan check read the model's name off
real.models, which imports torch (seconds), so a refusal after it (a bad --out or --db) paid that
import first. The name comes from real.model_names now; torch is imported only where a run needs it."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from real.model_names import MODEL_NAMES
from real.validate import check_plan, make_plan
from sim.errors import CollsimError


def _imports(*arguments: str, cwd) -> tuple[subprocess.CompletedProcess, set[str]]:
    """A ``collsim`` process with ``-X importtime``: its result and the top-level packages it imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "sim.cli", *arguments], capture_output=True, text=True, timeout=300,
                          cwd=cwd)  # fmt: skip
    names = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in done.stderr.splitlines() if line.startswith("import time:")}
    return done, names


@pytest.mark.slow
def test_the_plan_check_imports_no_torch():
    code = (
        "import sys\n"
        "from real.validate import check_plan, make_plan\n"
        "check_plan(make_plan('gloo', [2], True))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_a_refusal_after_the_plan_check_imports_no_torch(tmp_path):
    done, imported = _imports("validate", "--out", str(tmp_path / "out"), "--db", str(tmp_path / "missing" / "x.sqlite"), cwd=tmp_path)
    assert done.returncode == 2
    assert "error: --db: cannot write" in done.stderr and "Traceback" not in done.stderr
    assert "real" in imported and "torch" not in imported
    done, imported = _imports("validate", "--help", cwd=tmp_path)
    assert done.returncode == 0 and "nccl-tests" in done.stdout
    assert "torch" not in imported


def test_an_unknown_model_is_still_refused_naming_the_built_in_ones():
    with pytest.raises(CollsimError, match=r"--model: unknown 'gpt9'; built-in models: mlp, small"):
        check_plan(replace(make_plan("gloo", [2], True), model="gpt9"))


@pytest.mark.slow
def test_the_names_are_the_built_in_models():
    from real.models import MODELS

    assert tuple(MODELS) == MODEL_NAMES


@pytest.mark.slow
@pytest.mark.parametrize("command", ["ddp", "fsdp"])
def test_real_ddp_and_fsdp_refuse_an_unknown_model_before_importing_torch(command, tmp_path):
    """The same for `collsim real ddp` / `real fsdp`: an unknown --model was refused only after
    real.ddp_bench / real.fsdp had imported torch (about 3 s)."""
    done, imported = _imports("real", command, "--model", "gpt9", cwd=tmp_path)
    assert done.returncode == 2
    assert "error: --model: unknown 'gpt9'; built-in models: mlp, small" in done.stderr and "Traceback" not in done.stderr
    assert "torch" not in imported
