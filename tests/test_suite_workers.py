"""``-n auto`` (pyproject's addopts) runs the full suite on two workers, named test files and the
quick selection in one process (tests/conftest.py's ``pytest_xdist_auto_num_workers``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("suite_conftest_workers", HERE / "conftest.py")
suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suite)


def _config(args: list[str], markexpr: str = "") -> SimpleNamespace:
    return SimpleNamespace(args=args, option=SimpleNamespace(markexpr=markexpr))


@pytest.mark.parametrize(
    ("args", "workers"),
    [
        ([str(HERE)], 2),  # python -m pytest: testpaths, a folder
        ([str(HERE / "sim")], 2),
        ([str(HERE / "test_slow_list.py")], 0),
        ([str(HERE / "test_slow_list.py") + "::test_every_listed_id_names_an_existing_file"], 0),
        ([str(HERE / "test_slow_list.py"), str(HERE / "sim")], 2),  # a folder among the files
    ],
)
def test_a_run_of_folders_gets_two_workers_and_named_files_one_process(monkeypatch, args, workers):
    monkeypatch.setattr(suite.os, "cpu_count", lambda: 2)
    assert suite.pytest_xdist_auto_num_workers(_config(args)) == workers


@pytest.mark.parametrize(("cores", "workers"), [(3, 3), (4, 4), (16, 4)])
def test_more_cores_get_a_worker_each_up_to_four(monkeypatch, cores, workers):
    monkeypatch.setattr(suite.os, "cpu_count", lambda: cores)
    assert suite.pytest_xdist_auto_num_workers(_config([str(HERE)])) == workers


def test_a_one_core_machine_runs_in_one_process(monkeypatch):
    monkeypatch.setattr(suite.os, "cpu_count", lambda: 1)
    assert suite.pytest_xdist_auto_num_workers(_config([str(HERE)])) == 0


@pytest.mark.parametrize(("markexpr", "workers"), [("not slow and not browser", 0), ("not slow", 0), ("browser", 2), ("slow", 2)])
def test_the_quick_selection_runs_in_one_process(monkeypatch, markexpr, workers):
    monkeypatch.setattr(suite.os, "cpu_count", lambda: 2)
    assert suite.pytest_xdist_auto_num_workers(_config([str(HERE)], markexpr)) == workers


def test_a_worker_that_runs_out_of_tests_takes_the_others():
    """--dist worksteal (pyproject's addopts): with --dist load a worker could sit idle at the end
    while the other still held a queue of browser tests."""
    import re

    (addopts,) = re.findall(r'^addopts = "(.*)"$', (HERE.parent / "pyproject.toml").read_text(), re.M)  # tomllib: Python 3.11+
    assert addopts.split()[addopts.split().index("--dist") + 1] == "worksteal"
