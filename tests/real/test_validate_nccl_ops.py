"""``collsim validate nccl-tests`` on logs of all four ops nccl-tests runs on a cluster (issue 33):
all_reduce, all_gather, reduce_scatter and all_to_all, as fitted and as held-out logs; the programs
it cannot predict are refused with one message naming the ones it can. The DES is replaced by a
closed form (sim.collective.nccl_fit.des_time, which the fit and the predictions both call)."""

from __future__ import annotations

from pathlib import Path

import pytest

from real.validate_nccl import DES_OPS, choose_fit_on, read_logs, validate
from sim.collective import nccl_fit
from sim.errors import CollsimError
from sim.hardware.presets import effective, load_preset

SIZES = [2**k for k in range(3, 31, 3)]  # 8 B .. 1 GiB: every regime
PROGRAM = {"all_reduce": "all_reduce_perf", "all_gather": "all_gather_perf", "reduce_scatter": "reduce_scatter_perf",
           "all_to_all": "alltoall_perf", "send_recv": "sendrecv_perf"}  # fmt: skip


def closed_form(hardware, nodes, op, size, nccl_algo=None, nccl_proto=None, nccl_version=None):
    """A stand-in DES reading the constants in force; all_to_all's label is the p2p path's, as des_time's."""
    constants = effective(load_preset(hardware))
    time_s = constants.latency_scale * 5e-6 + size / (constants.intra_efficiency * 2e11)
    if nodes > 1:
        time_s += constants.base_latency_us * 1e-6 + size / (constants.inter_efficiency * 1e11)
    return time_s, "nccl_p2p" if op == "all_to_all" else "Ring/Simple"


def cluster_seconds(nodes: int):
    """The 'measured' cluster: intra 0.7, inter 0.9, 12 us more a call across nodes."""
    return lambda n: 6e-6 + n / (0.7 * 2e11) + ((12e-6 + n / (0.9 * 1e11)) if nodes > 1 else 0.0)


def write_op_log(path: Path, op: str, nodes: int, ranks_per_node: int = 8) -> Path:
    """An nccl-tests text log of ``op`` as its program prints it (program line, rank lines, rows)."""
    seconds = cluster_seconds(nodes)
    lines = [f"# Collective test starting: {PROGRAM[op]}", "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor)"]
    lines += [f"#  Rank {r:2d} Group  0 Pid 1 on host{r // ranks_per_node} device {r % ranks_per_node} [0x1] NVIDIA A100"
              for r in range(nodes * ranks_per_node)]  # fmt: skip
    for size in SIZES:
        time_us = seconds(size) * 1e6
        lines.append(f"  {size:>12d} {size // 4:>12d}  float  none  -1  {time_us:9.2f}  1.00  1.00  0  {time_us:9.2f}  1.00  1.00  0")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def four_ops(monkeypatch, tmp_path):
    """One node of all_reduce and all_to_all, two nodes of all four ops (oci-a100-roce)."""
    monkeypatch.setattr(nccl_fit, "des_time", closed_form)
    paths = [write_op_log(tmp_path / f"{op}_1node.txt", op, 1) for op in ("all_reduce", "all_to_all")]
    paths += [write_op_log(tmp_path / f"{op}_2nodes.txt", op, 2) for op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")]
    return read_logs(paths, "oci-a100-roce")


def test_logs_of_all_four_ops_are_read_with_their_op(four_ops):
    assert [(log.op, log.nodes) for log in four_ops] == [
        ("all_reduce", 1), ("all_to_all", 1), ("all_reduce", 2), ("all_gather", 2), ("reduce_scatter", 2), ("all_to_all", 2)
    ]  # fmt: skip


def test_an_alltoall_log_is_fitted_and_predicts_the_other_ops(four_ops):
    """Fit on the two-node all_to_all alone (it crosses nodes: the network constants move), predict
    every other log, all_gather and reduce_scatter included."""
    document = validate(four_ops, "oci-a100-roce", fit_on="all_to_all_2nodes.txt")
    assert [row["log"] for row in document["split"]["fitted"]] == ["all_to_all_2nodes.txt"]
    predicted = {row["op"] for row in document["split"]["predicted"]}
    assert predicted == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
    assert "inter_efficiency" in document["fit"]["constants"]
    # the closed form is the cluster's model: a fit on one op predicts the other ops of its node count
    # closely (one node is another matter: two nodes cannot split their latency from base_latency_us)
    others = [p for p in document["points"] if p["role"] == "predicted" and p["nodes"] == 2]
    assert {p["op"] for p in others} == {"all_reduce", "all_gather", "reduce_scatter"}
    assert all(abs(p["error"]) < 0.05 for p in others)


def test_an_alltoall_log_is_predicted_from_the_other_ops(four_ops):
    fitted, held = choose_fit_on(four_ops, "nodes=1,all_gather_2nodes.txt")
    assert {log.op for log in held} == {"all_reduce", "reduce_scatter", "all_to_all"}
    document = validate(four_ops, "oci-a100-roce", fit_on="nodes=1,all_gather_2nodes.txt")
    alltoall = [p for p in document["points"] if p["log"] == "all_to_all_2nodes.txt"]
    assert alltoall and all(p["role"] == "predicted" and p["low_s"] < p["predicted_s"] < p["high_s"] for p in alltoall)


def test_a_program_it_cannot_predict_is_refused_naming_the_four_ops(tmp_path, monkeypatch):
    monkeypatch.setattr(nccl_fit, "des_time", closed_form)
    other = write_op_log(tmp_path / "one.txt", "all_reduce", 1)
    sendrecv = write_op_log(tmp_path / "sendrecv.txt", "send_recv", 2)
    with pytest.raises(CollsimError, match="is sendrecv_perf output; validate nccl-tests predicts") as caught:
        read_logs([other, sendrecv], "oci-a100-roce")
    assert all(op in str(caught.value) for op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"))
    assert "all_to_all" in DES_OPS


def test_nccl_algo_and_proto_of_the_runs_leave_an_alltoall_log_alone(tmp_path):
    """NCCL_ALGO / NCCL_PROTO set for every program of a run select nothing for all_to_all (grouped
    ncclSend/ncclRecv): its log is read without them and the real DES runs it, where it would
    refuse all_to_all with NCCL_ALGO=Ring."""
    from real.validate_nccl import check_runs

    paths = [write_op_log(tmp_path / "all_reduce.txt", "all_reduce", 2), write_op_log(tmp_path / "alltoall.txt", "all_to_all", 2)]
    logs = read_logs(paths, "oci-a100-roce", nccl_algo="Ring", nccl_proto="Simple")
    assert [(log.op, log.nccl_algo, log.nccl_proto) for log in logs] == [("all_reduce", "Ring", "Simple"), ("all_to_all", None, None)]
    check_runs(logs, "oci-a100-roce")  # one real DES per log at 8 B: no refusal
