"""`collsim sim train` (issue 34 items 1-2): bubble closed forms, byte formulas, one answer with
`sim collective`, torch's schedule orders, bad input, and the 22B row of Korthikanti Table 5."""

import json

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.errors import CollsimError
from sim.training.parallel import TrainScenario, simulate
from sim.training.parallel.schedule import rank_ops
from sim.training.parallel.step import memory_per_gpu

SMALL = dict(hardware="dgx-a100", nodes=2, layers=16, hidden=1024, heads=16, seq_len=512, vocab=0, micro_batch=1)


def small(**changes):
    return TrainScenario.from_dict({**SMALL, **changes})


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("stages,micro_batches", [(4, 8), (8, 8), (2, 5)])
def test_free_comm_bubble_is_the_closed_form(schedule, stages, micro_batches):
    scenario = small(pp=stages, global_batch=micro_batches, schedule=schedule, free_comm=True)
    result = simulate(scenario)
    expected = (stages - 1) / (micro_batches + stages - 1)
    assert result.bubble_fraction == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("stages,chunks,micro_batches", [(4, 2, 8), (2, 4, 4), (4, 4, 16)])
def test_free_comm_interleaved_bubble_is_the_closed_form(stages, chunks, micro_batches):
    scenario = small(pp=stages, vpp=chunks, global_batch=micro_batches, schedule="interleaved", free_comm=True)
    result = simulate(scenario)
    expected = (stages - 1) / (chunks * micro_batches + stages - 1)
    assert result.bubble_fraction == pytest.approx(expected, abs=1e-9)


def test_zero_bubble_beats_one_f_one_b_without_comm():
    one = simulate(small(pp=4, global_batch=8, schedule="1f1b", free_comm=True))
    zero = simulate(small(pp=4, global_batch=8, schedule="zero-bubble", free_comm=True))
    assert zero.step_time_s < one.step_time_s


