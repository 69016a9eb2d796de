"""`collsim real ddp --strategies torch --comm-hook ...`: torch's own DistributedDataParallel with
torch's hooks on 2 gloo ranks; the bytes every bucket's all-reduces sent equal the sim's for the
same hook, and `collsim compare` (kind: ddp) puts the simulated step beside the measured one."""

from __future__ import annotations

import json
import math

import pytest

from ..cli_in_process import collsim_in_process

pytest.importorskip("torch")

pytestmark = [pytest.mark.torch]


def _no_launch(*_args, **_kwargs):
    raise AssertionError("a rank was started for input that should have been refused")


@pytest.mark.parametrize(
    ("configs", "hook", "warmup_rounds", "words"),
    [
        ([("bucketed", 8192)], {"name": "fp16"}, 2, "add torch to --strategies"),
        ([("torch", 8192)], {"name": "powersgd", "powersgd_rank": 1, "start_iter": 2}, 2, "needs one bucket"),
        ([("torch", 1 << 20)], {"name": "powersgd", "powersgd_rank": 1}, 2, "--powersgd-warmup 1000 (the default)"),
        ([("torch", 1 << 20)], {"name": "powersgd", "powersgd_rank": 1, "start_iter": 3}, 2, "--warmup-rounds >= 3"),
        ([("torch", 1 << 20)], {"name": "powersgd"}, 2, "--powersgd-rank"),
        ([("torch", 1 << 20)], {"name": "fp16", "powersgd_rank": 2}, 2, "only with comm_hook powersgd"),
        ([("torch", 1 << 20)], {"name": "int8"}, 2, "allowed: none, fp16, bf16, powersgd"),
    ],
)
def test_a_hook_the_run_cannot_measure_is_refused_before_any_rank_starts(configs, hook, warmup_rounds, words):
    from real.ddp_bench import run_ddp_bench
    from real.launcher import LaunchConfig
    from sim.errors import CollsimError

    with pytest.raises(CollsimError, match=words.replace("(", r"\(").replace(")", r"\)")):
        run_ddp_bench("mlp", configs, LaunchConfig(2), {}, 1, warmup_rounds, launcher=_no_launch, comm_hook=hook)


