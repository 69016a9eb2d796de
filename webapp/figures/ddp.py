"""Figures of the DDP page: the step timeline, overhead vs bucket size, strategies, and the
training-step section (FSDP / ZeRO timelines and memory)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from sim.units import format_size, format_time
from webapp.figures.common import PALETTE, base_figure, byte_axis, note_figure, time_unit


def ddp_timeline(events: Sequence[dict[str, Any]], title: str = "DDP step: backward compute and bucket all-reduces") -> go.Figure:
    """Compute and communication lanes of one rank, bars coloured by bucket; gradient-ready
    instants as ticks on their own lane."""
    rows = [row for row in events if row.get("rank", 0) in (0, -1)] or list(events)
    if not rows:
        return note_figure("no events", title)
    factor, unit = time_unit(max(row["end_s"] for row in rows))
    figure = base_figure(title, 320)
    kinds = [
        kind
        for kind in dict.fromkeys(row["kind"] for row in rows)
        if kind == "grad_ready" or any(r["end_s"] > r["start_s"] for r in rows if r["kind"] == kind)
    ]
    figure = base_figure(title, max(260, 90 + 36 * len(kinds)))
    for kind in kinds:
        mine = [row for row in rows if row["kind"] == kind]
        colors = [PALETTE[int(row.get("bucket", 0)) % len(PALETTE)] if int(row.get("bucket", -1)) >= 0 else "#9ecae1" for row in mine]
        hover = [
            f"{kind} {row.get('name') or ''}<br>bucket {row.get('bucket')}, {format_size(row.get('bytes', 0))}<br>{format_time(row['start_s'])} → {format_time(row['end_s'])}"
            for row in mine
        ]
        if kind.endswith("grad_ready"):
            figure.add_trace(
                go.Scatter(
                    x=[row["start_s"] * factor for row in mine],
                    y=[kind] * len(mine),
                    mode="markers",
                    marker={"symbol": "line-ns-open", "size": 14, "color": colors, "line": {"width": 2}},
                    hovertext=hover,
                    hoverinfo="text",
                    name=kind,
                )
            )
            continue
        figure.add_trace(
            go.Bar(
                y=[kind] * len(mine),
                x=[(row["end_s"] - row["start_s"]) * factor for row in mine],
                base=[row["start_s"] * factor for row in mine],
                orientation="h",
                name=kind,
                marker={"color": colors, "line": {"width": 0.5, "color": "white"}},
                hovertext=hover,
                hoverinfo="text",
            )
        )
    figure.update_xaxes(title=f"time ({unit})")
    figure.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=kinds, automargin=True)  # lane names whole
    figure.update_layout(barmode="overlay", showlegend=False, meta={"kinds": kinds})
    return figure


def overhead_figure(
    curves: dict[str, Sequence[tuple[float, float]]],
    optimum: tuple[float, float] | None = None,
    current: float | None = None,
    measured: Sequence[tuple[float, float]] = (),
    near: tuple[float, float] | None = None,
) -> go.Figure:
    """Overhead (comm end - backward end) vs bucket size: named curves, measured points, optimum,
    and ``near``: the caps within 1 % of the best overhead, shaded (the recommendation)."""
    points = [y for curve in curves.values() for _, y in curve] + [y for _, y in measured]
    if not points:
        return note_figure("no overhead curve", "Overhead vs bucket size")
    factor, unit = time_unit(max(points))
    figure = base_figure("Overhead vs bucket size", 380)
    styles = {"simulated": {"width": 3}, "closed form": {"dash": "dash"}, "fitted": {"dash": "dot"}}
    for index, (name, curve) in enumerate(curves.items()):
        figure.add_trace(
            go.Scatter(
                x=[x for x, _ in curve],
                y=[y * factor for _, y in curve],
                mode="lines+markers" if name == "simulated" else "lines",
                name=name,
                line={"color": PALETTE[index], **styles.get(name, {})},
            )
        )
    if measured:
        figure.add_trace(
            go.Scatter(
                x=[x for x, _ in measured],
                y=[y * factor for _, y in measured],
                mode="markers",
                name="measured",
                marker={"size": 9, "color": "black", "symbol": "x"},
            )
        )
    if optimum:
        figure.add_trace(
            go.Scatter(
                x=[optimum[0]],
                y=[optimum[1] * factor],
                mode="markers+text",
                name="optimum",
                marker={"size": 14, "symbol": "star", "color": "#d62728"},
                text=[f"best {format_size(optimum[0])}"],
                textposition="top center",
            )
        )
    if current:
        figure.add_vline(x=current, line={"dash": "dot", "color": "#888"})
    if near:
        figure.add_vrect(x0=near[0], x1=near[1] if near[1] > near[0] else near[0] * 1.05, fillcolor="#2ca02c", opacity=0.15, line_width=0,
                         annotation_text="within 1 % of best", annotation_position="top left")  # fmt: skip
        figure.update_layout(meta={"near_best": list(near)})
    sizes = [x for curve in curves.values() for x, _ in curve] + [x for x, _ in measured]
    figure.update_xaxes(type="log", title="bucket size", **byte_axis(min(sizes), max(sizes)))
    figure.update_yaxes(title=f"overhead ({unit})", rangemode="tozero")
    return figure


def strategy_figure(times: dict[str, dict[str, float]]) -> go.Figure:
    """Overhead per strategy (communication left after backward ends), one readable bar each:
    backward is the same for every strategy, so stacking it would leave the overheads a few pixels."""
    if not times:
        return note_figure("no strategies", "Overhead per strategy")
    overheads = {name: max(row["step_time_s"] - row["backward_end_s"], 0.0) for name, row in times.items()}
    names = sorted(overheads, key=overheads.get)
    factor, unit = time_unit(max(overheads.values()) or 1e-9)
    figure = base_figure("Overhead per strategy (after backward)", 340)
    figure.add_trace(
        go.Bar(
            y=names, x=[overheads[n] * factor for n in names], orientation="h", marker_color="#ff7f0e",
            text=[format_time(overheads[n]) for n in names], textposition="auto", textfont={"size": 13},
            hovertemplate=[f"{n}: overhead {format_time(overheads[n])}, step {format_time(times[n]['step_time_s'])}<extra></extra>" for n in names],
            name="overhead",
        )
    )  # fmt: skip
    figure.update_xaxes(title=f"overhead ({unit})", rangemode="tozero")
    figure.update_yaxes(tickfont={"size": 13})
    figure.update_layout(showlegend=False, meta={"overheads": overheads})
    return figure


# ----------------------------------------------------------------------------- sim vs measured

TRAINING_LANES = {
    "forward": "compute",
    "backward": "compute",
    "optimizer": "compute",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "all_reduce": "all-reduce",
    "comm": "all-reduce",  # ddp / zero1: sim.training.ddp's bucket all-reduces
}
MEMORY_PARTS = (
    ("params_bytes", "params", "#1f77b4"),
    ("grads_bytes", "grads", "#2ca02c"),
    ("optimizer_bytes", "optimizer", "#9467bd"),
    ("unsharded_peak_bytes", "unsharded (peak)", "#ff7f0e"),
    ("master_bytes", "fp32 master weights", "#8c564b"),
    ("activations_bytes", "activations", "#7f7f7f"),
)


def training_timeline(events: Sequence[dict[str, Any]], title: str = "Training step per unit") -> go.Figure:
    """One rank's step from ``FSDPResult.events()``: lanes compute / all-gather / reduce-scatter
    (and all-reduce where the strategy has them), bars coloured by unit, forward and optimizer
    compute drawn lighter than backward."""
    rows = [row for row in events if row.get("kind") in TRAINING_LANES and row["end_s"] > row["start_s"]]
    if not rows:
        return note_figure("no events", title)
    order = ("compute", "all-gather", "reduce-scatter", "all-reduce")
    lanes = [lane for lane in order if any(TRAINING_LANES[row["kind"]] == lane for row in rows)]
    factor, unit = time_unit(max(row["end_s"] for row in rows))
    figure = base_figure(title, max(240, 110 + 44 * len(lanes)))
    for kind in dict.fromkeys(row["kind"] for row in rows):
        mine = [row for row in rows if row["kind"] == kind]
        lane = TRAINING_LANES[kind]
        colors = [PALETTE[int(row.get("bucket", 0)) % len(PALETTE)] if int(row.get("bucket", -1)) >= 0 else "#7f7f7f" for row in mine]
        figure.add_trace(
            go.Bar(
                y=[lane] * len(mine),
                x=[(row["end_s"] - row["start_s"]) * factor for row in mine],
                base=[row["start_s"] * factor for row in mine],
                orientation="h",
                name=kind,
                opacity=0.55 if kind in ("forward", "optimizer") else 1.0,
                marker={"color": colors, "line": {"width": 0.5, "color": "white"}},
                hovertext=[
                    f"{kind} {row.get('name') or ''} (unit {row.get('bucket')})<br>{format_size(row.get('bytes', 0))}<br>"
                    f"{format_time(row['start_s'])} → {format_time(row['end_s'])} ({format_time(row['end_s'] - row['start_s'])})"
                    for row in mine
                ],
                hoverinfo="text",
            )
        )
    figure.update_xaxes(title=f"time ({unit})", rangemode="tozero")
    figure.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=lanes, automargin=True)
    figure.update_layout(
        barmode="overlay", showlegend=False, margin={"l": 110}, meta={"lanes": lanes, "kinds": sorted({row["kind"] for row in rows})}
    )
    return figure


def training_strategies_figure(rows: Sequence[dict[str, Any]], chosen: str | None = None) -> go.Figure:
    """Step time and exposed communication per strategy (rows from ``sim.training.fsdp.compare``),
    grouped horizontal bars; the chosen strategy's label is bold."""
    title = "Step time and exposed comm per strategy"
    if not rows:
        return note_figure("no strategies", title)
    names = [row["sharding"] for row in rows]
    labels = [strategy_label(row, chosen) for row in rows]
    factor, unit = time_unit(max(row["step_time_s"] for row in rows))
    figure = base_figure(title, max(340, 150 + 48 * len(rows)))
    for key, name, colour in (("step_time_s", "step time", "#1f77b4"), ("exposed_comm_s", "exposed comm", "#ff7f0e")):
        figure.add_trace(
            go.Bar(
                y=labels, x=[row[key] * factor for row in rows], orientation="h", name=name, marker_color=colour,
                text=[format_time(row[key]) for row in rows], textposition="auto",
                hovertemplate=[f"{n}: {name} {format_time(row[key])}{_within(row) if key == 'step_time_s' else ''}<extra></extra>"
                               for n, row in zip(names, rows)],
                error_x=_step_whiskers(rows, factor) if key == "step_time_s" else None,
            )
        )  # fmt: skip
    figure.update_xaxes(title=f"time ({unit})", rangemode="tozero")
    figure.update_yaxes(autorange="reversed", automargin=True)
    figure.update_layout(
        barmode="group",
        margin={"l": 110, "b": 90},
        legend={"orientation": "h", "y": -0.3, "traceorder": "normal"},
        meta={
            "step_time_s": dict(zip(names, [r["step_time_s"] for r in rows])),
            "exposed_comm_s": dict(zip(names, [r["exposed_comm_s"] for r in rows])),
        },
    )
    return figure


