"""collsim sim chakra write|read: one step of a rows document out as traces and back; bad input
in one line."""

from __future__ import annotations

import json

from click.testing import CliRunner

from sim.chakra_cli import chakra, rows_of_document


def row(rank, step, kind, start, end, nbytes=0, peer=-1, group=()):
    return {"rank": rank, "stream": kind, "kind": kind, "name": f"{kind} {step}", "start_s": start, "end_s": end, "bytes": nbytes,
            "peer": peer, "group": list(group), "step": step, "micro_batch": 0}  # fmt: skip


def document():
    """A real-train-shaped profile of 3 steps on 2 ranks; step 1 took the median time."""
    rows = []
    for step, scale in enumerate((1.0, 2.0, 3.0)):
        for rank in (0, 1):
            rows += [
                row(rank, step, "compute", 0.0, 0.001 * scale),
                row(rank, step, "all_reduce", 0.001 * scale, 0.002 * scale, 4096, group=(0, 1)),
            ]
        rows += [
            row(0, step, "send", 0.002 * scale, 0.003 * scale, 512, peer=1),
            row(1, step, "recv", 0.002 * scale, 0.003 * scale, 512, peer=0),
        ]
    return {"kind": "collsim-train-profile", "step_time_s": [0.5, 0.2, 0.9], "rows": rows}


def test_the_step_of_median_time_is_written_unless_one_is_asked_for():
    assert {r["step"] for r in rows_of_document(document(), None, "x")} == {0}  # 0.5 s is the median of 0.5, 0.2, 0.9
    assert {r["step"] for r in rows_of_document(document(), 2, "x")} == {2}
    assert len(rows_of_document(document()["rows"], None, "x")) == 6  # a bare list: its first step


def test_write_then_read_prints_per_rank_compute_and_bytes(tmp_path):
    source = tmp_path / "profile.json"
    source.write_text(json.dumps(document()))
    runner = CliRunner()
    done = runner.invoke(chakra, ["write", str(source), "--prefix", str(tmp_path / "t"), "--step", "1"])
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in tmp_path.glob("t.*")) == ["t.0.et", "t.1.et", "t.comm_groups.json"]
    done = runner.invoke(chakra, ["read", str(tmp_path / "t")])
    assert done.output.splitlines() == [
        "rank 0: 1 all_reduce 4096 B, 1 compute 0.002 s, 1 send 512 B",
        "rank 1: 1 all_reduce 4096 B, 1 compute 0.002 s, 1 recv 512 B",
    ]
    rows = json.loads(runner.invoke(chakra, ["read", str(tmp_path / "t"), "--json"]).output)
    assert {(r["rank"], r["kind"], r["peer"], tuple(r["group"])) for r in rows} == {
        (0, "compute", -1, ()), (1, "compute", -1, ()), (0, "all_reduce", -1, (0, 1)), (1, "all_reduce", -1, (0, 1)), (0, "send", 1, ()), (1, "recv", 0, ())
    }  # fmt: skip


def test_bad_input_is_one_message(tmp_path):
    runner = CliRunner()
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "obj.json").write_text('{"events": []}')
    (tmp_path / "ok.json").write_text(json.dumps(document()))
    cases = [
        (["write", "missing.json", "--prefix", "p"], "ROWS_FILE 'missing.json' not found"),
        (["write", str(tmp_path / "bad.json"), "--prefix", "p"], "is not JSON"),
        (["write", str(tmp_path / "obj.json"), "--prefix", "p"], "expected a JSON list of rows or a document with 'rows'"),
        (["write", str(tmp_path / "ok.json"), "--prefix", str(tmp_path / "p"), "--step", "7"], "--step 7: the rows have steps 0, 1, 2"),
        (
            ["write", str(tmp_path / "ok.json"), "--prefix", str(tmp_path / "p"), "--ranks", "1"],
            "rows name rank 1 but the world has 1 ranks",
        ),
        (["write", str(tmp_path / "ok.json"), "--prefix", str(tmp_path / "no" / "p")], "cannot write"),
        (["read", str(tmp_path / "none")], "no trace file"),
    ]
    for args, message in cases:
        done = runner.invoke(chakra, args)
        assert done.exit_code != 0 and message in str(done.exception), (args, done.exception)
