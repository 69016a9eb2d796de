"""Every algorithm registers itself under (op, algorithm) on import (in this order)."""

from sim.algorithms import trees  # noqa: F401, I001
from sim.algorithms import ring  # noqa: F401
from sim.algorithms import butterfly  # noqa: F401
from sim.algorithms import dbtree  # noqa: F401
from sim.algorithms import misc  # noqa: F401
from sim.algorithms import alltoall  # noqa: F401

__all__ = ["alltoall", "butterfly", "dbtree", "misc", "registry", "ring", "trees"]