@pytest.mark.parametrize("schedule,chunks", [("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("zero-bubble", 2)])
def test_every_rank_runs_each_forward_and_backward_once_after_its_forward(schedule, chunks):
    stages, micro_batches = 4, 8
    for rank in range(stages):
        ops = rank_ops(schedule, rank, stages, micro_batches, chunks)
        forwards = [(op.micro_batch, op.stage) for op in ops if op.kind == "F"]
        backwards = [(op.micro_batch, op.stage) for op in ops if op.kind in ("B", "I")]
        expected = {(mb, chunk * stages + rank) for mb in range(micro_batches) for chunk in range(chunks)}
        assert sorted(forwards) == sorted(expected) and sorted(backwards) == sorted(expected)
        assert all(ops.index(next(op for op in ops if op.kind == "F" and (op.micro_batch, op.stage) == key)) <
                   next(index for index, op in enumerate(ops) if op.kind in ("B", "I") and (op.micro_batch, op.stage) == key)
                   for key in expected)  # fmt: skip


def test_one_f_one_b_order_is_torchs():
    """Schedule1F1B: stage s runs min(m, p - s) forwards, then backward/forward pairs."""
    ops = rank_ops("1f1b", 1, 4, 6)
    assert [f"{op.kind}{op.micro_batch}" for op in ops] == ["F0", "F1", "F2", "B0", "F3", "B1", "F4", "B2", "F5", "B3", "B4", "B5"]


@pytest.mark.slow
def test_byte_counts_equal_their_formulas():
    b, s, h, e = 2, 512, 1024, 2
    result = simulate(small(tp=4, pp=2, dp=2, global_batch=8, micro_batch=b, recompute="none", scatter_gather=False), events=True)
    counts = result.bytes_by_kind
    assert counts["tp_per_layer_forward"] == 2 * b * s * h * e  # two all-reduces of b s h
    assert counts["pp_per_micro_batch"] == b * s * h * e
    layer = 4 * h * h + 4 * h + 2 * h * 4 * h  # attention (q, k, v, output; two norms) and MLP
    assert counts["dp_per_stage"] == pytest.approx(16 // 2 * layer / 4 * e)
    tp_rows = [row for row in result.events if row["stream"] == "tp" and row["name"].startswith("F mb0 stage0 layer0")]
    assert [row["kind"] for row in tp_rows] == ["all_reduce", "all_reduce"] and all(row["nbytes"] == b * s * h * e for row in tp_rows)
    assert tp_rows[0]["group"] == [0, 1, 2, 3]
    sends = [row for row in result.events if row["stream"] == "pp"]
    assert len(sends) == 2 * 2 and all(row["nbytes"] == b * s * h * e for row in sends)  # 8 / (2 x 2) micro-batches, activation + gradient


def test_sequence_parallel_swaps_each_all_reduce_for_a_gather_and_a_scatter():
    b, s, h, e = 1, 512, 1024, 2
    result = simulate(small(tp=4, global_batch=1, sequence_parallel=True), events=True)
    kinds = [row["kind"] for row in result.events if row["stream"] == "tp" and row["name"].startswith("F mb0 stage0 layer0")]
    assert kinds == ["all_gather", "reduce_scatter"] * 2
    assert result.bytes_by_kind["tp_per_layer_forward"] == 4 * b * s * h * e


def test_expert_all_to_all_bytes_are_tokens_times_top_k_times_hidden():
    result = simulate(small(ep=4, experts=8, top_k=2, global_batch=4), events=True)
    assert result.bytes_by_kind["ep_per_all_to_all"] == 1 * 512 * 2 * 1024 * 2
    rows = [row for row in result.events if row["stream"] == "ep" and row["name"].startswith("F mb0 stage0 layer0")]
    assert [row["kind"] for row in rows] == ["all_to_all", "all_to_all"] and rows[0]["end_s"] > rows[0]["start_s"]


def test_a_tp_all_reduce_costs_what_sim_collective_says():
    b, s, h = 1, 2048, 12288
    result = simulate(small(nodes=1, layers=2, hidden=h, heads=96, seq_len=s, tp=8, global_batch=1), events=True)
    row = next(row for row in result.events if row["stream"] == "tp")
    out = CliRunner().invoke(cli, ["sim", "collective", "--hardware", "dgx-a100", "--nodes", "1", "--op", "all_reduce",
                                   "--size", str(b * s * h * 2), "--json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert row["end_s"] - row["start_s"] == pytest.approx(json.loads(out.output)["time_s"], rel=1e-12)


def test_memory_marks_a_model_too_big_for_one_gpu():
    scenario = TrainScenario.from_dict({"model": "gpt3-175b", "nodes": 1, "global_batch": 1})
    assert memory_per_gpu(scenario) > 175e9 * 16 and not simulate(scenario).fits


@pytest.mark.parametrize(
    "args,field",
    [
        (["--heads", "10", "--tp", "4"], "heads"),
        (["--layers", "10", "--pp", "4"], "layers"),
        (["--global-batch", "7", "--dp", "2"], "global_batch"),
        (["--tp", "8", "--pp", "4", "--nodes", "1"], "tp"),
        (["--model", "gpt5"], "model"),
        (["--vpp", "2"], "vpp"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(args, field):
    base = ["sim", "train", "--hardware", "dgx-a100", "--nodes", "1", "--layers", "8", "--hidden", "256", "--heads", "8",
            "--seq-len", "128", "--vocab", "1000", "--global-batch", "8"]  # fmt: skip
    out = CliRunner().invoke(cli, base + args)
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output and field in out.output.replace("-", "_")
    assert len(out.output.strip().splitlines()) == 1, out.output


def test_table5_22b_full_recompute_within_15_percent():
    """Korthikanti et al. 2022 Table 5: 22B, 8 GPUs, tp 8, batch 4, full recomputation, 1.42 s."""
    scenario = TrainScenario.from_dict(dict(hardware="dgx-a100", nodes=1, layers=48, hidden=6144, heads=64, seq_len=2048, vocab=51200,
                                            global_batch=4, micro_batch=4, tp=8, precision="fp16", recompute="full",
                                            attention="standard"))  # fmt: skip
    assert simulate(scenario).step_time_s == pytest.approx(1.42, rel=0.15)


@pytest.mark.slow
def test_cli_json_and_sweep():
    base = ["sim", "train", "--hardware", "dgx-a100", "--nodes", "1", "--model", "cs336-large", "--global-batch", "8"]
    out = CliRunner().invoke(cli, base + ["--tp", "2", "--pp", "2", "--dp", "2", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["step_time_s"] > 0
    out = CliRunner().invoke(cli, base + ["--sweep", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output[out.output.index("[") :])
    assert all(row["tp"] * row["pp"] * row["dp"] == 8 for row in rows)
    assert [row["step_time_s"] for row in rows if row["fits"]] == sorted(row["step_time_s"] for row in rows if row["fits"])


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize("schedule", ["interleaved", "zero-bubble"])
@pytest.mark.parametrize("stages,chunks,micro_batches", [(4, 2, 8), (2, 3, 4), (4, 2, 12), (3, 2, 3)])
def test_interleaved_orders_are_torchs(schedule, stages, chunks, micro_batches, torch_schedule):
    """Our op order per rank equals torch.distributed.pipelining's own, idle slots dropped."""
    theirs_schedule = torch_schedule(schedule, stages, chunks, micro_batches)
    for rank in range(stages):
        theirs = [a for a in theirs_schedule._calculate_single_rank_operations(rank) if a is not None]
        ours = rank_ops(schedule, rank, stages, micro_batches, chunks)
        assert [(op.kind, op.micro_batch, op.stage) for op in ours] == [
            (a.computation_type.value, a.microbatch_index, a.stage_index) for a in theirs
        ]


def test_dp_bucket_rows_carry_a_stages_gradient_bytes_and_end_the_step():
    result = simulate(small(pp=2, dp=2, global_batch=4, bucket_mb=5), events=True)
    rows = [row for row in result.events if row["stream"] == "dp" and row["rank"] == 0]
    assert sum(row["nbytes"] for row in rows) == pytest.approx(result.bytes_by_kind["dp_per_stage"])
    assert rows[0]["group"] == [0, 1] and max(row["end_s"] for row in result.events) <= result.step_time_s + 1e-12


def test_gradient_accumulation_fills_or_must_match_the_global_batch():
    assert small(dp=2, micro_batch=2, grad_accum=3).global_batch == 12
    with pytest.raises(CollsimError, match="grad_accum"):
        small(dp=2, micro_batch=2, grad_accum=3, global_batch=8)


def test_expert_imbalance_slows_the_step_and_grows_the_all_to_all():
    balanced = simulate(small(ep=4, experts=8, top_k=2, global_batch=4))
    skewed = simulate(small(ep=4, experts=8, top_k=2, global_batch=4, ep_imbalance=2.0))
    assert skewed.bytes_by_kind["ep_per_all_to_all"] == 2 * balanced.bytes_by_kind["ep_per_all_to_all"]
    assert skewed.step_time_s > balanced.step_time_s
    with pytest.raises(CollsimError, match="ep_imbalance"):
        small(global_batch=4, ep_imbalance=2.0)


def test_any_ranks_events_are_its_stages_with_its_own_groups_and_peers():
    from sim.training.parallel import events_for_rank

    result = simulate(small(tp=2, pp=2, dp=2, global_batch=4), events=True)
    rank = 1 + 2 * 1 + 4 * 1  # tp 1, dp 1, pp 1
    rows = events_for_rank(result, rank)
    source = [row for row in result.events if row["rank"] == 4]
    assert len(rows) == len(source) and [row["start_s"] for row in rows] == [row["start_s"] for row in source]
    assert {tuple(row["group"]) for row in rows if row["stream"] == "tp"} == {(6, 7)}
    assert {row["peer"] for row in rows if row["stream"] == "pp"} == {3}  # stage 0's tp 1, dp 1
