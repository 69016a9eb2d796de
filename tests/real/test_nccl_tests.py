"""nccl-tests output: import the text table and the -J JSON, and round-trip our own rows."""

from __future__ import annotations

import json

import pytest

from real import nccl_tests
from real.bench import busbw_factor, time_stats
from sim.errors import CollsimError

LOG = """# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  11111 on     node01 device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  11112 on     node01 device  1 [0x0b] NVIDIA A100-SXM4-80GB
#  Rank  2 Group  0 Pid  11113 on     node01 device  2 [0x48] NVIDIA A100-SXM4-80GB
#  Rank  3 Group  0 Pid  11114 on     node01 device  3 [0x4c] NVIDIA A100-SXM4-80GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    23.02    0.00    0.00      0    22.61    0.00    0.00      0
     1048576        262144     float     sum      -1    40.10   26.15   39.22      0    39.80   26.35   39.52      0
   134217728      33554432     float     sum      -1   1050.3  127.79  191.68      0   1049.9  127.84  191.76      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 76.8
"""


def test_parse_text_log():
    parsed = nccl_tests.parse_text(LOG)
    rows = parsed["rows"]
    assert parsed["meta"]["op"] == "all_reduce"
    assert [row["size_bytes"] for row in rows] == [8, 1048576, 134217728]
    assert all(row["world_size"] == 4 for row in rows)
    assert rows[1]["time_s"] == pytest.approx(40.10e-6)
    assert rows[2]["busbw_GBps"] == pytest.approx(191.68)
    assert rows[0]["type"] == "float32" and rows[0]["redop"] == "sum" and rows[0]["root"] == -1
    assert parsed["meta"]["devices"][0]["device_info"] == "NVIDIA A100-SXM4-80GB"
    in_place = nccl_tests.parse_text(LOG, in_place=True)["rows"]
    assert in_place[1]["time_s"] == pytest.approx(39.80e-6)


def test_world_size_from_busbw_when_devices_are_missing():
    body = "\n".join(line for line in LOG.splitlines() if "Rank" not in line)
    rows = nccl_tests.parse_text(body)["rows"]
    assert rows[1]["world_size"] == 4  # 39.22 / 26.15 = 1.5 = 2(p-1)/p


def test_round_trip_of_our_rows():
    rows = []
    for size, mean in ((4096, 812.4e-6), (1 << 20, 3.2251e-3), (64 << 20, 0.1523)):
        algbw = size / mean / 1e9
        rows.append({"op": "all_reduce", "world_size": 2, "size_bytes": size, "count": size // 4, "type": "float32", "redop": "sum", "root": -1,
                     "time_s": mean, "algbw_GBps": algbw, "busbw_GBps": algbw * busbw_factor("all_reduce", 2)})  # fmt: skip
    back = nccl_tests.parse_text(nccl_tests.to_text(rows))["rows"]
    assert len(back) == len(rows)
    for original, parsed in zip(rows, back):
        for key in ("op", "size_bytes", "count", "type", "redop", "root"):
            assert parsed[key] == original[key]
        assert parsed["time_s"] == pytest.approx(original["time_s"], rel=1e-4)  # printed with 7 significant columns
        assert parsed["algbw_GBps"] == pytest.approx(original["algbw_GBps"], abs=0.006)
    assert back[-1]["world_size"] == 2


