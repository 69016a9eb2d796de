"""The pages' callback functions, called directly (no server, no browser)."""

from __future__ import annotations

import base64
import json

import pytest
from dash import no_update
from dash.exceptions import PreventUpdate

from sim.collective.runner import run_collective
from sim.scenario import CollectiveScenario
from webapp import collective as model
from webapp.callbacks import answer, guarded
from webapp.pages.collectives import callbacks as page
from webapp.pages.collectives import ids
from webapp.pages.ddp import ids as ddp_ids


def values(**changes: str) -> dict[str, str]:
    return {**model.DEFAULTS, **changes}


def scenario_of(**changes: str) -> dict | None:
    return page.validate(values(**changes))["scenario"]


def test_validate_good_and_bad():
    checked = page.validate(values(ranks="16"))
    assert checked["scenario"]["ranks"] == 16 and not any(checked["errors"].values())
    checked = page.validate(values(ranks="abc"))
    assert checked["scenario"] is None
    assert checked["errors"]["ranks"].startswith("ranks: expected a whole number")
    assert set(checked["errors"]) == set(model.DEFAULTS)  # one message slot per field, by name


def test_side_by_side_splits_the_difference():
    data = scenario_of()
    options, value = page.compare_choices("algorithm", data, "double_binary_tree")
    assert value is no_update and "ring" not in [option["value"] for option in options]
    assert page.compare_choices("algorithm", data, "ring")[1] is None  # no longer a choice: cleared
    assert page.compare_choices("sharing", data, None)[0] == [{"label": "fifo", "value": "fifo"}]
    shown = page.compare_panel("double_binary_tree", "algorithm", data)
    assert shown["style"] == {} and page.compare_panel(None, "algorithm", data)["style"] == {"display": "none"}
    second = page.compare_update("algorithm", "ring", values())  # ring is A itself: cleared
    assert second["value"] is None and second["row"] == [] and second["style"] == {"display": "none"}
    assert "ring" not in [o["value"] for o in second["options"]]
    second = page.compare_update("algorithm", "double_binary_tree", values())
    assert second["value"] is no_update and second["style"] == {} and second["note"].startswith("B takes")
    assert [column.children.id for column in second["row"]] == ["coll-cmp-timeline", "coll-cmp-parts"]  # graphs only when shown
    assert shown["timeline"].layout.meta["columns"] == ["A: ring", "B: double_binary_tree"]
    first, other = shown["parts"].layout.meta["parts"]
    assert first["total"] == pytest.approx(run_collective(CollectiveScenario.from_dict(data)).time_s, rel=1e-9)
    assert other["total"] > first["total"] and "mostly bandwidth" in second["note"]
    assert second["note"].startswith("B takes 2.83x the time of A")


def test_simulate_fills_every_panel():
    shown = page.simulate(scenario_of(), "step")
    assert set(shown) == set(page.RUN)
    assert shown["job"] is no_update  # small: answered directly, no background job
    assert shown["topology"].layout.meta["step"] is None
    assert shown["caption"].startswith("Inputs, before any message. 14 steps")  # the player's first frame
    assert shown["notice"].startswith("Simulated all_reduce/ring on 8 ranks")
    assert shown["summary"][0].children[1].children == "5.355 ms"
    assert shown["player"]["steps"] == list(range(14)) and shown["step_max"] == 14 and shown["step"] is no_update  # already at 0
    assert shown["rank_gantt"].data and shown["link_gantt"].data and shown["breakdown"].data


def test_simulate_keeps_the_last_figures_on_bad_input():
    shown = page.simulate(None, "step")
    assert "Fix the highlighted inputs" in shown["notice"]
    assert all(value is no_update for name, value in shown.items() if name != "notice")


def test_simulate_large_scenarios_say_how():
    shown = page.simulate(scenario_of(ranks="1024", chunks="4", topology="ring"), "step")  # above the background cap
    assert "not simulated" in shown["notice"].lower() and "collsim sim collective" in shown["notice"]  # ring topology: no closed form
    assert shown["player"] is None and shown["job"] is no_update


