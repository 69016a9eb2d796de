"""``collsim validate`` fails before the work on an output folder it cannot create (SIGTERM is
tested beside Ctrl-C in test_validate.py)."""

from __future__ import annotations

import sys

import pytest

from ..cli_in_process import collsim_in_process


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc, where nothing can be created")
def test_an_out_folder_that_cannot_be_created_is_one_error_line_before_any_work(tmp_path):
    # in process (tests/cli_in_process.py): the refusal is what is checked, not a Python start-up
    done = collsim_in_process("validate", "--ranks", "2", "--quick", "--out", "/proc/collsim-nowhere", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == ["error: --out: cannot create '/proc/collsim-nowhere': No such file or directory"]
