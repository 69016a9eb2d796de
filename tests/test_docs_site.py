"""The documentation site: .ci/run runs the README's test command, and the MkDocs site builds
with warnings as errors (a broken link or anchor, a page missing from the nav, a reference
table the code cannot produce)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_test_command_the_readme_shows():
    """README's "Two commands" promise `.ci/run runs exactly this`."""
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "python -m pytest" in line]
    readme = [line.strip() for line in (ROOT / "README.md").read_text().splitlines() if line.strip().startswith("python3 -m venv")]
    assert len(ci) == 1, ci
    assert ci[0].strip() in readme, f".ci/run runs\n{ci[0]}\nthe README shows\n" + "\n".join(readme)
    assert "docs]" in ci[0], "CI installs the docs extra, so the site build below runs there"


@pytest.mark.slow
def test_the_site_builds_strictly_with_the_reference_pages_written_from_the_code(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        pytest.skip("the docs extra is not installed: pip install -e '.[docs]'")
    site = tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    cli = (site / "reference" / "cli" / "index.html").read_text()
    assert "collsim sim collective" in cli and "--eager-limit" in cli and "collsim validate" in cli
    assert "reference: " not in cli  # every marker was replaced
    assert "latency_s" in (site / "reference" / "scenario" / "index.html").read_text()
    assert "run_collective" in (site / "reference" / "api" / "index.html").read_text()


def test_every_relative_link_of_the_readme_names_a_file_of_the_repository():
    """The README is read on GitHub, outside the site: its links to docs/ must resolve there."""
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    local = [link for link in links if "://" not in link]
    assert local, "the README links its guides"
    assert [link for link in local if not (ROOT / link).exists()] == []