def test_medium_scenarios_become_a_background_job():
    data = scenario_of(ranks="256")
    shown = page.simulate(data, "step")
    job = shown["job"]
    assert "in the background" in shown["notice"] and all(shown[name] is no_update for name in page.PANELS if name != "notice")
    assert job["scenario"] == data and job["messages"] > 0 and job["token"]
    assert page.simulate(data, "step")["job"]["token"] != job["token"]  # every job its own cache key
    direct = page.simulate(data, "step", background=False)  # no manager: closed form
    assert "closed form" in direct["notice"].lower() and direct["job"] is no_update
    reports = []
    shown = page.simulate_in_background(reports.append, {**job_for(data)})
    assert set(shown) == set(page.PANELS)
    assert shown["notice"].startswith("Simulated all_reduce/ring on 256 ranks")
    assert shown["player"]["aggregate"] and len(shown["player"]["layout"]["groups"]) == 9  # a sample of ranks, the rest summed
    assert reports[0][0] == "0" and reports[-1][0] == "100"
    with pytest.raises(PreventUpdate):
        page.simulate_in_background(reports.append, None)
    assert "Cancelled" in page.cancelled(1)


def job_for(data: dict) -> dict:
    return {"scenario": data, "color_by": "step", "messages": None, "token": "t"}


def test_run_with_progress_matches_run_collective():
    scenario, _ = model.parse_form({**model.DEFAULTS, "ranks": "64", "algorithm": "recursive_doubling"})
    seen = []
    outcome = model.run_with_progress(scenario, lambda fraction, text: seen.append(fraction))
    expected = run_collective(scenario)
    assert outcome.result.time_s == expected.time_s and outcome.result.message_count == expected.message_count
    assert outcome.result.steps == expected.steps and seen[0] == 0.0 and seen[-1] == 1.0


def test_player_callbacks():
    player = page.simulate(scenario_of(ranks="4"), "step")["player"]
    shown = page.show_step(2, player)
    assert shown["topology"].layout.meta["step"] == 1 and shown["caption"].startswith("Step 2 of 6 (reduce-scatter):")
    assert page.show_step(0, None)["caption"] == ""
    assert page.toggle_play(1, True, 2, 6) == {"disabled": False, "label": "Pause", "step": no_update}
    assert page.toggle_play(2, False, 3, 6) == {"disabled": True, "label": "Play", "step": no_update}


def test_algorithm_options_follow_the_op():
    options, value = page.algorithms_for_op("broadcast", "ring")
    assert "binomial" in [o["value"] for o in options] and value == options[0]["value"]
    options, value = page.algorithms_for_op("all_reduce", "ring")
    assert value == "ring"


def test_crossover_panel():
    figure = page.crossover_panel(scenario_of())
    assert any(trace.name == "ring (current)" for trace in figure.data)
    assert page.crossover_panel(None) is no_update


def test_downloads():
    data = scenario_of(ranks="4")
    yaml_file = page.download(ids.COLL_DL_YAML, data)["file"]
    assert yaml_file["filename"].endswith(".yaml") and "ranks: 4" in yaml_file["content"]
    json_file = page.download(ids.COLL_DL_JSON, data)["file"]
    assert json.loads(json_file["content"])["ranks"] == 4
    csv_file = page.download(ids.COLL_DL_CSV, data)["file"]
    lines = csv_file["content"].splitlines()
    assert lines[0].startswith("rank,peer,resource,kind,start_s")
    assert len(lines) > 24
    trace = page.download(ids.COLL_DL_TRACE, data)["file"]
    assert any(event.get("ph") == "X" for event in json.loads(trace["content"])["traceEvents"])
    assert page.download(ids.COLL_DL_CSV, None) == {"file": None, "error": "fix the scenario first"}


def test_guard_turns_crashes_into_messages():
    def broken(x):
        raise RuntimeError("boom")

    assert guarded(broken, lambda message: message)(1) == "internal error in broken: RuntimeError: boom"
    assert answer(("a", "b"), a=1) == {"a": 1, "b": no_update}
    with pytest.raises(KeyError):
        answer(("a",), c=1)  # a name the callback does not have is a mistake, not a silent no_update


