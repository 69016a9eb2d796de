"""The NCCL release an imported nccl-tests log names comes from sim.nccl.log.release_named, the one
reader the fit and the validation use (real.nccl_tests had its own regexes: "21903" from
nccl-library=, "2.21.5+cuda12.4" from a bare "NCCL version" comment, nothing from an "NCCL INFO" line)."""

from __future__ import annotations

import json

import pytest

from real import nccl_tests
from real.validate_nccl import SHIPPED
from sim.collective.nccl_fit import read_checked

from ..cli_in_process import collsim_in_process

TABLE = """# Collective test starting: all_reduce_perf
#  Rank  0 Group  0 Pid  11111 on     node01 device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  11112 on     node01 device  1 [0x0b] NVIDIA A100-SXM4-80GB
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           8             2     float     sum      -1    23.02    0.00    0.00      0    22.61    0.00    0.00      0
     1048576        262144     float     sum      -1    40.10   26.15   39.22      0    39.80   26.35   39.52      0
"""


@pytest.mark.parametrize(
    "line, release",
    [
        ("# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903", "2.19.3"),
        ("# nccl-tests version 2.13.10 nccl-headers=22304 nccl-library=22301", "2.23.1"),  # the library that ran, not the headers
        ("node01:11111:11111 [0] NCCL INFO NCCL version 2.21.5+cuda12.4", "2.21.5"),
        ("# NCCL version 2.26.2+cuda12.8", "2.26.2"),
    ],
)
def test_an_imported_log_names_its_release_as_the_fit_reads_it(tmp_path, line, release):
    path = tmp_path / "all_reduce_perf.log"
    path.write_text(line + "\n" + TABLE)
    assert nccl_tests.read(path)["meta"]["nccl_version"] == release
    assert read_checked(path)[2].release == release


def test_every_shipped_log_imports_with_the_release_the_fit_reads():
    for path in sorted(SHIPPED.glob("*.txt")):
        named = read_checked(path)[2].release
        assert nccl_tests.read(path)["meta"].get("nccl_version") == named, path.name


def test_a_json_file_names_its_release_dotted(tmp_path):
    document = {"version": 2, "args": ["./build/all_gather_perf"], "nccl_version": 22703, "config": {},
                "results": [{"size": 1024, "count": 256, "type": "float", "redop": "none", "root": "-1",
                             "out_of_place": {"time": 10.0, "alg_bw": 0.1, "bus_bw": 0.09, "nwrong": 0}}]}  # fmt: skip
    path = tmp_path / "out.json"
    path.write_text(json.dumps(document))
    assert nccl_tests.read(path, world_size=8)["meta"]["nccl_version"] == "2.27.3"


def test_the_store_keeps_the_dotted_release_of_an_imported_log(tmp_path):
    from real.store import open_store

    path, db = tmp_path / "all_reduce_perf.log", tmp_path / "cluster.sqlite"
    path.write_text("# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903\n" + TABLE)
    done = collsim_in_process("real", "import", str(path), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (run,) = open_store(str(db)).runs()
    assert run["backend_version"] == "2.19.3"  # as a torch run's (real.bench: torch.cuda.nccl.version() joined by dots)
