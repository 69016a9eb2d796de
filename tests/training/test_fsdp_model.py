"""FSDP / ZeRO step model: closed forms on uniform units, bounds, memory, rate limiter, errors."""

from __future__ import annotations

import pytest

from sim.errors import CollsimError
from sim.training.ddp import DDPScenario, run_ddp
from sim.training.fsdp import STRATEGIES, FSDPScenario, compare, run_fsdp

L = 6  # blocks
UNIT = 4 * 2**20  # bytes per block
W = 1e9  # ow: all-reduce bytes/s; all-gather / reduce-scatter take half


def uniform(**changes) -> FSDPScenario:
    """L equal blocks (no root), forward f = F/L and backward b = B/L per block."""
    params = tuple({"name": f"layers.{i}.weight", "numel": UNIT // 4} for i in range(L))
    base = {"params": params, "ranks": 8, "comm": "ow", "o_s": 0.0, "w_Bps": W, "forward_time_s": 0.06, "backward_time_s": 0.12,
            "optimizer_time_s": 0.016, "sharding": "full_shard"}  # fmt: skip
    return FSDPScenario.from_dict({**base, **changes})


def test_units_one_per_block_without_root():
    result = run_fsdp(uniform())
    assert [unit.name for unit in result.units] == [f"layers.{i}" for i in range(L)]
    assert all(unit.nbytes == UNIT for unit in result.units)


def test_compute_bound_full_shard_closed_form():
    # a = UNIT/(2W) = 2.1 ms per all-gather / reduce-scatter; f = 10 ms, b = 20 ms: a <= f, a + r <= b
    s = uniform()
    a = r = UNIT / (2 * W)
    f, b, opt = 0.06 / L, 0.12 / L, 0.016 / 8
    result = run_fsdp(s)
    # only the first all-gather and the last reduce-scatter are exposed
    assert result.step_time_s == pytest.approx(a + L * (f + b) + r + opt, rel=1e-12)
    assert result.exposed_comm_s == pytest.approx(a + r, rel=1e-9)


def test_comm_bound_step_is_all_communication():
    s = uniform(forward_time_s=0.0, backward_time_s=0.0, optimizer_time_s=0.0)
    result = run_fsdp(s)
    a = UNIT / (2 * W)
    # every all-gather twice (forward, backward) and every reduce-scatter once, back to back
    assert result.comm_busy_s == pytest.approx(3 * L * a, rel=1e-12)
    assert result.step_time_s == pytest.approx(3 * L * a, rel=1e-12)


@pytest.mark.parametrize("sharding", STRATEGIES)
def test_no_overlap_is_compute_plus_comm_exactly(sharding):
    s = uniform(sharding=sharding, overlap=False, shard_size=4)
    result = run_fsdp(s)
    if sharding in ("ddp", "zero1"):  # DDP's own model overlaps buckets with backward
        return
    summary = result.summary()
    assert result.step_time_s == pytest.approx(summary["compute_time_s"] + summary["comm_busy_s"], rel=1e-12)


@pytest.mark.parametrize("sharding", STRATEGIES)
def test_step_between_perfect_overlap_and_no_overlap(sharding):
    s = FSDPScenario(preset="xl", sharding=sharding, ranks=16, comm="network", topology="two_level", gpus_per_node=8, bandwidth_Bps=25e9,
                     intra_bandwidth_Bps=300e9, latency_s=5e-6, backward_time_s=0.3, forward_time_s=0.15, optimizer_time_s=0.02)  # fmt: skip
    summary = run_fsdp(s).summary()
    assert summary["perfect_overlap_bound_s"] * (1 - 1e-12) <= summary["step_time_s"] <= summary["no_overlap_bound_s"] * (1 + 1e-12)
    assert summary["exposed_comm_s"] >= -1e-12


def test_shard_grad_op_gathers_once_full_shard_twice():
    a = UNIT / (2 * W)
    full = run_fsdp(uniform()).summary()["comm_by_kind_s"]
    zero2 = run_fsdp(uniform(sharding="shard_grad_op")).summary()["comm_by_kind_s"]
    assert full["all_gather"] == pytest.approx(2 * L * a) and zero2["all_gather"] == pytest.approx(L * a)
    assert full["reduce_scatter"] == pytest.approx(L * a) == zero2["reduce_scatter"]
    no_shard = run_fsdp(uniform(sharding="no_shard")).summary()["comm_by_kind_s"]
    assert no_shard == {"all_reduce": pytest.approx(L * UNIT / W)}


def test_zero1_is_ddp_plus_sharded_optimizer_and_parameter_all_gather():
    s = uniform(sharding="zero1")
    ddp = run_ddp(
        DDPScenario(
            params=s.params, ranks=8, comm="ow", o_s=0.0, w_Bps=W, forward_time_s=0.06, backward_time_s=0.12, optimizer_time_s=0.016
        )
    )
    zero1 = run_fsdp(s)
    total = L * UNIT
    assert zero1.step_time_s == pytest.approx(ddp.step_time_s - 0.016 + 0.016 / 8 + total / (2 * W), rel=1e-12)
    assert run_fsdp(uniform(sharding="ddp")).step_time_s == pytest.approx(ddp.step_time_s, rel=1e-12)


def test_hybrid_shard_all_reduces_shards_across_replicas():
    s = uniform(sharding="hybrid_shard", shard_size=4)
    summary = run_fsdp(s).summary()
    a = UNIT / (2 * W)
    assert summary["shard_group"] == 4
    assert summary["comm_by_kind_s"]["all_gather"] == pytest.approx(2 * L * a)
    assert summary["comm_by_kind_s"]["all_reduce"] == pytest.approx(L * (UNIT / 4) / W)


def test_rate_limiter_holds_the_third_all_gather_until_the_first_unit_is_freed():
    limited = [op for op in run_fsdp(uniform()).ops if op.phase == "forward"]
    free = [op for op in run_fsdp(uniform(limit_all_gathers=False)).ops if op.phase == "forward"]
    gathers = lambda ops: [op for op in ops if op.kind == "all_gather"]  # noqa: E731
    forwards = lambda ops: [op for op in ops if op.kind == "forward"]  # noqa: E731
    a = UNIT / (2 * W)
    assert gathers(free)[2].start_s == pytest.approx(2 * a)  # back to back
    assert gathers(limited)[2].start_s == pytest.approx(forwards(limited)[0].end_s)  # waits for unit 0's reshard
    assert gathers(limited)[2].start_s > 2 * a


def test_memory_per_rank():
    numel = L * UNIT // 4
    full = run_fsdp(uniform()).memory
    assert full["params_bytes"] == L * UNIT // 8 == full["grads_bytes"]
    assert full["optimizer_bytes"] == 8 * numel // 8
    # at most two gathered units and one unsharded gradient (plus the previous one in reduction)
    assert 2 * UNIT <= full["unsharded_peak_bytes"] <= 4 * UNIT
    zero2 = run_fsdp(uniform(sharding="shard_grad_op")).memory
    assert zero2["unsharded_peak_bytes"] >= L * UNIT  # everything stays gathered after forward
    ddp = run_fsdp(uniform(sharding="ddp")).memory
    assert ddp["optimizer_bytes"] == 8 * numel and ddp["params_bytes"] == L * UNIT
    assert run_fsdp(uniform(sharding="zero1")).memory["optimizer_bytes"] == numel
    peaks = {row["sharding"]: row["peak_memory_bytes"] for row in compare(uniform(), ["ddp", "zero1", "shard_grad_op", "full_shard"])}
    assert peaks["ddp"] > peaks["zero1"] > peaks["shard_grad_op"] > peaks["full_shard"]


def test_root_unit_stays_gathered_and_is_reduced_last():
    result = run_fsdp(FSDPScenario(preset="small", ranks=8, comm="ow", w_Bps=10e9, backward_time_s=0.1, forward_time_s=0.05))
    root = result.units[0]
    assert root.name == "root" and root.root
    gathers = [op for op in result.ops if op.kind == "all_gather" and op.unit == 0]
    assert len(gathers) == 1  # not resharded after forward
    scatters = [op for op in result.ops if op.kind == "reduce_scatter"]
    assert scatters[-1].unit == 0


def test_events_and_unit_rows():
    result = run_fsdp(uniform())
    rows = result.events()
    assert {row["resource"] for row in rows} == {"compute:0", "comm:0"}
    assert {row["kind"] for row in rows} == {"forward", "backward", "optimizer", "all_gather", "reduce_scatter"}
    units = result.unit_rows()
    assert [op["kind"] for op in units[1]["ops"]] == ["all_gather", "forward", "all_gather", "backward", "reduce_scatter"]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"sharding": "zero3"}, "sharding: unknown"),
        ({"sharding": "hybrid_shard"}, "hybrid_shard: give --shard-size"),
        ({"sharding": "hybrid_shard", "shard_size": 3}, "shard_size: must divide"),
        ({"backward_prefetch": "sometimes"}, "backward_prefetch: unknown"),
        ({"units": "nothing.here"}, "match no parameter"),
    ],
)
def test_bad_input_is_one_clear_error(changes, message):
    with pytest.raises(CollsimError, match=message):
        run_fsdp(uniform(**changes))


