"""``sim.ddp`` moved to :mod:`sim.training.ddp`; this name is the same module."""

import sys

from sim.training import ddp as _module

sys.modules[__name__] = _module
