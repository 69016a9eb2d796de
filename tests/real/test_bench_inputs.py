"""real bench refuses bad inputs before it starts anything (no progress bar, no launch)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli import cli as main


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--launches", "0"], "--launches: must be >= 1, got 0"),
        (["--sizes", "1"], "give multiples of 4 B, such as 4\n"),
        (["--sizes", "5"], "such as 4 or 8"),
    ],
)
def test_bench_refuses_before_starting(args, message):
    result = CliRunner().invoke(main, ["real", "bench", "--ranks", "2", "--no-db", *args])
    assert result.exit_code == 2 and message in result.output and "bench:" not in result.output, result.output


def test_a_model_file_given_as_preset_points_to_params(tmp_path):
    path = tmp_path / "model.yaml"
    path.write_text("params: []\n")
    result = CliRunner().invoke(main, ["sim", "ddp", "--preset", str(path), "--backward-time", "1ms", "--o", "1us", "--w", "1GB/s"])
    assert result.exit_code == 2 and "a parameter list file goes in --params FILE" in result.output, result.output
