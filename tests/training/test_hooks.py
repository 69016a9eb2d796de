"""DDP communication hooks in the sim: torch's byte counts on every model preset, the warm-up,
the step they shorten, and bad input."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.errors import CollsimError
from sim.training.ddp import DDPScenario, plan_calls, prepare
from sim.training.hooks import CommHook, hook_allreduce_calls
from sim.training.params import PRESETS

OW = {"backward_time_s": 0.1, "w_Bps": 10e9}


def _calls(**fields):
    scenario = DDPScenario(**{**OW, **fields})
    return plan_calls(scenario, prepare(scenario))


def test_powersgd_splits_a_bucket_by_torchs_rule_by_hand():
    # 64 x 128 compresses at r = 2 ((64 + 128) 2 x 2 = 768 < 8192); a bias never does; 4 x 64 at
    # r = 2 does not ((4 + 64) 2 x 2 = 272 >= 256) and at r = 1 does (136 < 256)
    shapes = [(64, 128), (64,), (4, 64)]
    assert [(c.nbytes, c.label) for c in hook_allreduce_calls(shapes, CommHook("powersgd", 2))] == [
        ((64 + 256) * 4, "powersgd uncompressed"),
        (64 * 2 * 4, "powersgd P"),
        (128 * 2 * 4, "powersgd Q"),
    ]
    assert [c.nbytes for c in hook_allreduce_calls(shapes, CommHook("powersgd", 1))] == [64 * 4, (64 + 4) * 4, (128 + 64) * 4]


@pytest.mark.slow  # imports torch (4 s) once
@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_sends_torchs_powersgd_and_fp16_bytes(name):
    """Per bucket of the DDP plan: P, Q and the uncompressed rest as torch's own rule decides
    (``_should_compress`` on ``tensor.view(shape[0], -1)``, shapes on the meta device)."""
    torch = pytest.importorskip("torch")
    from torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import _should_compress

    plain, half, compressed = (
        _calls(preset=name, **hook) for hook in ({}, {"comm_hook": "fp16"}, {"comm_hook": "powersgd", "powersgd_rank": 4})
    )
    params = prepare(DDPScenario(preset=name, **OW)).params
    for plain_call, half_call, call in zip(plain, half, compressed):
        assert [p.nbytes for p in plain_call.parts] == [plain_call.nbytes]
        assert [p.nbytes for p in half_call.parts] == [plain_call.nbytes // 2]
        expected = [0, 0, 0]
        for index in call.params:
            n, m = torch.empty(params[index].shape or (params[index].numel,), device="meta").view(params[index].shape[0], -1).shape
            rank = min(n, m, 4)
            if _should_compress(n, m, rank, 2)[0]:
                expected[1], expected[2] = expected[1] + n * rank * 4, expected[2] + m * rank * 4
            else:
                expected[0] += n * m * 4
        assert [p.nbytes for p in call.parts] == expected, call.name
    assert sum(c.wire_nbytes for c in compressed) < sum(c.wire_nbytes for c in plain) / 10  # the hook's point, on every preset


def test_powersgd_warm_up_runs_plain_all_reduces_until_start_iter():
    hook = CommHook("powersgd", 4, start_iter=10)
    shapes = [(768, 768), (768,)]
    assert [c.nbytes for c in hook.calls(shapes, iteration=9)] == [(768 * 768 + 768) * 4]
    assert len(hook.calls(shapes, iteration=10)) == 3
    warm = DDPScenario(preset="gpt2", comm_hook="powersgd", powersgd_rank=4, powersgd_warmup=10, iteration=9, **OW)
    from sim.training.ddp import run_ddp

    assert run_ddp(warm).step_time_s == run_ddp(DDPScenario(preset="gpt2", **OW)).step_time_s


def test_compression_shortens_a_bandwidth_bound_step():
    from sim.training.ddp import run_ddp

    slow = {"preset": "gpt2", "backward_time_s": 0.01, "w_Bps": 1e9}
    results = {
        hook: run_ddp(DDPScenario(**slow, comm_hook=hook, powersgd_rank=4 if hook == "powersgd" else None))
        for hook in ("none", "fp16", "powersgd")
    }
    times = {hook: result.step_time_s for hook, result in results.items()}
    assert times["powersgd"] < times["fp16"] < times["none"]
    # fp16 halves every all-reduce: with o = 0 the comm stream is busy half as long
    assert math.isclose(results["fp16"].comm_busy_s, results["none"].comm_busy_s / 2, rel_tol=1e-9)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"comm_hook": "powersgd"}, "powersgd_rank: comm_hook powersgd needs the approximation rank"),
        ({"comm_hook": "powersgd", "powersgd_rank": 0}, "powersgd_rank: must be a whole number >= 1"),
        ({"comm_hook": "fp16", "powersgd_rank": 2}, "powersgd_rank: only with comm_hook powersgd"),
        ({"comm_hook": "topk"}, "comm_hook: unknown 'topk'; allowed: none, fp16, bf16, powersgd"),
        ({"comm_hook": "powersgd", "powersgd_rank": 2, "powersgd_warmup": 1}, "start_powerSGD_iter > 1"),
        ({"iteration": -1}, "iteration: must be a whole number >= 0"),
        ({"comm_hook": "fp16", "strategy": "overlap"}, "comm_hook: torch's hooks run on DDP's buckets; use strategy bucketed"),
    ],
)
def test_bad_hook_settings_are_refused_by_name(fields, message):
    with pytest.raises(CollsimError, match=message.replace("(", r"\(").replace(">", ">")):
        DDPScenario.from_dict({"preset": "small", "backward_time": "10ms", "w": "10GB/s", **fields})


def test_cli_names_the_bad_hook_flag_in_one_line():
    base = ["sim", "ddp", "--preset", "small", "--backward-time", "10ms", "--w", "10GB/s"]
    unknown = CliRunner().invoke(cli, [*base, "--comm-hook", "topk"])
    assert unknown.exit_code != 0 and "--comm-hook" in unknown.output and "powersgd" in unknown.output
    missing = CliRunner().invoke(cli, [*base, "--comm-hook", "powersgd"])
    assert missing.exit_code != 0 and "Traceback" not in missing.output
    assert "--powersgd-rank" in missing.output
    done = CliRunner().invoke(cli, [*base, "--comm-hook", "powersgd", "--powersgd-rank", "2"])
    assert done.exit_code == 0 and "comm hook        powersgd: " in done.output


def test_the_closed_form_counts_the_hooks_all_reduces_not_the_gradients():
    from sim.training.ddp import run_ddp

    result = run_ddp(DDPScenario(preset="gpt2", comm_hook="powersgd", powersgd_rank=4, **OW))
    sizes = [part.nbytes for call in result.calls for part in call.parts]
    assert len(sizes) == 3 * len(result.calls)
    # o = 0: n_b o + s / (n_b w) with s the bytes sent and n_b the all-reduces issued
    expected = sum(sizes) / (len(sizes) * OW["w_Bps"])
    assert math.isclose(result.formula()["formula_simple_overhead_s"], expected, rel_tol=1e-12)


def test_the_step_trace_carries_the_bytes_the_hook_sends():
    from sim.training.ddp import run_ddp

    result = run_ddp(DDPScenario(preset="small", comm_hook="fp16", **OW))
    comm = [row for row in result.events() if row["kind"] == "comm"]
    assert [row["bytes"] for row in comm] == [call.nbytes // 2 for call in result.calls]
