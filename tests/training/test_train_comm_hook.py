"""sim train --comm-hook: torch's DDP hooks on the data-parallel gradient buckets (sim.training.hooks)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.training.hooks import hook_allreduce_calls
from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.cli import train

H, TP, LAYERS_PER_STAGE = 64, 2, 2
BASE = {"layers": 4, "hidden": H, "heads": 2, "seq_len": 16, "micro_batch": 2, "global_batch": 8, "tp": TP, "pp": 2, "dp": 2,
        "precision": "fp32", "bucket_mb": 1e6}  # fmt: skip
# one layer's tensors on a GPU: the norms' share, QKV and the MLP's first matrix by rows, the rest by columns
LAYER = [(4 * H // TP,), (3 * H // TP, H), (H, H // TP), (4 * H // TP, H), (H, 4 * H // TP)]


def _dp_bytes(**extra) -> float:
    result = simulate(TrainScenario.from_dict({**BASE, **extra}), events=True)
    return sum(row["nbytes"] for row in result.events if row["stream"] == "dp" and row["rank"] == 0)


def test_fp16_hook_sends_half_the_fp32_gradient_bytes():
    plain = _dp_bytes()
    assert plain == 4 * LAYERS_PER_STAGE * sum(n * (m[0] if m else 1) for n, *m in LAYER)
    assert _dp_bytes(comm_hook="fp16") == plain / 2
    assert _dp_bytes(comm_hook="bf16") == plain / 2


def test_powersgd_sends_the_hook_functions_bytes_and_plain_all_reduce_in_its_warm_up():
    expected = sum(call.nbytes for call in hook_allreduce_calls(LAYER * LAYERS_PER_STAGE, _hook(4), element_bytes=4))
    assert _dp_bytes(comm_hook="powersgd", powersgd_rank=4) == expected < _dp_bytes()
    assert _dp_bytes(comm_hook="powersgd", powersgd_rank=4, powersgd_warmup=10, iteration=3) == _dp_bytes()


def _hook(rank: int):
    from sim.training.hooks import CommHook

    return CommHook("powersgd", rank)


def test_fewer_dp_bytes_never_slow_the_step():
    steps = [simulate(TrainScenario.from_dict({**BASE, **extra})).step_time_s for extra in ({}, {"comm_hook": "fp16"})]
    assert steps[1] <= steps[0]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--comm-hook", "powersgd"], "powersgd_rank: comm_hook powersgd needs the approximation rank"),
        (["--comm-hook", "fp16", "--powersgd-rank", "4"], "powersgd_rank: only with comm_hook powersgd"),
        (["--comm-hook", "fp16", "--zero", "1"], "comm_hook: torch's DDP hooks wrap the gradient all-reduce; needs --zero 0"),
        (["--iteration", "3"], "iteration: only changes --comm-hook powersgd's warm-up"),
        (["--comm-hook", "powersgd", "--powersgd-rank", "0"], "powersgd_rank: must be between 1 and 1e+06, got 0"),
    ],
)
def test_bad_hook_settings_are_refused_with_one_message(args, message):
    flags = ["--layers", "4", "--hidden", "64", "--heads", "2", "--seq-len", "16", "--global-batch", "8", "--dp", "2"]
    result = CliRunner().invoke(train, [*flags, *args])
    assert result.exit_code != 0
    assert message in str(result.exception) + result.output
