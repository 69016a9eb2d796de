"""Figures: results -> Plotly figures shared by pages, and what they share (a page's own figures
live in its package: webapp/pages/compare/figures.py, webapp/pages/guides/figures.py).

- :mod:`webapp.figures.common`: base figure, time units, byte axes, notes, timelines;
- :mod:`webapp.figures.collectives`: closed-form breakdown, crossover, side by side, parts;
- :mod:`webapp.figures.player`: the Collectives page's step player (topology, buffers, captions);
- :mod:`webapp.figures.ddp`: DDP step, overhead vs bucket size, strategies, training step;

Pure functions (no Dash, no I/O). The names below are the package's public API, so a caller may
write ``figures.note_figure`` or import the page's module.
"""

from webapp.figures.buffers import buffer_figure
from webapp.figures.collectives import (
    breakdown_figure,
    crossover_figure,
    parts_figure,
    side_by_side_figure,
    winners,
)
from webapp.figures.common import (
    GANTT_BARS,
    MAX_LANE_LABELS,
    RASTER_BINS,
    SEGMENT_BARS,
    base_figure,
    busy_fraction,
    byte_axis,
    in_flight,
    limit_lanes,
    link_gantt,
    link_timeline,
    note_figure,
    rank_gantt,
    rank_timeline,
    time_unit,
    utilisation_figure,
)
from webapp.figures.ddp import (
    ddp_timeline,
    overhead_figure,
    strategy_figure,
    training_memory_figure,
    training_strategies_figure,
    training_timeline,
)
from webapp.figures.player import player_positions, step_caption, step_title, topology_figure

__all__ = [
    "GANTT_BARS",
    "MAX_LANE_LABELS",
    "RASTER_BINS",
    "SEGMENT_BARS",
    "base_figure",
    "breakdown_figure",
    "buffer_figure",
    "busy_fraction",
    "byte_axis",
    "crossover_figure",
    "ddp_timeline",
    "in_flight",
    "limit_lanes",
    "link_gantt",
    "link_timeline",
    "note_figure",
    "overhead_figure",
    "parts_figure",
    "player_positions",
    "rank_gantt",
    "rank_timeline",
    "side_by_side_figure",
    "step_caption",
    "step_title",
    "strategy_figure",
    "time_unit",
    "topology_figure",
    "training_memory_figure",
    "training_strategies_figure",
    "training_timeline",
    "utilisation_figure",
    "winners",
]
