"""collsim's simulator: SimPy model of ranks and links running collective algorithms.

The names below are the public API; each is imported on first use, so ``import sim`` stays cheap
(``collsim --help`` loads no numpy or networkx). Subpackages: :mod:`sim.network` (topology, engine,
sharing), :mod:`sim.algorithms` (per-rank programs and their records), :mod:`sim.collective` (run,
closed forms, crossover), :mod:`sim.training` (DDP, FSDP), :mod:`sim.hardware` (presets, clusters, gloo), :mod:`sim.nccl`
(NCCL's model and data path).
docs/architecture.md draws the picture.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "CollsimError": "sim.errors",
    "CollectiveScenario": "sim.scenario",
    "load_mapping": "sim.files",
    "parse_size": "sim.units",
    "parse_time": "sim.units",
    "parse_bandwidth": "sim.units",
    "format_size": "sim.units",
    "format_time": "sim.units",
    "format_bandwidth": "sim.units",
    "run_collective": "sim.collective.runner",
    "CollectiveResult": "sim.collective.results",
    "closed_form": "sim.collective.analytic",
    "crossover": "sim.collective.explore",
    "ops": "sim.algorithms.registry",
    "algorithms_for": "sim.algorithms.registry",
    "algorithm_spec": "sim.algorithms.registry",
    "DDPScenario": "sim.training.ddp",
    "run_ddp": "sim.training.ddp",
    "FSDPScenario": "sim.training.fsdp",
    "run_fsdp": "sim.training.fsdp",
    "list_presets": "sim.hardware.presets",
    "load_preset": "sim.hardware.presets",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'sim' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
