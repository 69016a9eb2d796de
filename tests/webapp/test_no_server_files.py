"""No URL or form value makes the explorer open a server path it was not given at start-up
(issue 36: ``/?topology=/etc/passwd`` opened that file, and ``placement=<a YAML file>`` echoed its
content in the error). Every field that can name a file is tried with a real file holding a
secret: an audit hook records every ``open`` of it, and no answer may carry its content."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sim import files
from sim.errors import CollsimError
from webapp import collective as model
from webapp.pages.collectives import callbacks
from webapp.pages.ddp import model as ddp_model
from webapp.pages.ddp import page as ddp

SECRET = "COLLSIM-SECRET-7f3a"  # in the files' names: the audit hook notes any open of them
CONTENT = "COLLSIM-CONTENT-91bd"  # in the files' content: no answer may carry it
_opened: list[str] = []


def _audit(event: str, args: tuple) -> None:  # audit hooks cannot be removed: this one only notes our secret files
    if event == "open" and args and SECRET.lower() in str(args[0]).lower():
        _opened.append(str(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def secrets(tmp_path):
    """Real files each field would accept on the command line, their names marked with SECRET."""
    folder = tmp_path / f"{SECRET}-dir"
    folder.mkdir()
    graph = {"directed": False, "multigraph": False, "graph": {}, "nodes": [{"id": 0}, {"id": 1}, {"id": "sw", "note": CONTENT}],
             "links": [{"source": 0, "target": "sw", "bandwidth": 1e10}, {"source": 1, "target": "sw", "bandwidth": 1e10}]}  # fmt: skip
    paths = {
        "graph": folder / f"{SECRET}.json",
        "placement": folder / f"{SECRET}-placement.yaml",
        "preset": folder / f"{SECRET}-preset.yaml",
        "params": folder / f"{SECRET}-params.yaml",
    }
    paths["graph"].write_text(json.dumps(graph))
    paths["placement"].write_text(f"# {CONTENT}\nendpoints: [{CONTENT}]\n")
    paths["preset"].write_text(f"name: {CONTENT}\n")
    paths["params"].write_text(f"params: [{{name: {CONTENT}, numel: 4}}]\n")
    _opened.clear()
    yield {name: str(path) for name, path in paths.items()}
    files.allow_folders([])


def _collectives(form: dict[str, str]) -> str:
    """Validate and simulate the Collectives form as the server does; all answers as text."""
    with files.refusing_paths():
        checked = callbacks.validate({**model.DEFAULTS, **form})
        shown = json.dumps(checked, default=str)
        if checked["scenario"]:
            shown += json.dumps(callbacks.simulate(checked["scenario"], "step", background=False), default=str)
    return shown


COLLECTIVE_FIELDS = [
    ("topology", "graph", {"ranks": "2"}),
    ("placement", "placement", {"topology": "two_level", "ranks": "4", "gpus_per_node": "2"}),
    ("hardware", "preset", {}),
]


@pytest.mark.parametrize(("field", "secret", "others"), COLLECTIVE_FIELDS, ids=[case[0] for case in COLLECTIVE_FIELDS])
def test_a_collectives_field_naming_a_server_file_is_refused_unopened(secrets, field, secret, others):
    shown = _collectives({**others, field: secrets[secret]})
    assert _opened == [], f"{field} opened {_opened}"
    assert CONTENT not in shown
    with files.refusing_paths():
        errors = callbacks.validate({**model.DEFAULTS, **others, field: secrets[secret]})["errors"]
    assert "not allowed" in errors[field] or "unknown" in errors[field], errors


DDP_FIELDS = [("hardware", "preset"), ("preset", "params"), ("gpu", "preset")]


@pytest.mark.parametrize(("field", "secret"), DDP_FIELDS, ids=[case[0] for case in DDP_FIELDS])
def test_a_ddp_field_naming_a_server_file_is_refused_unopened(secrets, field, secret):
    form = {**ddp_model.DEFAULTS, field: secrets[secret]}
    with files.refusing_paths():
        checked = ddp.validate(None, form)
        shown = json.dumps(checked, default=str)
        if checked["ddp"]:
            shown += json.dumps(ddp.simulate(checked["ddp"]), default=str)
    assert _opened == [], f"{field} opened {_opened}"
    assert CONTENT not in shown
    assert checked["ddp"] is None  # refused, not run on something else


def test_the_same_values_still_open_on_the_command_line(secrets):
    """The gate is the server's: the CLI opens the user's own files as before."""
    from sim.network.graph_files import load_graph
    from sim.network.topology import read_placement

    assert load_graph(secrets["graph"]).ranks == 2
    with pytest.raises(CollsimError, match="endpoint"):  # opened and read: its content is not a list of ranks
        read_placement(secrets["placement"])
    assert _opened


def test_a_file_of_a_folder_given_at_start_up_opens_by_its_name_only(secrets):
    folder = Path(secrets["graph"]).parent
    files.allow_folders([folder])
    name = Path(secrets["graph"]).name
    shown = _collectives({"topology": name, "ranks": "2"})
    assert _opened and all(Path(path).resolve() == Path(secrets["graph"]).resolve() for path in _opened)
    assert "not allowed" not in shown
    outside = folder.parent / f"{SECRET}-outside.json"
    outside.write_text(Path(secrets["graph"]).read_text())
    _opened.clear()
    for escape in (secrets["graph"], f"../{outside.name}", "../../etc/passwd", ""):  # absolute, or out of the folder
        with files.refusing_paths(), pytest.raises(CollsimError, match="not allowed|empty file name"):
            files.user_file(escape, "topology", "switch")
    assert _opened == []


def test_the_ui_refuses_a_files_folder_that_is_not_one(tmp_path):
    from click.testing import CliRunner

    from webapp.cli import ui

    done = CliRunner().invoke(ui, ["--files", str(tmp_path / "missing"), "--port", "0"])
    assert done.exit_code != 0
    assert "--files" in str(done.exception or done.output) and "not a folder" in str(done.exception or done.output)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("query", ["/?topology={graph}&ranks=2", "/?topology=two_level&ranks=4&gpus_per_node=2&placement={placement}",
                                   "/?hardware={preset}", "/ddp?hardware={preset}"])  # fmt: skip
def test_a_link_naming_a_server_file_shows_a_message_and_nothing_of_the_file(page, live_server, secrets, query):
    from playwright.sync_api import expect

    page.goto(live_server + query.format(**secrets))
    expect(page.locator(".error", has_text="not allowed").first).to_be_visible(timeout=30_000)
    page.wait_for_timeout(500)
    assert _opened == [], _opened
    assert CONTENT not in page.content()


def test_a_file_the_server_writes_itself_still_opens_while_links_are_refused():
    """The Sim vs measured page replays a measured DDP profile through a temporary file of its
    own: refused with every user path, its DDP timeline said "no DDP measurements"."""
    with files.refusing_paths(), files.own_temporary_folder() as folder:
        mine = folder / "profile.json"
        mine.write_text("{}")
        assert files.user_file(str(mine), "profile", "a file") == mine.resolve()
    with files.refusing_paths(), pytest.raises(CollsimError, match="not allowed"):
        files.user_file(str(mine), "profile", "a file")  # outside its block: refused like any path


def test_the_sim_vs_measured_ddp_timeline_replays_under_refusal():
    from real import overlays

    store = overlays.open_results(None)
    with files.refusing_paths():
        shown = overlays.ddp_overlay(store, overlays.ddp_configs(store)[0])
    assert shown["rows"] and "fitted to" in shown["note"]
