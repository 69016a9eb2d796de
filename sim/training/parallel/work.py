"""What each pipeline op does: its compute seconds, its inline collectives, its rows.

Per layer and micro-batch, on one GPU: forward FLOPs / tp at ``peak x mfu``; backward twice
that; full recomputation one more forward (with its collectives), selective the attention core.
Tensor parallelism (Megatron-LM's column- then row-parallel pair, Shoeybi et al. 2019): two
all-reduces of b s h elements forward and two backward, or with sequence parallelism an
all-gather and a reduce-scatter in place of each (Korthikanti et al. 2022, Sec. 4.2.2). An MoE
layer adds an all_to_all dispatch and combine of b s top_k h elements each way; with
``ep_imbalance`` > 1 the busiest expert rank gets that many times its share of tokens (its
expert compute and its all_to_all bytes), and every rank waits for it. The logit
layer runs on the last virtual stage; each virtual stage runs its own layer count
(``TrainScenario.stage_layers``: uneven first and last stages).

Stage-to-stage sends: with tensor parallelism every TP rank of a stage sends the activation to
its peer of the next stage. Megatron-LM's scatter/gather optimization (Narayanan et al. 2021,
Sec. 4.1; megatron/arguments.py ``--no-scatter-gather-tensors-in-pipeline``, on by default)
sends 1/t of it a rank over that rank's NIC and all-gathers the whole inside the receiving
node's TP group (NCCL's pick, as ``collsim sim collective``); with sequence parallelism the
activation is already a 1/t shard and is sent as it is, nothing gathered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from sim.training.parallel.costs import CommCosts
from sim.training.parallel.layout import Layout
from sim.training.parallel.scenario import TrainScenario
from sim.training.parallel.schedule import Op

if TYPE_CHECKING:
    from sim.training.parallel.measured import MeasuredCosts

__all__ = ["OpWork", "op_work", "row"]


@dataclass
class OpWork:
    s: TrainScenario
    costs: CommCosts
    peak_flops: float  # achieved FLOP/s of one GPU (peak x mfu)
    element: int
    hbm_Bps: float = 0.0
    _cache: dict[tuple[str, int, bool], tuple[float, float, float]] = field(default_factory=dict)
    measured: MeasuredCosts | None = None  # measured compute per stage in place of FLOPs at peak x mfu

    @property
    def tokens_bytes(self) -> float:
        """b s h elements: one TP collective's, one stage boundary's message."""
        return float(self.s.micro_batch * self.s.seq_len * self.s.hidden * self.element)

    @property
    def sharded_sends(self) -> bool:
        """Each TP rank sends 1/t of the activation: scatter/gather, or sequence parallel shards."""
        return self.s.tp > 1 and (self.s.scatter_gather or self.s.sequence_parallel)

    @property
    def boundary_bytes(self) -> float:
        """One stage-to-stage message a rank sends (1/t of b s h with :attr:`sharded_sends`)."""
        return self.tokens_bytes / self.s.tp if self.sharded_sends else self.tokens_bytes

    @cached_property
    def boundary_gather_s(self) -> float:
        """The all-gather of the scattered activation in the receiving TP group (scatter/gather
        without sequence parallelism), gathered size b s h."""
        if not self.sharded_sends or self.s.sequence_parallel:
            return 0.0
        return self.costs.collective_s("tp", "all_gather", self.tokens_bytes)

    def boundary_s(self, src: int, dst: int) -> float:
        """Seconds from both ends posted to the message usable on ``dst``: the send, then the gather."""
        if src == dst:
            return 0.0
        return self.costs.send_s(src, dst, self.boundary_bytes) + self.boundary_gather_s

    @cached_property
    def stage_layers(self) -> tuple[int, ...]:
        return self.s.stage_layers()

    @cached_property
    def layers_per_chunk(self) -> int:
        """The fullest virtual stage's layers (data-parallel buckets are sized by it)."""
        return max(self.stage_layers)

    @cached_property
    def tp_collectives(self) -> tuple[tuple[str, float], ...]:
        """(op, bytes) of one layer's forward (and, alike, its backward) TP collectives."""
        if self.s.tp == 1:
            return ()
        if self.s.sequence_parallel:
            return (("all_gather", self.tokens_bytes), ("reduce_scatter", self.tokens_bytes)) * 2
        return (("all_reduce", self.tokens_bytes),) * 2

    @cached_property
    def ep_collectives(self) -> tuple[tuple[str, float], ...]:
        """(op, bytes) of one MoE layer's forward all_to_alls: dispatch and combine."""
        if not self.s.experts:
            return ()
        # the busiest rank's share: every rank waits for it (Lepikhin et al. 2020, GShard, capacity factor)
        nbytes = float(self.s.micro_batch * self.s.seq_len * self.s.top_k * self.s.hidden * self.element) * self.s.ep_imbalance
        return (("all_to_all", nbytes),) * 2

    @cached_property
    def layer_s(self) -> tuple[float, float, float, float]:
        """(forward compute, attention core compute, TP, EP) seconds of one layer's forward."""
        linear, core, mlp = self.s.spec().layer_forward_flops(self.s.micro_batch)
        mlp *= self.s.ep_imbalance if self.s.experts else 1.0  # the busiest expert rank's tokens
        rate = self.s.tp * self.peak_flops
        memory = self.memory_s
        tp = sum(self.costs.collective_s("tp", op, nbytes) for op, nbytes in self.tp_collectives)
        ep = sum(self.costs.collective_s("ep", op, nbytes) for op, nbytes in self.ep_collectives)
        return (linear + core + mlp) / rate + memory, core / rate + memory * self._core_share, tp, ep

    @cached_property
    def memory_s(self) -> float:
        """Seconds of a layer's forward element-wise work (layer norms, softmax, dropout, GeLU,
        residuals): memory-bound, it writes the activations Korthikanti et al. 2022 Table 2
        counts (without recomputation) and reads as much, at the GPU's HBM bandwidth. With
        FlashAttention the s x s scores (the 5 a s / h term) are never written."""
        from sim.training.parallel.model import activation_bytes_per_layer

        if not self.hbm_Bps:
            return 0.0
        s = self.s
        nbytes = activation_bytes_per_layer(s.spec(), s.micro_batch, s.tp, s.sequence_parallel, "none", s.attention)
        return 2.0 * nbytes / self.hbm_Bps

    @cached_property
    def _core_share(self) -> float:
        """The attention core's share of the element-wise bytes (the ``scores`` of
        :func:`~sim.training.parallel.model.activation_terms`; none with flash)."""
        from sim.training.parallel.model import activation_terms

        s = self.s
        terms = activation_terms(s.spec(), s.micro_batch, s.tp, s.sequence_parallel, "none", s.attention)
        return terms["scores"] / sum(terms.values())

    @cached_property
    def logits_s(self) -> float:
        return self.s.spec().logit_forward_flops(self.s.micro_batch) / (self.s.tp * self.peak_flops) if self.s.vocab else 0.0

    def split(self, kind: str, last: bool, layers: int | None = None) -> tuple[float, float, float]:
        """(compute, TP, EP) seconds of one op of ``kind`` on a chunk of ``layers`` (default: the
        fullest stage's; ``last``: with the logits)."""
        key = (kind, self.layers_per_chunk if layers is None else layers, last)
        if key not in self._cache:
            self._cache[key] = self._split(*key)
        return self._cache[key]

    def _split(self, kind: str, n: int, last: bool) -> tuple[float, float, float]:
        forward, core, tp, ep = self.layer_s
        recompute = {"full": forward, "selective": core}.get(self.s.recompute, 0.0)
        again = 1.0 if self.s.recompute == "full" else 0.0  # full recompute reruns the forward's collectives
        logits = self.logits_s if last else 0.0
        per_layer = {
            "F": (forward, tp, ep),
            "B": (2 * forward + recompute, tp * (1 + again), ep * (1 + again)),
            "I": (forward + recompute, tp * (1 + again), ep * (1 + again)),
            "W": (forward, 0.0, 0.0),
        }[kind]
        extra = {"F": logits, "B": 2 * logits, "I": logits, "W": logits}[kind]
        return n * per_layer[0] + extra, n * per_layer[1], n * per_layer[2]

    def op_split(self, kind: str, stage: int, virtual: int) -> tuple[float, float, float]:
        """(compute, TP, EP) seconds of an op of ``kind`` on virtual ``stage``; compute measured where given."""
        compute, tp, ep = self.split(kind, stage == virtual - 1, self.stage_layers[stage])
        return (self.measured.compute_s(kind, stage) if self.measured else compute), tp, ep

    def duration_s(self, op: Op, virtual: int) -> float:
        return sum(self.op_split(op.kind, op.stage, virtual))

    def totals(self, micro_batches: int, virtual: int, rank: int, pp: int) -> dict[str, float]:
        """Compute, TP and EP seconds of ``rank``'s ops over the iteration."""
        kinds = ("F", "I", "W") if self.s.schedule == "zero-bubble" else ("F", "B")
        sums = [0.0, 0.0, 0.0]
        for stage in range(rank, virtual, pp):
            for kind in kinds:
                for index, value in enumerate(self.op_split(kind, stage, virtual)):
                    sums[index] += micro_batches * value
        return dict(zip(("compute", "tp", "ep"), sums))

    # -- data parallel --------------------------------------------------------------------------
    @cached_property
    def chunk_grad_bytes(self) -> float:
        spec = self.s.spec()
        dense = spec.attention_params() + (spec.hidden * spec.experts if spec.experts else 0)
        experts = max(spec.experts, 1) * spec.mlp_params() / self.s.ep
        return self.layers_per_chunk * (dense + experts) / self.s.tp * self.element

    @cached_property
    def buckets_per_chunk(self) -> tuple[float, ...]:
        """Bucket sizes (bytes) of one chunk's gradients, ``bucket_mb`` each, the rest last."""
        size, total = self.s.bucket_mb * 1e6, self.chunk_grad_bytes
        full = int(total // size)
        return (size,) * full + ((total - full * size,) if total - full * size > 0 else ())

    @property
    def dp_op(self) -> str:
        return "all_reduce" if self.s.zero == 0 else "reduce_scatter"

    @cached_property
    def dp_buckets(self) -> tuple[tuple[float, tuple[float, ...]], ...]:
        """Per bucket of one chunk: (its gradient bytes, the bytes of each collective it issues):
        one each without a comm hook, the hook's all-reduces with one (:mod:`.dphook`)."""
        if self.s.comm_hook == "none":
            return tuple((nbytes, (nbytes,)) for nbytes in self.buckets_per_chunk)
        from sim.training.parallel.dphook import hooked_buckets

        return hooked_buckets(self.s, self.layers_per_chunk, self.element)

    def dp_call_s(self, nbytes: float) -> float:
        """One data-parallel gradient collective (ZeRO 3's are timed after each backward instead)."""
        return 0.0 if self.s.zero == 3 else self.costs.collective_s("dense_dp", self.dp_op, nbytes)

    @property
    def after_step_s(self) -> float:
        """The measured step-end compute (the optimizer); ZeRO 1/2: the updated weights
        all-gathered after the optimizer, not overlapped."""
        optimizer = self.measured.step_end_s if self.measured else 0.0
        if self.s.zero not in (1, 2):
            return optimizer
        return optimizer + self.s.chunks * sum(
            self.costs.collective_s("dense_dp", "all_gather", nbytes) for nbytes in self.buckets_per_chunk
        )

    @cached_property
    def zero3_gather_s(self) -> float:
        return self.costs.collective_s("dense_dp", "all_gather", self.chunk_grad_bytes)

    @cached_property
    def zero3_reduce_s(self) -> float:
        return self.costs.collective_s("dense_dp", "reduce_scatter", self.chunk_grad_bytes)

    def bytes_by_kind(self, s: TrainScenario) -> dict[str, float]:
        """Bytes per GPU: one TP collective and a layer's forward TP total, one boundary message,
        a stage's gradients, one all_to_all; and each kind's total over the iteration."""
        backward_factor = 2 if s.recompute == "full" else 1
        ops_per_chunk = s.micro_batches * max(s.rank_layers(rank) for rank in range(s.pp))
        tp_total = ops_per_chunk * (1 + backward_factor) * sum(nbytes for _, nbytes in self.tp_collectives)
        ep_total = ops_per_chunk * (1 + backward_factor) * sum(nbytes for _, nbytes in self.ep_collectives)
        return {
            "tp_per_layer_forward": sum(nbytes for _, nbytes in self.tp_collectives),
            "pp_per_micro_batch": self.boundary_bytes if s.pp > 1 else 0.0,
            "pp_gather_per_micro_batch": self.tokens_bytes if s.pp > 1 and self.boundary_gather_s else 0.0,
            "dp_per_stage": self.chunk_grad_bytes * s.chunks if s.dp * s.ep > 1 else 0.0,
            "dp_sent_per_stage": sum(sum(calls) for _, calls in self.dp_buckets) * s.chunks if s.dp * s.ep > 1 else 0.0,
            "ep_per_all_to_all": self.ep_collectives[0][1] if self.ep_collectives else 0.0,
            "tp_total": tp_total,
            "ep_total": ep_total,
        }

    # -- events -----------------------------------------------------------------------------------
    def rows(self, rank: int, op: Op, start: float, virtual: int, layout: Layout) -> list[dict[str, Any]]:
        """The op's rows: per layer its compute, then its TP and EP collectives, in order."""
        compute, tp, ep = self.op_split(op.kind, op.stage, virtual)
        n = self.stage_layers[op.stage]
        passes = 0 if op.kind == "W" else (2 if self.s.recompute == "full" and op.kind != "F" else 1)
        collectives = [("tp", o, b) for o, b in self.tp_collectives] * passes + [("ep", o, b) for o, b in self.ep_collectives] * passes
        rows, now = [], start
        name = f"{op.kind} mb{op.micro_batch} stage{op.stage}"
        for layer in range(max(n, 1)):  # a stage of no layers (the logits alone): one compute row
            rows.append(row(rank, "compute", op.kind, f"{name} layer{layer}", now, now + compute / max(n, 1), 0.0, -1, ()))
            now += compute / max(n, 1)
            for stream, collective, nbytes in collectives if n else ():
                seconds = self.costs.collective_s(stream, collective, nbytes)
                rows.append(
                    row(rank, stream, collective, f"{name} layer{layer}", now, now + seconds, nbytes, -1, layout.group(stream, rank))
                )
                now += seconds
        return rows


def row(
    rank: int, stream: str, kind: str, name: str, start: float, end: float, nbytes: float, peer: int, group: tuple[int, ...] = ()
) -> dict[str, Any]:
    return {"rank": rank, "stream": stream, "kind": kind, "name": name, "start_s": start, "end_s": end, "nbytes": nbytes,
            "peer": peer, "group": list(group)}  # fmt: skip


def op_work(
    scenario: TrainScenario, costs: CommCosts, peak_flops: float, element: int, hbm_Bps: float = 0.0, measured: MeasuredCosts | None = None
) -> OpWork:
    return OpWork(scenario, costs, peak_flops, element, hbm_Bps, measured=measured)
