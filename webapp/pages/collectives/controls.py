"""The step player's controls on the Collectives page: Play / Pause, the Play timer's tick and
period at the chosen speed, previous / next. Plain functions of the controls' values; the
callbacks that wire them are in :mod:`webapp.pages.collectives.callbacks`."""

from __future__ import annotations

import textwrap
from typing import Any

from dash import no_update
from dash.exceptions import PreventUpdate

from webapp.pages.collectives import ids
from webapp.pages.collectives.layout import TICK_MS


def toggle_play(clicks: int | None, disabled: bool, position: int | None = None, maximum: int | None = None) -> dict[str, Any]:
    """Play / Pause. Play at the last step starts again from the inputs (position 0)."""
    playing = not disabled
    if playing:
        return {"disabled": True, "label": "Play", "step": no_update}
    at_end = maximum is not None and int(position or 0) >= int(maximum or 0)
    return {"disabled": False, "label": "Pause", "step": 0 if at_end else no_update}


def tick(_: int, position: int | None, maximum: int | None) -> dict[str, Any]:
    """Next slider position while playing; at the last step the player stops there (Play
    becomes Play again) instead of starting over."""
    position, maximum = int(position or 0), int(maximum or 0)
    if position >= maximum:
        return {"step": no_update, "disabled": True, "label": "Play"}
    last = position + 1 >= maximum
    return {"step": position + 1, "disabled": True if last else no_update, "label": "Play" if last else no_update}


def step_by(trigger: str | None, position: int | None, maximum: int | None) -> int:
    """Previous / next: one step back or on, kept within 0..maximum."""
    if trigger not in (ids.COLL_PREV, ids.COLL_NEXT):
        raise PreventUpdate
    position, maximum = int(position or 0), int(maximum or 0)
    moved = position - 1 if trigger == ids.COLL_PREV else position + 1
    if not 0 <= moved <= maximum:
        raise PreventUpdate
    return moved


def tick_interval(speed: float | None) -> int:
    """The Play timer's period (ms) at ``speed`` (0.5x: twice as long per step)."""
    return round(TICK_MS / float(speed or 1))


def no_player_reason(result: Any) -> str:
    """Why a run (None: none yet) has no step to play, in lines that fit the player's card."""
    if result is not None and result.truncated:
        text = "The run's records were cut at max_events; the step player needs every message."
    elif result is not None and not result.messages:
        text = ("This run sends no message between ranks: the switch adds the GPUs' copies and multicasts "
                "the sum (NVLink SHARP), so there is no step to play.")  # fmt: skip
    else:
        text = "The step player draws a simulated run (its messages recorded one by one)."
    return "<br>".join(textwrap.wrap(text, 48))
