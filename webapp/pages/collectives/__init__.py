"""Collectives: pick a collective and a network, watch it step by step, compare algorithms.

The layout is in :mod:`.layout`, the callbacks (named outputs, one function call each) in
:mod:`.callbacks`; the work in :mod:`webapp.collective`, sim and :mod:`webapp.helper`, the
figures in :mod:`webapp.figures.collectives` (the step player's in :mod:`webapp.figures.player`).
"""

from webapp.pages.collectives.callbacks import register
from webapp.pages.collectives.layout import layout

__all__ = ["NAME", "PATH", "TITLE", "layout", "register"]

PATH = "/"
NAME = "collectives"
TITLE = "Collectives"
