"""MkDocs hook: the reference pages are written from the code at build time, so they cannot
drift from it. A page asks for a table with a marker line ``<!-- reference: NAME -->``:

- ``cli``: every command of ``collsim`` (walked through click, lazy groups included), its usage,
  help and options;
- ``scenario-collective`` / ``scenario-ddp``: the scenario keys of :mod:`sim.fields`;
- ``json-collective`` / ``json-ddp``: the keys ``--json`` prints, from a tiny run;
- ``csv``: the columns of ``--csv``, from tiny runs;
- ``algorithms``: the registry of :mod:`sim.algorithms.registry`;
- ``presets``: the hardware presets' YAML files (sim/hardware/presets/).

mkdocs.yml names this file under ``hooks:``; it is excluded from the site itself.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import click
import yaml

MARKER = re.compile(r"^<!-- reference: ([a-z-]+) -->$", re.M)
ROOT = Path(__file__).resolve().parents[2]


def _cell(text: Any) -> str:
    """One table cell: a single line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _commands(group: click.Group, ctx: click.Context, path: list[str]):
    """(path, command, context) for every leaf command under ``group``, in listed order."""
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = click.Context(command, info_name=name, parent=ctx)
        if isinstance(command, click.Group):
            yield from _commands(command, sub, [*path, name])
        else:
            yield [*path, name], command, sub


def _command_section(path: list[str], command: click.Command, ctx: click.Context) -> str:
    usage = " ".join(["collsim", *path[1:], *command.collect_usage_pieces(ctx)])
    rows = ["| option | what it does |", "|---|---|"]
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:  # an argument: shown in the usage line
            continue
        flags, text = record
        rows.append(f"| `{_cell(flags)}` | {_cell(text)} |")
    body = (command.help or "").strip()
    body = re.sub(r"\n\s*\x08\n", "\n", body)  # click's "\b" no-rewrap marker
    anchor = "-".join(path)
    return f"### `{' '.join(path)}` {{#{anchor}}}\n\n```text\n{usage}\n```\n\n{body}\n\n" + "\n".join(rows) + "\n"


def cli_reference() -> str:
    from sim.cli import cli

    root = click.Context(cli, info_name="collsim")
    entries = list(_commands(cli, root, ["collsim"]))
    index = ["| command | what it does |", "|---|---|"]
    for path, command, _ in entries:
        anchor = "-".join(path)
        index.append(f"| [`{' '.join(path)}`](#{anchor}) | {_cell(command.get_short_help_str(200))} |")
    sections = [_command_section(path, command, ctx) for path, command, ctx in entries]
    return f"{len(entries)} commands.\n\n" + "\n".join(index) + "\n\n" + "\n".join(sections)


def _default(value: Any) -> str:
    if value is dataclasses.MISSING:
        return "required"
    if isinstance(value, (tuple, list)) and not value:
        return "(none)"
    return f"`{value!r}`" if value is not None else "(none)"


def scenario_keys(scenario: str) -> str:
    from sim.fields import field_info, fields_of

    rows = ["| key | also | unit | allowed | default | meaning | flag and box | breaks |", "|---|---|---|---|---|---|---|---|"]
    for name in fields_of(scenario):
        info = field_info(name, scenario)
        bounds = []
        if info.choices:
            bounds.append(" / ".join(f"`{c}`" for c in info.choices))
        if info.low is not None:
            bounds.append(f">= {info.low:g}")
        if info.high is not None:
            bounds.append(f"<= {info.high:g}")
        also = ", ".join(f"`{k}`" for k in (info.name, *info.aliases) if k != info.key)
        rows.append(
            f"| `{info.key}` | {also} | {info.unit} | {_cell(', '.join(bounds))} | {_cell(_default(info.default))} | {_cell(info.help)} "
            f"| {_cell(_shows(info))} | {_cell(_breaks(info))} |"
        )
    return "\n".join(rows) + "\n"


def _shows(info: Any) -> str:
    """Where a field shows: its flag on which ``sim`` commands, its box on which explorer page."""
    where = [f"`{info.option}` ({', '.join(info.commands)})"] if info.commands else []
    return "; ".join([*where, *([f"box `{info.url_key}` ({info.group})"] if info.group else [])])


def _breaks(info: Any) -> str:
    """What a value other than the default breaks, and why (the entry's reasons)."""
    reasons = [(what, getattr(info, what)) for what in ("closed_form", "collapsed") if getattr(info, what)]
    return "; ".join(f"{what.replace('_', ' ')}: {reason.replace('{value}', 'VALUE')}" for what, reason in reasons)


def _flatten(data: dict[str, Any]) -> list[tuple[str, Any]]:
    """Top-level keys, and one level of nested objects as ``outer.inner``."""
    rows = []
    for key, value in data.items():
        if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
            rows += [(f"{key}.{inner}", item) for inner, item in value.items()]
        else:
            rows.append((key, value))
    return rows


def _example(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dict):
        return "{" + ", ".join(list(value)[:4]) + (", ..." if len(value) > 4 else "") + "}"
    if isinstance(value, list):
        return f"list of {len(value)}"
    text = repr(value)
    return text if len(text) < 50 else text[:47] + "..."


