"""The six canonical hang cases on real gloo ranks (CPU): the explainer's predicted outcome and
torch's message match what each rank really reports, with and without DETAIL."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from real.hang_check import check_case, message_matches  # noqa: E402
from sim.hang import CASES  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("detail", [False, True], ids=["plain", "detail"])
@pytest.mark.parametrize("name", list(CASES))
def test_real_gloo_ranks_report_what_the_explainer_predicts(name: str, detail: bool) -> None:
    data = {key: value for key, value in CASES[name].items() if key != "about"}
    rows = check_case(data, detail, timeout_s=3.0, limit_s=40.0)
    assert any(row["predicted"] != "no error" for row in rows), "every canonical case fails somewhere"
    for row in rows:
        assert row["match"], row


def test_a_message_match_needs_torchs_words() -> None:
    assert message_matches(
        "Timed out waiting 3000ms for recv operation to complete", "[x.cc:78] Timed out waiting 3000ms for recv operation to complete"
    )
    assert not message_matches(
        "Timed out waiting 3000ms for recv operation to complete", "Timed out waiting 3000ms for send operation to complete"
    )
    assert message_matches("Rank 1 reached. Original exception: Timed out", "Rank 1 reached.\\n Original exception: \\n[x.cc:1] Timed out")
