"""The training-step scenario: one frozen, validated :class:`TrainScenario`.

Every field is declared once in :data:`FIELDS` (label, help, unit, bounds, choices) and the
command line's options are built from it; :meth:`TrainScenario.from_dict` is the one factory
and raises one :class:`~sim.errors.CollsimError` naming the field and what is allowed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from sim.errors import CollsimError
from sim.fields import FieldInfo, register
from sim.training.hooks import DEFAULT_START_POWERSGD_ITER, HOOKS, CommHook
from sim.training.parallel.model import MODELS, ModelSpec, model_preset

__all__ = ["FIELDS", "SCHEDULES", "TrainScenario"]

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zero-bubble")
RECOMPUTE = ("none", "selective", "full")
PRECISIONS = ("bf16", "fp16", "fp32")
# FlashAttention (Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient Exact Attention with
# IO-Awareness") never writes the s x s scores to HBM: Megatron-LM's default since 2023
# (--use-flash-attn, then Transformer Engine's fused attention, --attention-backend auto).
# Korthikanti et al. 2022 and Narayanan et al. 2021 ran the unfused kernels: "standard".
ATTENTION = ("flash", "standard")
# Compute efficiency: the fraction of the GPU's dense peak the transformer's matmuls reach, the
# element-wise work timed apart at HBM bandwidth (sim.training.parallel.work). Narayanan et al.
# 2021 (SC21, Table 1) measure 52 % of the A100's peak end to end for GPT 1T (bubble, tensor and
# data-parallel communication and element-wise kernels included); 0.70 is the matmul share left
# once those are modelled. It was checked, one value for all rows, against Korthikanti et al.
# 2022 Table 5 (bench/train_table5.py): not tuned per row, but chosen with that table in view.
DEFAULT_MFU = 0.70

F = FieldInfo
FIELDS: dict[str, FieldInfo] = {
    info.name: info
    for info in (
        F("hardware", "Hardware", "hardware preset (collsim hardware list), e.g. dgx-a100"),
        F("nodes", "Nodes", "whole nodes of the preset; the job uses tp x pp x dp x ep GPUs of them", low=1, high=8192, kind="int"),
        F("nics_per_node", "NICs a node", "NICs a node instead of the preset's", low=1, high=64, kind="int"),
        F("model", "Model", "named model: " + ", ".join(MODELS), choices=tuple(MODELS)),
        F("layers", "Layers", "transformer layers l", low=1, high=100000, kind="int"),
        F("hidden", "Hidden size", "hidden size h", low=1, high=10**6, kind="int"),
        F("heads", "Attention heads", "attention heads a", low=1, high=100000, kind="int"),
        F("seq_len", "Sequence length", "tokens a sequence s", low=1, high=10**7, kind="int"),
        F("vocab", "Vocabulary", "vocabulary size V (0: no logit layer, every stage alike)", low=0, high=10**8, kind="int"),
        F("ffn_hidden", "FFN hidden", "MLP hidden size (0: 4 x hidden)", low=0, high=10**7, kind="int"),
        F("global_batch", "Global batch", "sequences an iteration", low=1, high=10**8, kind="int"),
        F("micro_batch", "Micro-batch", "sequences a micro-batch b", low=1, high=10**6, kind="int"),
        F("tp", "Tensor parallel", "tensor-parallel size t (inside a node)", low=1, high=1024, kind="int"),
        F("pp", "Pipeline parallel", "pipeline stages p", low=1, high=4096, kind="int"),
        F("dp", "Data parallel", "data-parallel replicas d", low=1, high=10**6, kind="int"),
        F("ep", "Expert parallel", "expert-parallel size (MoE models)", low=1, high=4096, kind="int"),
        F("vpp", "Virtual stages", "model chunks a pipeline rank holds (interleaved, zero-bubble)", low=1, high=1024, kind="int"),
        F("experts", "Experts", "experts a MoE layer (0: dense)", low=0, high=100000, kind="int"),
        F("top_k", "Top-k", "experts a token goes to", low=1, high=1024, kind="int"),
        F(
            "ep_imbalance",
            "Expert imbalance",
            "busiest expert rank's tokens over the mean (1: balanced)",
            low=1.0,
            high=1000.0,
            kind="float",
        ),
        F("schedule", "Schedule", "pipeline schedule", choices=SCHEDULES),
        F("recompute", "Recompute", "activation recomputation", choices=RECOMPUTE),
        F(
            "attention",
            "Attention kernel",
            "flash: FlashAttention, no s x s scores in HBM (Megatron-LM's default); standard: the unfused kernels of 2021-22",
            choices=ATTENTION,
        ),
        F(
            "scatter_gather",
            "Scatter/gather sends",
            "pipeline sends of 1/tp of the activation a rank, all-gathered in the TP group (Megatron-LM's default)",
            kind="flag",
        ),
        F(
            "first_stage_layers",
            "First stage layers",
            "layers of the first (virtual) stage; the rest split evenly (default: all stages equal)",
            low=0,
            high=100000,
            kind="int",
        ),
        F(
            "last_stage_layers",
            "Last stage layers",
            "layers of the last (virtual) stage; the rest split evenly (default: all stages equal)",
            low=0,
            high=100000,
            kind="int",
        ),
        F("sequence_parallel", "Sequence parallel", "sequence parallelism with tensor parallelism", kind="flag"),
        F("zero", "ZeRO stage", "ZeRO stage of the data-parallel states (3 = FSDP)", low=0, high=3, kind="int"),
        F("precision", "Precision", "compute precision (its peak from the preset)", choices=PRECISIONS),
        F(
            "mfu",
            "Compute efficiency",
            f"fraction of the GPU's dense peak the matmuls reach (default {DEFAULT_MFU}, Narayanan et al. 2021)",
            low=1e-3,
            high=1.0,
            kind="float",
        ),
        F(
            "grad_accum",
            "Gradient accumulation",
            "micro-batches an iteration (default global batch / (micro-batch x dp))",
            low=1,
            high=10**6,
            kind="int",
        ),
        F("bucket_mb", "DP bucket", "data-parallel gradient bucket, MB (Megatron-LM: 40M parameters)", low=0.001, high=10**6, kind="float"),
        F("free_comm", "Free communication", "every collective and send costs nothing (the bubble alone)", kind="flag"),
        F(
            "comm_hook",
            "Communication hook",
            "DDP comm hook on every data-parallel gradient bucket (torch's; needs --zero 0)",
            choices=HOOKS,
        ),
        F(
            "powersgd_rank",
            "PowerSGD rank",
            "powersgd: matrix approximation rank r (torch's matrix_approximation_rank)",
            low=1,
            high=10**6,
            kind="int",
        ),
        F(
            "powersgd_warmup",
            "PowerSGD warm-up",
            "powersgd: plain all-reduce for N iterations (start_powerSGD_iter; 1000)",
            low=0,
            high=10**9,
            kind="int",
        ),
        F(
            "iteration",
            "Iteration",
            "0-based iteration simulated (powersgd warm-up); default: after the warm-up",
            low=0,
            high=10**9,
            kind="int",
        ),
    )
}
del F
register("train", __name__, "TrainScenario", FIELDS)  # field_info(name, "train"); sim train's flags (sim.cli_fields)


@dataclass(frozen=True)
class TrainScenario:
    """One training step: model, batch, layout and hardware (see :data:`FIELDS`)."""

    hardware: str = "dgx-a100"
    nodes: int = 1
    nics_per_node: int | None = None
    model: str | None = None
    layers: int = 0
    hidden: int = 0
    heads: int = 0
    seq_len: int = 0
    vocab: int = 0
    ffn_hidden: int = 0
    global_batch: int = 1
    micro_batch: int = 1
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    vpp: int = 1
    experts: int = 0
    top_k: int = 1
    ep_imbalance: float = 1.0
    schedule: str = "1f1b"
    recompute: str = "none"
    attention: str = "flash"
    scatter_gather: bool = True  # Megatron-LM: --no-scatter-gather-tensors-in-pipeline turns it off
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None
    sequence_parallel: bool = False
    zero: int = 0
    precision: str = "bf16"
    mfu: float = DEFAULT_MFU
    grad_accum: int | None = None
    bucket_mb: float = 80.0  # Megatron-LM DDP: 40M parameters a bucket, 2 bytes each
    free_comm: bool = False
    comm_hook: str = "none"  # sim.training.hooks: none | fp16 | bf16 | powersgd on the DP buckets
    powersgd_rank: int | None = None
    powersgd_warmup: int = DEFAULT_START_POWERSGD_ITER
    iteration: int | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainScenario:
        """The one factory: fills a named model's sizes, checks every field, then the layout."""
        known = {item.name for item in fields(cls)}
        for key in data:
            if key not in known:
                raise CollsimError(f"{key}: not a train scenario field; allowed: {', '.join(sorted(known))}", field=key)
        values = {key: value for key, value in data.items() if value is not None}
        if values.get("model"):
            spec = model_preset(values["model"])
            for key in ("layers", "hidden", "heads", "seq_len", "vocab", "ffn_hidden", "experts", "top_k"):
                values.setdefault(key, getattr(spec, key))
        if values.get("grad_accum") and "global_batch" not in values:  # Megatron: global = micro x dp x accumulation
            replicas = values.get("dp", 1) * values.get("ep", 1)
            values["global_batch"] = values.get("micro_batch", 1) * replicas * values["grad_accum"]
        if values.get("nics_per_node") is not None:
            from sim.hardware.presets import variant_name

            values["hardware"] = variant_name(values.get("hardware", cls.hardware), values.pop("nics_per_node"))
        scenario = cls(**values)
        scenario.check()
        return scenario

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def spec(self) -> ModelSpec:
        base = model_preset(self.model) if self.model else None
        return ModelSpec(
            self.layers, self.hidden, self.heads, self.seq_len, self.vocab, self.ffn_hidden,
            base.kv_heads if base else 0, base.gated if base else False, self.experts, self.top_k,
            base.dropout if base else True,
        )  # fmt: skip

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.ep

    @property
    def micro_batches(self) -> int:
        """Micro-batches a pipeline runs an iteration: global batch / (micro-batch x dp x ep)."""
        return self.grad_accum or self.global_batch // (self.micro_batch * self.dp * self.ep)

    @property
    def chunks(self) -> int:
        """Model chunks a pipeline rank holds (1 unless interleaved or zero-bubble with --vpp)."""
        return self.vpp if self.schedule in ("interleaved", "zero-bubble") else 1

    def stage_layers(self) -> tuple[int, ...]:
        """Layers of each virtual stage (global order): ``first_stage_layers`` on stage 0,
        ``last_stage_layers`` on the last, the rest split evenly over the others. With --vpp 1
        these are Megatron-LM's --decoder-first/last-pipeline-num-layers."""
        virtual = self.pp * self.chunks
        ends = [n for n in (self.first_stage_layers, self.last_stage_layers) if n is not None]
        inner = virtual - len(ends)
        each = (self.layers - sum(ends)) // inner if inner else 0
        return tuple(
            self.first_stage_layers if stage == 0 and self.first_stage_layers is not None
            else self.last_stage_layers if stage == virtual - 1 and self.last_stage_layers is not None
            else each
            for stage in range(virtual)
        )  # fmt: skip

    def rank_layers(self, rank: int) -> int:
        """Layers pipeline rank ``rank`` holds over its model chunks."""
        return sum(self.stage_layers()[rank :: self.pp])

    def check(self) -> None:
        """Each field in its bounds, then the layout: one error naming the field."""
        for name, info in FIELDS.items():
            value = getattr(self, name, None)
            if info.choices and value is not None and value not in info.choices:
                raise CollsimError(f"{name}: {value!r} is not allowed; allowed: {', '.join(info.choices)}", field=name)
            if info.kind in ("int", "float") and value is not None:
                self._check_number(name, info, value)
        for name in ("layers", "hidden", "heads", "seq_len"):
            if getattr(self, name) < 1:
                raise CollsimError(f"{name}: required (a whole number >= 1) unless --model names a preset", field=name)
        self._check_layout()
        self._check_hook()

    def _check_hook(self) -> None:
        CommHook(self.comm_hook, self.powersgd_rank, self.powersgd_warmup)  # one error naming the field
        if self.comm_hook != "none" and self.zero:
            raise CollsimError(
                f"comm_hook: torch's DDP hooks wrap the gradient all-reduce; needs --zero 0, got --zero {self.zero}", field="comm_hook"
            )
        if self.iteration is not None and self.comm_hook != "powersgd":
            raise CollsimError(
                "iteration: only changes --comm-hook powersgd's warm-up; give --comm-hook powersgd or leave it out", field="iteration"
            )

    def _stage_rules(self) -> tuple[tuple[str, bool, str], ...]:
        """Equal stages, or the first/last stage's layers given and the rest splitting evenly."""
        virtual = self.pp * self.chunks
        given = [n for n in (self.first_stage_layers, self.last_stage_layers) if n is not None]
        if not given:
            return (("layers", self.layers % virtual == 0, f"{self.layers} layers must divide by pp x vpp = {virtual}"),)
        inner, rest = virtual - len(given), self.layers - sum(given)
        name = "first_stage_layers" if self.first_stage_layers is not None else "last_stage_layers"
        return (
            (name, virtual >= 2, f"needs --pp 2 or more (or --vpp with an interleaved schedule), got {virtual} stage"),
            (name, rest >= 0 and (rest % inner == 0 if inner else rest == 0),
             f"the other {self.layers} - {sum(given)} = {rest} layers must split evenly over the other {inner} stages"),
            (name, not inner or rest // inner >= 1, f"leaves {rest} layers for {inner} stages; each needs at least one"),
        )  # fmt: skip

    @staticmethod
    def _check_number(name: str, info: FieldInfo, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (info.kind == "int" and not isinstance(value, int)):
            raise CollsimError(f"{name}: must be a {'whole number' if info.kind == 'int' else 'number'}, got {value!r}", field=name)
        if not info.low <= value <= info.high:
            raise CollsimError(f"{name}: must be between {info.low:g} and {info.high:g}, got {value:g}", field=name)

    def _check_layout(self) -> None:
        from sim.hardware.presets import load_preset

        preset = load_preset(self.hardware)
        preset.check_nodes(self.nodes)
        available = self.nodes * preset.gpus_per_node
        rules = (
            ("tp", self.gpus <= available, f"tp x pp x dp x ep = {self.gpus} GPUs; --nodes {self.nodes} of {self.hardware} hold {available}"),
            ("tp", self.tp <= preset.gpus_per_node or self.tp % preset.gpus_per_node == 0, f"must fit in a node of {preset.gpus_per_node} GPUs or fill whole nodes, got {self.tp}"),
            ("heads", self.heads % self.tp == 0, f"{self.heads} heads must divide by tp = {self.tp}"),
            *self._stage_rules(),
            ("global_batch", self.global_batch % (self.micro_batch * self.dp * self.ep) == 0,
             f"{self.global_batch} must divide by micro-batch x dp x ep = {self.micro_batch * self.dp * self.ep}"),
            ("grad_accum", self.grad_accum is None or self.grad_accum * self.micro_batch * self.dp * self.ep == self.global_batch,
             f"{self.grad_accum} x micro-batch x dp x ep must equal the global batch {self.global_batch} (or give only one of them)"),
            ("vpp", self.vpp == 1 or self.schedule in ("interleaved", "zero-bubble"), "needs --schedule interleaved or zero-bubble"),
            ("vpp", self.schedule != "interleaved" or self.vpp >= 2, "--schedule interleaved needs --vpp 2 or more"),
            ("vpp", self.chunks == 1 or self.micro_batches % max(1, self.micro_batches // self.pp) == 0,
             f"{self.micro_batches} micro-batches must divide by their rounds ({max(1, self.micro_batches // self.pp)}), as torch's interleaved schedules require"),
            ("ep", self.ep == 1 or (self.experts > 0 and self.experts % self.ep == 0), f"needs --experts divisible by ep = {self.ep}"),
            ("ep_imbalance", self.ep_imbalance == 1.0 or self.experts > 0, "needs --experts (a MoE model)"),
            ("top_k", self.experts == 0 or self.top_k <= self.experts, f"must be <= experts ({self.experts})"),
            ("sequence_parallel", not self.sequence_parallel or self.tp > 1, "needs --tp 2 or more"),
            ("hardware", bool(preset.gpu_peak_tflops), f"{self.hardware} has no GPU peak (not a GPU preset); sim train needs GPUs, e.g. dgx-a100"),
            ("precision", self.precision in preset.gpu_peak_tflops, f"{self.hardware} has no {self.precision} peak; allowed: {', '.join(preset.gpu_peak_tflops) or 'none (not a GPU preset)'}"),
        )  # fmt: skip
        for name, ok, text in rules:
            if not ok:
                raise CollsimError(f"{name}: {text}", field=name)
