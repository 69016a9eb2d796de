"""The sim's communication-hook byte counts equal what torch's own hooks pass to all_reduce
(2 gloo ranks on CPU, a small CNN whose tensors cover PowerSGD's compressed and uncompressed cases)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

pytestmark = [pytest.mark.torch, pytest.mark.slow]


# Every run of this module, measured in one launch (one start-up of the ranks, not six): a fresh
# model, hook and seed each, so each run's rows are what a launch of its own would report.
SEVERAL_BUCKETS = {rank: {"name": "powersgd", "powersgd_rank": rank, "start_iter": 2} for rank in (1, 2)}
ONE_BUCKET = [{"name": "fp16"}, {"name": "bf16"}, {"name": "none"}, {"name": "powersgd", "powersgd_rank": 2, "start_iter": 2}]
# 20 KB buckets: the probe's 47 KB in several
RUNS = [{"hook": hook, "steps": 4, "bucket_cap_mb": 0.02} for hook in SEVERAL_BUCKETS.values()]
RUNS += [{"hook": hook, "steps": 3, "bucket_cap_mb": 25} for hook in ONE_BUCKET]


@pytest.fixture(scope="module")
def measured() -> list[list[dict]]:
    """Per entry of RUNS, the rows rank 0 reported for it."""
    from real.ddp_hooks import hook_bytes_worker
    from real.launcher import LaunchConfig, launch

    rows = launch(hook_bytes_worker, {"runs": RUNS}, LaunchConfig(2, timeout_s=240))
    by_run = [[row for row in rows if row["run"] == index] for index in range(len(RUNS))]
    for run, run_rows in zip(RUNS, by_run):
        assert [row["step"] for row in run_rows] == list(range(run["steps"])), run
    return by_run


def _rows_of(measured: list[list[dict]], hook: dict, steps: int) -> list[dict]:
    (index,) = [index for index, run in enumerate(RUNS) if run["hook"] == hook and run["steps"] == steps]
    return measured[index]


def _sim_bytes(buckets: list, hook: dict, step: int) -> list[int]:
    from sim.training.hooks import CommHook, hook_allreduce_calls

    return [call.nbytes for shapes in buckets for call in hook_allreduce_calls(shapes, CommHook(**hook), step)]


@pytest.mark.parametrize("rank", [1, 2])
def test_powersgd_bytes_per_bucket_equal_torchs_through_the_warm_up(measured, rank):
    hook = SEVERAL_BUCKETS[rank]
    rows = _rows_of(measured, hook, steps=4)
    assert len(rows[-1]["buckets"]) > 1  # DDP's first step runs one 1 MiB bucket, the rebuilt ones several
    for row in rows:
        assert sorted(row["all_reduce_bytes"]) == sorted(_sim_bytes(row["buckets"], hook, row["step"])), row
    warm, compressed = rows[0], rows[-1]
    assert len(warm["all_reduce_bytes"]) == len(warm["buckets"])  # plain all-reduce before start_powerSGD_iter
    assert len(compressed["all_reduce_bytes"]) == 3 * len(compressed["buckets"])
    assert sum(compressed["all_reduce_bytes"]) < sum(warm["all_reduce_bytes"]) / 4


def test_sim_ddp_plan_of_the_probe_sends_what_torch_sends(measured):
    """One bucket (the default cap): the DDP step's planned all-reduces, from the probe's own
    parameter list, are the all-reduces torch's hooks issued."""
    from real.ddp import export_params
    from real.ddp_hooks import HookProbe
    from sim.training.ddp import DDPScenario, plan_calls, prepare

    params = export_params(HookProbe())
    for hook in ONE_BUCKET:
        row = _rows_of(measured, hook, steps=3)[-1]
        scenario = DDPScenario(
            params=tuple(_param(entry) for entry in params), backward_time_s=0.01, w_Bps=1e9, comm_hook=hook["name"],
            powersgd_rank=hook.get("powersgd_rank"), powersgd_warmup=hook.get("start_iter", 1000), iteration=2,
        )  # fmt: skip
        sent = [part.nbytes for call in plan_calls(scenario, prepare(scenario)) for part in call.parts]
        assert sorted(sent) == sorted(row["all_reduce_bytes"]), hook


def _param(entry: dict):
    from sim.training.params import param_from_dict

    return param_from_dict(entry, 0)
