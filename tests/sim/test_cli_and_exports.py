"""The CLI contract, bad input, exports, and the import boundary of `sim`."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.collective.runner import run_collective
from sim.scenario import CollectiveScenario

from ..cli_in_process import collsim_in_process

ROOT = Path(__file__).resolve().parents[2]

CONTRACT = [
    "sim",
    "collective",
    "--op",
    "all_reduce",
    "--algorithm",
    "ring",
    "--ranks",
    "8",
    "--size",
    "64MiB",
    "--latency",
    "5us",
    "--bandwidth",
    "25GB/s",
]


def _run(args):
    return CliRunner().invoke(cli, args, catch_exceptions=False, standalone_mode=True)


def test_json_contract(tmp_path):
    """The JSON keys, the closed form, --verify and the trace; on 1 MiB, not CONTRACT's 64 MiB: --verify
    holds every rank's buffers (64 MiB x 8 cost ~9 s of CPU, most of it the kernel's, for the same checks)."""
    trace = tmp_path / "out.json"
    args = list(CONTRACT)
    args[args.index("--size") + 1] = "1MiB"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim.cli",
            *args,
            "--reduce-bandwidth",
            "100GB/s",
            "--overhead",
            "10us",
            "--verify",
            "--trace",
            str(trace),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for key in ("time_s", "op", "algorithm", "ranks", "size_bytes", "analytic_time_s", "messages", "verified"):
        assert key in data
    n, p = 2**20, 8
    expected = 10e-6 + 2 * (p - 1) * 5e-6 + 2 * (p - 1) / p * n / 25e9 + (p - 1) / p * n / 100e9
    assert data["time_s"] == pytest.approx(expected, rel=1e-9) and data["analytic_time_s"] == pytest.approx(expected, rel=1e-12)
    assert data["verified"] is True and data["messages"] == 2 * p * (p - 1) and data["mode"] == "full"
    events = json.loads(trace.read_text())["traceEvents"]
    assert {event["pid"] for event in events if event["ph"] == "X"} == {1, 2, 3}
    assert sum(1 for event in events if event["ph"] == "X" and event["pid"] == 1) == 2 * p * (p - 1)


def test_readable_summary_and_no_closed_form():
    result = _run(
        [
            "sim",
            "collective",
            "--op",
            "all_reduce",
            "--algorithm",
            "double_binary_tree",
            "--ranks",
            "6",
            "--size",
            "1MiB",
            "--bandwidth",
            "10GB/s",
            "--chunks",
            "4",
        ]
    )
    assert result.exit_code == 0
    assert "simulated time" in result.output and "closed form      none" in result.output


def test_verified_null_without_verify():
    data = json.loads(_run(CONTRACT + ["--json"]).output)
    assert data["verified"] is None


@pytest.mark.parametrize(
    "changes,needle",
    [
        (["--ranks", "12", "--algorithm", "recursive_doubling"], "power-of-two"),
        (["--bandwidth", "0"], "bandwidth"),
        (["--size", "64MiX"], "size"),
        (["--latency", "-5us"], "latency"),
        (["--ranks", "x"], "--ranks"),
        (["--topology", "missing.graphml"], "not found"),
        (["--op", "alltoall"], "op"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(changes, needle):
    args = list(CONTRACT)
    for flag, value in zip(changes[::2], changes[1::2]):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    result = collsim_in_process(*args, cwd=ROOT)  # what the command says: no Python start-up needed
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error") and needle in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_scenario_file_with_flag_override(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(CollectiveScenario(op="broadcast", algorithm="binomial", ranks=8, size_bytes=5_000_000, bandwidth_Bps=1e6).to_yaml())
    data = json.loads(
        _run(
            [
                "sim",
                "collective",
                "--op",
                "broadcast",
                "--algorithm",
                "binomial",
                "--ranks",
                "8",
                "--bandwidth",
                "1MB/s",
                "--scenario",
                str(path),
                "--json",
            ]
        ).output
    )
    assert data["time_s"] == pytest.approx(15.0)


def test_csv_export(tmp_path):
    result = run_collective(
        CollectiveScenario(op="all_reduce", algorithm="ring", ranks=4, size_bytes=4000, bandwidth_Bps=1e9, reduce_bandwidth_Bps=1e9)
    )
    path = tmp_path / "events.csv"
    result.to_csv(path)
    lines = path.read_text().splitlines()
    assert lines[0] == "rank,peer,resource,kind,start_s,end_s,bytes,step,chunk,bucket,name"
    assert len(lines) - 1 == result.message_count + len(result.computes)


def test_link_utilisation_and_truncation():
    base = dict(op="all_reduce", algorithm="ring", ranks=8, size_bytes=8000, bandwidth_Bps=1e9)
    full = run_collective(CollectiveScenario(**base))
    capped = run_collective(CollectiveScenario(**base, max_events=10))
    assert not full.truncated and capped.truncated and len(capped.messages) == 10
    assert [(s.link, s.messages, s.bytes) for s in capped.link_stats] == [(s.link, s.messages, s.bytes) for s in full.link_stats]
    assert [s.busy_s for s in capped.link_stats] == pytest.approx([s.busy_s for s in full.link_stats], rel=1e-12)
    assert all(0 < s.utilisation <= 1 + 1e-12 for s in full.link_stats)


def test_import_sim_pulls_no_torch_dash_or_plotly():
    code = "import sys, sim, sim.cli, sim.collective.runner, sim.collective.analytic; import sim.algorithms; print([m for m in ('torch', 'dash', 'plotly') if m in sys.modules])"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.strip() == "[]"
