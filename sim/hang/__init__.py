"""Hang and desync explainer: per-rank programs of collectives in; which ranks block where, the
wait-for graph, and what each tool (NCCL's watchdog, TORCH_DISTRIBUTED_DEBUG=DETAIL, gloo, the
flight recorder) would show, out. ``explain(programs, timeout_s=...) -> HangReport``."""

from sim.hang.cases import CASES, case
from sim.hang.programs import Call, Programs, load_programs, parse_programs
from sim.hang.report import HangReport, RankReport, ToolLine, explain

__all__ = ["CASES", "Call", "HangReport", "Programs", "RankReport", "ToolLine", "case", "explain", "load_programs", "parse_programs"]
