"""The six canonical hang cases on real gloo ranks (CPU): the explainer's predicted outcome and
torch's message match what each rank really reports, with and without DETAIL."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from real.hang_check import run_case  # noqa: E402
from sim.hang import CASES, explain  # noqa: E402

TIMEOUT_S = 3.0
OUTCOME = {"error": {"error"}, "abort": {"died"}, "timeout": {"error"}}  # a gloo timeout raises


def _key_text(message: str) -> str:
    """The part of a predicted message that torch prints verbatim (ours may add an explanation)."""
    return message.split(" (")[0].split(" / ")[0] if message.startswith("Connection") else message


@pytest.mark.slow
@pytest.mark.parametrize("detail", [False, True], ids=["plain", "detail"])
@pytest.mark.parametrize("name", list(CASES))
def test_real_gloo_ranks_report_what_the_explainer_predicts(name: str, detail: bool) -> None:
    report = explain(CASES[name], timeout_s=TIMEOUT_S)
    real = run_case(CASES[name], detail, timeout_s=TIMEOUT_S, limit_s=40.0)
    predicted = {line.rank: line for line in report.lines("gloo_detail" if detail else "gloo")}
    assert predicted, "the explainer predicts a failure for every canonical case"
    for rank, line in predicted.items():
        outcome = real[rank]
        assert outcome.status in OUTCOME[line.outcome], (rank, line, outcome)
        seen = outcome.error or outcome.stderr_tail
        if line.outcome == "error" and line.message.startswith("Connection"):
            assert "by peer" in seen, (rank, seen)
        else:
            for part in _key_text(line.message).split(" Original exception: "):  # torch puts a newline and a source path between
                assert part in seen, (rank, line.message, seen)
    for rank, outcome in enumerate(real):  # ranks the explainer leaves unblocked are not killed while blocked
        if rank not in predicted:
            assert outcome.status in ("completed", "stalled", "died"), (rank, outcome)
