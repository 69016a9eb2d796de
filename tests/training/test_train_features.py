"""Issue 34's missing training features: FlashAttention, scatter/gather pipeline sends, uneven stages."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.errors import CollsimError
from sim.training.comm import pick_time
from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.costs import CommCosts
from sim.training.parallel.layout import Layout
from sim.training.parallel.model import activation_bytes_per_layer
from sim.training.parallel.step import hbm_Bps, memory_per_gpu
from sim.training.parallel.work import op_work

SMALL = dict(hardware="dgx-a100", nodes=2, layers=16, hidden=1024, heads=16, seq_len=512, vocab=0, micro_batch=1)


def small(**changes):
    return TrainScenario.from_dict({**SMALL, **changes})


def work_of(scenario: TrainScenario):
    layout = Layout(scenario.tp, scenario.ep, scenario.dp, scenario.pp, 8)
    costs = CommCosts(scenario.hardware, layout, 2, scenario.free_comm)
    return op_work(scenario, costs, 312e12 * scenario.mfu, 2, hbm_Bps("A100-SXM4-80GB"))


# -- FlashAttention ---------------------------------------------------------------------------------


def test_flash_attention_is_the_default_and_standard_must_be_asked_for():
    assert small().attention == "flash" and small(attention="standard").attention == "standard"
    with pytest.raises(CollsimError, match="attention"):
        small(attention="fused")


def test_flash_drops_the_attention_score_bytes_from_the_element_wise_time():
    """Korthikanti Table 2's 5 a s / (h t) term, written and read once at HBM bandwidth, is gone."""
    s, b, h, a, t = 512, 1, 1024, 16, 2
    standard, flash = work_of(small(tp=t, attention="standard")), work_of(small(tp=t))
    scores = s * b * h * 5.0 * a * s / (h * t)
    assert standard.memory_s - flash.memory_s == pytest.approx(2.0 * scores / 2039e9, rel=1e-12)
    assert flash.memory_s == pytest.approx(2.0 * s * b * h * (10 + 24 / t) / 2039e9, rel=1e-12)
    forward_gap = standard.split("F", False, 1)[0] - flash.split("F", False, 1)[0]
    assert forward_gap == pytest.approx(standard.memory_s - flash.memory_s, rel=1e-12)


def test_flash_leaves_selective_recompute_no_element_wise_core_share():
    standard, flash = work_of(small(tp=2, attention="standard")), work_of(small(tp=2))
    assert flash.layer_s[1] == pytest.approx(standard.layer_s[1] - standard.memory_s * standard._core_share)


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_flash_drops_the_s_squared_activation_memory(sequence_parallel):
    scenario = small(tp=4, pp=2, global_batch=8, sequence_parallel=sequence_parallel)
    spec, s, b, h, a = scenario.spec(), 512, 1, 1024, 16
    standard = activation_bytes_per_layer(spec, b, 4, sequence_parallel, "none", "standard")
    flash = activation_bytes_per_layer(spec, b, 4, sequence_parallel, "none", "flash")
    assert standard - flash == pytest.approx(s * b * h * 5.0 * a * s / (h * 4))
    in_flight, layers = 2, 8  # 1F1B's first stage holds p micro-batches of its 8 layers
    gap = memory_per_gpu(TrainScenario.from_dict({**scenario.to_dict(), "attention": "standard"})) - memory_per_gpu(scenario)
    assert gap == pytest.approx(layers * in_flight * (standard - flash))


def test_full_recompute_memory_is_the_same_with_either_kernel():
    spec = small().spec()
    assert activation_bytes_per_layer(spec, 2, 4, False, "full", "flash") == activation_bytes_per_layer(spec, 2, 4, False, "full")


# -- scatter/gather pipeline sends ----------------------------------------------------------------


def test_scatter_gather_sends_one_tp_th_and_all_gathers_it_on_nccls_pick():
    """tp 8 pp 2 on two nodes: each stage's TP rank sends b s h / 8 over its NIC, then the
    receiving node all-gathers the b s h activation (NCCL's pick on one node)."""
    b, s, h, e = 1, 512, 1024, 2
    scenario = small(tp=8, pp=2, global_batch=2)
    work = work_of(scenario)
    assert work.boundary_bytes == b * s * h * e / 8
    gather = pick_time("dgx-a100", 1, "all_gather", b * s * h * e).time_s
    assert work.boundary_gather_s == pytest.approx(gather, rel=1e-12)
    assert work.boundary_s(0, 8) == pytest.approx(work.costs.send_s(0, 8, b * s * h * e / 8) + gather, rel=1e-12)
    assert work.boundary_s(0, 0) == 0.0
    result = simulate(scenario, events=True)
    sends = [row for row in result.events if row["stream"] == "pp"]
    assert sends and all(row["nbytes"] == b * s * h * e / 8 for row in sends)
    assert all(row["end_s"] - row["start_s"] == pytest.approx(work.boundary_s(0, 8), rel=1e-9) for row in sends)
    assert result.bytes_by_kind["pp_per_micro_batch"] == b * s * h * e / 8
    assert result.bytes_by_kind["pp_gather_per_micro_batch"] == b * s * h * e


def test_no_scatter_gather_sends_the_whole_activation_and_gathers_nothing():
    b, s, h, e = 1, 512, 1024, 2
    work = work_of(small(tp=8, pp=2, global_batch=2, scatter_gather=False))
    assert work.boundary_bytes == b * s * h * e and work.boundary_gather_s == 0.0
    assert work.boundary_s(0, 8) == work.costs.send_s(0, 8, b * s * h * e)
    assert work.boundary_s(0, 8) > work.costs.send_s(0, 8, b * s * h * e / 8)


