"""Figures of the guides page (webapp/pages/guides.py): pure functions of what sim returns.

Each takes plain numbers and lists (no scenario objects) and returns a validated
``plotly.graph_objects.Figure``; the page decides nothing, these only draw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from sim.units import format_size, format_time

__all__ = [
    "broadcast_tree_figure",
    "bucket_figure",
    "bucket_figure_note",
    "bytes_figure",
    "coincident",
    "contributors",
    "crossover_guide_figure",
    "ring_cells_figure",
]

FONT = {"family": "Liberation Sans, Arial, sans-serif", "size": 13}
COLOURS = {"ring": "#1f77b4", "recursive_doubling": "#d62728", "reduce_broadcast": "#2ca02c", "bound": "#444", "now": "#d62728"}
HOLDS = "#2ca02c"
LACKS = "#d0d0d0"


def _layout(title: str, height: int, **more: Any) -> dict[str, Any]:
    return {"title": {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 15}}, "height": height, "font": FONT,
            "margin": {"l": 70, "r": 20, "t": 60, "b": 55}, "plot_bgcolor": "white", **more}  # fmt: skip


def contributors(mask: int, p: int) -> str:
    """The ranks whose data a cell holds, for its label: "r3", "r2+r3", "r0–r3", "r6–r1" (a run
    round the ring: 6, 7, 0, 1), "all 8". Ranks are r0..r(p-1), pieces p0..p(p-1), as on the
    Collectives page."""
    ranks = [rank for rank in range(p) if mask >> rank & 1]
    if len(ranks) == p:
        return f"all {p}"
    for start in ranks if len(ranks) > 2 else ():  # a run round the ring: r6–r1 is r6, r7, r0, r1
        if all((start + i) % p in ranks for i in range(len(ranks))):
            return f"r{start}–r{(start + len(ranks) - 1) % p}"
    return "+".join(f"r{rank}" for rank in ranks)


def ring_cells_figure(cells: Sequence[Sequence[int]], previous: Sequence[Sequence[int]] | None, title: str) -> go.Figure:
    """Each rank's buffer as p pieces (rows: ranks r0.., columns: pieces p0..), coloured by how many
    ranks' data the piece holds (1: its own only; p: fully reduced) and labelled with which;
    the pieces this step changed are outlined."""
    p = len(cells)
    counts = [[bin(mask).count("1") for mask in row] for row in cells]
    labels = [[contributors(mask, p) for mask in row] for row in cells]
    figure = go.Figure(
        go.Heatmap(
            z=counts, x=[f"p{c}" for c in range(len(cells[0]))], y=[f"r{r}" for r in range(p)], text=labels,
            texttemplate="%{text}", textfont={"size": 11 if p <= 8 else 9}, zmin=1, zmax=p, colorscale="Blues",
            colorbar={"title": {"text": "ranks summed in"}, "tickvals": list(range(1, p + 1)), "len": 0.9},
            hovertemplate="rank %{y}, piece %{x}: holds the sum of %{z} ranks' data (%{text})<extra></extra>", xgap=2, ygap=2,
        )
    )  # fmt: skip
    changed = [(r, c) for r in range(p) for c in range(len(cells[r])) if previous is not None and cells[r][c] != previous[r][c]]
    for r, c in changed:
        figure.add_shape(type="rect", x0=c - 0.46, x1=c + 0.46, y0=r - 0.44, y1=r + 0.44, line={"color": COLOURS["now"], "width": 2.5})
    figure.update_layout(_layout(title, 140 + 44 * p, meta={"changed": len(changed)}))
    figure.update_layout(margin={"t": 90})  # a two-line title above the pieces' labels
    figure.update_yaxes(autorange="reversed", title="rank")
    figure.update_xaxes(side="top")
    return figure


def bytes_figure(
    sent_by_rank: Sequence[int],
    bound_bytes: float,
    bound_text: str,
    title: str,
    reference: tuple[float, str] | None = None,
    decimal: bool = False,
) -> go.Figure:
    """Bytes each rank has sent so far (bars) against the lower bound every algorithm must
    meet (dashed line) and, optionally, another algorithm's total for comparison (dotted);
    ``decimal``: in MB (10^6 bytes, as a course example states them) instead of MiB."""
    ranks = [f"r{rank}" for rank in range(len(sent_by_rank))]
    scale, unit = (1e6, "MB") if decimal else _byte_unit(max([*sent_by_rank, bound_bytes, reference[0] if reference else 0, 1]))
    size = (lambda b: f"{b / 1e6:g} MB") if decimal else format_size
    figure = go.Figure(
        go.Bar(x=ranks, y=[b / scale for b in sent_by_rank], marker_color=COLOURS["ring"], name="sent so far",
               text=[size(b) if b else "" for b in sent_by_rank], textposition="outside", cliponaxis=False, textfont={"size": 11},
               hovertemplate="%{x} has sent %{text}<extra></extra>")
    )  # fmt: skip
    lines = [(bound_bytes, f"lower bound<br>{bound_text} = {size(bound_bytes)}", "dash")]
    if reference:
        lines.append((reference[0], reference[1], "dot"))
    for value, text, dash in lines:
        figure.add_hline(y=value / scale, line={"color": COLOURS["bound"], "dash": dash, "width": 1.5})
        # labelled in the right margin: inside the plot the label would sit on the bars that reach it
        figure.add_annotation(
            text=text,
            x=1.01,
            xref="paper",
            xanchor="left",
            align="left",
            y=value / scale,
            yanchor="middle",
            showarrow=False,
            font={"size": 11},
        )
    top = max([*sent_by_rank, bound_bytes, reference[0] if reference else 0]) / scale
    figure.update_layout(_layout(title, 320, showlegend=False, meta={"bound_bytes": bound_bytes}))
    figure.update_layout(margin={"r": 150})
    figure.update_yaxes(title=f"bytes sent ({unit})", range=[0, top * 1.25], gridcolor="#eee")
    return figure


def _byte_unit(nbytes: float) -> tuple[float, str]:
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if nbytes >= scale:
            return float(scale), unit
    return 1.0, "B"


def crossover_guide_figure(
    sizes: Sequence[float], times: dict[str, Sequence[float]], crossover_bytes: float | None, label: str
) -> go.Figure:
    """Closed-form time over message size per algorithm (log-log) and the crossover size
    where the two compared meet (a vertical line labelled with the number). A curve equal to an
    earlier one at every size would hide under it: it is drawn dashed, named with the one it
    matches, and listed in ``meta["coincident"]``."""
    figure = go.Figure()
    same = coincident(times)
    for name, values in times.items():
        under = same.get(name)
        legend = f"{name} = {under} (same times at every size)" if under else name
        figure.add_trace(
            go.Scatter(x=list(sizes), y=[t * 1e6 for t in values], mode="lines", name=legend,
                       line={"color": COLOURS.get(name, "#888"), "width": 2.5, "dash": "dash" if under else "solid"},
                       hovertemplate=[f"{legend}: {format_time(t)} at {format_size(n)}<extra></extra>" for n, t in zip(sizes, values)])
        )  # fmt: skip
    if crossover_bytes is not None:
        figure.add_vline(x=crossover_bytes, line={"color": "#000", "dash": "dash", "width": 1.5})
        figure.add_annotation(text=f"<b>{label}</b>", x=_log10(crossover_bytes), y=1, yref="paper", yanchor="bottom", showarrow=False,
                              bgcolor="white", bordercolor="#000", font={"size": 13})  # fmt: skip
    ticks = [2**k for k in range(10, 31, 4)]
    figure.update_layout(
        _layout(
            "time by the closed forms (log-log)",
            420,
            legend={"orientation": "h", "y": -0.22},
            meta={"crossover_bytes": crossover_bytes, "coincident": [[under, name] for name, under in same.items()]},
        )
    )
    figure.update_xaxes(type="log", title="message size n", tickvals=ticks, ticktext=[format_size(t) for t in ticks], gridcolor="#eee")
    figure.update_yaxes(type="log", title="time (us)", gridcolor="#eee", dtick=1, exponentformat="none")
    return figure


def coincident(times: dict[str, Sequence[float]]) -> dict[str, str]:
    """{name: the earlier curve it equals at every size (relative 1e-9)}: e.g. broadcast's
    ``pipelined_chain`` with one chunk, (p-1)(α + n β), is ``linear``."""
    same: dict[str, str] = {}
    names = list(times)
    for index, name in enumerate(names):
        for earlier in names[:index]:
            pairs = zip(times[name], times[earlier], strict=True)
            if earlier not in same and all(math.isclose(a, b, rel_tol=1e-9) for a, b in pairs):
                same[name] = earlier
                break
    return same


def _log10(value: float) -> float:
    return math.log10(value)


def broadcast_tree_figure(p: int, edges: Sequence[tuple[int, int, int]], step: int, title: str) -> go.Figure:
    """The logical tree of a rooted broadcast: rank r drawn at the round it receives in (the
    root at the top); ``edges`` (sender, receiver, step counted from 0) up to ``step`` (counted
    from 1; 0: before any message) drawn solid, this step's in red, later ones dotted; ranks
    that hold the data in green."""
    depth = {0: 0}
    for _src, dst, at in sorted(edges, key=lambda edge: edge[2]):
        depth[dst] = at + 1
    holds = {0} | {dst for _, dst, at in edges if at < step}
    figure = go.Figure()
    for src, dst, at in edges:
        now, done = at == step - 1, at < step
        colour = COLOURS["now"] if now else ("#555" if done else "#bbb")
        figure.add_trace(
            go.Scatter(x=[src, dst], y=[depth.get(src, 0), depth[dst]], mode="lines", showlegend=False, hoverinfo="skip",
                       line={"color": colour, "width": 4 if now else 2, "dash": "solid" if done else "dot"})
        )  # fmt: skip
        if done:
            figure.add_annotation(x=(src + dst) / 2, y=(depth.get(src, 0) + depth[dst]) / 2, text=f"step {at + 1}", showarrow=False,
                                  font={"size": 11, "color": colour}, bgcolor="white", yshift=8)  # fmt: skip
    figure.add_trace(
        go.Scatter(x=list(range(p)), y=[depth.get(r, 0) for r in range(p)], mode="markers+text", text=[f"r{r}" for r in range(p)],
                   textposition="middle center", textfont={"color": "white", "size": 12}, showlegend=False,
                   marker={"size": 34, "color": [HOLDS if r in holds else LACKS for r in range(p)], "line": {"color": "#333", "width": 1}},
                   hovertemplate=[f"r{r}: {'holds the data' if r in holds else 'waiting'}<extra></extra>" for r in range(p)])
    )  # fmt: skip
    rounds = max(depth.values())
    figure.update_layout(_layout(title, 340, meta={"holding": len(holds)}))
    figure.update_xaxes(visible=False, range=[-0.7, p - 0.3])
    figure.update_yaxes(autorange="reversed", title="receives in step", tickvals=list(range(rounds + 1)),
                        ticktext=["root"] + [str(k) for k in range(1, rounds + 1)], range=[rounds + 0.5, -0.5])  # fmt: skip
    return figure


def bucket_figure(guide: dict[str, Any], last_bucket_s: Sequence[float] | None = None) -> go.Figure:
    """The course formula's U-curve ``n_b o + s / (n_b w)`` and the simulated overhead over the
    bucket cap (log x), b* marked, and each curve's caps within 1 % of its best shaded; with
    ``last_bucket_s``, the course notes' ``o + s / (n_b w)`` at each cap too (dotted)."""
    caps = guide["caps"]
    figure = go.Figure()
    low, high = guide["formula_range"]
    figure.add_vrect(x0=low, x1=high, fillcolor="#1f77b4", opacity=0.15, line_width=0)
    # the simulated caps within 1 %, each as wide as its step of the sweep (half a step either side),
    # outlined: one best cap drawn 2 % wide on a 15-octave axis, inside the blue band, did not show
    slow, shigh = guide["simulated_range"]
    half = (caps[1] / caps[0]) ** 0.5 if len(caps) > 1 else 1.1
    band = (slow / half, shigh * half)
    figure.add_vrect(x0=band[0], x1=band[1], fillcolor="#ff7f0e", opacity=0.3, line={"color": "#ff7f0e", "width": 2})
    figure.add_trace(
        go.Scatter(x=caps, y=[t * 1e3 for t in guide["formula_s"]], mode="lines", name="course formula n_b o + s/(n_b w) (T = s/w)",
                   line={"color": "#1f77b4", "width": 3},
                   hovertemplate=[f"formula at cap {format_size(c)}: {format_time(t)}<extra></extra>" for c, t in zip(caps, guide["formula_s"])])
    )  # fmt: skip
    figure.add_trace(
        go.Scatter(x=caps, y=[t * 1e3 for t in guide["simulated_s"]], mode="lines+markers", name="simulated DDP overhead",
                   line={"color": "#ff7f0e", "width": 2}, marker={"size": 5},
                   hovertemplate=[f"simulated at cap {format_size(c)}: {format_time(t)}, {n} buckets<extra></extra>"
                                  for c, t, n in zip(caps, guide["simulated_s"], guide["buckets"])])
    )  # fmt: skip
    if last_bucket_s is not None:
        figure.add_trace(
            go.Scatter(x=caps, y=[t * 1e3 for t in last_bucket_s], mode="lines", name="course notes o + s/(n_b w) (T ≥ n_b o + s/w)",
                       line={"color": "#2ca02c", "width": 2, "dash": "dot"},
                       hovertemplate=[f"notes at cap {format_size(c)}: {format_time(t)}<extra></extra>" for c, t in zip(caps, last_bucket_s)])
        )  # fmt: skip
    figure.add_vline(x=guide["b_star"], line={"color": "#1f77b4", "dash": "dash"})
    figure.add_annotation(text=f"b* = √(s w o) = {format_size(guide['b_star'])}", x=_log10(guide["b_star"]), y=1, yref="paper",
                          yanchor="bottom", showarrow=False, font={"color": "#1f77b4"})  # fmt: skip
    ticks = [2**k for k in range(15, 31, 3)]
    figure.update_layout(_layout("overhead after backward ends, by bucket cap", 520, legend={"orientation": "h", "y": -0.22},
                                 meta={"b_star": guide["b_star"], "simulated_band": list(band)}))  # fmt: skip
    figure.update_xaxes(type="log", title="bucket cap b (shaded: caps within 1 % of each curve's best)", tickvals=ticks,
                        ticktext=[format_size(t) for t in ticks], gridcolor="#eee")  # fmt: skip
    ticks_ms = [m * 10**e for e in range(-2, 5) for m in (1, 2, 5)]  # Plotly's own log labels read "5, 2, 100, 5"
    figure.update_yaxes(type="log", title="overhead (ms)", gridcolor="#eee", tickvals=ticks_ms, ticktext=[f"{v:g}" for v in ticks_ms])
    return figure


def bucket_figure_note(text: str) -> go.Figure:
    """An empty chart that says why there is nothing to draw."""
    figure = go.Figure()
    figure.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font={"size": 14, "color": "#a00"})
    figure.update_layout(_layout("overhead after backward ends, by bucket cap", 300))
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return figure