def _within(row: dict[str, Any]) -> str:
    found = row.get("step_time_interval_s")
    return f" (80 %: {format_time(found[0])} – {format_time(found[1])})" if found else ""


def _step_whiskers(rows: Sequence[dict[str, Any]], factor: float) -> dict[str, Any] | None:
    """Whiskers of the step's 80 % interval on a hardware preset (``step_time_interval_s``), None without one."""
    if not all(row.get("step_time_interval_s") for row in rows):
        return None
    highs = [(row["step_time_interval_s"][1] - row["step_time_s"]) * factor for row in rows]
    lows = [(row["step_time_s"] - row["step_time_interval_s"][0]) * factor for row in rows]
    return {"type": "data", "symmetric": False, "array": highs, "arrayminus": lows, "color": "#333", "thickness": 1.2}


def training_memory_figure(rows: Sequence[dict[str, Any]], chosen: str | None = None) -> go.Figure:
    """Memory per rank per strategy, stacked: parameters, gradients, optimizer state, the peak
    of unsharded (gathered) buffers, fp32 master weights and activations (where the step has them)."""
    has_activations = any(row["memory"].get("activations_bytes") for row in rows)
    title = "Memory per rank" + ("" if has_activations else " (activations not known for this model)")
    if not rows:
        return note_figure("no strategies", title)
    names = [row["sharding"] for row in rows]
    labels = [strategy_label(row, chosen) for row in rows]
    figure = base_figure(title, max(340, 150 + 48 * len(rows)))
    gib = 2**30
    for key, name, colour in MEMORY_PARTS:
        if key in ("master_bytes", "activations_bytes") and not any(row["memory"].get(key) for row in rows):
            continue
        figure.add_trace(
            go.Bar(
                y=labels, x=[row["memory"][key] / gib for row in rows], orientation="h", name=name, marker_color=colour,
                hovertemplate=[f"{n}: {name} {format_size(row['memory'][key])}<extra></extra>" for n, row in zip(names, rows)],
            )
        )  # fmt: skip
    figure.add_trace(
        go.Scatter(
            y=labels, x=[row["memory"]["peak_bytes"] / gib for row in rows], mode="text", name="peak",
            text=[" " + format_size(row["memory"]["peak_bytes"]) + (" — does not fit" if row.get("fits") is False else "") for row in rows],
            textposition="middle right", textfont={"color": ["#c00" if row.get("fits") is False else "#222" for row in rows]},
            showlegend=False, hoverinfo="skip", cliponaxis=False,
        )
    )  # fmt: skip
    capacity = rows[0].get("gpu_memory_bytes")
    top = max([row["memory"]["peak_bytes"] for row in rows] + [capacity or 0]) / gib
    if capacity:  # the GPU's memory: what every bar must stay left of
        figure.add_vline(x=capacity / gib, line={"color": "#c00", "dash": "dash", "width": 2})
        figure.add_annotation(x=capacity / gib, y=1, yref="paper", yanchor="bottom", showarrow=False, font={"color": "#c00"},
                              text=f"GPU memory {format_size(capacity)} ({capacity / 1e9:g} GB)")  # fmt: skip
    else:
        figure.update_layout(title={"text": title + f"<br><sub>{rows[0].get('gpu_memory_note', 'GPU memory unknown')}</sub>"})
    room = 1.8 if any(row.get("fits") is False for row in rows) else 1.35  # for the peak's words
    figure.update_xaxes(title="GiB per rank", range=[0, top * room or 1])
    figure.update_yaxes(autorange="reversed", automargin=True)
    figure.update_layout(
        barmode="stack",
        margin={"l": 110, "b": 90},
        legend={"orientation": "h", "y": -0.3, "traceorder": "normal"},
        meta={"peak_bytes": {n: r["memory"]["peak_bytes"] for n, r in zip(names, rows)}, "gpu_memory_bytes": capacity,
              "fits": {n: r.get("fits") for n, r in zip(names, rows)}},
    )  # fmt: skip
    return figure


def strategy_label(row: dict[str, Any], chosen: str | None) -> str:
    """A strategy's name on the training charts: bold when chosen, "does not fit" where its peak
    memory is over the GPU's (so the step-time chart does not invite it)."""
    name = row["sharding"] + (" (does not fit)" if row.get("fits") is False else "")
    return f"<b>{name}</b>" if row["sharding"] == chosen else name
