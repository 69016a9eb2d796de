"""Backward profiles: uniform by bytes, per-layer, FLOP-based, and measured files replayed."""

import json

import pytest

from sim.errors import CollsimError
from sim.training.compute import backward_flops
from sim.training.ddp import DDPScenario, run_ddp
from sim.training.params import Param, preset


def ready_by_name(result):
    return {param.name: t for param, t in zip(result.prepared.params, result.ready_s)}


def test_uniform_by_bytes_suffix_rule():
    sizes = (4000, 12000, 8000, 16000)
    result = run_ddp(DDPScenario(param_bytes=sizes, backward_time_s=0.04, forward_time_s=0.01, w_Bps=1e9))
    total = sum(sizes)
    for index, ready_s in enumerate(result.ready_s):
        assert ready_s == pytest.approx(0.01 + 0.04 * sum(sizes[index:]) / total, rel=1e-12)


def test_backward_rate_equals_backward_time():
    sizes = (4000, 12000, 8000)
    by_rate = run_ddp(DDPScenario(param_bytes=sizes, backward_rate_Bps=2e6, w_Bps=1e9))
    by_time = run_ddp(DDPScenario(param_bytes=sizes, backward_time_s=sum(sizes) / 2e6, w_Bps=1e9))
    assert by_rate.ready_s == pytest.approx(by_time.ready_s, rel=1e-12)


def test_layer_times_spread_over_a_layer_by_bytes():
    params = tuple(preset("cs336-tiny"))
    layer_times = (("token_embeddings", 1e-3), ("layers", 8e-3), ("layers.3", 2e-3), ("ln_final", 0.0), ("lm_head", 3e-3))
    result = run_ddp(DDPScenario(params=params, layer_times=layer_times, w_Bps=1e9))
    ready = ready_by_name(result)
    assert result.backward_end_s == pytest.approx(1e-3 + 8e-3 + 2e-3 + 3e-3, rel=1e-12)
    assert ready["lm_head.weight"] == pytest.approx(3e-3, rel=1e-12)
    assert ready["layers.3.attn.q_proj.weight"] == pytest.approx(3e-3 + 2e-3, rel=1e-12)  # layer 3 done after its 2 ms
    assert ready["layers.0.attn.q_proj.weight"] == pytest.approx(3e-3 + 2e-3 + 8e-3, rel=1e-12)  # layers 0-2 share 8 ms


def test_layer_times_must_cover_every_parameter():
    with pytest.raises(CollsimError, match="matches no layer prefix"):
        run_ddp(DDPScenario(preset="cs336-tiny", layer_times=(("layers", 1e-3),), w_Bps=1e9))


def test_flop_profile():
    params = (Param("embed.weight", (100, 8), 800), Param("fc.weight", (8, 8), 64), Param("head.weight", (100, 8), 800))
    result = run_ddp(DDPScenario(params=params, flops_per_s=1e9, tokens=512, w_Bps=1e9))
    flops = [backward_flops(p, 512) for p in params]
    assert flops == [512 * 8, 4 * 512 * 64, 4 * 512 * 800]
    assert result.ready_s[0] == pytest.approx(sum(flops) / 1e9, rel=1e-12)
    assert result.ready_s[2] == pytest.approx(flops[2] / 1e9, rel=1e-12)


def write_profile(path, param_list, ready_s, **overrides):
    data = {
        "kind": "collsim-ddp-profile",
        "params": [p.to_dict() for p in param_list],
        "forward_s": 0.002,
        "backward_s": 0.012,
        "optimizer_s": 0.001,
        "events": [
            {
                "rank": 0,
                "peer": -1,
                "resource": "compute:0",
                "kind": "grad_ready",
                "start_s": t,
                "end_s": t,
                "bytes": p.nbytes,
                "step": 0,
                "chunk": -1,
                "bucket": -1,
                "name": p.name,
            }
            for p, t in zip(param_list, ready_s)
        ],
    }
    data.update(overrides)
    path.write_text(json.dumps(data))
    return path