def test_parse_json_file(tmp_path):
    times_us = [100.0, 110.0, 90.0, 105.0]
    document = {
        "version": 2, "start_time": "2026-01-01 00:00:00", "args": ["./build/all_gather_perf", "-b", "8", "-e", "1M"], "nccl_version": 22703,
        "config": {"iterations": 4, "warmup_iters": 1, "devices": [{"rank": r, "hostname": "n1", "device": r, "device_info": "H100"} for r in range(8)]},
        "results": [
            {"size": 1024, "count": 32, "type": "float", "redop": "none", "root": "    -1", "out_of_place": {"time": 101.25, "alg_bw": 0.01, "bus_bw": 0.00875, "nwrong": 0.0},
             "in_place": {"time": 99.0, "alg_bw": 0.01, "bus_bw": 0.009, "nwrong": 0.0}, "out_of_place_per_iter": {"times_us": times_us}},
            {"size": 1048576, "count": 32768, "type": "float", "redop": "none", "root": "    -1", "out_of_place": {"time": 200.0, "alg_bw": 5.24, "bus_bw": 4.59, "nwrong": 0.0},
             "in_place": {"time": 199.0, "alg_bw": 5.27, "bus_bw": 4.61, "nwrong": 0.0}},
        ],
    }  # fmt: skip
    path = tmp_path / "out.json"
    path.write_text(json.dumps(document))
    parsed = nccl_tests.read(path)
    rows = parsed["rows"]
    assert parsed["meta"]["op"] == "all_gather"
    assert [row["world_size"] for row in rows] == [8, 8]
    assert rows[0]["times_s"] == pytest.approx([t * 1e-6 for t in times_us])
    assert rows[0]["median_s"] == pytest.approx(time_stats(rows[0]["times_s"])["median_s"])
    assert rows[1]["time_s"] == pytest.approx(200e-6) and rows[1]["median_s"] is None


def test_garbage_is_refused(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("hello\nworld\n")
    with pytest.raises(CollsimError, match="no nccl-tests result lines"):
        nccl_tests.read(path)
    with pytest.raises(CollsimError, match="not found"):
        nccl_tests.read(tmp_path / "missing.txt")


def _cli(*args: str, cwd=None):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "sim.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_cli_import_then_fit(tmp_path):
    log, db = tmp_path / "all_reduce_perf.log", tmp_path / "cluster.sqlite"
    log.write_text(LOG)
    done = _cli("real", "import", str(log), "--label", "4x A100 node", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert "imported 3 all_reduce row(s), p = 4" in done.stdout
    done = _cli("fit", "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)["collectives"]
    assert entry["source"] == "nccl-tests" and entry["world_size"] == 4 and entry["method"] == "wls-t"
    assert entry["w_Bps"] == pytest.approx(134217728 / 1050.3e-6, rel=0.2)


def test_cli_export_import_round_trip(tmp_path):
    """Bundled measured rows -> nccl-tests text -> import -> the same sizes and mean times."""
    from real.store import open_store

    text = tmp_path / "export.txt"
    done = _cli("real", "export", "--nccl-tests", str(text), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    measured = next(block for block in text.read_text().split("# collsim export:") if "source measured" in block)
    (tmp_path / "measured.txt").write_text(measured)
    done = _cli(
        "real",
        "import",
        str(tmp_path / "measured.txt"),
        "--backend",
        "gloo",
        "--device",
        "cpu",
        "--world-size",
        "2",
        "--db",
        str(tmp_path / "back.sqlite"),
    )
    assert done.returncode == 0, done.stderr
    original = open_store(None).collectives(source="measured")
    back = open_store(tmp_path / "back.sqlite").collectives()
    assert [row["size_bytes"] for row in back] == [row["size_bytes"] for row in original]
    for a, b in zip(original, back):
        assert b["time_s"] == pytest.approx(a["time_s"], rel=1e-3) and (b["backend"], b["device"], b["world_size"]) == ("gloo", "cpu", 2)


def test_world_size_is_not_read_off_a_row_whose_two_decimals_blur_it():
    """8 ranks, no "#  Rank" lines (a log's tail, as oci-hpc-oke's GB200 README shows): 512 B
    prints 0.02 / 0.03 GB/s, whose ratio 1.5 reads as 4 ranks; the 1 MiB row (1.75) tells 8."""
    body = "\n".join([
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "         512           128     float     sum      -1    27.06    0.02    0.03      0    26.83    0.02    0.03      0",
        "     1048576        262144     float     sum      -1    32.18   32.58   57.02      0    31.49   33.30   58.28      0",
    ])  # fmt: skip
    rows = nccl_tests.parse_text(body, op="all_reduce")["rows"]
    assert [row["world_size"] for row in rows] == [8, 8]
    assert nccl_tests.world_size_from_busbw("all_reduce", 0.02, 0.03) is None
    assert nccl_tests.world_size_from_busbw("all_reduce", 32.58, 57.02) == 8
