"""The Collectives page's views beside the run: the side by side (the same inputs with another
algorithm, topology or sharing mode) and the algorithm crossover, with the sizes the page's budget
leaves out simulated in the background on request. Plain functions (tested directly), wired in
:func:`register`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dash import Input, Output, State, ctx, html, no_update
from dash.exceptions import PreventUpdate

from sim.collective import explore
from sim.collective.plan import resolve
from sim.collective.player import rank_intervals
from sim.errors import CollsimError
from sim.units import format_time
from webapp import collective as model
from webapp import helper
from webapp.callbacks import answer, guarded
from webapp.components import graph
from webapp.figures import collectives as draw
from webapp.figures import common
from webapp.pages.collectives import ids
from webapp.pages.collectives.layout import compare_choices, scenario_of, validate

__all__ = [
    "CROSSOVER_MORE_MESSAGES",
    "compare_form",
    "compare_panel",
    "compare_update",
    "crossover_in_background",
    "crossover_note",
    "crossover_panel",
    "crossover_view",
    "register",
]

SECOND = ("options", "value", "row", "note", "style")  # the second column (side by side)


def _outputs(names: dict[str, tuple[str, str]], duplicate: bool = False) -> dict[str, Output]:
    return {name: Output(*target, allow_duplicate=duplicate) for name, target in names.items()}


def crossover_panel(data: dict | None, max_messages: int | None = None) -> Any:
    """The crossover figure for the scenario ``data``: on the page's budget (the helper's, cached),
    or on ``max_messages`` (the background run's)."""
    if not data:
        return no_update
    try:
        scenario = scenario_of(data)
        if max_messages is None:
            rows = helper.crossover(scenario)
        else:
            from sim.collective.budget import check_crossover

            check_crossover(scenario, model.CROSSOVER_SIZES)
            rows = explore.crossover(scenario, model.CROSSOVER_SIZES, max_messages)
    except CollsimError as error:
        return common.note_figure(str(error), "Algorithm crossover")
    figure = draw.crossover_figure(rows, scenario.size_bytes, scenario.algorithm, model.nccl_picks(scenario))
    # a new size only moves the size marker (redrawn alone), unless it lies outside the swept
    # sizes: then the axis range must grow with it, and the whole figure is redrawn
    swept = [row["size_bytes"] for row in rows if row["time_s"] is not None]
    outside = bool(swept) and not min(swept) <= scenario.size_bytes <= max(swept)
    return common.revised(figure, scenario.size_bytes if outside else None)


CROSSOVER_MORE_MESSAGES = model.BACKGROUND_MAX_MESSAGES  # the crossover's budget in the background (~25 s here)


def crossover_view(data: dict | None, more: bool = False) -> dict[str, Any]:
    """The crossover (:func:`crossover_panel`; with ``more``, on the background run's budget)
    and the line under it: the algorithms some of whose sizes were not simulated, and the button
    that simulates them in the background, shown only then."""
    figure = crossover_panel(data, CROSSOVER_MORE_MESSAGES if more else None)
    if figure is no_update:
        return {"figure": no_update, "note": no_update, "more_style": no_update}
    return {"figure": figure, **crossover_note(figure, more)}


def crossover_note(figure: Any, more: bool = False) -> dict[str, Any]:
    """The line under the crossover for ``figure``: which algorithms miss sizes, and the button."""
    beyond = ((figure.layout.meta if hasattr(figure, "layout") else None) or {}).get("beyond_budget") or []
    if not beyond:
        return {"note": "", "more_style": {"display": "none"}}
    names = ", ".join(beyond)
    if more:  # the background run's budget did not reach them either
        limit = f"{CROSSOVER_MORE_MESSAGES:,}"
        return {"note": f"Some sizes of {names} are too large even for the background run ({limit} message-equivalents).",
                "more_style": {"display": "none"}}  # fmt: skip
    return {"note": f"Not simulated here (too many messages for an answer at once): some sizes of {names}.", "more_style": {}}


def crossover_in_background(clicks: int | None, form: dict[str, Any]) -> dict[str, Any]:
    """The button under the crossover: every size simulated, on the background run's budget."""
    if not clicks:
        raise PreventUpdate
    return crossover_view(validate(form)["scenario"], more=True)


def compare_panel(value: str | None, compare_field: str | None, data: dict | None, other: dict | None = None) -> dict[str, Any]:
    """Both runs on one time axis, and the time of each split into latency, bandwidth, reduction,
    overhead and contention (:func:`sim.collective.explore.decompose`), the difference named in words.
    ``other``: B's scenario as the form gives it with the field changed (:func:`compare_form`);
    without it, A's scenario with only that field replaced."""
    if not data:
        raise PreventUpdate
    if not value:
        return {"note": "", "style": {"display": "none"}}
    name = compare_field or "algorithm"
    a = scenario_of(data)
    b = scenario_of(other) if other else a.replace(**{name: value})
    plans = [resolve(s) for s in (a, b)]  # each preset loaded once, each topology built once for its estimate and its run
    for s, plan in zip((a, b), plans):
        if model.estimate_cost(s, plan) > model.MAX_SIM_MESSAGES:
            return {
                "note": f"{getattr(s, name)} is too large to simulate side by side here; use the command line",
                "style": {"display": "none"},
            }
    labels = [f"A: {getattr(a, name)}", f"B: {value}"]
    runs = [explore.run(s, plan=plan)[0] for s, plan in zip((a, b), plans)]
    timeline = draw.side_by_side_figure([(label, *rank_intervals(run)) for label, run in zip(labels, runs)], [s.ranks for s in (a, b)])
    parts = draw.parts_figure(labels, [explore.decompose(s) for s in (a, b)])
    ratio = runs[1].time_s / runs[0].time_s if runs[0].time_s else float("inf")
    times = f"{format_time(runs[1].time_s)} vs {format_time(runs[0].time_s)}"
    note = f"B takes {ratio:.3g}x the time of A ({times}); {parts.layout.meta['summary']}"
    return {"timeline": timeline, "parts": parts, "note": note, "style": {}}


def compare_form(form: dict[str, Any], compare_field: str | None, value: str | None) -> tuple[dict | None, str]:
    """(B's scenario, "") for the form with ``compare_field`` set to ``value``, read as the form
    reads it (so B is what the page, and ``collsim sim collective`` with those flags, runs for
    that choice: an algorithm chosen beside NCCL's pick runs on 1 chunk, not on the pick's
    channels), or (None, why) when that form is not valid; (None, "") with nothing compared."""
    if not value:
        return None, ""
    checked = validate({**form, compare_field or "algorithm": value})
    if checked["scenario"] is None:
        why = "; ".join(message for message in checked["errors"].values() if message)
        return None, f"B ({value}) cannot run with these inputs: {why}"
    return checked["scenario"], ""


def compare_update(
    compare_field: str | None, value: str | None, form: dict[str, Any], shown: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The second column in one request, on the form's fields (validated as by :func:`validate`):
    its choices (:func:`compare_choices`), then both runs (:func:`compare_panel`) for the value
    kept, as the row's two graphs; the row is empty and hidden while none is picked.

    ``shown``: the choices and the row's style on the page; when nothing is compared and both
    would stay as they are (a new size, say), nothing is sent (each output set costs the page's
    renderer a pass over every component)."""
    data = validate(form)["scenario"]
    options, new_value = compare_choices(compare_field, data, value)
    hidden = {"display": "none"}
    if shown is not None and not value and new_value is no_update and shown.get("options") == options and shown.get("style") == hidden:
        raise PreventUpdate
    value = value if new_value is no_update else new_value
    other, problem = compare_form(form, compare_field, value)
    if problem:
        return {"options": options, "value": new_value, "row": [], "note": problem, "style": hidden}
    shown = compare_panel(value, compare_field, data, other)
    row = []
    if not shown["style"]:  # something to compare: its two graphs
        row = [
            html.Div(graph(ids.COLL_CMP_TIMELINE, figure=shown["timeline"]), className="col wide"),
            html.Div(graph(ids.COLL_CMP_PARTS, figure=shown["parts"]), className="col narrow"),
        ]
    return {"options": options, "value": new_value, "row": row, "note": shown["note"], "style": shown["style"]}


def register(app: Any, form_inputs: Callable[..., dict[str, Any]]) -> None:
    """The second column and the crossover, both on the form's fields (``form_inputs``, as the simulation)."""
    second = {"options": (ids.COLL_CMP_VALUE, "options"), "value": (ids.COLL_CMP_VALUE, "value"), "row": (ids.COLL_CMP_ROW, "children"),
              "note": (ids.COLL_CMP_NOTE, "children"), "style": (ids.COLL_CMP_ROW, "style")}  # fmt: skip
    app.callback(
        output=_outputs(second),
        inputs={
            "compare_field": Input(ids.COLL_CMP_FIELD, "value"),
            "value": Input(ids.COLL_CMP_VALUE, "value"),
            "form": form_inputs(),
            "shown": {"options": State(ids.COLL_CMP_VALUE, "options"), "style": State(ids.COLL_CMP_ROW, "style")},
        },
    )(guarded(compare_update, lambda message: answer(SECOND, row=[], note=message, style={"display": "none"})))

    def crossover_form(form: dict[str, Any], drawn: bool | None) -> Any:
        if ctx.triggered_id is None and drawn:  # at load: the layout came with it (layout.first_crossover)
            raise PreventUpdate
        return crossover_view(validate(form)["scenario"])

    crossover = {"figure": (ids.COLL_CROSSOVER, "figure"), "note": (ids.COLL_CROSSOVER_NOTE, "children"),
                 "more_style": (ids.COLL_CROSSOVER_MORE, "style")}  # fmt: skip
    failed = lambda message: {"figure": common.note_figure(message, "Algorithm crossover"), "note": "", "more_style": {"display": "none"}}  # noqa: E731
    app.callback(output=_outputs(crossover), inputs={"form": form_inputs(), "drawn": State(ids.COLL_CROSSOVER_DRAWN, "data")})(
        guarded(crossover_form, failed)
    )
    manager = getattr(app, "_background_manager", None)  # the large scenarios' background run, for the sizes left out
    background = {"background": True, "manager": manager, "interval": 500, "cancel": [Input(ids.COLL_SCENARIO, "data"), Input(ids.URL, "pathname")],
                  "running": [(Output(ids.COLL_CROSSOVER_MORE, "disabled"), True, False),
                              (Output(ids.COLL_CROSSOVER_MORE, "children"), "Simulating in the background…", "Simulate them in the background")]}  # fmt: skip
    app.callback(
        output=_outputs(crossover, duplicate=True),
        inputs={"clicks": Input(ids.COLL_CROSSOVER_MORE, "n_clicks"), "form": form_inputs(State)},
        prevent_initial_call=True,
        **(background if manager is not None else {}),
    )(guarded(crossover_in_background, failed))
