"""A background job of the explorer ends by itself past its limit (issue 22: one was still at
98 % CPU eight minutes after its tab closed)."""

from __future__ import annotations

import pytest

from sim.errors import CollsimError
from sim.scenario import CollectiveScenario


def test_a_background_job_stops_at_its_time_limit_with_the_command_line_to_use(monkeypatch):
    import sim.collective.budget as budget
    from webapp import collective as model

    monkeypatch.setattr(budget, "BACKGROUND_MAX_SECONDS", 0.0)
    scenario = CollectiveScenario.from_dict(
        {"op": "all_reduce", "algorithm": "double_binary_tree", "ranks": 64, "size": "64MiB", "bandwidth": "25GB/s", "chunks": 16}
    )
    reports = []
    with pytest.raises(CollsimError, match="stopped after 0 s.*collsim sim collective"):
        model.run_with_progress(scenario, lambda fraction, text: reports.append(fraction))
    assert reports and max(reports) < 1.0
