"""Real machines in the model: hardware presets (YAML with a cited source for every value), the
topology they build, and gloo's choices. NCCL's model and data path, which read these presets,
are the package :mod:`sim.nccl`.

- :mod:`sim.hardware.presets`: ``list_presets()``, ``load_preset(name)``, ``scenario_fields``,
  NIC variants ``NAME:NICSxRATE`` (``variant_name``).
- :mod:`sim.hardware.cluster`: ``build(preset, nodes, ...)``, rails of NICs across nodes.
- :mod:`sim.hardware.gloo`: what gloo runs for each torch.distributed op.
"""

__all__ = ["cli", "cluster", "gloo", "presets", "uncertainty"]
