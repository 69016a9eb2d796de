"""collsim sim train --chakra PREFIX: every rank's step as Chakra traces, read back row for row."""

from __future__ import annotations

from collections import Counter

import pytest
from click.testing import CliRunner

from sim.chakra import read_traces
from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.cli import train
from sim.training.parallel.trace import trace_rows

SMALL = ["--layers", "4", "--hidden", "64", "--heads", "2", "--seq-len", "16", "--micro-batch", "2", "--global-batch", "8"]
LAYOUT = ["--tp", "2", "--pp", "2", "--dp", "2"]
B, S, H, ELEMENT = 2, 16, 64, 2  # bf16


def _scenario() -> TrainScenario:
    return TrainScenario.from_dict({"layers": 4, "hidden": 64, "heads": 2, "seq_len": 16, "micro_batch": 2, "global_batch": 8,
                                    "tp": 2, "pp": 2, "dp": 2})  # fmt: skip


def _key(row: dict) -> tuple:
    return (
        row["rank"],
        row["stream"],
        row["kind"],
        row["name"],
        round(row["start_s"] * 1e6),
        int(row["bytes"]),
        row["peer"],
        tuple(row["group"]),
    )


def test_chakra_traces_read_back_as_every_ranks_rows(tmp_path):
    prefix = tmp_path / "step"
    result = CliRunner().invoke(train, [*SMALL, *LAYOUT, "--chakra", str(prefix)])
    assert result.exit_code == 0, result.output
    expected = trace_rows(simulate(_scenario(), events=True))
    back = read_traces(prefix)
    assert sorted({row["rank"] for row in back}) == list(range(8))
    assert Counter(map(_key, back)) == Counter(map(_key, expected))


def test_chakra_comm_sizes_follow_the_byte_formulas(tmp_path):
    prefix = tmp_path / "step"
    CliRunner().invoke(train, [*SMALL, *LAYOUT, "--chakra", str(prefix)])
    rows = read_traces(prefix)
    tp = {row["bytes"] for row in rows if row["stream"] == "tp"}
    pp = {row["bytes"] for row in rows if row["stream"] == "pp"}
    assert tp == {B * S * H * ELEMENT} and pp == {B * S * H * ELEMENT // 2}  # b s h elements; sends 1/tp of them (scatter/gather)
    for rank in range(8):  # a stage's 2 layers' gradients (12 h^2 + 4 h each) over tp, reduced over dp
        dp = sum(row["bytes"] for row in rows if row["stream"] == "dp" and row["rank"] == rank)
        assert dp == 2 * (12 * H * H + 4 * H) // 2 * ELEMENT
    # 2 micro-batches (8 / (2 x dp 2)) x 2 layers x (2 forward + 2 backward all-reduces) a rank
    assert Counter(row["rank"] for row in rows if row["stream"] == "tp") == {rank: 16 for rank in range(8)}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--chakra", ""], "--chakra: empty prefix"),
        (["--chakra", "/no/such/folder/x"], "folder '/no/such/folder' does not exist"),
        (["--chakra", "x", "--sweep"], "not with --sweep"),
        (["--dp", "8192", "--nodes", "1024", "--global-batch", "16384", "--chakra", "x"], "8192 ranks; traces are written for up to 4096"),
    ],
)
def test_chakra_bad_prefix_or_too_many_ranks_refused_with_one_message(args, message):
    result = CliRunner().invoke(train, [*SMALL[:-2], *args, *(["--global-batch", "8"] if "--global-batch" not in args else [])])
    assert result.exit_code != 0 and message in str(result.exception or result.output)
