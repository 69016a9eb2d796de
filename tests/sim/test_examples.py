"""The runnable examples in docs/examples produce their committed expected output."""

import subprocess
import sys
from pathlib import Path

import pytest

from ..cli_in_process import collsim_in_process

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.mark.parametrize("scenario", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_scenario_examples(scenario):
    path = EXAMPLES / scenario
    expected = path.with_name(path.stem + ".expected.txt").read_text()
    result = collsim_in_process("sim", "collective", "--scenario", str(path), cwd=Path.cwd())  # no Python start-up needed
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


def test_step_tables_are_current():
    result = subprocess.run([sys.executable, str(EXAMPLES / "step_tables.py")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (EXAMPLES / "step_tables.expected.md").read_text()