def test_sequence_parallel_sends_its_shard_without_a_gather():
    work = work_of(small(tp=8, pp=2, global_batch=2, sequence_parallel=True, scatter_gather=False))
    assert work.boundary_bytes == 512 * 1024 * 2 / 8 and work.boundary_gather_s == 0.0


def test_without_tensor_parallelism_scatter_gather_changes_nothing():
    work = work_of(small(pp=2, global_batch=2))
    assert work.boundary_bytes == 512 * 1024 * 2 and work.boundary_gather_s == 0.0


def test_cli_turns_scatter_gather_off():
    base = ["sim", "train", "--hardware", "dgx-a100", "--nodes", "2", "--layers", "4", "--hidden", "256", "--heads", "8",
            "--seq-len", "128", "--vocab", "0", "--global-batch", "2", "--tp", "8", "--pp", "2", "--json"]  # fmt: skip
    on, off = (CliRunner().invoke(cli, base + extra) for extra in ([], ["--no-scatter-gather"]))
    assert on.exit_code == 0 and off.exit_code == 0, on.output + off.output
    assert '"pp_per_micro_batch": 8192.0' in on.output and '"pp_per_micro_batch": 65536.0' in off.output


# -- uneven first and last stages -----------------------------------------------------------------


def test_first_and_last_stage_layers_split_the_rest_evenly():
    scenario = small(layers=14, pp=4, global_batch=4, first_stage_layers=3, last_stage_layers=3)
    assert scenario.stage_layers() == (3, 4, 4, 3) and [scenario.rank_layers(r) for r in range(4)] == [3, 4, 4, 3]
    interleaved = small(layers=30, pp=4, vpp=2, schedule="interleaved", global_batch=8, first_stage_layers=3, last_stage_layers=3)
    assert interleaved.stage_layers() == (3, 4, 4, 4, 4, 4, 4, 3) and interleaved.rank_layers(0) == 7
    assert small(layers=13, pp=4, global_batch=4, first_stage_layers=1).stage_layers() == (1, 4, 4, 4)


def test_uneven_stages_compute_in_proportion_to_their_layers():
    scenario = small(layers=14, pp=4, global_batch=4, first_stage_layers=3, last_stage_layers=3, free_comm=True)
    work = work_of(scenario)
    per_layer = work.op_split("F", 1, 4)[0] / 4
    assert [work.op_split("F", stage, 4)[0] for stage in range(4)] == pytest.approx(
        [3 * per_layer, 4 * per_layer, 4 * per_layer, 3 * per_layer]
    )
    result = simulate(scenario, events=True)
    assert len([row for row in result.events if row["stream"] == "compute" and row["name"].startswith("F mb0 stage0 ")]) == 3
    assert len([row for row in result.events if row["stream"] == "compute" and row["name"].startswith("F mb0 stage1 ")]) == 4


def test_uneven_stages_memory_is_the_fullest_ranks():
    """Rank 0 holds 3 layers and p micro-batches, rank 1 4 layers and p - 1: rank 1 is fuller."""
    scenario = small(layers=14, pp=4, global_batch=4, first_stage_layers=3, last_stage_layers=3, attention="standard")
    spec = scenario.spec()
    activations = activation_bytes_per_layer(spec, 1, 1, False, "none", "standard")
    states = 4 * (spec.attention_params() + spec.mlp_params()) * 16.0
    assert memory_per_gpu(scenario) == pytest.approx(states + 4 * activations * 3)


@pytest.mark.parametrize(
    "changes,field",
    [
        (dict(layers=16, pp=4, first_stage_layers=3), "first_stage_layers"),  # 13 over 3 stages
        (dict(layers=16, pp=1, last_stage_layers=3), "last_stage_layers"),
        (dict(layers=16, pp=4, first_stage_layers=16), "first_stage_layers"),  # nothing left for the others
        (dict(layers=16, pp=2, first_stage_layers=5, last_stage_layers=5), "first_stage_layers"),
        (dict(layers=16, pp=4, first_stage_layers=-1), "first_stage_layers"),
    ],
)
def test_bad_stage_layers_are_refused_naming_the_field(changes, field):
    with pytest.raises(CollsimError) as error:
        small(global_batch=4, **changes)
    assert error.value.field == field


def test_cli_refuses_bad_stage_layers_in_one_line():
    out = CliRunner().invoke(cli, ["sim", "train", "--hardware", "dgx-a100", "--nodes", "1", "--layers", "16", "--hidden", "256",
                                   "--heads", "8", "--seq-len", "128", "--global-batch", "4", "--pp", "4", "--first-stage-layers", "3"])  # fmt: skip
    assert out.exit_code == 2 and "Traceback" not in out.output and "first_stage_layers" in out.output.replace("-", "_")
    assert len(out.output.strip().splitlines()) == 1, out.output


def test_free_comm_bubble_with_equal_stages_given_explicitly_is_the_closed_form():
    """first/last given equal to the rest: the same pipeline, (p - 1) / (m + p - 1) to 1e-9."""
    scenario = small(pp=4, global_batch=8, free_comm=True, first_stage_layers=4, last_stage_layers=4)
    assert simulate(scenario).bubble_fraction == pytest.approx(3 / 11, abs=1e-9)
