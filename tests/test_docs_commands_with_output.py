"""Docs that cannot go stale (issue 22): every `$ collsim ...` line in README.md and docs/**/*.md
that is followed by its output is run here and must print that output (lines shown with `...`
in them are left out of the comparison)."""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path

import pytest

from .cli_in_process import collsim_in_process

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
# development records: measurements of one machine and one day (the user docs give none)
RECORDS = [*sorted((ROOT / "docs" / "dev").glob("**/*.md")), *sorted((ROOT / "bench" / "results").glob("**/*.md"))]


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
                found.append((str(path.relative_to(ROOT)), index + 1, match.group(2), output))
    return found


EXAMPLES = _examples()


def test_the_docs_show_commands_with_output():
    assert len(EXAMPLES) >= 2  # docs/getting-started.md, docs/nccl-model.md and docs/scale.md at least
    assert any(path.parent.name == "dev" for path in DOCS), "the docs' subfolders (docs/dev/, docs/reference/) are read too"


@functools.cache  # a command two pages show (getting-started.md, nccl-model.md) runs once
def _printed(command: str) -> str:
    """What the command prints, run in this process (collsim's own main through click's CliRunner,
    tests/cli_in_process.py): the same output without a Python and collsim start-up a command."""
    done = collsim_in_process(*shlex.split(command)[1:], cwd=ROOT)
    return done.stdout + done.stderr


@pytest.mark.parametrize(("name", "line", "command", "output"), EXAMPLES, ids=[f"{e[0]}:{e[1]}" for e in EXAMPLES])
def test_a_documented_command_prints_what_the_docs_show(name, line, command, output):
    printed = _printed(command).splitlines()
    if len(printed) == len(output):  # a line the docs show with "..." is not compared
        printed = [shown if "..." in shown else line for shown, line in zip(output, printed)]
    assert printed == output, f"{name}:{line}: the docs show\n" + "\n".join(output) + "\nthe command prints\n" + "\n".join(printed)


DURATION = re.compile(r"(?<![\w.-])\d+(\.\d+)?\s?(s|ms|min|h)\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
MACHINE = re.compile(r"vCPU|machine|\bVM\b|host|H100|A100|GPU", re.I)


def _timed_commands() -> list[tuple[str, int, str]]:
    """Command lines in the records' code blocks (indented or fenced) whose comment shows a
    time: how long the command takes is a figure of one machine and one day."""
    found = []
    for path in RECORDS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = re.match(r"^\s*(\$ )?(collsim|python|torchrun)\b[^#]*#(.*)$", line)
            if match and DURATION.search(match.group(3)):
                found.append((str(path.relative_to(ROOT)), number, match.group(3).strip()))
    return found


def test_a_time_shown_beside_a_command_in_a_record_carries_its_date_and_machine():
    """A comment such as '# ~2.5 min on 2 cores' beside a command went stale unnoticed (the
    README said 2.5 min, docs/real.md 3 min, for the same command). Records (docs/dev/,
    bench/results/) keep such figures with their date and machine; user docs are not held to it."""
    undated = [
        f"{name}:{number}: {comment}"
        for name, number, comment in _timed_commands()
        if not (DATE.search(comment) and MACHINE.search(comment))
    ]
    assert undated == [], "give the date and machine of these figures (or run them in a test):\n" + "\n".join(undated)


def test_the_readme_is_a_front_page_without_dated_measurements():
    """The README carried 205 lines of benchmark logs, dated and with load averages, and
    contradicted itself; measurements belong in the records (docs/dev/)."""
    text = (ROOT / "README.md").read_text()
    assert not DATE.search(text), DATE.search(text)
    assert "load average" not in text.lower()
    assert len(text.splitlines()) <= 200