PARAMS = [Param(f"layer{i}.weight", (1000,), 1000) for i in range(4)]


def test_measured_profile_is_replayed(tmp_path):
    # out of reverse order: layer1 is ready before layer2 (e.g. a skip connection)
    ready = [0.011, 0.004, 0.007, 0.001]
    path = write_profile(tmp_path / "profile.json", PARAMS, ready)
    result = run_ddp(DDPScenario(profile_file=str(path), strategy="overlap", o_s=0.0, w_Bps=1e12))
    assert list(result.ready_s) == pytest.approx([0.002 + t for t in ready], rel=1e-12)
    assert result.backward_end_s == pytest.approx(0.002 + 0.012, rel=1e-12)  # tail after the last gradient
    assert result.step_time_s == pytest.approx(0.002 + 0.012 + 0.001, rel=1e-9)
    assert [b["params"][0] for b in result.buckets] == ["layer3.weight", "layer1.weight", "layer2.weight", "layer0.weight"]


def test_rebuild_fills_buckets_in_observed_order(tmp_path):
    ready = [0.011, 0.004, 0.007, 0.001]
    path = write_profile(tmp_path / "profile.json", PARAMS, ready)
    fields = {"profile_file": str(path), "bucket_cap_bytes": 8000, "first_bucket_bytes": None, "w_Bps": 1e9}
    static = run_ddp(DDPScenario(**fields))
    rebuilt = run_ddp(DDPScenario(**fields, rebuild=True))
    assert [b["params"] for b in static.buckets] == [["layer3.weight", "layer2.weight"], ["layer1.weight", "layer0.weight"]]
    assert [b["params"] for b in rebuilt.buckets] == [["layer3.weight", "layer1.weight"], ["layer2.weight", "layer0.weight"]]
    assert rebuilt.buckets[0]["ready_s"] < static.buckets[0]["ready_s"]


def test_profile_times_can_be_overridden_and_rows_of_several_ranks_use_the_latest(tmp_path):
    path = write_profile(tmp_path / "p.json", PARAMS, [0.004, 0.003, 0.002, 0.001])
    data = json.loads(path.read_text())
    data["events"].append({**data["events"][0], "rank": 1, "start_s": 0.005, "end_s": 0.005})
    path.write_text(json.dumps(data))
    result = run_ddp(DDPScenario(profile_file=str(path), forward_time_s=0.0, w_Bps=1e9))
    assert result.ready_s[0] == pytest.approx(0.005, rel=1e-12)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"kind": "something"}, "'kind' must be 'collsim-ddp-profile'"),
        ({"backward_s": -1.0}, "'backward_s' must be a time"),
        ({"events": "nope"}, "'events' must be a list"),
        ({"params": []}, "non-empty list"),
    ],
)
def test_malformed_profiles(tmp_path, overrides, message):
    path = write_profile(tmp_path / "p.json", PARAMS, [0.004, 0.003, 0.002, 0.001], **overrides)
    with pytest.raises(CollsimError, match=message):
        run_ddp(DDPScenario(profile_file=str(path), w_Bps=1e9))


def test_profile_with_missing_or_negative_ready_times(tmp_path):
    path = write_profile(tmp_path / "p.json", PARAMS, [0.004, 0.003, 0.002, 0.001])
    data = json.loads(path.read_text())
    data["events"] = data["events"][:3]
    path.write_text(json.dumps(data))
    with pytest.raises(CollsimError, match=r"missing \['layer3.weight'\]"):
        run_ddp(DDPScenario(profile_file=str(path), w_Bps=1e9))
    write_profile(path, PARAMS, [0.004, -0.003, 0.002, 0.001])
    with pytest.raises(CollsimError, match="start_s must be seconds >= 0"):
        run_ddp(DDPScenario(profile_file=str(path), w_Bps=1e9))
