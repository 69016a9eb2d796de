"""Topologies live in :mod:`sim.network.topology`; ``sim.topology`` is the same module."""

import sys

from sim.network import topology as _topology

sys.modules[__name__] = _topology
