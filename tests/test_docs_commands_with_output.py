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