def test_pages_are_registered_with_dash_pages_and_route_from_the_registry():
    import dash

    from webapp.app import create_app, route
    from webapp.pages import PAGES

    create_app(background=False)
    paths = {entry["path"]: entry["name"] for entry in dash.page_registry.values()}
    assert {spec.path: spec.title for spec in PAGES}.items() <= paths.items()
    for spec in PAGES:
        assert route(spec.path, "") is not None
    assert "Page not found" in str(route("/nowhere", ""))


def test_an_address_that_is_no_page_answers_404_and_the_pages_200():
    import contextvars

    from webapp.app import create_app
    from webapp.pages import PAGES

    def answers() -> dict[str, tuple[int, bytes]]:
        client = create_app(background=False, warm=False).server.test_client()
        paths = [spec.path + "?ranks=16" for spec in PAGES] + ["/ddp/", "/nowhere", "/_dash-layout", "/assets/style.css"]
        return {path: (response.status_code, response.data) for path in paths for response in [client.get(path)]}

    # in a context of its own: a request sets Dash's current app in the caller's context
    # (dash._get_app.with_app_context), and later tests would read this app without background jobs
    got = contextvars.copy_context().run(answers)
    assert {path: status for path, (status, _) in got.items()} == {
        **{spec.path + "?ranks=16": 200 for spec in PAGES},
        "/ddp/": 200,
        "/nowhere": 404,
        "/_dash-layout": 200,
        "/assets/style.css": 200,
    }
    assert b"_dash-config" in got["/nowhere"][1]  # the shell still loads and says "Page not found"


# ----------------------------------------------------------------------------- DDP

from webapp.pages.ddp import page as ddp  # noqa: E402


def ddp_form(**changes: str) -> dict[str, str]:
    from webapp.pages.ddp import model as ddp_model

    return {**ddp_model.DEFAULTS, **changes}


def ddp_check(uploaded=None, **changes: str) -> tuple:
    """(DDP scenario dict, messages with text by field, URL query) of the page's validation."""
    from webapp.pages.ddp import model as ddp_model

    checked = ddp.validate(uploaded, ddp_form(**changes))
    return checked["ddp"], {name: text for name, text in checked["errors"].items() if text}, ddp_model.query_from_form(ddp_form(**changes))


def test_ddp_validate_and_simulate():
    data, messages, search = ddp_check()
    assert data is not None and not messages and search == ""
    shown = ddp.simulate(data)
    assert set(shown) == set(ddp.DDP_OUTPUTS)
    assert "148 parameters" in shown["notice"]
    assert [trace.name for trace in shown["overhead"].data][:1] == ["simulated"]
    assert {bar for bar in shown["strategies"].data[0].y} == {"naive", "flat", "overlap", "bucketed"}
    text = str(shown["explain"])
    assert "equal buckets ready at a uniform rate" in text and "b* = sqrt(s w o)" in text
    assert "transformer.wte.weight" in text and "gets its gradient last" in text
    assert "ddp-bstar" in str(shown["cards"])
    data, *_ = ddp_check(comm_model="network", preset="resnet18")
    assert "ddp-bstar" not in str(ddp.simulate(data)["cards"])  # o and w are no inputs there: no b* card
    data, messages, _ = ddp_check(ranks="x", w="0")
    assert data is None and "ranks" in messages and messages["w"].startswith("w:")
    assert ddp.simulate(None)["notice"].startswith("Fix the highlighted inputs")


def test_ddp_recommends_the_caps_within_one_percent_of_the_best():
    data, *_ = ddp_check()
    shown = ddp.simulate(data)
    near = shown["overhead"].layout.meta["near_best"]
    assert near[0] <= near[1]
    card = str(shown["cards"])
    assert "Bucket caps within 1 % of best" in card and "–" in card
    assert "Recommended bucket cap" in str(shown["explain"])


