"""The `collsim sim ddp` commands of docs/ddp.md with what they print.

Run from anywhere: python docs/examples/ddp_commands.py  (expected output: ddp_commands.expected.txt)
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from click.testing import CliRunner

from sim.cli import cli

COMMANDS = [
    "collsim sim ddp --preset xl --strategy bucketed --bucket-size 25MiB --backward-time 120ms --comm ow --o 50us --w 10GB/s",
    "collsim sim ddp --scenario docs/examples/ddp_scenarios/gpt2_ring8.yaml",
    "collsim sim ddp --scenario docs/examples/ddp_scenarios/gpt2_ring8.yaml --sweep-bucket-sizes 1MiB,4MiB,16MiB,64MiB",
    "collsim sim ddp --preset gpt2 --backward-time 120ms --comm ow --o 50us --w 10GB/s --optimize",
    "collsim sim ddp --profile docs/examples/ddp_scenarios/handmade_profile.json --bucket-size 16KB --first-bucket none --o 100us --w 10MB/s",
    "collsim sim ddp --profile docs/examples/ddp_scenarios/handmade_profile.json --bucket-size 16KB --first-bucket none --o 100us --w 10MB/s --rebuild",
    "collsim sim ddp --param-bytes 4MiB,4MiB --bucket-size 0 --backward-time 10ms --o 50us --w 10GB/s",
]


def main() -> None:
    os.chdir(Path(__file__).resolve().parents[2])  # commands use paths from the repository root
    for command in COMMANDS:
        result = CliRunner().invoke(cli, shlex.split(command)[1:])
        print(f"$ {command}")
        print(result.stdout + result.stderr, end="")
        if result.exit_code:
            print(f"[exit {result.exit_code}]")
        print()


if __name__ == "__main__":
    main()
