"""``sim.ddp_cli`` moved to :mod:`sim.training.ddp_cli`; this name is the same module."""

import sys

from sim.training import ddp_cli as _module

sys.modules[__name__] = _module