def test_powersgd_with_several_buckets_on_gloo_is_refused_by_the_cli_naming_the_cause(tmp_path):
    done = collsim_in_process(
        "real", "ddp", "--model", "mlp", "--strategies", "torch", "--bucket-sizes", "8KiB", "--no-db",
        "--comm-hook", "powersgd", "--powersgd-rank", "1", "--powersgd-warmup", "2", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "error: --comm-hook powersgd on gloo needs one bucket" in done.stderr and "collective mismatch" in done.stderr


def test_config_names_carry_the_hook():
    from real.ddp_bench import config_name

    assert config_name("torch", 8192) == "torch:8KiB"
    assert config_name("torch", 8192, {"name": "fp16"}) == "torch:8KiB:fp16"
    assert config_name("torch", 32768, {"name": "powersgd", "powersgd_rank": 1, "start_iter": 2}) == "torch:32KiB:powersgd-r1"
    assert config_name("bucketed", 8192, {"name": "fp16"}) == "bucketed:8KiB"


def _measure(tmp_path, *options: str) -> str:
    db = tmp_path / "hooks.sqlite"
    done = collsim_in_process(  # ranks from this process's fork server: no CLI start-up, no torch import
        "real", "ddp", "--model", "mlp", "--strategies", "torch", "--rounds", "3", "--warmup-rounds", "2",
        "--db", str(db), "--timeout", "200", *options, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return str(db)


def _compare(db: str, tmp_path) -> dict:
    from real.compare import compare_file
    from real.store import open_store

    spec = tmp_path / "compare.yaml"
    spec.write_text("kind: ddp\nmodel: mlp\nranks: 2\no: 100us\nw: 1GB/s\n")
    return compare_file(str(spec), open_store(db))


def _sim_bytes(store, config: str, hook: dict) -> list[list[int]]:
    """What the sim's hook sends for the buckets torch formed (their parameters' shapes)."""
    from sim.training.hooks import CommHook, hook_allreduce_calls

    profile = store.ddp_profiles(config=config)[-1]["profile"]
    shapes = {entry["name"]: entry["shape"] for entry in profile["params"]}
    return [
        [call.nbytes for call in hook_allreduce_calls([shapes[name] for name in bucket["params"]], CommHook(**hook), profile["iteration"])]
        for bucket in profile["buckets"]
    ]


@pytest.mark.slow
def test_fp16_hook_on_torch_ddp_sends_the_sims_bytes_per_bucket_and_is_compared(tmp_path):
    from real.store import open_store

    db = _measure(tmp_path, "--bucket-sizes", "8KiB", "--comm-hook", "fp16")
    store = open_store(db)
    profile = store.ddp_profiles(config="torch:8KiB:fp16")[-1]["profile"]
    assert profile["comm_hook"] == {"name": "fp16"} and profile["bucket_cap_bytes"] == 8192 and profile["iteration"] >= 2
    measured = [bucket["all_reduce_bytes"] for bucket in profile["buckets"]]
    assert len(measured) == 2 and measured == _sim_bytes(store, "torch:8KiB:fp16", {"name": "fp16"})
    numel = sum(math.prod(entry["shape"]) for entry in profile["params"])
    assert sum(map(sum, measured)) == 2 * numel  # 2 bytes an element: half of the float32 gradients
    steps = store.ddp_steps(config="torch:8KiB:fp16")
    assert len(steps) == 3 and all(step["comm_bytes"] == 2 * numel and step["comm_calls"] == 2 for step in steps)
    point = _compare(db, tmp_path)["points"][0]
    assert point["config"] == "torch:8KiB:fp16" and point["comm_hook"] == {"name": "fp16"}
    assert point["bytes"] == {"measured": measured, "simulated": measured, "equal": True}
    assert point["measured_slowdown"] is None and point["simulated_with_slowdown_s"] == point["simulated_s"]  # backward holds the sync
    assert point["simulated_s"] > 0 and point["spread_low_s"] <= point["measured_s"] <= point["spread_high_s"]


@pytest.mark.slow
def test_powersgd_on_one_bucket_sends_the_sims_compressed_bytes_and_is_compared(tmp_path):
    from real.compare import format_report
    from real.store import open_store

    hook = {"name": "powersgd", "powersgd_rank": 1, "start_iter": 2}
    db = _measure(tmp_path, "--bucket-sizes", "32KiB", "--comm-hook", "powersgd", "--powersgd-rank", "1", "--powersgd-warmup", "2")
    store = open_store(db)
    config = "torch:32KiB:powersgd-r1"
    profile = store.ddp_profiles(config=config)[-1]["profile"]
    measured = [bucket["all_reduce_bytes"] for bucket in profile["buckets"]]
    assert len(measured) == 1 and len(measured[0]) == 3  # uncompressed, P, Q: every measured step is compressed
    assert measured == _sim_bytes(store, config, hook)
    assert sum(measured[0]) < sum(entry["numel"] * 4 for entry in profile["params"]) / 10
    report = _compare(db, tmp_path)
    point = report["points"][0]
    assert point["comm_hook"] == hook and point["bytes"]["equal"] and point["bytes"]["simulated"] == measured
    text = format_report(report)
    assert f"# bytes per all-reduce, by bucket, {config} (hook powersgd): measured {' + '.join(map(str, measured[0]))}; equal" in text
    assert json.dumps(report)  # the report stays plain data


@pytest.mark.slow
def test_torch_strategy_without_a_hook_trains_like_one_process():
    from real.ddp_bench import check_equality
    from real.launcher import LaunchConfig

    rows = check_equality(LaunchConfig(2, timeout_s=200), "mlp", [("torch", 8192)])
    assert rows[0]["allclose"] and rows[0]["reference_moved"] > 100 * rows[0]["max_abs_diff"]
    assert rows[0]["calls_per_step"] == 2  # one all-reduce per bucket: the 8 KiB cap makes two
