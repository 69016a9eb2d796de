"""The Hangs page's callbacks without a browser: every canonical case shows its verdict, a
deadlock draws its cycle, a mutation changes the verdict, and bad input (YAML, a mutation, a
timeout, an upload, a link) gets one message in its own slot."""

from __future__ import annotations

import base64
from urllib.parse import urlencode

import pytest

from sim.errors import CollsimError
from sim.hang import CASES, explain
from webapp.pages.hang import figures, ids, model, page

# what each canonical case is (sim/hang/cases.py's words: a size or op mismatch, a party that
# never comes, a cycle)
VERDICTS = {
    "size_mismatch": "mismatch",
    "op_mismatch": "mismatch",
    "skipped": "missing_party",
    "swapped": "deadlock",
    "unpaired_send": "missing_party",
    "rank_dies": "missing_party",
}
CYCLE3 = """
groups: {a: [0, 1], b: [1, 2], c: [0, 2]}
ranks:
  - [{op: all_reduce, count: 8, group: a}, {op: all_reduce, count: 8, group: c}]
  - [{op: all_reduce, count: 8, group: b}, {op: all_reduce, count: 8, group: a}]
  - [{op: all_reduce, count: 8, group: c}, {op: all_reduce, count: 8, group: b}]
"""


def shown(text: str, case: str = "", **form: str) -> dict:
    return page.explain_form(text, case, **{"mutation": "", "spec": "", "timeout": "", **form})


def words(component) -> str:
    """The text of a Dash component tree."""
    if isinstance(component, (list, tuple)):
        return " ".join(words(c) for c in component)
    if hasattr(component, "children"):
        return words(component.children) if component.children is not None else ""
    return str(component)


