"""One scenario, one number: with a hardware preset and no explicit algorithm the CLI, the DDP
comm model, the FSDP step and the explorer's Collectives run all time NCCL's pick the same way."""

import json

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.collective.pick import scenario_for_pick
from sim.hardware.presets import scenario_fields
from sim.training.ddp import DDPScenario, run_ddp
from sim.training.fsdp import FSDPScenario, run_fsdp

HARDWARE, NODES, SIZE = "dgx-h100", 2, 25 * 2**20  # DDP's default bucket (NCCL picks Ring/LL128 on its channels)


def _cli_time(*more: str) -> float:
    args = ["sim", "collective", "--hardware", HARDWARE, "--nodes", str(NODES), "--op", "all_reduce", "--size", "25MiB", "--json", *more]
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
    """The Collectives page after choosing the preset (its hardware callback's values), the size
    typed: the page's own default algorithm (NCCL's pick), no algorithm passed here."""
    from dash import no_update

    from webapp import collective as explorer
    from webapp.pages.collectives import callbacks as page

    chosen = page.apply_hardware(HARDWARE, "16", "all_reduce", explorer.DEFAULTS["algorithm"])  # 16 ranks typed: two nodes
    form = {**explorer.DEFAULTS, "hardware": HARDWARE, "op": "all_reduce", "size": "25MiB"}
    form.update({key: value for key, value in chosen.items() if key in form and value is not no_update})
    assert form["algorithm"] == "nccl" and form["chunks"] == ""  # NCCL's pick on its own channels
    scenario, errors = explorer.parse_form(form)
    assert not errors, errors
    outcome = explorer.run(scenario, frames=False)
    assert outcome.mode == "simulated"
    summary = page.simulate(page.validate(form)["scenario"], "step", False, 0, True)["summary"]
    assert "NCCL picks Ring/LL128 on" in str(summary)
    return outcome.result.time_s


def test_cli_ddp_fsdp_and_explorer_give_one_number():
    cli_s = _cli_time()
    assert _cli_time("--algorithm", "nccl") == cli_s  # NCCL's pick named: the same run
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
