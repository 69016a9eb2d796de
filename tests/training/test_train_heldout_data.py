"""bench/train_heldout.py's published cases: transcribed consistently, each a valid TrainScenario,
and its Spearman correlation right on hand examples (no simulation is run here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from sim.training.parallel import TrainScenario

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("train_heldout", ROOT / "bench" / "train_heldout.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench  # its dataclasses look their module up
_spec.loader.exec_module(bench)

# Narayanan et al. 2021 Table 1's aggregate petaFLOP/s column, and Table 2's "training days for
# 300B tokens" of the PTD-P rows: columns the bench does not use, to check what it does use.
TABLE1_AGGREGATE_PFLOPS = (4.4, 8.8, 18.2, 34.6, 70.8, 143.8, 227.1, 297.4, 410.2, 502.0)
TABLE2_DAYS = (84, 43, 23, 156, 80, 42)


def test_every_published_case_is_a_valid_train_scenario_with_its_layout():
    for case in bench.CASES:
        assert case.gpus % (case.tp * case.pp) == 0, case
        for schedule in ("1f1b", "interleaved"):
            scenario = bench.scenario(case, schedule)
            assert isinstance(scenario, TrainScenario)
            assert (scenario.tp, scenario.pp, scenario.dp, scenario.gpus) == (case.tp, case.pp, case.dp, case.gpus)
            assert scenario.global_batch == case.global_batch and scenario.recompute == "full"
    for case in bench.LLAMA_CASES:
        for vpp in bench.LLAMA_VPPS:
            scenario = bench.llama_scenario(case, vpp)
            assert scenario.gpus == case.gpus and scenario.micro_batches == case.global_batch // case.dp


def test_the_shapes_give_the_papers_parameter_counts_by_its_eq_2():
    for case in bench.CASES:
        assert case.params() / 1e9 == pytest.approx(float(case.model.rstrip("B")), abs=0.051), case


def test_table1_rates_times_gpus_give_the_papers_aggregate_column():
    table1 = [case for case in bench.CASES if case.source == bench.T1]
    assert len(table1) == len(TABLE1_AGGREGATE_PFLOPS)
    for case, aggregate in zip(table1, TABLE1_AGGREGATE_PFLOPS, strict=True):
        assert case.gpus * case.tflops_per_gpu / 1000 == pytest.approx(aggregate, rel=0.005), case


def test_table2_measured_iteration_times_give_the_papers_training_days():
    """Seconds an iteration x iterations for 300B tokens = the paper's own estimate (Table 2)."""
    table2 = [case for case in bench.CASES if case.source == bench.T2]
    for case, days in zip(table2, TABLE2_DAYS, strict=True):
        iterations = 300e9 / (case.global_batch * bench.SEQ_LEN)
        assert case.measured_s() * iterations / 86400 == pytest.approx(days, rel=0.03), case


def test_spearman_on_hand_examples():
    assert bench.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)  # 1 - 6 * 4 / (5 * 24)
    assert bench.spearman([10, 20, 30], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    # ties take their mean rank: y ranks 1, 2, 3.5, 5, 3.5 -> 8 / sqrt(10 * 9.5)
    assert bench.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / 95**0.5)
    assert bench.ranks([7, 3, 7, 1]) == [3.5, 2.0, 3.5, 1.0]
    with pytest.raises(ValueError):
        bench.spearman([1, 2], [1, 2, 3])
