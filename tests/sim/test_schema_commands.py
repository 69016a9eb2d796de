"""One schema produces the options (issue 32 item 3) of the commands with their own field table:
``sim run-cost``, ``sim dataparallel`` and ``sim hang``. Every option that is no file or output
is an entry naming the command, with the entry's flag, help and choices, and every such entry
is an option: the both-ways check of tests/sim/test_schema_single_source.py, for these tables."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from sim.fields import command_fields, fields_of

# command -> (its click command "module:name", its field table, options that are no field)
COMMANDS = {
    "run-cost": ("sim.training.runcost_cli:run_cost_command", "runcost", {"scenario_file", "from_ddp", "from_fsdp", "hardware", "nodes", "as_json"}),
    "dataparallel": ("sim.training.dataparallel_cli:dataparallel", "dataparallel", {"as_json"}),
    "hang": ("sim.hang.cli:hang", "hang", {"programs_file", "case_name", "ddp_file", "fsdp_file", "flight_dir", "write_dir", "as_json"}),
}  # fmt: skip


def _command(name: str):
    module, attribute = COMMANDS[name][0].split(":")
    return getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_of_the_command_is_an_entry_naming_it_and_every_such_entry_an_option(command):
    _, scenario, command_only = COMMANDS[command]
    options = [param for param in _command(command).params if param.name not in command_only | {"help"}]
    table = fields_of(scenario)
    assert {param.name for param in options} <= set(table), "an option that is no entry of the table"
    assert [param.name for param in options] == list(command_fields(command, scenario))  # both ways, in the table's order
    assert all(command in info.commands for info in table.values()), "an entry of the command's own table that is no flag"
    for param in options:  # the flag, help and choices are the entry's
        info = table[param.name]
        assert param.opts == [info.option]
        assert info.help in (param.help or "")
        if info.choices:
            assert list(param.type.choices) == list(info.choices)


NEW_ENTRY = """
import dataclasses, json, sys
import sim.fields as fields
from click.testing import CliRunner
from sim.cli import cli
table = fields.fields_of(sys.argv[1])
table["made_up_rate"] = fields.FieldInfo("made_up_rate", "Made-up rate", "a rate added in one place only", low=0, high=1, kind="float",
                                         commands=(sys.argv[2],))
help_text = CliRunner().invoke(cli, ["sim", sys.argv[2], "--help"], terminal_width=200).output
print(json.dumps(help_text))
"""


@pytest.mark.slow
@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_entry_added_to_the_commands_table_alone_is_its_option(command):
    """A new entry in the command's table (here added in a fresh process, before the command is
    built) is a flag of it with its help and range, with no edit to the command."""
    scenario = COMMANDS[command][1]
    script = f"import {_table_module(scenario)}\n" + NEW_ENTRY  # sim.cli imports the command as it runs: after the entry
    done = subprocess.run([sys.executable, "-c", script, scenario, command], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    help_text = json.loads(done.stdout.strip().splitlines()[-1])
    assert "--made-up-rate FLOAT" in help_text and "a rate added in one place only (0 to 1)" in help_text


def _table_module(scenario: str) -> str:
    return {"runcost": "sim.training.runcost_fields", "dataparallel": "sim.training.dataparallel", "hang": "sim.hang.fields"}[scenario]
