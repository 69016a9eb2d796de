"""Every algorithm registers itself under (op, algorithm) on import."""

from sim.algorithms import butterfly, dbtree, misc, ring, trees  # noqa: F401
