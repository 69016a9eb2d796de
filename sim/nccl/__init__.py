"""NCCL in the model: its cost model and choice, and its data path in the DES (NCCL v2.27.7-1).

Above :mod:`sim.network` and :mod:`sim.algorithms`, below :mod:`sim.collective`; the machines it
reads are data in :mod:`sim.hardware.presets`. Importing the package registers NCCL's algorithms
(``nccl_ring``, ``nccl_tree``, ... and ``nccl_p2p``) in :mod:`sim.algorithms.registry`, which
imports it through its one plugin hook (``registry.PLUGINS``).

- :mod:`sim.nccl.model`: ``predict(preset, nodes, op, size_bytes)``, NCCL's tuner (no DES), per release line
  (2.19-2.29) from the records of :mod:`sim.nccl.versions`;
  :mod:`sim.nccl.p2p_model`: its closed form for all_to_all / send_recv (p2p channels, no tuner);
  :mod:`sim.nccl.p2p_plan`: how NCCL lays those out across nodes (p2p channels, schedule, batches, PXN).
- :mod:`sim.nccl.proto`: protocols and chunking as data, NCCL_ALGO / NCCL_PROTO parsing.
- :mod:`sim.nccl.topo`: the topology and PathParams an NCCL algorithm runs on.
- :mod:`sim.nccl.path`, :mod:`sim.nccl.nvls`, :mod:`sim.nccl.rooted`, :mod:`sim.nccl.p2p`: the
  data path (Ring, Tree, PAT, NVLS, broadcast/reduce chains, point-to-point); :mod:`sim.nccl.counts`
  its message counts; :mod:`sim.nccl.des` registers them and maps NCCL's pick to a scenario.
- :mod:`sim.nccl.log`: nccl-tests logs, read and checked (fitting a preset to them runs the DES:
  :mod:`sim.collective.nccl_fit`, a layer up).
"""

from sim.nccl import des  # noqa: F401, I001  (registers nccl_ring, nccl_tree, ... on import)
from sim.nccl import p2p  # noqa: F401  (registers nccl_p2p)
from sim.nccl import rooted  # noqa: F401  (registers nccl_ring for broadcast and reduce)

__all__ = ["counts", "des", "log", "model", "nvls", "p2p", "p2p_model", "p2p_plan", "path", "proto", "rooted", "topo", "versions"]
