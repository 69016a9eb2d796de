"""Real machines in the model: hardware presets (YAML with a cited source for every value), the
topology they build, and NCCL's own tuning model (which algorithm and protocol NCCL would pick).

- :mod:`sim.hardware.presets`: ``list_presets()``, ``load_preset(name)``, ``scenario_fields``.
- :mod:`sim.hardware.cluster`: ``build(preset, nodes, ...)``, rails of NICs across nodes.
- :mod:`sim.hardware.nccl_model`: ``predict(preset, nodes, op, size_bytes)``.
"""

__all__ = ["cli", "cluster", "nccl_des", "nccl_model", "presets"]
