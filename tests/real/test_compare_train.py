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

CONFIG = TrainConfig(tp=2, pp=1, dp=1, layers=2, hidden=16, heads=2, seq_len=4, micro_batch=1, global_batch=2, steps=2, warmup=0)
TP_BYTES = CONFIG.micro_batch * CONFIG.seq_len * CONFIG.hidden * 4  # one fp32 activation


def _tp_row(rank: int, step: int, index: int) -> dict:
    start = index * 1e-3
    return dict(rank=rank, stream="tp", kind="all_reduce", name=f"op{index}", start_s=start, end_s=start + 5e-4, bytes=TP_BYTES,
                peer=-1, group=[0, 1], step=step, micro_batch=0)  # fmt: skip


def _fake_rank(rank: int) -> dict:
    """A rank's fake timeline: per step four TP all-reduces of 0.5 ms; layers 1 ms forward, 2 ms backward."""
    rows = [_tp_row(rank, step, index) for step in (0, 1) for index in range(4)]
    forward, backward = {layer: 1e-3 for layer in (0, 1)}, {layer: 2e-3 for layer in (0, 1)}
    return dict(rank=rank, step_s=[0.02, 0.03], rows=rows, layer_forward_s=forward, layer_backward_s=backward)


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "train.json"
    path.write_text(json.dumps(profile(CONFIG, [_fake_rank(0), _fake_rank(1)]), indent=1))  # as real train --out writes it
    return path


def _run(*args: str):
    return CliRunner().invoke(cli, ["compare", "train", *args])


def test_compare_train_prints_measured_and_simulated_steps_of_a_saved_profile(saved):
    result = _run(str(saved))
    assert result.exit_code == 0, result.output
    assert "measured step: median 25 ms (min 20 ms, max 30 ms, spread 40%)" in result.output
    assert "simulated step: 20 ms" in result.output  # 2 micro-batches x (2 + 4 + 8 all-reduces x 0.5) ms


def test_compare_train_json_is_real_train_compares_answer(saved):
    result = _run(str(saved), "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    expected = compare(json.loads(saved.read_text()), simulate_train)
    assert shown["simulated_step_s"] == pytest.approx(expected["simulated_step_s"]) == pytest.approx(0.020)
    assert shown["measured_step_s"] == pytest.approx(0.025) and len(shown["streams"]) == len(expected["streams"])


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
