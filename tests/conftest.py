"""Suite-wide settings."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run: CI runs on a fresh clone with no example
# database, and a red build should be reproducible, not a lottery.
settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")

ROOT = Path(__file__).resolve().parents[1]
SLOW_LIST = Path(__file__).with_name("slow_tests.txt")


def slow_node_ids(path: Path = SLOW_LIST) -> list[str]:
    """The node ids listed in tests/slow_tests.txt, one a line (``#`` starts a comment): a file,
    a test (every parametrization) or one parametrized case."""
    ids = [line.split("#")[0].strip() for line in path.read_text().splitlines()] if path.exists() else []
    ids = [node for node in ids if node]
    missing = sorted({node.split("::")[0] for node in ids if not (ROOT / node.split("::")[0]).exists()})
    if missing:
        raise pytest.UsageError(f"{path.name} names files that do not exist: {', '.join(missing)}")
    return ids


def _listed(nodeid: str, listed: list[str]) -> bool:
    bare = nodeid.split("[")[0]
    return any(nodeid == node or bare == node or nodeid.startswith(node + "::") for node in listed)


@pytest.hookimpl(tryfirst=True)  # before -m selects by markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `slow` the tests listed in tests/slow_tests.txt, so the quick selection
    (``-m "not slow and not browser"``) stays quick without editing each test file."""
    listed = slow_node_ids()
    for item in items:
        if _listed(item.nodeid, listed):
            item.add_marker(pytest.mark.slow)


MAX_WORKERS = 4  # each worker holds a Chromium, a Dash server and its gloo launches' ranks


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto`` (pyproject's addopts): one a core, two to four, for a run of folders
    (``python -m pytest``, the full suite: docs/dev/test-suite-time.md); none (one process) when
    only test files or node ids are named, or for the quick selection (``-m "not slow ..."``):
    each worker collects the whole suite, which costs more than two workers save on short tests."""
    named_files = bool(config.args) and all(Path(arg.split("::")[0]).is_file() for arg in config.args)
    quick = "not slow" in (config.option.markexpr or "")
    cores = os.cpu_count() or 1
    return 0 if named_files or quick or cores < 2 else min(cores, MAX_WORKERS)
