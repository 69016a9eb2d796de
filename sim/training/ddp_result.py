"""One simulated DDP step as data: per-call spans, gradient ready times, the summary the CLI
prints, event rows and the Chrome trace (:func:`sim.training.ddp.run_ddp` builds it)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from sim.collective.results import event_row, write_csv, write_text
from sim.trace import chrome_trace
from sim.training import overhead as formula
from sim.training.ddp_plan import Call, Prepared
from sim.training.ddp_scenario import DDPScenario


@dataclass(frozen=True)
class DDPResult:
    """One simulated step: per-call spans, gradient ready times, summary numbers and events."""

    scenario: DDPScenario
    prepared: Prepared
    calls: tuple[Call, ...] | list[Call]
    ready_s: tuple[float, ...]  # per parameter, absolute
    segments: tuple[tuple[tuple[int, ...], float, float], ...]  # backward work (params, start, end)
    comm_spans: tuple[tuple[float, float], ...]  # per call (start, end)
    backward_start_s: float
    backward_end_s: float

    @property
    def comm_end_s(self) -> float:
        return self.comm_spans[-1][1] if self.comm_spans else self.backward_end_s

    @property
    def overhead_s(self) -> float:
        """Comm end minus backward end: the time gradient sync adds after backward (0 when a
        measured profile's compute after its last gradient outlasts the communication)."""
        return max(0.0, self.comm_end_s - self.backward_end_s)

    @property
    def exposed_comm_s(self) -> float:
        """Comm time not hidden behind backward compute."""
        return sum(max(0.0, end - max(start, self.backward_end_s)) for start, end in self.comm_spans)

    @property
    def comm_busy_s(self) -> float:
        return sum(end - start for start, end in self.comm_spans)

    @property
    def optimizer_start_s(self) -> float:
        return max(self.backward_end_s, self.comm_end_s)

    @property
    def step_time_s(self) -> float:
        return self.optimizer_start_s + self.prepared.optimizer_s

    @property
    def compute_time_s(self) -> float:
        """The step without any communication (and without slowdown)."""
        p = self.prepared
        return self.scenario.accumulation_steps * (p.forward_s + p.backward.total_s) + p.optimizer_s

    def _call_ready_s(self, call: Call) -> float:
        if self.scenario.strategy in ("naive", "flat"):
            return self.backward_end_s
        return max(self.ready_s[index] for index in call.params)

    @cached_property
    def buckets(self) -> list[dict[str, Any]]:
        """One row per all-reduce call: index, name, bytes, params, num_params, ready_s, start_s, end_s."""
        names = [param.name for param in self.prepared.params]
        return [
            {"index": call.index, "name": call.name, "bytes": call.nbytes, "wire_bytes": call.wire_nbytes,
             "all_reduces": [{"bytes": part.nbytes, "label": part.label} for part in call.parts],
             "params": [names[i] for i in call.params], "num_params": len(call.params),
             "ready_s": self._call_ready_s(call), "start_s": start, "end_s": end}
            for call, (start, end) in zip(self.calls, self.comm_spans)
        ]  # fmt: skip

    def formula(self) -> dict[str, float | None]:
        """The closed forms for this many equal buckets, with the comm model's (o, w)."""
        o_s, w_Bps = self.prepared.comm.ow(self.prepared.grad_bytes)
        if self.scenario.strategy == "naive" or not w_Bps or not math.isfinite(w_Bps):
            return {"o_s": o_s, "w_Bps": w_Bps, "formula_overhead_s": None, "formula_simple_overhead_s": None}
        sizes = [part.nbytes for call in self.calls for part in call.parts]  # a comm hook's all-reduces (one a bucket without)
        s, n_b, t_s = sum(sizes), len(sizes), self.prepared.backward.total_s
        return {
            "o_s": o_s,
            "w_Bps": w_Bps,
            "formula_overhead_s": formula.overhead_uniform(s, n_b, t_s, o_s, w_Bps),
            "formula_simple_overhead_s": formula.overhead_simple(s, n_b, o_s, w_Bps),
        }

    def summary(self) -> dict[str, Any]:
        """The JSON the CLI prints (keys are part of the CLI contract)."""
        s, p = self.scenario, self.prepared
        return {
            "strategy": s.strategy,
            "comm": s.comm,
            "mode": s.mode if s.comm == "network" else "formula",
            "ranks": s.ranks,
            "num_params": len(p.params),
            "param_count": sum(param.numel for param in p.params),
            "grad_bytes": p.grad_bytes,
            "bucket_cap_bytes": s.bucket_cap_bytes if s.strategy == "bucketed" else None,
            "first_bucket_bytes": s.first_bucket_bytes if s.strategy == "bucketed" else None,
            "num_buckets": len(self.calls),
            "largest_bucket_bytes": max(call.nbytes for call in self.calls),
            "comm_hook": s.comm_hook,
            "wire_bytes": sum(call.wire_nbytes for call in self.calls),
            "accumulation_steps": s.accumulation_steps,
            "forward_time_s": p.forward_s,
            "backward_time_s": p.backward.total_s,
            "optimizer_time_s": p.optimizer_s,
            "backward_start_s": self.backward_start_s,
            "backward_end_s": self.backward_end_s,
            "comm_end_s": self.comm_end_s,
            "overhead_s": self.overhead_s,
            "exposed_comm_s": self.exposed_comm_s,
            "comm_busy_s": self.comm_busy_s,
            "compute_time_s": self.compute_time_s,
            "step_time_s": self.step_time_s,
            **self.formula(),
            "buckets": self.buckets,
            "scenario": s.to_dict(),
            **({"hardware_comm": self.hardware_comm()} if s.hardware else {}),
        }

    def hardware_comm(self) -> dict[str, Any]:
        """On a hardware preset: what each all-reduce ran (NCCL's pick, the DES algorithm and
        channels, or why NCCL's model answered) and, for ow, how o and w were fitted."""
        s, model = self.scenario, self.prepared.comm
        sizes = sorted({part.nbytes for call in self.calls for part in call.parts})
        picks = [
            {"bytes": n, "time_s": pick.time_s, "nccl_pick": pick.nccl_pick, "algorithm": pick.algorithm, "channels": pick.chunks, "why": pick.why}
            for n, pick in ((n, model.picks.get(n)) for n in sizes) if pick is not None
        ]  # fmt: skip
        fit = model.ow_fit
        return {"hardware": s.hardware, "nodes": s.nodes, "algorithm": s.algorithm if s.comm == "network" else None,
                "picks": picks, "ow_fit": fit.to_dict() if fit is not None else None}  # fmt: skip

    def events(self) -> list[dict[str, Any]]:
        """Rows in the core's event schema (rank 0; every rank runs the same timeline)."""
        rows = self._compute_rows() + self._grad_rows() + self._comm_rows()
        rows.sort(key=lambda row: (row["start_s"], row["end_s"], row["resource"]))
        return rows

    def _row(
        self, resource: str, kind: str, start_s: float, end_s: float, nbytes: int = 0, step: int = -1, bucket: int = -1, name: str = ""
    ) -> dict[str, Any]:
        return event_row(0, -1, resource, kind, start_s, end_s, nbytes, step, -1, bucket, name)

    def _compute_rows(self) -> list[dict[str, Any]]:
        p, last = self.prepared, self.scenario.accumulation_steps - 1
        micro_s = p.forward_s + p.backward.total_s
        rows = []
        for micro in range(last + 1):
            rows.append(self._row("compute:0", "forward", micro * micro_s, micro * micro_s + p.forward_s, step=micro, name="forward"))
            if micro < last:  # no_sync micro-steps: one backward block, no communication
                rows.append(
                    self._row(
                        "compute:0",
                        "backward",
                        micro * micro_s + p.forward_s,
                        (micro + 1) * micro_s,
                        p.grad_bytes,
                        micro,
                        name="backward (no_sync)",
                    )
                )
        for indices, start_s, end_s in self.segments:
            nbytes = sum(p.params[i].nbytes for i in indices)
            rows.append(self._row("compute:0", "backward", start_s, end_s, nbytes, last, name=p.params[indices[0]].name))
        rows.append(self._row("compute:0", "optimizer", self.optimizer_start_s, self.step_time_s, step=last, name="optimizer"))
        return rows

    def _grad_rows(self) -> list[dict[str, Any]]:
        bucket_of = {index: call.index for call in self.calls for index in call.params}
        last = self.scenario.accumulation_steps - 1
        return [
            self._row("compute:0", "grad_ready", t, t, param.nbytes, last, bucket_of[i], param.name)
            for i, (param, t) in enumerate(zip(self.prepared.params, self.ready_s))
        ]

    def _comm_rows(self) -> list[dict[str, Any]]:
        last = self.scenario.accumulation_steps - 1
        return [
            self._row("comm:0", "comm", start, end, call.wire_nbytes, last, call.index, call.name)
            for call, (start, end) in zip(self.calls, self.comm_spans)
        ]

    def to_csv(self, path: str | Path) -> None:
        write_csv(self.events(), path)

    def chrome_trace(self) -> dict[str, Any]:
        return chrome_trace(self.events())

    def write_trace(self, path: str | Path) -> None:
        write_text(path, json.dumps(self.chrome_trace()), "--trace")
