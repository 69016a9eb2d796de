"""The DDP examples in docs/examples print their committed expected output."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.mark.parametrize(
    "script, expected", [("ddp_commands.py", "ddp_commands.expected.txt"), ("ddp_formula_vs_sim.py", "ddp_formula_vs_sim.expected.md")]
)
def test_example_output_is_current(script, expected):
    result = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (EXAMPLES / expected).read_text()


def test_scenario_files_load():
    from sim.training.ddp import DDPScenario

    for path in sorted((EXAMPLES / "ddp_scenarios").glob("*.yaml")):
        assert DDPScenario.load(path).to_dict()
