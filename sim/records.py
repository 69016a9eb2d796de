"""Event records live in :mod:`sim.network.records`; ``sim.records`` is the same module."""

import sys

from sim.network import records as _records

sys.modules[__name__] = _records
