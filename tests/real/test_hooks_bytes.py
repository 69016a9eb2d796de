"""The sim's communication-hook byte counts equal what torch's own hooks pass to all_reduce
(2 gloo ranks on CPU, a small CNN whose tensors cover PowerSGD's compressed and uncompressed cases)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def _measure(hook: dict, steps: int, bucket_cap_mb: float = 25) -> list[dict]:
    from real.ddp_hooks import hook_bytes_worker
    from real.launcher import LaunchConfig, launch

    payload = {"hook": hook, "steps": steps, "bucket_cap_mb": bucket_cap_mb}
    rows = launch(hook_bytes_worker, payload, LaunchConfig(2, timeout_s=240))
    assert [row["step"] for row in rows] == list(range(steps))
    return rows


def _sim_bytes(buckets: list, hook: dict, step: int) -> list[int]:
    from sim.training.hooks import CommHook, hook_allreduce_calls

    return [call.nbytes for shapes in buckets for call in hook_allreduce_calls(shapes, CommHook(**hook), step)]


@pytest.mark.parametrize("rank", [1, 2])
def test_powersgd_bytes_per_bucket_equal_torchs_through_the_warm_up(rank):
    hook = {"name": "powersgd", "powersgd_rank": rank, "start_iter": 2}
    rows = _measure(hook, steps=4, bucket_cap_mb=0.02)  # 20 KB buckets: the probe's 47 KB in several
    assert len(rows[-1]["buckets"]) > 1  # DDP's first step runs one 1 MiB bucket, the rebuilt ones several
    for row in rows:
        assert sorted(row["all_reduce_bytes"]) == sorted(_sim_bytes(row["buckets"], hook, row["step"])), row
    warm, compressed = rows[0], rows[-1]
    assert len(warm["all_reduce_bytes"]) == len(warm["buckets"])  # plain all-reduce before start_powerSGD_iter
    assert len(compressed["all_reduce_bytes"]) == 3 * len(compressed["buckets"])
    assert sum(compressed["all_reduce_bytes"]) < sum(warm["all_reduce_bytes"]) / 4


def test_sim_ddp_plan_of_the_probe_sends_what_torch_sends():
    """One bucket (the default cap): the DDP step's planned all-reduces, from the probe's own
    parameter list, are the all-reduces torch's hooks issued."""
    from real.ddp import export_params
    from real.ddp_hooks import HookProbe
    from sim.training.ddp import DDPScenario, plan_calls, prepare

    params = export_params(HookProbe())
    for hook in ({"name": "fp16"}, {"name": "bf16"}, {"name": "none"}, {"name": "powersgd", "powersgd_rank": 2, "start_iter": 2}):
        row = _measure(hook, steps=3)[-1]
        scenario = DDPScenario(
            params=tuple(_param(entry) for entry in params), backward_time_s=0.01, w_Bps=1e9, comm_hook=hook["name"],
            powersgd_rank=hook.get("powersgd_rank"), powersgd_warmup=hook.get("start_iter", 1000), iteration=2,
        )  # fmt: skip
        sent = [part.nbytes for call in plan_calls(scenario, prepare(scenario)) for part in call.parts]
        assert sorted(sent) == sorted(row["all_reduce_bytes"]), hook


def _param(entry: dict):
    from sim.training.params import param_from_dict

    return param_from_dict(entry, 0)
