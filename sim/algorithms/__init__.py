"""Every algorithm registers itself under (op, algorithm) on import."""

from sim.algorithms import ring  # noqa: F401
