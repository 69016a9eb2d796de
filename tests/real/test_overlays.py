"""real.overlays: what the explorer's Sim vs measured page draws, as data from a results store."""

from __future__ import annotations

import pytest

from real import overlays
from real.fit import row_time


@pytest.fixture(scope="module")
def store():
    return overlays.open_results(None)  # the bundled sample data


def test_fittable_groups_have_two_sizes_and_all_reduce_first(store):
    groups = overlays.fittable_groups(store)
    assert groups and all(group["sizes"] >= 2 and group["op"] != "barrier" for group in groups)
    ops = [group["op"] for group in groups]
    assert ops == sorted(ops, key=lambda op: op != "all_reduce")
    rows = overlays.group_rows(store, groups[0])
    assert rows and {row["op"] for row in rows} == {groups[0]["op"]} and all(row["size_bytes"] for row in rows)


def test_fit_curve_residuals_and_band(store):
    rows = overlays.group_rows(store, overlays.fittable_groups(store)[0])
    stat = overlays.stats_available(rows)[0]
    shown = overlays.fit_curve(rows, stat, replicates=50)
    fit = shown["fit"]
    for point in shown["points"]:
        assert point["residual"] == pytest.approx(point["time_s"] / fit.predict(point["size_bytes"]) - 1, rel=1e-12)
    assert len(shown["points"]) == sum(1 for row in rows if row_time(row, stat) is not None)
    sizes = [n for n, *_ in shown["curve"]]
    assert sizes == sorted(sizes) and sizes[0] == min(row["size_bytes"] for row in rows)
    assert all(low <= value <= high for _, value, low, high in shown["curve"])  # the fit lies in its band
    assert shown["label"].startswith("fit: o = ")


def test_algorithms_for_op_have_closed_forms():
    assert "ring" in overlays.algorithms_for_op("all_reduce")
    assert overlays.algorithms_for_op("no_such_op") == ["ring"]
