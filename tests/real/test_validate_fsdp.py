"""``collsim validate``'s FSDP / ZeRO section: summary.json ``fsdp`` rows, the report, the rows file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from real.compare_fsdp import compare_fsdp, fsdp_document, fsdp_points
from real.validate import COLLECTIVE_KEYS, DDP_KEYS, FIT_KEYS, FSDP_KEYS, format_text, load_validate, make_plan, summary_document
from real.validate_analysis import analyse, fsdp_analysis

from ..cli_in_process import collsim_in_process

DATA = Path(__file__).resolve().parents[2] / "real" / "data"
SIZES = [4096 * 4**k for k in range(5)]


def _collectives():
    return [{"op": "all_reduce", "world_size": 2, "size_bytes": n, "run_id": launch, "times_s": [1e-4 + n / 1e9] * 5, "backend": "gloo",
             "device": "cpu"} for launch in ("A", "B") for n in SIZES]  # fmt: skip


def _fsdp(scales=(1.0, 1.1)):
    params = [{"name": f"layers.{i}.weight", "shape": [128, 128], "numel": 16384, "element_bytes": 4} for i in range(3)]
    launches = []
    for scale in scales:
        rows = [{"kind": "step", "strategy": name, "round": r, "step_s": value * scale * (1 + 0.01 * r), "forward_s": 0.01, "backward_s": 0.02,
                 "optimizer_s": 0.004} for name, value in (("none", 0.034), ("ddp", 0.04), ("zero1", 0.045), ("full_shard", 0.06)) for r in range(3)]  # fmt: skip
        rows.append(
            {"kind": "allreduce", "sizes": [65536, 1 << 20, 4 << 20], "times_s": [1e-4 + n / 1e9 for n in (65536, 1 << 20, 4 << 20)]}
        )
        launches.append(rows)
    return fsdp_document(launches, "test", 2, params, {"host": "test"})


def test_fsdp_rows_have_exactly_the_contract_keys_and_the_comparison_values():
    document = _fsdp()
    rows, detail = fsdp_analysis(document)
    points, _ = fsdp_points(document)
    assert [row["strategy"] for row in rows] == ["ddp", "zero1", "full_shard"]
    assert all(tuple(row) == FSDP_KEYS for row in rows)
    for row, point in zip(rows, points):
        assert row["predicted_s"] == point["simulated_s"] and row["measured_s"] == point["measured_s"]
        assert row["within_spread"] == (row["spread_low_s"] <= row["predicted_s"] <= row["spread_high_s"])
        assert row["error"] == pytest.approx((row["predicted_s"] - row["measured_s"]) / row["measured_s"])
    assert detail["spread"] == "range over 2 launches" and detail["ranking_measured"] == ["ddp", "zero1", "full_shard"]
    assert sorted(detail["ranking_simulated"]) == sorted(detail["ranking_measured"])


def test_summary_gains_an_fsdp_key_and_keeps_the_others(tmp_path):
    plain_doc = summary_document(analyse(_collectives(), [], [], "gloo", replicates=10))
    with_fsdp = summary_document(analyse(_collectives(), [], [], "gloo", replicates=10, fsdp=_fsdp()))
    assert list(with_fsdp)[:3] == ["collectives", "fits", "ddp"] and set(plain_doc) <= set(with_fsdp)
    assert all(tuple(row) == COLLECTIVE_KEYS for row in with_fsdp["collectives"])
    assert all(tuple(row) == FIT_KEYS for row in with_fsdp["fits"]) and tuple(with_fsdp["ddp"]) == DDP_KEYS
    assert {key: with_fsdp[key] for key in ("collectives", "fits", "ddp")} == {
        key: plain_doc[key] for key in ("collectives", "fits", "ddp")
    }
    assert plain_doc["fsdp"] == [] and len(with_fsdp["fsdp"]) == 3
    json.dumps(with_fsdp)
    (tmp_path / "summary.json").write_text(json.dumps(with_fsdp))
    assert load_validate(tmp_path)["fsdp"] == with_fsdp["fsdp"]


def test_unusable_fsdp_rows_are_reported_not_fatal():
    document = _fsdp()
    document["rows"] = [row for row in document["rows"] if row.get("strategy") != "none"]  # cut short before a baseline round
    rows, detail = fsdp_analysis(document)
    assert rows == [] and "baseline" in detail["error"]
    assert fsdp_analysis(None) == ([], {})
    summary = summary_document(analyse(_collectives(), [], [], "gloo", replicates=10, fsdp=document))
    assert "fsdp/zero: not analysed" in format_text(summary, {})


def test_write_outputs_adds_the_fsdp_table_and_a_rows_file_compare_reads(tmp_path):
    pytest.importorskip("plotly")
    from real.validate import write_outputs

    paths = write_outputs(analyse(_collectives(), [], [], "gloo", replicates=10, fsdp=_fsdp()), tmp_path, plotlyjs="cdn")
    text = paths["report"].read_text()
    assert "FSDP / ZeRO: step time per strategy, 2 ranks" in text and "<td>full_shard</td>" in text
    assert text.count("plotly-graph-div") >= 3  # the collective figures, the error figure and the FSDP figure
    report = compare_fsdp({"kind": "fsdp", "measured": str(paths["fsdp"])})
    summary = json.loads(paths["summary"].read_text())
    assert [p["simulated_s"] for p in report["points"]] == pytest.approx([row["predicted_s"] for row in summary["fsdp"]])
    assert "fsdp/zero step, sim vs measured" in format_text(summary, paths)


def test_bundled_rows_give_a_row_per_strategy():
    document = json.loads((DATA / "fsdp_small_gloo_2ranks.json").read_text())
    rows, detail = fsdp_analysis(document)
    assert {row["strategy"] for row in rows} == {"ddp", "zero1", "shard_grad_op", "full_shard", "no_shard", "hybrid_shard"}
    assert all(row["spread_low_s"] <= row["measured_s"] <= row["spread_high_s"] and row["predicted_s"] > 0 for row in rows)
    assert detail["world_size"] == 2


def test_quick_plan_measures_fsdp_once_and_counts_it_in_the_progress():
    quick, full = make_plan("gloo", [2, 3], True), make_plan("gloo", [2, 3], False)
    assert quick.fsdp_launches == 1 and full.fsdp_launches >= 2
    from dataclasses import replace

    assert quick.total_points() - replace(quick, fsdp_launches=0).total_points() == 7 * quick.fsdp_rounds  # smallest world size only


@pytest.mark.torch
@pytest.mark.timeout(120)
def test_real_fsdp_save_feeds_compare(tmp_path):
    """A short real run (tiny MLP, 2 gloo ranks, one round): the saved rows compare per strategy."""
    pytest.importorskip("torch")
    rows = tmp_path / "rows.json"
    done = collsim_in_process(  # ranks from this process's fork server: no CLI start-up, no torch import
        "real", "fsdp", "--model", "mlp", "--strategies", "ddp,full_shard", "--rounds", "2",
        "--warmup-rounds", "1", "--no-db", "--save", str(rows), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (tmp_path / "spec.yaml").write_text("kind: fsdp\nmeasured: rows.json\nmodel: mlp\nranks: 2\n")
    done = collsim_in_process("compare", str(tmp_path / "spec.yaml"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [p["strategy"] for p in report["points"]] == ["ddp", "full_shard"]
    assert all(p["measured_s"] > 0 and p["simulated_s"] > 0 for p in report["points"])
