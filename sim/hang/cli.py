"""``collsim sim hang``: explain a hang or desync from per-rank programs, a canonical case or
flight-recorder dumps, with mutations (``--skip 1:0``) that break a working program."""

from __future__ import annotations

import json
from typing import Any

import click

from sim.cli_fields import field_options
from sim.errors import CollsimError
from sim.fields import command_fields
from sim.hang import fields  # registers the "hang" field table

__all__ = ["format_report", "hang", "mutate", "program_data"]

_TOOLS = (
    ("ddp", "DDP's reducer (any backend)"),
    ("nccl", "NCCL watchdog"),
    ("nccl_detail", "NCCL + TORCH_DISTRIBUTED_DEBUG=DETAIL"),
    ("gloo", "gloo"),
    ("gloo_detail", "gloo + TORCH_DISTRIBUTED_DEBUG=DETAIL"),
)
_MUTATIONS = {"skip": 2, "resize": 3, "dtype": 3, "swap": 3, "dies": 2, "stalls": 2}
_FIELDS = command_fields("hang", "hang")  # the entries that name the command: its flags (sim.hang.fields)


def mutate(data: dict[str, Any], kind: str, spec: str) -> dict[str, Any]:
    """Program data with one mutation: skip RANK:CALL, resize RANK:CALL:COUNT, dtype
    RANK:CALL:DTYPE, swap RANK:CALL:CALL, dies RANK:CALL, stalls RANK:CALL (before that call)."""
    parts = spec.split(":")
    if len(parts) != _MUTATIONS[kind] or not all(p.strip() for p in parts):
        shape = {"skip": "RANK:CALL", "resize": "RANK:CALL:COUNT", "dtype": "RANK:CALL:DTYPE", "swap": "RANK:CALL:CALL"}.get(
            kind, "RANK:CALL"
        )
        raise CollsimError(f"--{kind}: {spec[:40]!r} is not {shape} (call: index in the rank's program, from 0)")
    ranks = [list(calls) for calls in data.get("ranks", [])]
    rank, index = _index(parts[0], len(ranks), f"--{kind}", "rank"), None
    calls = ranks[rank]
    index = _index(parts[1], len(calls) + (1 if kind in ("dies", "stalls") else 0), f"--{kind}", f"call of rank {rank}")
    if kind == "skip":
        del calls[index]
    elif kind == "resize":
        calls[index] = {**calls[index], "count": _index(parts[2], 2**40 + 1, "--resize", "count")}
    elif kind == "dtype":
        calls[index] = {**calls[index], "dtype": parts[2]}
    elif kind == "swap":
        other = _index(parts[2], len(calls), "--swap", f"call of rank {rank}")
        calls[index], calls[other] = calls[other], calls[index]
    else:
        calls.insert(index, {"op": "die" if kind == "dies" else "stall"})
    ranks[rank] = calls
    return {**data, "ranks": ranks}


def _index(text: str, limit: int, flag: str, what: str) -> int:
    if not text.strip().isdigit() or int(text) >= limit:
        raise CollsimError(f"{flag}: {what} {text[:20]!r} must be a whole number from 0 to {limit - 1}")
    return int(text)


def format_report(report: Any) -> str:
    """The text report: verdict, ranks, wait-for graph, then each tool's lines."""
    out = [
        f"verdict: {report.verdict}: {report.summary}",
        "rank  state       stopped at                       waits for  first divergent call",
    ]
    for r in report.ranks:
        tag = f" ({r.tag[:20]}...)" if len(r.tag) > 20 else f" ({r.tag})" if r.tag else ""
        where = f"{r.group} #{r.seq} {r.op}{tag}" if r.op else f"call {r.call_index}"
        waits = ",".join(map(str, r.waits_for)) or "-"
        out.append(f"{r.rank:<5} {r.state:<11} {where:<32} {waits:<10} {r.first_divergence or '-'}")
    edges = ", ".join(f"{a}->{b}" for a, b in report.wait_for) or "none"
    out += [
        f"wait-for graph: {edges}"
        + (f"; cycle {report.cycle}" if report.cycle else "")
        + (f"; missing party {list(report.missing)}" if report.missing else "")
    ]
    fr = report.flight_recorder
    out.append(
        f"flight recorder: {fr['classification']}"
        + (f" at {fr['group']} #{fr['seq']}, culprit(s) {fr['culprits']}" if fr["culprits"] else "")
    )
    for tool, title in _TOOLS:
        lines = report.lines(tool)
        out += (
            [f"{title}:"] + [f"  rank {line.rank} {line.outcome}: {line.message.replace(chr(10), ' ')}" for line in lines] if lines else []
        )
    return "\n".join(out)


