"""Small layout helpers shared by the pages: a labelled input with its error slot, graphs, cards."""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from webapp import ids, urlstate

# The modebar camera saves SVG (vector, for papers); the page's PNG/SVG buttons offer both.
GRAPH_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "svg", "filename": "collsim-figure"},
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


def field(name: str, label: str, hint: str, component: Any, page: str = "coll", hidden: bool = False) -> html.Div:
    """A label, the input, a hint, and the error message slot right under the input."""
    return html.Div(
        [
            html.Label(label, htmlFor=ids.field_id(name, page), className="label"),
            component,
            html.Div(id=ids.error_id(name, page), className="error", role="alert"),
            html.Div(hint, className="hint"),
        ],
        id=ids.field_box_id(name, page),
        className="field",
        style={"display": "none"} if hidden else {},
    )


def hardware_dropdown(field_id: str, value: str, names: list[str]) -> dcc.Dropdown:
    """The hardware preset picker both pages share: "none" (the network set by hand) or a preset."""
    options = [{"label": "none: set the network below", "value": ""}] + [{"label": name, "value": name} for name in names]
    return dcc.Dropdown(id=field_id, options=urlstate.with_unknown(options, value), value=value, clearable=False)


def graph(graph_id: str, height: int = 360, figure: Any = None) -> dcc.Graph:
    """A graph whose height follows its figure's layout.height (``height`` until the first one,
    when no ``figure`` is given)."""
    if figure is None:
        figure = {"layout": {"height": height, "xaxis": {"visible": False}, "yaxis": {"visible": False}}}
    return dcc.Graph(id=graph_id, config=GRAPH_CONFIG, figure=figure)


def number_card(title: str, value: str, card_id: str) -> html.Div:
    return html.Div([html.Div(title, className="card-title"), html.Div(value, id=card_id, className="card-value")], className="card number")
