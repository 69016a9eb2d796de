"""`collsim real export --nccl-tests` then `collsim real import`: every table keeps its op, world
size and backend (all_to_all rows were filed as all_reduce, gloo rows as nccl)."""

from __future__ import annotations

from real.nccl_tests import parse_text, to_text


def _rows(op: str, sizes=(1024, 4096)) -> list[dict]:
    return [
        {"op": op, "size_bytes": n, "count": n // 4, "type": "float32", "redop": "sum", "root": -1, "time_s": 1e-4 + n / 1e9,
         "algbw_GBps": n / (1e-4 + n / 1e9) / 1e9, "busbw_GBps": n / (1e-4 + n / 1e9) / 1e9}
        for n in sizes
    ]  # fmt: skip


def test_an_exported_file_of_several_tables_imports_each_with_its_own_op_and_world_size():
    text = ""
    for op, p in (("all_reduce", 2), ("all_to_all", 4), ("all_gather", 3)):
        text += f"# collsim export: source measured, backend gloo, device cpu, world size {p}\n" + to_text(_rows(op)) + "\n"
    rows = parse_text(text)["rows"]
    found = {(row["op"], row["world_size"], row["backend"], row["device"]) for row in rows}
    assert found == {("all_reduce", 2, "gloo", "cpu"), ("all_to_all", 4, "gloo", "cpu"), ("all_gather", 3, "gloo", "cpu")}
    assert len(rows) == 6
