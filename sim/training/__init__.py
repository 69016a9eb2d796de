"""Training-step models: DDP (``ddp``; its scenario, result and sweeps in ``ddp_scenario``,
``ddp_result``, ``ddp_sweep``), FSDP / ZeRO (``fsdp``; its result and memory in ``fsdp_result``), parameter lists (``params``), whether a rank's memory fits its GPU (``memory``), the bucket
overhead formula (``overhead``), DDP communication hooks (``hooks``), torch.nn.DataParallel on one node (``dataparallel``), collectives on a hardware preset as every surface times them
(``comm``: NCCL's pick in the DES, o and w fitted to it), a step's 80 % interval on a preset
(``step_interval``), the DDP page's data and words
(``explain``). See docs/ddp.md and docs/fsdp.md."""

__all__ = ["comm", "dataparallel", "dataparallel_cli", "ddp", "ddp_cli", "ddp_plan", "ddp_result", "ddp_scenario", "ddp_sweep", "explain", "fsdp", "fsdp_cli", "fsdp_result", "fsdp_scenario", "hooks", "memory", "overhead", "params", "step_interval"]
