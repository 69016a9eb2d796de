"""Docs that cannot go stale (issue 22): every `$ collsim ...` line in README.md and docs/*.md
that is followed by its output is run here and must print that output (lines shown with `...`
in them are left out of the comparison)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _examples() -> list[tuple[str, int, str, list[str]]]:
    found = []
    for path in DOCS:
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            match = re.match(r"^(\s*)\$ (collsim .*)$", line)
            if not match:
                continue
            indent, output = match.group(1), []
            for following in lines[index + 1 :]:
                if not following.strip() or following.strip().startswith(("```", "$ ")) or not following.startswith(indent):
                    break
                output.append(following[len(indent) :])
            if output:
                found.append((path.name, index + 1, match.group(2), output))
    return found


EXAMPLES = _examples()


def test_the_docs_show_commands_with_output():
    assert len(EXAMPLES) >= 2  # docs/nccl-model.md and docs/scale.md at least


@pytest.mark.parametrize(("name", "line", "command", "output"), EXAMPLES, ids=[f"{e[0]}:{e[1]}" for e in EXAMPLES])
def test_a_documented_command_prints_what_the_docs_show(name, line, command, output):
    args = shlex.split(command)[1:]
    done = subprocess.run([sys.executable, "-m", "sim.cli", *args], capture_output=True, text=True, timeout=300, cwd=ROOT)
    printed = (done.stdout + done.stderr).splitlines()
    assert printed == output, f"{name}:{line}: the docs show\n" + "\n".join(output) + "\nthe command prints\n" + "\n".join(printed)


DURATION = re.compile(r"(?<![\w.-])\d+(\.\d+)?\s?(s|ms|min|h)\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
MACHINE = re.compile(r"vCPU|machine|\bVM\b|host|H100|A100|GPU", re.I)


def _timed_commands() -> list[tuple[str, int, str]]:
    """Command lines in code blocks (indented or fenced) whose comment shows a time: how long
    the command takes is a figure of one machine and one day."""
    found = []
    for path in DOCS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = re.match(r"^\s*(\$ )?(collsim|python|torchrun)\b[^#]*#(.*)$", line)
            if match and DURATION.search(match.group(3)):
                found.append((path.name, number, match.group(3).strip()))
    return found


def test_a_time_shown_beside_a_command_carries_its_date_and_machine():
    """A comment such as '# ~2.5 min on 2 cores' beside a command went stale unnoticed (the
    README said 2.5 min, docs/real.md 3 min, for the same command)."""
    undated = [f"{name}:{number}: {comment}" for name, number, comment in _timed_commands() if not (DATE.search(comment) and MACHINE.search(comment))]
    assert undated == [], "give the date and machine of these figures (or run them in a test):\n" + "\n".join(undated)
