"""A rank's error reaches the user with its words, even when torch's message starts on a new
line (torch.distributed.pipelining raises RuntimeError("\\n  Failed to run stage backward...")),
which the launcher once cut to "RuntimeError:"."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from real.launcher import LaunchConfig, LaunchError, launch  # noqa: E402


def _fails(context, payload):
    raise RuntimeError("\n  Failed to run stage backward for stage 1\n  more")


@pytest.mark.slow
def test_a_message_starting_on_a_new_line_keeps_its_words():
    with pytest.raises(LaunchError, match="Failed to run stage backward for stage 1"):
        launch(_fails, None, LaunchConfig(world_size=2, timeout_s=60))
