"""The Sim vs measured page held out (issue 33): no in-sample point is drawn or listed as a
prediction, the split is shown and changeable (URL key ``split``), the spread is "n/a" for one
published value, coverage is shown, and the GPU logs sit beside the gloo runs."""

from __future__ import annotations

import pytest

from real import overlays
from real.heldout_ow import DEFAULT_SPLIT
from webapp.pages.compare import ids
from webapp.pages.compare import page as compare


def groups() -> list[dict]:
    return overlays.fittable_groups(overlays.open_results(None))


def table_rows(table) -> list[list[str]]:
    body = table.children[2]
    return [[cell.children for cell in row.children] for row in body.children]


def traces(figure) -> list:
    return list(figure.data)


def check_no_fitted_point_is_a_prediction(figure, predicted_sizes: set[int], fitted_sizes: set[int]) -> None:
    """Every trace named as a prediction carries the predicted role and only predicted sizes;
    every in-sample trace says so and is never called a prediction."""
    for trace in traces(figure):
        role = (trace.meta or {}).get("role")
        name = trace.name or ""
        if "predicted (held out)" in name or "held out" in name or "prediction error" in name:
            assert role == "predicted", name
            assert set(trace.x) <= predicted_sizes, name
        if role == "fitted":
            assert "in-sample" in name or "fitted" in name, name
            assert "predicted (held out)" not in name
            assert set(trace.x) <= fitted_sizes, name


@pytest.mark.slow
def test_no_in_sample_point_is_labelled_a_prediction_in_any_group_or_split():
    for group in groups():
        key = compare.group_id(group)
        for split in overlays.held_out_splits(overlays.group_rows(overlays.open_results(None), group)):
            shown = compare.update(key, "mean", "ring", split)
            assert shown["split"] == split and f"split={split}" in compare.query(key, shown)
            rows = table_rows(shown["table"])
            fitted = {r[0] for r in rows if r[1] == "fitted (in-sample)"}
            predicted = {r[0] for r in rows if r[1] == "predicted (held out)"}
            assert len(fitted) + len(predicted) >= 2 and fitted
            for row in rows:
                if row[1] == "fitted (in-sample)":
                    assert row[5] == "— (fitted)" and row[8] == "—"  # no interval, no coverage verdict: not a prediction
                else:
                    assert row[8] in ("yes", "no")
            held = overlays.held_out(overlays.open_results(None), group, "mean", "ring", split)
            sizes = {role: {r["size_bytes"] for r in held["rows"] if r["role"] == role} for role in ("fitted", "predicted")}
            check_no_fitted_point_is_a_prediction(shown["sim"], sizes["predicted"], sizes["fitted"])
            check_no_fitted_point_is_a_prediction(shown["residuals"], sizes["predicted"], sizes["fitted"])
            if split == "none":
                assert not predicted and not any("predicted" in (t.name or "") for t in traces(shown["sim"]))
                assert "nothing here is a prediction" in shown["notice"]


def test_the_page_is_held_out_by_default_and_shows_the_split():
    measured = next(g for g in groups() if g["source"] == "measured")
    shown = compare.update(compare.group_id(measured), "mean", "ring")
    assert shown["split"] == DEFAULT_SPLIT and [o["value"] for o in shown["split_options"]][-1] == "none"
    text, interval = (paragraph.children for paragraph in shown["split_shown"].children)
    assert interval.startswith("Interval of a predicted point: 80% interval")
    assert text.startswith(f"Split '{DEFAULT_SPLIT}'") and "Fitted on sizes" in text and "predicted: sizes" in text
    names = [trace.name for trace in traces(shown["sim"])]
    assert "predicted (held out), 80% interval" in names
    assert "simulated at the fitted points (in-sample, not a prediction)" in names
    symbols = {trace.meta["role"]: trace.marker.symbol for trace in traces(shown["sim"]) if trace.meta["what"] == "simulated"}
    assert symbols["fitted"] != symbols["predicted"]  # drawn differently
    cards = {card.children[1].id: card.children[1].children for card in shown["cards"]}
    assert cards[ids.CMP_COVERAGE].endswith("%)") and " of " in cards[ids.CMP_COVERAGE]
    assert "held-out points inside their 80% interval" in shown["notice"]