def test_the_canonical_cases_are_the_ones_checked_here():
    assert set(VERDICTS) == set(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_every_canonical_case_shows_its_verdict_and_summary(name: str):
    result = shown(model.case_text(name), name)
    report = explain({key: value for key, value in CASES[name].items() if key != "about"})
    verdict = words(result["verdict"])
    assert verdict.startswith(VERDICTS[name].replace("_", " ") + " : ") and report.summary in verdict
    assert result["errors"] == {name: "" for name in page.ERROR_FIELDS} and result["notice"] == ""


def test_the_page_comes_drawn_for_a_case_in_its_link():
    tree = page.layout("?case=rank_dies")
    found = {c.id: c for c in tree._traverse() if getattr(c, "id", None)}
    assert found[ids.field_id("program")].value == model.case_text("rank_dies")
    assert words(found[ids.VERDICT].children).startswith("missing party")
    assert "rank 0 timeout" in words(found[ids.tool_id("nccl")].children)


def _cycle_trace(figure) -> tuple:
    return next(trace for trace in figure.data if trace.name == "waits for (the cycle)")


def test_a_deadlock_draws_its_cycle_in_red():
    figure = shown(model.case_text("swapped"), "swapped")["graph"]
    assert len([x for x in _cycle_trace(figure).x if x is None]) == 2  # two edges: 0 -> 1 and 1 -> 0
    assert [a.arrowcolor for a in figure.layout.annotations] == [figures.CYCLE_COLOR] * 2


def test_a_typed_three_rank_deadlock_draws_its_cycle():
    result = shown(CYCLE3)
    figure = result["graph"]
    assert words(result["verdict"]).startswith("deadlock")
    assert "cycle 0 → 1 → 2 → 0" in figure.layout.title.text
    assert len([x for x in _cycle_trace(figure).x if x is None]) == 3
    table = words(result["ranks"])
    assert "a #1 all_reduce" in table and "blocked" in table


def test_a_missing_party_is_ringed_not_a_cycle():
    figure = shown(model.case_text("rank_dies"), "rank_dies")["graph"]
    assert [x for x in _cycle_trace(figure).x] == []
    dead = next(trace for trace in figure.data if trace.name == "dead")
    assert list(dead.text) == ["1"] and list(dead.marker.line.width) == [4]
    assert "missing party 1" in figure.layout.title.text


def test_a_mutation_breaks_or_mends_a_program():
    mended = shown(model.case_text("size_mismatch"), "size_mismatch", mutation="resize", spec="1:0:1024")
    assert words(mended["verdict"]).startswith("completes")
    assert "nothing: no rank blocks" in words(mended["nccl"])
    broken = shown(model.case_text("swapped"), "swapped", mutation="swap", spec="1:0:1")
    assert words(broken["verdict"]).startswith("completes")  # rank 1 now calls a then b, as rank 0 does
    died = shown(model.case_text("swapped"), "swapped", mutation="dies", spec="0:0")
    assert words(died["verdict"]).startswith("missing party")


def test_the_tools_tabs_show_each_tools_lines_and_the_flight_recorder():
    result = shown(model.case_text("size_mismatch"), "size_mismatch")
    assert "Watchdog caught collective operation timeout" in words(result["nccl"])
    assert "Detected mismatch between collectives on ranks" in words(result["nccl_detail"])
    assert "classification: mismatch" in words(result["flight"]) and "SIZE_OR_SYNTAX_MISMATCH" in words(result["flight"])


@pytest.mark.parametrize(
    ("text", "starts"),
    [
        ("ranks: [[", "program: malformed YAML"),
        ("a: &x [1]\nb: *x\n", "program: "),  # an alias: refused by the strict loader
        ("ranks: [[{op: all_reduce}], [{op: frobnicate}]]", "ranks: rank 1 call 0: op 'frobnicate'"),
        ("", "program: empty"),
        ("- 1\n- 2\n", "programs: give a mapping"),
    ],
)
def test_a_bad_program_shows_one_message_under_the_box(text: str, starts: str):
    result = shown(text)
    errors = {name: message for name, message in result["errors"].items() if message}
    assert list(errors) == ["program"] and errors["program"].startswith(starts), errors
    assert result["notice"] == page.FIX and result["graph"] is not None  # the last figure is kept (no_update)


def test_a_program_over_the_bound_is_refused_before_it_is_parsed():
    result = shown("#" * (model.MAX_PROGRAM_CHARS + 1))
    assert "documents up to" in result["errors"]["program"]


@pytest.mark.parametrize(
    ("form", "slot", "says"),
    [
        ({"mutation": "skip", "spec": ""}, "spec", "skip needs RANK:CALL"),
        ({"mutation": "skip", "spec": "7:0"}, "spec", "rank '7' must be a whole number from 0 to 1"),
        ({"mutation": "dtype", "spec": "0:0:float8"}, "spec", "dtype 'float8' is not one of"),
        ({"mutation": "explode", "spec": "0:0"}, "mutation", "'explode' is not one of skip"),
        ({"timeout": "soon"}, "timeout", "give a number of seconds from 0.001 to 1e+07"),
        ({"timeout": "0"}, "timeout", "from 0.001"),
    ],
)
def test_a_bad_mutation_or_timeout_shows_in_its_slot(form: dict, slot: str, says: str):
    errors = {name: message for name, message in shown(model.case_text("swapped"), "swapped", **form)["errors"].items() if message}
    assert list(errors) == [slot] and says in errors[slot], errors


def test_the_timeout_reaches_the_tools_lines():
    result = shown(model.case_text("skipped"), "skipped", timeout="5")
    assert "Timeout(ms)=5000" in words(result["nccl"]) and "Process-group timeout: 5 s" in words(result["verdict"])


def test_an_unknown_case_in_a_link_is_named_in_its_slot():
    checked = model.validate(model.form_from_query("?case=nonsense&program=" + "ranks%3A%20%5B%5B%5D%5D"))
    assert checked["errors"]["case"].startswith("case: unknown 'nonsense'")


def test_an_edited_program_rides_in_the_link_and_comes_back():
    assert model.linked_program(model.case_text("swapped"), "swapped") == ("", "")
    linked, note = model.linked_program(CYCLE3, "swapped")
    assert linked == CYCLE3 and note == ""
    query = "?" + urlencode({"program": linked})
    tree = page.layout(query)
    box = next(c for c in tree._traverse() if getattr(c, "id", None) == ids.field_id("program"))
    assert box.value == CYCLE3
    too_long, note = model.linked_program("#" * (model.MAX_LINK_CHARS + 1), "swapped")
    assert too_long == "" and "too long for the link" in note


def _upload(text: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(text).decode()


def test_an_upload_fills_the_box_and_a_bad_one_is_refused():
    filled = page.fill_box("swapped", ids.UPLOAD, contents=_upload(CYCLE3.encode()), filename="cycle.yaml")
    assert filled["box"] == CYCLE3 and filled["upload_error"] == ""
    with pytest.raises(CollsimError, match="not a text file"):
        model.upload_text(_upload(b"\xff\xfe\x00"), "x.bin")
    with pytest.raises(CollsimError, match="the page takes programs up to 262,144"):
        model.upload_text(_upload(b"#" * (model.MAX_PROGRAM_CHARS + 10)), "big.yaml")
    with pytest.raises(CollsimError, match="larger than 256 KiB"):  # refused before it is decoded
        model.upload_text(_upload(b"#" * (2 * model.MAX_PROGRAM_CHARS)), "big.yaml")


def test_a_link_key_the_page_does_not_read_is_named():
    tree = page.layout("?case=skipped&ranks=16")
    note = next(c for c in tree._traverse() if getattr(c, "id", None) == ids.LINK_KEYS)
    assert "Ignored in the link: ranks" in words(note.children)


def test_a_graph_of_thousands_of_edges_is_drawn_bounded_and_says_so():
    text = "ranks:\n" + "".join("- [{op: all_reduce, count: 8}]\n" if rank < 64 else "- []\n" for rank in range(128))
    result = shown(text)
    figure = result["graph"]
    drawn = sum(len([x for x in trace.x if x is None]) for trace in figure.data if str(trace.name).startswith("waits for"))
    assert drawn == figures.MAX_EDGES and f"2,000 of its {64 * 64:,} edges drawn" in figure.layout.title.text
    assert "64, 65, 66, 67, 68, 69, 70, 71, ... (64 ranks)" in figure.layout.title.text
    assert "... and 0 more" not in words(result["nccl"]) and words(result["nccl"]).count("\nrank ") == page.MAX_LINES - 1


def test_uploaded_flight_recorder_dumps_fill_the_box_and_are_explained(tmp_path):
    """Dumps in torch's format (as sim.hang.flight writes them for the rank_dies case: rank 1 dead,
    so no dump of it) read back into programs whose verdict names rank 1 as the missing party."""
    from sim.hang import parse_programs
    from sim.hang.flight import write_dumps

    paths = write_dumps(parse_programs({k: v for k, v in CASES["rank_dies"].items() if k != "about"}), tmp_path)
    filled = page.fill_box("rank_dies", ids.DUMPS, dumps=[_upload(p.read_bytes()) for p in paths], dump_names=[p.name for p in paths])
    assert filled["dumps_error"] == ""
    result = shown(filled["box"])
    assert words(result["verdict"]).startswith("missing party") and "rank 0" in words(result["nccl"])
    assert filled["box"].rstrip().endswith("- - {op: die, count: 0, dtype: float32, group: world}")  # rank 1 left no dump: it died


def test_a_dump_that_names_a_class_is_refused_in_the_dumps_slot():
    import pickle

    class Evil:
        def __reduce__(self):
            return (print, ("ran",))

    with pytest.raises(CollsimError, match="flight-recorder dumps: .*not a flight-recorder pickle"):
        model.dumps_text([_upload(pickle.dumps(Evil()))], ["nccl_trace_rank_0"])
    assert page._upload_failed("flight-recorder dumps: x")["dumps_error"] == "flight-recorder dumps: x"
    with pytest.raises(CollsimError, match="ends in its rank"):
        model.dumps_text([_upload(b"x")], ["trace.pkl"])
