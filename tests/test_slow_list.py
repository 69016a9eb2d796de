"""tests/slow_tests.txt marks tests slow by node id (tests/conftest.py), so the quick selection
``-m "not slow and not browser"`` leaves them out without each test file being edited."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("suite_conftest", HERE / "conftest.py")
suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suite)


def test_a_listed_test_file_or_case_is_slow_and_others_are_not():
    listed = ["tests/a/test_x.py::test_big", "tests/b/test_y.py"]
    assert suite._listed("tests/a/test_x.py::test_big", listed)
    assert suite._listed("tests/a/test_x.py::test_big[8-ranks]", listed)  # every parametrization
    assert suite._listed("tests/b/test_y.py::TestC::test_d", listed)  # a whole file
    assert not suite._listed("tests/a/test_x.py::test_big_enough", listed)
    assert not suite._listed("tests/a/test_x.py::test_small", listed)


def test_the_list_reads_ids_and_refuses_a_file_that_does_not_exist(tmp_path):
    listing = tmp_path / "slow_tests.txt"
    listing.write_text("# comment\n\ntests/conftest.py::test_z  # why it is slow\n")
    assert suite.slow_node_ids(listing) == ["tests/conftest.py::test_z"]
    listing.write_text("tests/no_such_file.py::test_z\n")
    with pytest.raises(pytest.UsageError, match="no_such_file.py"):
        suite.slow_node_ids(listing)


def test_every_listed_id_names_an_existing_file():
    suite.slow_node_ids()  # raises on a stale entry