def test_one_published_value_has_spread_na_not_a_verdict():
    published = next(g for g in groups() if g["source"] == "published")
    shown = compare.update(compare.group_id(published), "mean", "ring", "none")
    rows = table_rows(shown["table"])
    assert rows and all(row[3] == "n/a" and row[7] == "n/a" for row in rows)  # spread, within spread
    assert not any("no" == row[7] for row in rows)


def test_a_split_the_group_lacks_falls_back_and_says_so():
    published = next(g for g in groups() if g["source"] == "published")
    shown = compare.update(compare.group_id(published), "mean", "ring", "launch")
    assert shown["split"] == DEFAULT_SPLIT and "split=alternate" in compare.query(compare.group_id(published), shown)
    assert shown["notice"].startswith("These runs do not allow the split 'launch'")
    assert "launch" not in [option["value"] for option in shown["split_options"]]
    cards = {card.children[1].id: card.children[1].children for card in shown["cards"]}
    assert cards[ids.CMP_O].endswith("[interval n/a: no degrees of freedom]") and "nan" not in cards[ids.CMP_W]  # a 2-size fit


def test_the_url_keys_split_and_gpu_are_read_back():
    measured = next(g for g in groups() if g["source"] == "measured")
    gpu = compare.gpu_panel(None)["gpu"]
    layout = compare.layout(f"?group={compare.group_id(measured)}&split=small&gpu=oci-a100-roce%7Cno-such-log")
    values = {getattr(c, "id", None): getattr(c, "value", None) for c in layout._traverse()}
    assert values[ids.CMP_SPLIT] == "small"
    assert values[ids.CMP_GPU] == gpu  # an unknown GPU split: the first one
    scope = [c for c in layout._traverse() if getattr(c, "id", None) == ids.CMP_SCOPE][0].children
    assert scope.startswith("What this shows:") and "What it does not show:" in scope


def test_the_gpu_logs_are_beside_the_gloo_runs_held_out():
    from real import gpu_heldout

    document = gpu_heldout.load()
    for option in gpu_heldout.gpu_choices(document):
        shown = compare.gpu_panel(option["value"])
        assert shown["gpu"] == option["value"]
        view = gpu_heldout.gpu_view(document, option["value"])
        sizes = {role: {r["size_bytes"] for r in view["rows"] if r["role"] == role} for role in ("fitted", "predicted")}
        check_no_fitted_point_is_a_prediction(shown["gpu_figure"], sizes["predicted"], sizes["fitted"])
        assert f"{view['summary']['covered']} of {view['summary']['predicted']} points inside" in shown["gpu_note"]
        assert "gcp-a3mega" in shown["gpu_note"]  # a preset with one log is named as not validated
    measured = next(g for g in groups() if g["source"] == "measured")
    shown = compare.update(
        compare.group_id(measured), "mean", "ring", None, "oci-a100-roce|oci-bm.gpu4.8_a100-40g_2node_roce16x100g_allreduce.txt"
    )
    assert "gpu=oci-a100-roce" in compare.query(compare.group_id(measured), shown) and shown["gpu_table"].children[0].children.startswith(
        "busbw error"
    )


def test_changing_a_control_keeps_the_ddp_steps_drawn():
    """The DDP steps depend on no control: drawn with the layout, never redrawn by the callback,
    which runs refusing server files and so could not replay them (it drew 'no DDP measurements')."""
    from sim.files import refusing_paths

    published = next(g for g in groups() if g["source"] == "published")
    with refusing_paths():  # as the callback runs (webapp.callbacks.guarded)
        shown = compare.update(compare.group_id(published), "mean", "ring", "small")
    assert not any(output.component_id == ids.CMP_DDP for output in compare.OUTPUTS.values()) and "ddp" not in shown
    layout = compare.layout(f"?group={compare.group_id(published)}")
    figure = [c for c in layout._traverse() if getattr(c, "id", None) == ids.CMP_DDP][0].figure
    assert [trace.name for trace in figure.data] == ["measured", "simulated"]