# --- network comm on a hardware preset: every strategy on the preset's network ------------------


def on_preset(nodes: int = 2, **changes) -> FSDPScenario:
    """The L uniform blocks on dgx-h100 x nodes: two_level with a NIC rail per GPU."""
    from sim.hardware.presets import scenario_fields

    params = tuple({"name": f"layers.{i}.weight", "numel": UNIT // 4} for i in range(L))
    base = {**scenario_fields("dgx-h100", nodes), "params": params, "comm": "network", "backward_time_s": 0.05}
    return FSDPScenario.from_dict({**base, **changes})


@pytest.mark.parametrize("algorithm", ["hierarchical", "ring"])
def test_no_shard_all_reduces_cost_what_ddp_pays_on_the_preset(algorithm):
    """One unit per parameter (no_shard) and one all-reduce per parameter (ddp overlap): the same
    all-reduces, so the same comm time, each as collsim sim collective --hardware runs it."""
    from sim.collective.collapsed import collective_time

    s = on_preset(algorithm=algorithm, strategy="overlap", units=",".join(f"layers.{i}" for i in range(L)))
    rows = {row["sharding"]: row for row in compare(s, ["ddp", "no_shard"])}
    alone = collective_time(s.collective(UNIT, 4))
    assert alone.time_s > 0 and s.collective(UNIT, 4).hardware == "dgx-h100"
    assert rows["no_shard"]["comm_busy_s"] == pytest.approx(L * alone.time_s, rel=1e-12)
    assert rows["ddp"]["comm_busy_s"] == pytest.approx(L * alone.time_s, rel=1e-12)


@pytest.mark.parametrize("algorithm", ["hierarchical", "ring"])
def test_hybrid_shard_on_the_preset_closed_forms(algorithm):
    """Shard groups of 8 = a node's GPUs on NVLink: ring all-gather / reduce-scatter of a unit,
    7 (a_intra + UNIT/8 / B_intra). Replica groups {i, i+8}: one rank a node on GPU i's own NIC
    rail, a 2-rank all-reduce of the UNIT/8 shard, 2 a_inter + UNIT/8 / B_nic (hierarchical with one
    rank a node is that ring)."""
    s = on_preset(algorithm=algorithm, sharding="hybrid_shard")
    summary = run_fsdp(s).summary()
    gather = 7 * (s.intra_latency_s + UNIT / 8 / s.intra_bandwidth_Bps)
    reduce = 2 * s.latency_s + UNIT / 8 / s.bandwidth_Bps
    assert summary["shard_group"] == 8 and summary["notes"] == []
    assert summary["comm_by_kind_s"] == {
        "all_gather": pytest.approx(2 * L * gather, rel=1e-9),
        "reduce_scatter": pytest.approx(L * gather, rel=1e-9),
        "all_reduce": pytest.approx(L * reduce, rel=1e-9),
    }


def test_replica_groups_share_the_nodes_nic_on_the_plain_two_level():
    """Without the preset's rails (two_level: one NIC a node) the 8 replica groups' all-reduces
    run at once, as NCCL's sub-communicators do, and share each node's NIC 8 ways."""
    s = on_preset(sharding="hybrid_shard", algorithm="hierarchical").replace(hardware=None)
    all_reduce = run_fsdp(s).summary()["comm_by_kind_s"]["all_reduce"]
    message_latency = s.intra_latency_s + s.latency_s  # GPU -> node switch -> NIC -> core and back down
    assert all_reduce == pytest.approx(L * (2 * message_latency + 8 * (UNIT / 8) / s.bandwidth_Bps), rel=1e-9)


def test_an_algorithm_that_cannot_run_on_a_group_falls_back_to_ring_with_a_note():
    """Shard groups of 3 on nodes of 8: replica group {0, 3, 6, ..., 21} sits 3, 3, 2 to a node,
    which hierarchical cannot split; that all-reduce runs as ring, and the result says so."""
    hierarchical = run_fsdp(on_preset(3, sharding="hybrid_shard", shard_size=3, algorithm="hierarchical")).summary()
    ring = run_fsdp(on_preset(3, sharding="hybrid_shard", shard_size=3, algorithm="ring")).summary()
    assert hierarchical["comm_by_kind_s"] == ring["comm_by_kind_s"] and ring["notes"] == []
    [note] = hierarchical["notes"]
    assert note.startswith("all_reduce in replica groups of 8 ranks: ring instead of hierarchical") and "[2, 3] to a node" in note
    # NCCL's rings lay their channels over a group's own nodes: they run on groups, no fallback
    nccl = run_fsdp(on_preset(sharding="hybrid_shard", algorithm="nccl_ring", chunks=2)).summary()
    assert nccl["notes"] == [] and nccl["comm_busy_s"] > 0
