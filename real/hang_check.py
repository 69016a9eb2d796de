"""Run a hang case on real gloo ranks on CPU and collect what torch tells each rank.

Each rank is its own Python process (``python -m real.hang_check worker ...``), started with
``TORCH_DISTRIBUTED_DEBUG`` set (or unset) in its environment before torch is imported: setting
it inside a worker after ``import torch`` has no effect. Every rank and the whole run are bounded
(process-group timeout, then a kill of the rank's process group), so a real hang ends here too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import click

from sim.errors import CollsimError

__all__ = ["RankOutcome", "check_case", "hang_check", "message_matches", "run_case", "run_ddp_unused", "run_worker"]

MARK = "HANGCHECK "
FLIGHT_DIR_ENV = "COLLSIM_HANG_FLIGHT_DIR"
DTYPES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "float64": "float64", "int64": "int64", "int32": "int32"}


@dataclass(frozen=True)
class RankOutcome:
    """What one real rank did: ``status`` completed, error, killed (still blocked at the end) or died."""

    rank: int
    status: str
    error: str
    exit_code: int | None
    stderr_tail: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _free_port() -> int:
    from real.launcher import free_port

    return free_port()


def run_case(
    programs: dict[str, Any], detail: bool, timeout_s: float = 3.0, limit_s: float = 60.0, flight_dir: str | None = None
) -> list[RankOutcome]:
    """Run ``programs`` (the program data of :mod:`sim.hang.programs`) on gloo ranks; each
    collective's process-group timeout is ``timeout_s``; every rank is killed after ``limit_s``.
    With ``flight_dir`` the flight recorder is on and each rank that leaves by itself (not a
    "die") dumps it there as ``rank_N``, as torch's own dump would be written."""
    from sim.hang.programs import parse_programs

    extra = {"TORCH_FR_BUFFER_SIZE": "2000", FLIGHT_DIR_ENV: str(flight_dir)} if flight_dir else {}
    return _spawn("worker", json.dumps(programs), parse_programs(programs).world_size, detail, timeout_s, limit_s, extra)


def run_ddp_unused(unused_rank: int = 1, detail: bool = False, timeout_s: float = 3.0, limit_s: float = 60.0) -> list[RankOutcome]:
    """Two gloo ranks train a two-layer DDP model; on ``unused_rank`` the second layer (parameters
    2 and 3) takes no part in the loss, as ``collsim sim hang --unused-param`` models it."""
    return _spawn("ddp-unused", json.dumps({"unused_rank": unused_rank}), 2, detail, timeout_s, limit_s)


def _spawn(
    mode: str, payload: str, world_size: int, detail: bool, timeout_s: float, limit_s: float, extra: dict[str, str] | None = None
) -> list[RankOutcome]:
    env = {key: value for key, value in os.environ.items() if key not in ("TORCH_DISTRIBUTED_DEBUG", FLIGHT_DIR_ENV)}
    env.update(extra or {})
    if detail:
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    port = _free_port()
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "real.hang_check", mode, str(rank), str(world_size), str(port), str(timeout_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        for rank in range(world_size)
    ]
    for process in processes:
        process.stdin.write(payload)
        process.stdin.close()
        process.stdin = None  # written whole: communicate() must not flush it again
    deadline = time.monotonic() + limit_s
    return [_collect(rank, process, deadline) for rank, process in enumerate(processes)]


