"""Training-step models: DDP (``ddp``), FSDP / ZeRO (``fsdp``), parameter lists (``params``),
the bucket overhead formula (``overhead``). See docs/ddp.md and docs/fsdp.md."""

__all__ = ["ddp", "ddp_cli", "fsdp", "fsdp_cli", "overhead", "params"]
