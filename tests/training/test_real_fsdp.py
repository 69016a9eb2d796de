"""Real FSDP2 / ZeRO-1 on gloo: trained weights equal single-process training."""

from __future__ import annotations

import json

import pytest

from ..cli_in_process import collsim_in_process  # ranks from this process's fork server: no CLI start-up, no torch import

pytest.importorskip("torch")

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def test_every_strategy_matches_single_process_training():
    """Tolerance: torch.allclose rtol 1e-5, atol 1e-6 on every weight after 3 SGD-momentum steps
    (float32; reductions in another order). The weights move by far more than that."""
    from real.fsdp import STRATEGIES, check_equality
    from real.launcher import LaunchConfig

    rows = check_equality(LaunchConfig(2, timeout_s=240), "mlp", STRATEGIES, steps=3)
    assert [row["strategy"] for row in rows] == list(STRATEGIES)
    for row in rows:
        assert row["allclose"], row
        assert row["num_tensors"] == 6
        assert row["reference_moved"] > 1000 * max(row["max_abs_diff"], 1e-9)


def test_real_fsdp_cli_times_and_simulates(tmp_path):
    done = collsim_in_process(
        "real", "fsdp", "--model", "mlp", "--ranks", "2", "--strategies", "ddp,full_shard",
        "--rounds", "2", "--warmup-rounds", "1", "--no-db", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {row["strategy"]: row for row in json.loads(done.stdout)}
    assert set(rows) == {"none", "ddp", "full_shard"}
    assert rows["none"]["simulated_s"] is None
    for name in ("ddp", "full_shard"):
        assert rows[name]["rounds"] == 2 and rows[name]["median_s"] > 0 and rows[name]["simulated_s"] > 0


def test_record_and_import_a_trace_of_the_mlp(tmp_path):
    """--record: one profiled DDP step on 2 gloo ranks; the import names every gradient by shape."""
    trace, out = tmp_path / "mlp.json.gz", tmp_path / "profile.json"
    done = collsim_in_process("real", "import-trace", str(trace), "--record", "--model", "mlp", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    profile = json.loads(out.read_text())
    ready = [row["name"] for row in profile["events"] if row["kind"] == "grad_ready"]
    assert sorted(ready) == sorted(["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"])
    assert ready[0].startswith("fc3")  # gradients arrive in reverse registration order
    assert [row["op"] for row in profile["trace"]["collectives"]] == ["all_reduce"]  # 27.7 kB: one DDP bucket
