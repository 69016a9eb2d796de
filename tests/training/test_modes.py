"""DDP with the network comm model: collapsed all-reduces give the same step as full ones."""

import pytest

from sim.training.ddp import DDPScenario, run_ddp

BASE = dict(
    preset="cs336-tiny",
    backward_time_s=0.05,
    comm="network",
    latency_s=5e-6,
    bandwidth_Bps=25e9,
    reduce_bandwidth_Bps=100e9,
    bucket_cap_bytes=4 * 2**20,
)


@pytest.mark.parametrize(
    "network",
    [dict(algorithm="ring", ranks=8), dict(algorithm="ring", ranks=6, topology="ring"), dict(algorithm="rabenseifner", ranks=8), dict(algorithm="double_binary_tree", ranks=6, chunks=2),
     dict(algorithm="hierarchical", ranks=8, topology="two_level", gpus_per_node=4, intra_bandwidth_Bps=150e9)],
)  # fmt: skip
def test_collapsed_equals_full(network):
    collapsed = run_ddp(DDPScenario(**BASE, **network)).summary()
    full = run_ddp(DDPScenario(**BASE, **network, mode="full")).summary()
    assert collapsed["mode"] == "collapsed" and full["mode"] == "full"
    assert collapsed["step_time_s"] == pytest.approx(full["step_time_s"], rel=1e-12)
    assert [b["end_s"] for b in collapsed["buckets"]] == pytest.approx([b["end_s"] for b in full["buckets"]], rel=1e-12)


def test_ow_summary_says_formula():
    assert run_ddp(DDPScenario(preset="cs336-tiny", backward_time_s=0.05, o_s=5e-5, w_Bps=1e10)).summary()["mode"] == "formula"


def test_bad_mode_is_named():
    from sim.errors import CollsimError

    with pytest.raises(CollsimError, match="mode"):
        DDPScenario(**BASE, mode="fast")