def json_keys(kind: str) -> str:
    """The keys of ``--json``, from one tiny run: a collective or a DDP step."""
    if kind == "collective":
        from sim import CollectiveScenario, run_collective

        command = "collsim sim collective --op all_reduce --algorithm ring --ranks 4 --size 1MiB --latency 5us --bandwidth 25GB/s --json"
        data = run_collective(
            CollectiveScenario.from_dict(
                {"op": "all_reduce", "algorithm": "ring", "ranks": 4, "size": "1MiB", "latency": "5us", "bandwidth": "25GB/s"}
            )
        ).summary()
    else:
        from sim import DDPScenario, run_ddp

        command = "collsim sim ddp --preset small --backward-time 120ms --o 50us --w 10GB/s --json"
        data = run_ddp(DDPScenario.from_dict({"preset": "small", "backward_time": "120ms", "o": "50us", "w": "10GB/s"})).summary()
    rows = ["| key | type | example |", "|---|---|---|"]
    for key, value in _flatten(data):
        rows.append(f"| `{key}` | {type(value).__name__} | `{_cell(_example(value))}` |")
    return f"From `{command}`:\n\n" + "\n".join(rows) + "\n"


def csv_columns() -> str:
    """The columns of ``--csv`` (one event schema for collectives and DDP steps), from tiny runs."""
    from sim import CollectiveScenario, DDPScenario, run_collective, run_ddp

    collective = run_collective(
        CollectiveScenario.from_dict({"op": "all_reduce", "algorithm": "ring", "ranks": 4, "size": "1MiB", "bandwidth": "25GB/s"})
    ).events()
    ddp = run_ddp(DDPScenario.from_dict({"preset": "small", "backward_time": "120ms", "o": "50us", "w": "10GB/s"})).events()
    rows = ["| column | collective example | DDP step example |", "|---|---|---|"]
    for key in dict.fromkeys([*collective[0], *ddp[0]]):
        first = (_example(collective[0].get(key, "")), _example(ddp[0].get(key, "")))
        rows.append(f"| `{key}` | `{_cell(first[0])}` | `{_cell(first[1])}` |")
    return (
        f"{len(collective)} rows for a 4-rank ring all-reduce, {len(ddp)} for a DDP step of the `small` preset; the first of each:\n\n"
        + "\n".join(rows)
        + "\n"
    )


def algorithm_table() -> str:
    from sim.algorithms.registry import all_specs

    rows = ["| op | algorithm | ranks | chunks | topology | closed form | real backends run it as |", "|---|---|---|---|---|---|---|"]
    for spec in all_specs():
        if not spec.listed:
            continue
        form = spec.closed_form
        if form is None:
            closed = "none: " + _cell(spec.form) if spec.form else "none"
        else:
            closed = "yes" + (" (power-of-two p)" if spec.form_power_of_two and not spec.power_of_two else "")
        runs = ", ".join(f"{run[0]} `{run[1]}`" for run in spec.runs)
        rows.append(
            f"| {spec.op} | `{spec.name}` | {'power of two' if spec.power_of_two else 'any'} | "
            f"{'yes' if spec.chunked else '1'} | {spec.topology or 'any'} | {closed} | {runs} |"
        )
    return "\n".join(rows) + "\n"


def preset_table() -> str:
    rows = [
        "| preset | what it is | GPUs a node | inside a node | NICs a node | NIC rate | between nodes |",
        "|---|---|---|---|---|---|---|",
    ]
    for path in sorted((ROOT / "sim" / "hardware" / "presets").glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        fabric = [str(raw[key]) for key in ("intra_bandwidth", "intra_latency") if raw.get(key) is not None]
        inside = f"{', '.join(fabric)} ({raw['intra_fabric']})" if fabric and raw.get("intra_fabric") else "(one rank a node)"
        rows.append(
            f"| `{raw['name']}` | {_cell(raw.get('description', ''))} | {raw.get('gpus_per_node', '')} | {_cell(inside)} | "
            f"{raw.get('nics_per_node', '')} | {raw.get('nic_bandwidth', '')} | {raw.get('inter_latency', '')} |"
        )
    return "\n".join(rows) + "\n"


TABLES = {
    "cli": cli_reference,
    "scenario-collective": lambda: scenario_keys("collective"),
    "scenario-ddp": lambda: scenario_keys("ddp"),
    "json-collective": lambda: json_keys("collective"),
    "json-ddp": lambda: json_keys("ddp"),
    "csv": csv_columns,
    "algorithms": algorithm_table,
    "presets": preset_table,
    "backends": lambda: __import__("sim.algorithms.registry", fromlist=["x"]).backend_table_markdown(),
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def table(match: re.Match) -> str:
        name = match.group(1)
        if name not in TABLES:
            raise ValueError(f"{page.file.src_path}: unknown reference table {name!r}; known: {', '.join(TABLES)}")
        return TABLES[name]()

    return MARKER.sub(table, markdown)
