"""The Failures and checkpoints page's figures: goodput against the checkpoint interval, and the
elastic choice (plain data in, Plotly figures out; no Dash, no I/O)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

__all__ = ["curve_figure", "elastic_figure"]

MARKS = (("young_interval_s", "Young", "#2ca02c", "dot"), ("daly_interval_s", "Daly", "#9467bd", "dash"),
         ("simulated_interval_s", "simulated optimum", "#ff7f0e", "dashdot"), ("interval_s", "used", "#d62728", "solid"))  # fmt: skip


def _minutes(seconds: list[float]) -> list[float]:
    return [s / 60 for s in seconds]


def curve_figure(result: dict[str, Any], curve: dict[str, Any]) -> go.Figure:
    """Daly's expected goodput (line) and the simulated one (dots with their standard error)
    against the interval, with Young's, Daly's and the simulated optimum and the interval used."""
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=_minutes(curve["interval_s"]), y=[100 * g for g in curve["goodput"]], mode="lines",
                                name="expected (Daly's model)", line={"color": "#1f77b4"}))  # fmt: skip
    figure.add_trace(go.Scatter(
        x=_minutes(curve["simulated_interval_s"]), y=[100 * g for g in curve["simulated_goodput"]], mode="markers", name="simulated",
        marker={"color": "#ff7f0e", "size": 8}, error_y={"type": "data", "array": [100 * e for e in curve["simulated_stderr"]]},
    ))  # fmt: skip
    for key, name, colour, dash in MARKS:
        figure.add_vline(x=result[key] / 60, line={"color": colour, "dash": dash, "width": 1.5})
        figure.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"{name}: {result[key] / 60:.3g} min",
                                    line={"color": colour, "dash": dash}))  # fmt: skip
    figure.update_layout(
        title={"text": "Goodput against the checkpoint interval", "font": {"size": 14}}, height=400,
        xaxis={"title": "checkpoint interval (min)", "type": "log"}, yaxis={"title": "goodput (%)"},
        margin={"l": 60, "r": 20, "t": 50, "b": 50}, legend={"orientation": "v", "x": 1.02, "y": 1},
    )  # fmt: skip
    return figure


def elastic_title(elastic: dict[str, Any]) -> str:
    """What the bars say when no spare is at hand (the first bar, a spare at hand, is always the best)."""
    choice = "continue on the nodes left than wait" if elastic["better"] == "shrink" else "wait for a spare than continue on the nodes left"
    if elastic["shrink_goodput"] is None:
        choice = "wait for a spare (no node is left to continue on)"
    return f"A failure takes {elastic['nodes_lost']} node(s); with no spare at hand, better to {choice}"


def elastic_figure(result: dict[str, Any]) -> go.Figure:
    """Goodput at the interval used: restart on the same nodes at once (a spare is there), wait for a
    spare node, or continue on the nodes left and grow back."""
    elastic = result["elastic"]
    bars = [
        ("restart at once (spare at hand)", result["goodput"]),
        (f"wait {elastic['replace_wait_s'] / 60:.3g} min for a spare", elastic["wait_goodput"]),
    ]
    if elastic["shrink_goodput"] is not None:
        bars.append((f"continue on fewer nodes ({100 * elastic['shrink_throughput']:.4g} % throughput)", elastic["shrink_goodput"]))
    figure = go.Figure(go.Bar(x=[100 * g for _, g in bars], y=[name for name, _ in bars], orientation="h",
                              text=[f"{100 * g:.1f} %" for _, g in bars], textposition="auto", marker={"color": ["#1f77b4", "#7f7f7f", "#2ca02c"][: len(bars)]}))  # fmt: skip
    figure.update_layout(
        title={"text": elastic_title(elastic), "font": {"size": 14}},
        height=260, xaxis={"title": "goodput (%)", "range": [0, 100]}, yaxis={"autorange": "reversed"},
        margin={"l": 260, "r": 20, "t": 50, "b": 50},
    )  # fmt: skip
    return figure