def test_ddp_compute_inputs_reach_the_step():
    data, messages, search = ddp_check()
    assert data["mfu"] == "measured" and data["precision"] == "bf16" and data["tokens"] == 8192 and data["backward_time_s"] is None
    words = ddp.simulate(data)["compute"]
    assert "(backward) MFU" in words and "989.4 TFLOP/s bf16 peak" in words and "the MFU was measured: NVIDIA H100" in words
    stated, *_ = ddp_check(mfu="40%")
    assert stated["mfu"] == 0.4 and "40% MFU" in ddp.simulate(stated)["compute"]
    uploaded, messages, _ = ddp_check(uploaded=[{"name": "w", "numel": 1 << 20}])
    assert uploaded is None and messages["mfu"].startswith("mfu: measured: no measurement"), messages
    typed, messages, search = ddp_check(backward="120ms", forward="40ms", optimizer="5ms", precision="fp32")
    assert not messages and "backward=120ms" in search
    summary = ddp.simulate(typed)
    assert "backward 120 ms" in summary["compute"] and "forward 40 ms" in summary["compute"]
    for field, value, text in (("mfu", "140%", "at most 1"), ("tokens", "many", "tokens"), ("forward", "fast", "forward")):
        data, messages, _ = ddp_check(**{field: value})
        assert data is None and text in messages[field], messages
    ckpt, *_ = ddp_check(checkpointing="on")
    training = ddp.validate(None, ddp_form(checkpointing="on"))["training"]
    assert ckpt["activation_checkpointing"] and training["activation_checkpointing"]
    assert "ddp-train-activations" in str(ddp.simulate_training(training)["cards"])


def test_ddp_strategies_are_defined_on_the_page():
    layout = str(ddp.layout(""))
    for name in ("naive", "flat", "overlap", "bucketed"):
        assert f"{name}: " in layout or f"{name} (PyTorch DDP): " in layout
    assert "ddp-strategy-words" in layout


def test_ddp_bucket_slider_is_log_scale():
    assert ddp.sync_bucket(20)["value"] == str(2**20)
    assert ddp.sync_bucket(24.5)["label"] == "bucket cap 22.63 MiB"


def test_ddp_uploads():
    good = {"params": [{"name": "a.weight", "shape": [4, 4], "numel": 16}, {"name": "a.bias", "numel": 4}]}
    encode = lambda text: "data:application/json;base64," + base64.b64encode(text.encode()).decode()  # noqa: E731
    loaded = ddp.upload(encode(json.dumps(good)), "model.json")
    assert len(loaded["store"]) == 2 and loaded["error"] == "" and "2 parameters" in loaded["info"]
    assert ddp.upload(encode("{not json"), "model.json")["error"].startswith("model.json: malformed JSON")
    assert "'params' list" in ddp.upload(encode('{"weights": []}'), "model.json")["error"]
    assert "numel" in ddp.upload(encode('{"params": [{"name": "a", "numel": -3}]}'), "model.json")["error"]
    assert "not a text file" in ddp.upload("data:application/octet-stream;base64,//79", "x.bin")["error"]
    data, messages, _ = ddp_check(loaded["store"], mfu="40%")  # an uploaded model has no measured MFU
    assert data["params"] and not messages


# ----------------------------------------------------------------------------- compare


def test_compare_update_on_the_sample_data():
    from real import overlays
    from webapp.pages.compare import page as compare

    groups = overlays.fittable_groups(overlays.open_results(None))
    shown = compare.update(compare.group_id(groups[0]), "mean", "ring")
    assert set(shown) == set(compare.OUTPUTS)
    assert "group=" in compare.query(compare.group_id(groups[0]), shown)  # the page's own query
    assert shown["fit"].data and shown["residuals"].data
    assert shown["cards"][0].children[1].children  # o with its interval
    # every group the dropdown offers works with every statistic; dropdowns follow what is shown
    for group in groups:
        key = compare.group_id(group)
        assert compare.group_of(key)["op"] == group["op"]
        for asked in overlays.STATS:
            shown = compare.update(key, asked, "ring")
            stat = shown["stat"]
            assert stat in [option["value"] for option in shown["stat_options"]] and f"stat={stat}" in compare.query(key, shown)
            assert "no measurements" not in shown["notice"] and "Simulated ring" in shown["notice"]
            if stat != asked:
                assert shown["notice"].startswith(f"These runs carry no {asked} time")


