"""Sim vs measured held out (issue 33): o and w fitted on one part, only the other part judged as
predictions; the published GPU logs validated the same way, precomputed."""

from __future__ import annotations

import math

import pytest

from real import gpu_heldout, heldout_ow, overlays
from real.fit import fit_ow, row_time
from real.validate_nccl import Z
from sim.collective.nccl_fit import NOISE
from sim.errors import CollsimError


@pytest.fixture(scope="module")
def store():
    return overlays.open_results(None)  # the bundled sample data


def group(store, source: str, ranks: int = 2) -> dict:
    return next(g for g in overlays.fittable_groups(store) if g["source"] == source and int(g["world_size"]) == ranks)


def test_the_default_split_fits_on_some_sizes_and_predicts_the_others(store):
    measured = group(store, "measured")
    shown = overlays.held_out(store, measured, "mean", "ring")
    split = shown["split"]
    assert split["name"] == heldout_ow.DEFAULT_SPLIT
    assert split["fitted_sizes"] and split["predicted_sizes"] and not set(split["fitted_sizes"]) & set(split["predicted_sizes"])
    every = sorted({row["size_bytes"] for row in overlays.group_rows(store, measured)})
    assert sorted(split["fitted_sizes"] + split["predicted_sizes"]) == every
    for row in shown["rows"]:
        assert row["role"] == ("predicted" if row["size_bytes"] in split["predicted_sizes"] else "fitted")
        assert (row["low_s"] is None) == (row["role"] == "fitted")  # an interval only where it is a prediction
        if row["role"] == "predicted":
            assert row["low_s"] < row["simulated_s"] < row["high_s"]


def test_the_fit_never_sees_the_predicted_points(store):
    measured = group(store, "measured")
    shown = overlays.held_out(store, measured, "mean", "ring")
    rows = overlays.group_rows(store, measured)
    fitted_only = fit_ow([row for row in rows if row["size_bytes"] in shown["split"]["fitted_sizes"]], "mean", replicates=0)
    assert shown["fit"].o_s == pytest.approx(fitted_only.o_s) and shown["fit"].w_Bps == pytest.approx(fitted_only.w_Bps)
    assert shown["fit"].w_Bps != pytest.approx(fit_ow(rows, "mean", replicates=0).w_Bps, rel=1e-3)  # not the in-sample fit of them all


def test_the_launch_split_predicts_the_last_launch_from_the_others(store):
    measured = group(store, "measured")
    rows = overlays.group_rows(store, measured)
    last = sorted({row["run_id"] for row in rows})[-1]
    shown = overlays.held_out(store, measured, "median", "ring", "launch")
    assert shown["split"]["predicted_runs"] == [last] and last not in shown["split"]["fitted_runs"]
    predicted = {row["size_bytes"]: row for row in shown["rows"] if row["role"] == "predicted"}
    for row in rows:
        if row["run_id"] == last:
            assert predicted[row["size_bytes"]]["measured_s"] == pytest.approx(row_time(row, "median"))
    assert shown["fit"].points == sum(1 for row in rows if row["run_id"] != last)


def test_a_single_published_value_has_its_spread_not_judged(store):
    """One published number has no spread: 'n/a' (None), not 'within spread: no' at +0.6 %."""
    shown = overlays.held_out(store, group(store, "published"), "mean", "ring", "none")
    assert shown["rows"] and all(row["measured_lo_s"] is None and row["within"] is None for row in shown["rows"])
    assert shown["summary"]["spread_judged"] == 0


def test_coverage_counts_the_predicted_points_inside_their_interval(store):
    for split in ("alternate", "small", "launch"):
        shown = overlays.held_out(store, group(store, "measured"), "mean", "ring", split)
        predicted = [row for row in shown["rows"] if row["role"] == "predicted"]
        inside = sum(1 for row in predicted if row["low_s"] <= row["measured_s"] <= row["high_s"])
        summary = shown["summary"]
        assert (summary["predicted"], summary["covered"]) == (len(predicted), inside)
        assert summary["coverage"] == pytest.approx(inside / len(predicted)) and summary["level"] == 0.8


def test_nothing_held_out_means_nothing_predicted(store):
    shown = overlays.held_out(store, group(store, "measured"), "mean", "ring", "none")
    assert {row["role"] for row in shown["rows"]} == {"fitted"} and shown["summary"]["coverage"] is None
    assert all(point["role"] == "fitted" for point in shown["points"])


