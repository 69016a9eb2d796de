"""``sim.params`` moved to :mod:`sim.training.params`; this name is the same module."""

import sys

from sim.training import params as _module

sys.modules[__name__] = _module
