"""A folder of flight-recorder dumps is named like any user file: under the explorer's refusal a
server folder named in a form or link is not even listed; the server's own temporary folder and
folders inside `collsim ui --files DIR` are."""

from __future__ import annotations

import pytest

from sim import files
from sim.errors import CollsimError
from sim.hang.flight import read_dumps


def test_a_server_folder_is_refused_while_paths_are_refused(tmp_path):
    (tmp_path / "nccl_trace_rank_0").write_bytes(b"not read")
    with files.refusing_paths(), pytest.raises(CollsimError, match="opens no server folder") as caught:
        read_dumps(tmp_path)
    assert caught.value.field == "--flight-recorder"


def test_the_servers_own_folder_is_read_and_a_missing_folder_is_one_message(tmp_path):
    with files.refusing_paths(), files.own_temporary_folder() as own:
        with pytest.raises(CollsimError, match="no dump files"):
            read_dumps(own)
    with pytest.raises(CollsimError, match="is not a folder"):
        read_dumps(tmp_path / "missing")