@click.command("hang")
@click.option("--programs", "programs_file", default=None, help="YAML/JSON file: per-rank lists of calls (op, count, dtype, group, tag)")
@click.option(
    "--case", "case_name", default=None, help="a canonical case: size_mismatch, op_mismatch, skipped, swapped, unpaired_send, rank_dies"
)
@click.option(
    "--ddp", "ddp_file", default=None, help="DDP scenario file (as collsim sim ddp --scenario): one step's bucket all-reduces on every rank"
)
@click.option(
    "--fsdp",
    "fsdp_file",
    default=None,
    help="FSDP scenario file (as collsim sim fsdp --scenario): one step's all-gathers and reduce-scatters",
)
@click.option("--flight-recorder", "flight_dir", default=None, help="folder of flight-recorder dumps (one per rank) to explain")
@field_options("hang", *_FIELDS, decls={name: (fields.FIELDS[name].option, name) for name in _FIELDS})
@click.option("--write-flight-recorder", "write_dir", default=None, help="write the simulated ranks' flight-recorder dumps to this folder")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
def hang(timeout_s: float | None, write_dir: str | None, as_json: bool, **options: Any) -> None:
    """Explain a hang or desync: which ranks block where, and what NCCL, gloo, DETAIL and the flight recorder would show."""
    from dataclasses import replace

    from sim.hang import explain, parse_programs
    from sim.hang.flight import write_dumps
    from sim.hang.programs import check_timeout
    from sim.hang.training import tool_note

    data, notes = program_data(options)
    programs = parse_programs({key: value for key, value in data.items() if key != "about"})
    if timeout_s is not None:
        programs = replace(programs, timeout_s=check_timeout(timeout_s, "--timeout"))
    report = explain(programs)
    for rank, message in notes:
        report = tool_note(report, rank, message)
    if write_dir:
        write_dumps(programs, write_dir)
    click.echo(json.dumps(report.to_dict(), indent=1, default=str) if as_json else format_report(report))


def program_data(options: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[int, str]]]:
    """The programs the options name, mutated; and (rank, message) notes of DDP's reducer."""
    from sim.hang import case
    from sim.hang.flight import read_dumps
    from sim.hang.programs import load_programs

    sources = {
        "--programs": "programs_file",
        "--case": "case_name",
        "--ddp": "ddp_file",
        "--fsdp": "fsdp_file",
        "--flight-recorder": "flight_dir",
    }
    given = [flag for flag, key in sources.items() if options[key]]
    if len(given) != 1:
        raise CollsimError(
            f"give one of --programs FILE, --case NAME, --ddp FILE, --fsdp FILE or --flight-recorder DIR (got {', '.join(given) or 'none'})"
        )
    step, notes = None, []
    if options["flight_dir"]:
        data = read_dumps(options["flight_dir"]).to_dict()
    elif options["case_name"]:
        data = dict(case(options["case_name"]))
    elif options["programs_file"]:
        data = load_programs(options["programs_file"]).to_dict()
    else:
        step, data = _step(options)
    if options["unused_param"] and step is None:
        raise CollsimError("--unused-param: a DDP step only (--ddp FILE)")
    for spec in options["unused_param"]:
        from sim.hang.training import with_unused

        data, note = with_unused(step, data, spec)
        notes.append(note)
    for kind in _MUTATIONS:
        for spec in options[kind]:
            data = (
                _timed(step, data, kind, spec) if kind in ("dies", "stalls") and spec.rstrip().endswith("s") else mutate(data, kind, spec)
            )
    return data, notes


def _step(options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    from sim.files import load_mapping
    from sim.hang.training import ddp_step, fsdp_step

    if options["ddp_file"]:
        step = ddp_step(load_mapping(options["ddp_file"], "DDP scenario file"))
    else:
        step = fsdp_step(load_mapping(options["fsdp_file"], "FSDP scenario file"))
    return step, step.programs()


def _timed(step: Any, data: dict[str, Any], kind: str, spec: str) -> dict[str, Any]:
    from sim.hang.training import with_time_event
    from sim.units import parse_time

    rank_text, _, time_text = spec.partition(":")
    if step is None:
        raise CollsimError(f"--{kind}: {spec[:40]!r}: a time into the step needs --ddp; with programs give RANK:CALL (a call index)")
    rank = _index(rank_text, step.ranks, f"--{kind}", "rank")
    return with_time_event(step, data, kind, rank, parse_time(time_text, f"--{kind}"))
