"""Flight-recorder dumps written by collsim are read by torch's own analyzer, which names the
same culprit; collsim reads dumps back and explains them."""

from __future__ import annotations

import logging

import pytest

from sim.hang import CASES, explain, parse_programs
from sim.hang.flight import DUMP_PREFIX, read_dumps, write_dumps


def _torch_analyzer():
    pytest.importorskip("torch")
    try:
        from torch.distributed.flight_recorder.fr_trace import main
    except ImportError as error:
        pytest.skip(f"this torch has no flight-recorder analyzer (torch.distributed.flight_recorder): {error}")
    return main


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("size_mismatch", "Culprit rank 1; Error type: SIZE_OR_SYNTAX_MISMATCH"),
        ("op_mismatch", "Culprit rank 1; Error type: COLLECTIVE_TYPE_MISMATCH"),
        ("skipped", "missing ranks: {1}"),
    ],
)
def test_torchs_analyzer_names_the_culprit_collsim_names(name: str, expected: str, tmp_path, caplog) -> None:
    main = _torch_analyzer()
    write_dumps(parse_programs(CASES[name]), tmp_path)
    with caplog.at_level(logging.INFO):
        main(["--prefix", DUMP_PREFIX, str(tmp_path)])
    culprits = explain(CASES[name]).flight_recorder["culprits"]
    assert expected in caplog.text
    assert str(sorted(culprits)[0]) in expected


def test_dumps_read_back_give_the_same_verdict(tmp_path) -> None:
    write_dumps(parse_programs(CASES["op_mismatch"]), tmp_path)
    assert explain(read_dumps(tmp_path)).verdict == "mismatch"


def test_a_folder_without_dumps_is_refused(tmp_path) -> None:
    from sim.errors import CollsimError

    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(CollsimError, match="no dump files"):
        read_dumps(tmp_path)
    import os
    import pickle

    (tmp_path / "rank_0").write_bytes(pickle.dumps(os.getcwd))  # a pickle that names a function: never called
    with pytest.raises(CollsimError, match="plain data only"):
        read_dumps(tmp_path)
    (tmp_path / "rank_0").write_bytes(b"not a pickle")
    with pytest.raises(CollsimError, match="not a flight-recorder pickle"):
        read_dumps(tmp_path)


def test_dumps_naming_a_huge_rank_are_refused_before_any_work(tmp_path) -> None:
    import pickle

    from sim.errors import CollsimError

    (tmp_path / "rank_99999999").write_bytes(pickle.dumps({"entries": [], "pg_config": {}, "version": "2.10"}))
    with pytest.raises(CollsimError, match="up to 1,024 ranks"):
        read_dumps(tmp_path)


def test_ranks_that_stop_with_no_one_waiting_hang_nobody(tmp_path) -> None:
    write_dumps(parse_programs({"ranks": [[{"op": "all_reduce"}], [{"op": "all_reduce"}]]}), tmp_path)
    report = explain(read_dumps(tmp_path))  # each rank's dump ends in a stall: alive, issuing no more
    assert report.verdict == "completes" and report.summary == "every call completes; no rank waits for another"
