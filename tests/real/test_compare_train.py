"""``collsim compare train PROFILE``: a saved ``collsim real train --out`` profile beside sim train
(the same comparison as ``real train --compare``), and one clear line for a wrong file or flag."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from real.train import TrainConfig, profile
from real.train_compare import compare
from real.train_sim import simulate_train
from sim.cli import cli

CONFIG = TrainConfig(tp=2, pp=1, dp=1, layers=2, hidden=32, heads=2, seq_len=8, micro_batch=2, global_batch=4, steps=2, warmup=0)
NBYTES = 2 * 8 * 32 * 4


def _report(rank: int) -> dict:
    """One rank of a fake timeline: two steps of four 1 ms TP all-reduces, measured layer times."""
    rows = [{"rank": rank, "stream": "tp", "kind": "all_reduce", "name": f"fwd mb0 L0.{half}", "start_s": 0.0, "end_s": 0.001,
             "bytes": NBYTES, "peer": -1, "group": [0, 1], "step": step, "micro_batch": 0}
            for step in range(2) for half in ("attn", "mlp")]  # fmt: skip
    return {"rank": rank, "step_s": [0.05, 0.06], "rows": rows, "layer_forward_s": {0: 0.002, 1: 0.002},
            "layer_backward_s": {0: 0.003, 1: 0.003}}  # fmt: skip


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "train.json"
    path.write_text(json.dumps(profile(CONFIG, [_report(0), _report(1)]), indent=1))  # as real train --out writes it
    return path


def _run(*args: str):
    return CliRunner().invoke(cli, ["compare", "train", *args])


def test_compare_train_prints_measured_and_simulated_steps_of_a_saved_profile(saved):
    result = _run(str(saved))
    assert result.exit_code == 0, result.output
    assert "measured step: median 55 ms (min 50 ms, max 60 ms, spread 18%)" in result.output
    assert "simulated step: 36 ms" in result.output  # 2 micro-batches x (4 + 6 + 8 x 1) ms


def test_compare_train_json_is_real_train_compares_answer(saved):
    result = _run(str(saved), "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    expected = compare(json.loads(saved.read_text()), simulate_train)
    assert shown["simulated_step_s"] == pytest.approx(expected["simulated_step_s"]) == pytest.approx(0.036)
    assert shown["measured_step_s"] == pytest.approx(0.055) and len(shown["streams"]) == len(expected["streams"])


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ({"kind": "fsdp"}, "expected a collsim-train-profile"),
        ({"kind": "collsim-train-profile", "config": {}}, "not a complete collsim-train-profile"),
        ("[1, 2]", "expected a mapping"),
        ("{not json", "not valid YAML/JSON"),
    ],
)
def test_a_wrong_profile_is_one_clear_line(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    result = _run(str(path))
    assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output


def test_compare_train_needs_a_profile_and_refuses_the_scenario_flags(saved, tmp_path):
    missing = _run()
    assert missing.exit_code == 2 and "collsim compare train PROFILE" in missing.output
    flag = _run(str(saved), "--run")
    assert flag.exit_code == 2 and "compare train: --run not allowed" in flag.output
    absent = _run(str(tmp_path / "none.json"))
    assert absent.exit_code == 2 and "none.json" in absent.output