def test_compare_page_keeps_its_answers_until_the_store_file_changes(tmp_path):
    """The bootstrap fits are kept per store contents: the same question is answered from the
    cache, and a store file that changes (size or time) is read again."""
    import os

    from real import overlays
    from real.store import SAMPLE_FILES, _data_file, open_store
    from webapp.pages.compare import page as compare

    path = tmp_path / "results.sqlite"
    store = open_store(path)
    for name in SAMPLE_FILES:
        store.load(json.loads(_data_file(name).read_text()))
    store.connection.commit()
    store.connection.close()
    key = compare.group_id(overlays.fittable_groups(overlays.open_results(str(path)))[0])
    first = compare._update(str(path), compare._stamp(str(path)), key, "mean", "ring")
    assert compare._update(str(path), compare._stamp(str(path)), key, "mean", "ring") is first
    info = os.stat(path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 10**9))  # the file changed
    again = compare._update(str(path), compare._stamp(str(path)), key, "mean", "ring")
    assert again is not first and again["notice"] == first["notice"]  # read again, same answer
    assert compare._stamp(None) == ()


def test_compare_ddp_overlay():
    from real import overlays
    from webapp.pages.compare import page as compare

    configs = overlays.ddp_configs(overlays.open_results(None))
    assert configs, "the sample data has DDP timelines"
    shown = compare.overlay(configs[-1])
    kinds = shown["figure"].layout.meta["kinds"]
    assert any(kind.startswith("measured") for kind in kinds) and any(kind.startswith("simulated") for kind in kinds)
    assert "fitted" in shown["note"]


def test_ddp_network_model_and_its_limit():
    data, messages, _ = ddp_check(comm_model="network", preset="resnet18")
    assert data is not None and not messages
    assert "comm model network" in ddp.simulate(data)["notice"]
    data, messages, _ = ddp_check(comm_model="network", ranks="512")
    assert data is None
    assert messages["ranks"].startswith("ranks: simulating every bucket's all-reduce on 512 ranks")
    data, messages, _ = ddp_check(strategy="naive")
    assert "strategy naive" in ddp.simulate(data)["notice"]


def test_route_rebuilds_only_for_queries_the_page_did_not_write():
    from webapp.app import route

    with pytest.raises(PreventUpdate):
        route("/", "?ranks=16", "?ranks=16", search_only=True)  # the page's own write: keep the page
    assert route("/", "?ranks=4", "?ranks=16", search_only=True) is not None  # Back/Forward: rebuild


def test_hardware_picker_fills_the_network_and_the_crossover_shows_nccls_pick():
    filled = page.apply_hardware("dgx-h100", "20", "all_reduce", "ring")
    assert filled.pop("algorithm_options")[0] == {"label": "NCCL's pick", "value": "nccl"}
    assert filled.pop("nodes_style") == {} and filled.pop("note").startswith("Hardware dgx-h100: 2 nodes of 8 GPUs = 16 ranks")
    assert filled == {"nodes": "2", "ranks": "16", "topology": "two_level", "gpus_per_node": "8", "bandwidth": "50GB/s", "latency": "14us",
                      "intra_bandwidth": "450GB/s", "intra_latency": "3.4us", "reduce_bandwidth": "", "algorithm": "nccl",
                      "chunks": "", "sharing": "auto", "nccl_algo": "", "nccl_proto": ""}  # fmt: skip
    data = scenario_of(hardware="dgx-h100", **filled)
    assert data is not None and data["hardware"] == "dgx-h100"
    figure = page.crossover_panel(data)
    nccl = next(trace for trace in figure.data if trace.name == "NCCL's pick (its model)")
    assert len(nccl.x) == len(model.CROSSOVER_SIZES) and nccl.text[0].split("/")[0] in ("Ring", "Tree", "NVLS", "CollNet")
    cleared = page.apply_hardware("", "8", "all_reduce", "nccl")  # no preset: no NCCL's pick, the op's first algorithm
    assert cleared["algorithm"] == "ring" and cleared["ranks"] is no_update and "NCCL's pick" not in str(cleared["algorithm_options"])
    errors = page.validate(values(hardware="dgx-h100", **{**filled, "topology": "switch"}))["errors"]
    assert "builds two_level with 8 ranks per node" in errors["hardware"]


