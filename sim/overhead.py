"""``sim.overhead`` moved to :mod:`sim.training.overhead`; this name is the same module."""

import sys

from sim.training import overhead as _module

sys.modules[__name__] = _module