def test_a_two_point_fit_gets_the_assumed_noise_as_its_interval(store):
    """Two fitted sizes leave no degrees of freedom: the fit passes through them, its parameter
    intervals are unknown, and the interval is the assumed noise alone, exp(+-Z * NOISE)."""
    shown = overlays.held_out(store, group(store, "published", 4), "mean", "ring")
    assert shown["fit"].points == 2
    for row in shown["rows"]:
        if row["role"] == "predicted":
            assert row["high_s"] / row["simulated_s"] == pytest.approx(math.exp(Z * NOISE))
            assert row["simulated_s"] / row["low_s"] == pytest.approx(math.exp(Z * NOISE))


def test_a_split_the_rows_do_not_allow_is_one_message(store):
    rows = overlays.group_rows(store, group(store, "published"))
    assert "launch" not in overlays.held_out_splits(rows)  # one published run
    with pytest.raises(CollsimError, match=r"split: 'launch' is not possible here; allowed: alternate, small, none"):
        heldout_ow.split_rows(rows, "launch")
    with pytest.raises(CollsimError, match="split: 'halves'"):
        heldout_ow.split_rows(rows, "halves")


# ----------------------------------------------------------------------------- GPU logs


@pytest.fixture(scope="module")
def shipped():
    return gpu_heldout.load()


def test_every_preset_with_two_logs_is_validated_each_way_and_the_rest_listed(shipped):
    groups = gpu_heldout.shipped_groups()
    paired = {preset for preset, names in groups.items() if len(names) >= 2}
    assert paired == {"hgx-h100-nvls", "oci-a100-roce"} == set(shipped["groups"])
    assert {row["log"] for row in shipped["single"]} == {name for preset, names in groups.items() if len(names) < 2 for name in names}
    for preset in paired:
        splits = shipped["groups"][preset]["splits"]
        assert set(splits) == set(groups[preset])  # each log once as the fitted one
    assert shipped["command"] == gpu_heldout.COMMAND  # what wrote the file, every size (stride 1)


def test_the_default_gpu_split_fits_the_smallest_node_count(shipped):
    assert shipped["groups"]["hgx-h100-nvls"]["default"] == "h100_1node_allreduce_nvls_nccl-tests290.txt"  # 1 node, the other 2
    oci = shipped["groups"]["oci-a100-roce"]
    assert oci["default"] == sorted(oci["logs"])[0]  # both 2 nodes: the first by name


def test_gpu_points_are_predictions_only_on_the_held_out_log(shipped):
    for option in gpu_heldout.gpu_choices(shipped):
        view = gpu_heldout.gpu_view(shipped, option["value"])
        fitted = {row["log"] for row in view["split"]["fitted"]}
        predicted = {row["log"] for row in view["split"]["predicted"]}
        assert fitted and predicted and not fitted & predicted
        for row in view["rows"]:
            log = row["series"].split(" (")[0]
            assert row["role"] == ("predicted" if log in predicted else "fitted")
            assert (row["low_s"] is None) == (row["role"] == "fitted")
        judged = [row for row in view["rows"] if row["role"] == "predicted"]
        assert view["summary"]["covered"] == sum(1 for row in judged if row["low_s"] <= row["measured_s"] <= row["high_s"])


def test_an_unknown_gpu_choice_shows_the_first_and_a_missing_file_says_how_to_make_it(shipped, tmp_path):
    assert gpu_heldout.gpu_view(shipped, "no|such")["choice"] == gpu_heldout.gpu_choices(shipped)[0]["value"]
    with pytest.raises(CollsimError, match="python -m real.gpu_heldout"):
        gpu_heldout.load(tmp_path / "missing.json")


@pytest.mark.slow
def test_the_shipped_gpu_validation_is_what_the_code_computes_now(shipped):
    """The precomputed file is real.validate_nccl.validate's answer today (the quickest split: OCI,
    fit on the first log), so the page never shows numbers the code no longer gives."""
    from real.validate_nccl import validate

    oci = shipped["groups"]["oci-a100-roce"]
    fresh = validate(gpu_heldout.read_group("oci-a100-roce", oci["logs"]), "oci-a100-roce", oci["default"])
    stored = oci["splits"][oci["default"]]
    assert [(p["log"], p["size_bytes"], p["role"]) for p in fresh["points"]] == [
        (p["log"], p["size_bytes"], p["role"]) for p in stored["points"]
    ]
    for new, old in zip(fresh["points"], stored["points"]):
        assert new["predicted_s"] == pytest.approx(old["predicted_s"], rel=1e-6)
        assert (new["low_s"] is None) == (old["low_s"] is None)
        if new["low_s"] is not None:
            assert new["low_s"] == pytest.approx(old["low_s"], rel=1e-6) and new["high_s"] == pytest.approx(old["high_s"], rel=1e-6)