def _collect(rank: int, process: subprocess.Popen, deadline: float) -> RankOutcome:
    killed = False
    try:
        out, err = process.communicate(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        killed = True
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
    lines = [line[len(MARK) :] for line in out.splitlines() if line.startswith(MARK)]
    record = json.loads(lines[-1]) if lines else {"status": "died", "error": ""}
    status = "killed" if killed else record["status"]
    return RankOutcome(rank, status, record.get("error", ""), process.returncode, err[-4000:])


def run_worker(rank: int, world_size: int, port: int, timeout_s: float) -> None:
    """One rank: read the programs from stdin, run this rank's calls, print the outcome."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    from sim.hang.programs import parse_programs

    programs = parse_programs(json.loads(sys.stdin.read()))
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size, timeout=timedelta(seconds=timeout_s)
    )
    # new_group does not inherit init_process_group's timeout (it takes the 30-minute default): pass it
    groups = {
        name: dist.new_group(list(members), timeout=timedelta(seconds=timeout_s))
        for name, members in sorted(programs.groups.items())
        if name != "world"
    }
    try:
        for call in programs.ranks[rank]:
            _run_call(call, rank, groups.get(call.group), timeout_s, torch, dist)
    except Exception as error:  # noqa: BLE001 - torch's message is what we came for
        message = f"{type(error).__name__}: {error}"
        # a rank that timed out stays connected a timeout longer: a peer whose wait began a little
        # later (a loaded host) then reports its own timeout, not this rank's leaving (CI, 2026-11-28:
        # "Connection closed by peer" where both ranks of op_mismatch wait out the timeout)
        _leave(rank, {"status": "error", "error": message}, 1, linger_s=timeout_s if "Timed out" in message else 0.0)
    _leave(rank, {"status": "completed"}, 0)


def _leave(rank: int, record: dict[str, Any], code: int, linger_s: float = 0.0) -> None:
    """Print the outcome, dump the flight recorder where asked, stay ``linger_s`` (connected, doing
    nothing), and exit (no destroy_process_group: its teardown would wait for peers that are gone)."""
    folder = os.environ.get(FLIGHT_DIR_ENV)
    if folder:
        import torch._C._distributed_c10d as c10d  # torch's own dump of this process's recorder

        with open(os.path.join(folder, f"rank_{rank}"), "wb") as handle:
            handle.write(c10d._dump_fr_trace())
    print(MARK + json.dumps(record), flush=True)
    if linger_s:
        time.sleep(linger_s)
    os._exit(code)


def _run_call(call: Any, rank: int, group: Any, timeout_s: float, torch: Any, dist: Any) -> None:
    if call.op == "die":
        os._exit(17)
    if call.op == "stall":
        if call.seconds is not None:
            time.sleep(call.seconds)
            return
        time.sleep(3 * timeout_s)  # "for ever": long past every peer's timeout, then leave quietly
        _leave(rank, {"status": "stalled"}, 0)
    tensor = torch.ones(call.count, dtype=getattr(torch, DTYPES[call.dtype]))
    if call.op == "all_reduce":
        dist.all_reduce(tensor, group=group)
    elif call.op == "broadcast":
        dist.broadcast(tensor, src=call.root, group=group)
    elif call.op == "barrier":
        dist.barrier(group=group)
    elif call.op == "send":
        dist.send(tensor, call.peer, group=group)
    elif call.op == "recv":
        dist.recv(tensor, call.peer, group=group)
    elif call.op == "all_gather":
        dist.all_gather([torch.empty_like(tensor) for _ in range(dist.get_world_size(group))], tensor, group=group)
    else:
        raise CollsimError(f"op: {call.op} is not run by hang_check; all_reduce, broadcast, barrier, send, recv, all_gather are")


OUTCOMES = {"error": ("error",), "abort": ("died",), "timeout": ("error",), "completes": ("completed",)}  # a gloo timeout raises


def message_matches(predicted: str, seen: str) -> bool:
    """Whether torch printed the predicted message: our text for "Connection ... by peer" adds
    why (torch says reset or closed, by timing), and between DETAIL's "Original exception:" and
    gloo's words torch puts a newline and a source path."""
    if predicted.startswith("Connection"):
        return "by peer" in seen
    return all(part in seen for part in predicted.split(" Original exception: "))


def check_case(
    programs: dict[str, Any], detail: bool, timeout_s: float = 3.0, limit_s: float = 60.0, flight_dir: str | None = None
) -> list[dict[str, Any]]:
    """Explain ``programs``, run them on gloo ranks, and compare rank by rank: per rank the
    predicted outcome and message, what torch did, and whether they match (with ``flight_dir``,
    the ranks' flight-recorder dumps are written there too: :func:`run_case`)."""
    from sim.hang import explain

    report = explain(programs, timeout_s=timeout_s)
    predicted = {line.rank: line for line in report.lines("gloo_detail" if detail else "gloo")}
    rows = []
    for outcome in run_case(programs, detail, timeout_s, limit_s, flight_dir):
        line = predicted.get(outcome.rank)
        seen = outcome.error or outcome.stderr_tail
        if line is None:  # not blocked: it finishes, stalls past the others or dies as its program says
            same = outcome.status in ("completed", "stalled", "died")
        else:
            same = outcome.status in OUTCOMES[line.outcome] and message_matches(line.message, seen)
        rows.append(
            {
                "rank": outcome.rank,
                "predicted": line.outcome if line else "no error",
                "message": line.message if line else "",
                "status": outcome.status,
                "seen": seen[-600:],
                "match": same,
            }
        )
    return rows


@click.command("hang-check")
@click.option("--case", "case_name", default=None, help="a canonical case of collsim sim hang (size_mismatch, skipped, ...)")
@click.option(
    "--programs", "programs_file", default=None, help="YAML/JSON per-rank programs (all_reduce, broadcast, barrier, send, recv, all_gather)"
)
@click.option("--detail", is_flag=True, help="run the ranks with TORCH_DISTRIBUTED_DEBUG=DETAIL")
@click.option("--timeout", "timeout_s", default=3.0, type=click.FloatRange(0.5, 120.0), help="process-group timeout in seconds (default 3)")
@click.option("--json", "as_json", is_flag=True, help="print the rows as JSON")
def hang_check(case_name: str | None, programs_file: str | None, detail: bool, timeout_s: float, as_json: bool) -> None:
    """Run a hang case on real gloo ranks (CPU) and compare each rank with collsim's prediction."""
    from sim.hang import case
    from sim.hang.programs import load_programs

    if (case_name is None) == (programs_file is None):
        raise CollsimError("give one of --case NAME or --programs FILE")
    data = dict(case(case_name)) if case_name else load_programs(programs_file).to_dict()
    data.pop("about", None)
    rows = check_case(data, detail, timeout_s, limit_s=10 * timeout_s + 30)
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    for row in rows:
        click.echo(f"rank {row['rank']}: predicted {row['predicted']}, torch {row['status']}: {'match' if row['match'] else 'DIFFERS'}")
        click.echo(f"  torch: {row['seen'].strip().splitlines()[-1][:300] if row['seen'].strip() else '-'}")


def run_ddp_unused_worker(rank: int, world_size: int, port: int, timeout_s: float) -> None:
    """One rank of :func:`run_ddp_unused`: two iterations, the reducer's error expected on the second."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    unused = json.loads(sys.stdin.read())["unused_rank"]
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size, timeout=timedelta(seconds=timeout_s)
    )

    class TwoLayers(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

        def forward(self, inputs: Any) -> Any:  # the unused rank skips the second layer (parameters 2, 3)
            hidden = self.first(inputs)
            return hidden if rank == unused else self.second(hidden)

    model = torch.nn.parallel.DistributedDataParallel(TwoLayers())
    try:
        for _ in range(2):
            model(torch.ones(2, 4)).sum().backward()
    except Exception as error:  # noqa: BLE001 - torch's message is what we came for
        print(MARK + json.dumps({"status": "error", "error": f"{type(error).__name__}: {error}"}), flush=True)
        os._exit(1)
    print(MARK + json.dumps({"status": "completed"}), flush=True)
    os._exit(0)


_WORKERS = {"worker": run_worker, "ddp-unused": run_ddp_unused_worker}

if __name__ == "__main__" and len(sys.argv) == 6 and sys.argv[1] in _WORKERS:
    _WORKERS[sys.argv[1]](int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
