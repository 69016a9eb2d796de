"""The six canonical hang cases on real gloo ranks (CPU): the explainer's predicted outcome and
torch's message match what each rank really reports, with and without DETAIL."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from real.hang_check import check_case, message_matches, run_ddp_unused  # noqa: E402
from sim.hang import CASES, explain  # noqa: E402
from sim.hang.training import reducer_error  # noqa: E402

RECORDED = {"skipped": "missing_party", "swapped": "deadlock", "op_mismatch": "mismatch"}  # case: flight-recorder verdict


@pytest.fixture(scope="module")
def recorded_runs(tmp_path_factory):
    """``run(name)``: the plain run of a case of RECORDED, made once with the flight recorder on,
    as (check_case's rows, the folder of the ranks' dumps): the explainer's test and the dumps'
    test read the same run (the recorder changes neither what torch says nor when)."""
    runs: dict[str, tuple[list[dict], Path]] = {}

    def run(name: str) -> tuple[list[dict], Path]:
        if name not in runs:
            data = {key: value for key, value in CASES[name].items() if key != "about"}
            folder = tmp_path_factory.mktemp(f"flight_{name}")
            runs[name] = (check_case(data, False, timeout_s=_timeout_for(data), limit_s=40.0, flight_dir=str(folder)), folder)
        return runs[name]

    return run


@pytest.mark.slow
@pytest.mark.parametrize("detail", [False, True], ids=["plain", "detail"])
@pytest.mark.parametrize("name", list(CASES))
def test_real_gloo_ranks_report_what_the_explainer_predicts(name: str, detail: bool, recorded_runs) -> None:
    data = {key: value for key, value in CASES[name].items() if key != "about"}
    if not detail and name in RECORDED:
        rows, _ = recorded_runs(name)
    else:
        rows = check_case(data, detail, timeout_s=_timeout_for(data), limit_s=40.0)
    assert any(row["predicted"] != "no error" for row in rows), "every canonical case fails somewhere"
    for row in rows:
        assert row["match"], f"rank {row['rank']}: predicted {row['predicted']} {row['message']!r}, torch {row['status']}: {row['seen']!r}"


def _timeout_for(data: dict) -> float:
    """The process groups' timeout: 3 s where a rank is predicted to wait it out (it is in the
    message), 15 s where every rank ends by an abort or a lost peer first, so that a rank
    descheduled on a loaded host cannot turn a lost peer into a timeout (a CI run saw that)."""
    outcomes = {line.outcome for line in explain(data, timeout_s=3.0).lines("gloo")}
    return 3.0 if "timeout" in outcomes else 15.0


@pytest.mark.slow
@pytest.mark.parametrize(("small", "large"), [(1, 4096), (1000, 1003)])
def test_gloos_abort_names_the_segment_sizes_of_uneven_buffers(small: int, large: int) -> None:
    data = {"ranks": [[{"op": "all_reduce", "count": small}], [{"op": "all_reduce", "count": large}]]}
    rows = check_case(data, detail=False, timeout_s=_timeout_for(data), limit_s=40.0)
    assert rows[0]["predicted"] == "abort" and all(row["match"] for row in rows), rows


@pytest.mark.slow
def test_an_unused_parameter_on_one_rank_gives_ddps_reducer_error_there_and_a_lost_peer_elsewhere() -> None:
    real = run_ddp_unused(unused_rank=1, timeout_s=3.0, limit_s=40.0)
    assert real[1].status == "error" and reducer_error(1, [2, 3]) in real[1].error
    # what --unused-param makes of a one-bucket step: rank 1 never launches it and dies at the next forward
    report = explain({"ranks": [[{"op": "all_reduce", "count": 40}], [{"op": "die"}]]}, timeout_s=3.0)
    (line,) = report.lines("gloo")
    assert real[0].status == "error" and message_matches(line.message, real[0].error)


@pytest.mark.slow
def test_a_message_match_needs_torchs_words() -> None:
    assert message_matches(
        "Timed out waiting 3000ms for recv operation to complete", "[x.cc:78] Timed out waiting 3000ms for recv operation to complete"
    )
    assert not message_matches(
        "Timed out waiting 3000ms for recv operation to complete", "Timed out waiting 3000ms for send operation to complete"
    )
    assert message_matches("Rank 1 reached. Original exception: Timed out", "Rank 1 reached.\n Original exception: \n[x.cc:1] Timed out")


@pytest.mark.slow
@pytest.mark.parametrize(("name", "verdict"), list(RECORDED.items()))
def test_real_gloo_flight_recorder_dumps_are_read_and_explained(name: str, verdict: str, recorded_runs) -> None:
    """gloo's dumps key the default group by '' and list no subgroup's ranks (torch's own
    analyzer stops there with a KeyError); collsim still reads them and gives the verdict."""
    from sim.hang.flight import read_dumps

    data = {key: value for key, value in CASES[name].items() if key != "about"}
    _, folder = recorded_runs(name)
    report = explain(read_dumps(folder))
    assert report.verdict == verdict, report.summary
    assert report.flight_recorder == explain(data).flight_recorder or name == "swapped"  # gloo's subgroup ids are '1', '2', not ours
