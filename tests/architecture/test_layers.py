"""The package layers as docs/architecture.md draws them, checked on the code itself."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("sim", "real", "webapp")


def _modules():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def test_import_linter_contracts_hold():
    """webapp -> real -> sim, and sim free of torch/dash/plotly, as pyproject's [tool.importlinter] says."""
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    done = subprocess.run([lint, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "broken" in done.stdout and " 0 broken" in done.stdout


def test_no_module_replaces_itself_in_sys_modules():
    """Alias modules that swap themselves into sys.modules race when two threads import them."""
    offenders = [str(path.relative_to(ROOT)) for path in _modules() if "sys.modules[" in path.read_text()]
    assert offenders == []


@pytest.mark.parametrize(
    "package", ["sim", "sim.network", "sim.algorithms", "sim.nccl", "sim.collective", "sim.training", "sim.hardware", "real", "webapp"]
)
def test_every_package_declares_its_public_api(package):
    init = ROOT / package.replace(".", "/") / "__init__.py"
    tree = ast.parse(init.read_text())
    names = [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)]
    assert "__all__" in names, f"{package}/__init__.py has no __all__"


@pytest.mark.parametrize("package", ["sim", "sim.nccl", "sim.collective", "sim.hardware", "real", "webapp"])
def test_every_name_a_package_offers_imports(package):
    """``from webapp import *`` raised: its ``__all__`` named a module that no longer exists."""
    code = f"from {package} import *"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