def test_the_page_is_served_without_babel_polyfill_but_with_regenerator_runtime():
    """@babel/polyfill is dropped from the index (~0.1 s of a first load, and a slow
    String.prototype.trim); the lazy loaders' regeneratorRuntime comes from the assets instead,
    before dash-renderer and dcc. The browser tests load every page this way."""
    from webapp.app import create_app

    html = create_app(background=False).server.test_client().get("/").get_data(as_text=True)
    assert "polyfill@" not in html
    scripts = [line for line in html.splitlines() if "<script src=" in line]
    runtime = next(i for i, line in enumerate(scripts) if "regenerator-runtime.js" in line)
    renderer = next(i for i, line in enumerate(scripts) if "dash_renderer" in line)
    core = next(i for i, line in enumerate(scripts) if "dash_core_components.v" in line)
    assert runtime < renderer and runtime < core


# ----------------------------------------------------------------------------- what an update sends (issue 21, speed)


def test_revision_follows_the_data_only():
    import plotly.graph_objects as go

    from webapp.figures import common

    def figure(y: list, title: str = "t", *more):
        return common.revised(go.Figure(data=[go.Scatter(x=[1, 2], y=y)], layout={"title": {"text": title}}), *more)

    assert figure([1, 2]).layout.datarevision == figure([1, 2], "another title").layout.datarevision
    assert figure([1, 2]).layout.datarevision != figure([1, 3]).layout.datarevision
    assert figure([1, 2], "t", 5).layout.datarevision != figure([1, 2], "t", None).layout.datarevision


def test_player_and_crossover_carry_revisions_that_skip_unchanged_redraws():
    small, large = (page.validate({**model.DEFAULTS, "size": size})["scenario"] for size in ("32MiB", "64MiB"))
    a, b = page.simulate(small, "step", False, 0), page.simulate(large, "step", False, 0)
    for name in ("topology", "buffers"):  # the player at its inputs draws the same at any size
        assert a[name].layout.datarevision == b[name].layout.datarevision
    assert a["breakdown"].layout.datarevision != b["breakdown"].layout.datarevision
    one, two = page.crossover_panel(small), page.crossover_panel(large)
    assert one.layout.datarevision == two.layout.datarevision  # only the size marker moved
    assert one.layout.shapes[0].x0 != two.layout.shapes[0].x0
    beyond = page.validate({**model.DEFAULTS, "size": "64GiB"})["scenario"]  # outside the swept sizes: the axis must grow
    assert page.crossover_panel(beyond).layout.datarevision != two.layout.datarevision


def test_second_column_sends_nothing_when_nothing_is_compared_and_nothing_changed():
    form = {**model.DEFAULTS}
    first = page.compare_update("algorithm", None, form)
    shown = {"options": first["options"], "style": first["style"]}
    with pytest.raises(PreventUpdate):
        page.compare_update("algorithm", None, {**form, "size": "1MiB"}, shown)
    other_op = page.compare_update("algorithm", None, {**form, "op": "broadcast", "algorithm": "binomial"}, shown)
    assert other_op["options"] != first["options"]  # the choices changed: sent


def test_ddp_layout_comes_drawn_and_validation_at_load_runs_nothing():
    from webapp.pages.ddp import model as ddp_model

    view = ddp.first_view(ddp_model.form_from_query(""))
    assert view["ddp"] and view["training"] and view["ddp_shown"]["timeline"].data
    layout = ddp.layout("")
    stores = {c.id: c.data for c in layout.children if getattr(c, "id", None) in (ddp_ids.DDP_SCENARIO, ddp_ids.TRAIN_SCENARIO)}
    assert stores[ddp_ids.DDP_SCENARIO] == view["ddp"] and stores[ddp_ids.TRAIN_SCENARIO] == view["training"]
    assert "ddp-step-time" in str(layout) and "ddp-train-step" in str(layout)  # the cards are there
    stored = json.loads(json.dumps([view["ddp"], view["training"]]))  # as the stores hand them back
    at_load = ddp.validate(None, ddp_model.form_from_query(""), *stored)
    assert at_load["ddp"] is no_update and at_load["training"] is no_update
    assert ddp.first_view(ddp_model.form_from_query("?ranks=1")) == {}  # not valid: the callbacks say why
    changed = ddp.validate(None, ddp_model.form_from_query("?ranks=16"), *stored)
    assert changed["ddp"]["ranks"] == 16 and changed["training"] is not no_update
