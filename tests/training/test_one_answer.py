"""One scenario, one number: with a hardware preset and no explicit algorithm the CLI, the DDP
comm model, the FSDP step and the explorer's Collectives run all time NCCL's pick the same way."""

import json

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.hardware.nccl_des import scenario_for_pick
from sim.hardware.presets import scenario_fields
from sim.training.ddp import DDPScenario, run_ddp
from sim.training.fsdp import FSDPScenario, run_fsdp

HARDWARE, NODES, SIZE = "dgx-h100", 2, 25 * 2**20  # DDP's default bucket (NCCL picks Ring/LL128 on its channels)


def _cli_time() -> float:
    args = ["sim", "collective", "--hardware", HARDWARE, "--nodes", str(NODES), "--op", "all_reduce", "--size", "25MiB", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["time_s"]


def _ddp_time() -> float:
    data = {**scenario_fields(HARDWARE, NODES), "param_bytes": [SIZE], "backward_time_s": 0.0, "comm": "network", "first_bucket": "none"}
    summary = run_ddp(DDPScenario.from_dict(data)).summary()
    (bucket,) = summary["buckets"]
    assert summary["hardware_comm"]["picks"][0]["algorithm"] == scenario_for_pick(HARDWARE, NODES, "all_reduce", SIZE)[0].algorithm
    return bucket["end_s"] - bucket["start_s"]


def _fsdp_time() -> float:
    data = {**scenario_fields(HARDWARE, NODES), "param_bytes": [SIZE], "backward_time_s": 0.0, "comm": "network", "sharding": "no_shard"}
    summary = run_fsdp(FSDPScenario.from_dict(data)).summary()
    return summary["comm_by_kind_s"]["all_reduce"]


def _explorer_time() -> float:
    from webapp import collective as explorer

    pick, why = scenario_for_pick(HARDWARE, NODES, "all_reduce", SIZE)
    assert pick is not None, why
    form = {**explorer.DEFAULTS, **explorer.hardware_form(HARDWARE, "16"), "hardware": HARDWARE, "op": "all_reduce",
            "algorithm": pick.algorithm, "chunks": str(pick.chunks), "size": "25MiB", "reduce_bandwidth": ""}  # fmt: skip
    scenario, errors = explorer.parse_form(form)
    assert not errors, errors
    outcome = explorer.run(scenario, frames=False)
    assert outcome.mode == "simulated"
    return outcome.result.time_s


def test_cli_ddp_fsdp_and_explorer_give_one_number():
    cli_s = _cli_time()
    assert _ddp_time() == pytest.approx(cli_s, rel=1e-12)
    assert _fsdp_time() == pytest.approx(cli_s, rel=1e-12)
    assert _explorer_time() == pytest.approx(cli_s, rel=1e-12)


@pytest.mark.slow
def test_crossover_row_of_nccls_pick_is_the_same_number():
    args = ["sim", "crossover", "--op", "all_reduce", "--hardware", HARDWARE, "--nodes", str(NODES), "--sizes", "25MiB", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    (row,) = [row for row in json.loads(result.output) if row["algorithm"] == "nccl"]
    pick, _ = scenario_for_pick(HARDWARE, NODES, "all_reduce", SIZE)
    assert row["time_s"] == pytest.approx(_cli_time(), rel=1e-12) and row["method"] == f"des ({pick.algorithm} x{pick.chunks})"


def test_cli_ddp_with_hardware_and_nic_overrides():
    base = ["sim", "ddp", "--preset", "gpt2", "--backward-time", "120ms", "--hardware", HARDWARE, "--nodes", str(NODES), "--json"]
    summary = json.loads(CliRunner().invoke(cli, base).output)
    assert (summary["comm"], summary["ranks"], summary["scenario"]["algorithm"]) == ("network", 16, "nccl")
    slower = json.loads(CliRunner().invoke(cli, base + ["--nics-per-node", "16", "--nic-bandwidth", "100Gbps"]).output)
    assert slower["scenario"]["hardware"] == "dgx-h100:16x100Gbps" and slower["comm_busy_s"] > summary["comm_busy_s"]
    bad = CliRunner().invoke(cli, ["sim", "ddp", "--preset", "gpt2", "--backward-time", "120ms", "--nodes", "2"])
    assert bad.exit_code != 0 and "--nodes needs --hardware NAME" in bad.output
