"""Run collsim's scenarios for real on torch.distributed and fit the model's constants.

``real`` imports ``sim`` (scenarios, units, event schema), never ``webapp``. Torch is imported
only where a command needs it: ``real.store``, ``real.fit`` and ``real.nccl_tests`` work
without torch, so the webapp can read measurements on a machine without it.
"""

__all__ = ["bench", "cli", "compare", "compare_fsdp", "ddp", "ddp_bench", "ddp_hooks", "fit", "fsdp", "gpu_heldout", "heldout_ow", "launcher", "model_names", "models", "nccl_tests", "presets", "report", "store", "trace",
           "validate", "validate_analysis", "validate_nccl", "validate_nccl_report"]  # fmt: skip
