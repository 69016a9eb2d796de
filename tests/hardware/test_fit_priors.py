"""A fit claims only what its logs can tell (issue 33): each constant has a prior, a constant the
logs cannot move stays at its prior and the answer says so, a value at a bound is flagged and not
kept. (Before: a fit on a NIC-bound two-node B200 log drove the NVLink efficiency to its lower
bound, 0.200, and the base latency to 0.05 us, without a word.)"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sim.collective import nccl_fit
from sim.hardware.presets import CONSTANTS, PRIORS

LOGS = Path(__file__).resolve().parents[2] / "real" / "data" / "nccl-tests"  # shipped with the project
NIC_BOUND = LOGS / "hgx-h100_2node_ib400_nccl2.26.2_allreduce_default.txt"


def _fake_des(monkeypatch, depends_on: dict[str, float], offset: float = 0.05):
    """A model whose log time ratio moves with the constants in ``depends_on`` (slope per unit)
    only: residual = sum(slope x (value - default)) - ``offset``, which the fit must explain."""

    def residuals(hardware, data, scale, values):
        shift = sum(slope * (values.get(name, CONSTANTS[name][0]) - CONSTANTS[name][0]) for name, slope in depends_on.items())
        return [k * (shift - offset) for k in scale]

    monkeypatch.setattr(nccl_fit, "_data_residuals", residuals)
    monkeypatch.setattr(
        nccl_fit, "_fit_data", lambda logs, stride: ([("made.txt", 2, "all_reduce", 2**k, 1e-3, None, None) for k in range(12)], [1.0] * 12)
    )


def test_every_constant_has_a_prior_with_its_basis():
    assert set(PRIORS) == set(CONSTANTS)
    for name, (kind, sd, basis) in PRIORS.items():
        assert kind in ("log", "abs") and sd > 0 and len(basis) > 20, name


def test_a_constant_the_logs_do_not_depend_on_stays_at_its_prior(monkeypatch):
    _fake_des(monkeypatch, {"latency_scale": 1.0})
    result = nccl_fit.fit([("made.txt", 2, None)], "dgx-h100", ["latency_scale", "intra_efficiency"])
    assert "intra_efficiency" not in result["constants"]
    held = result["held_at_prior"]["intra_efficiency"]
    assert held["value"] == CONSTANTS["intra_efficiency"][0] and "cannot tell" in held["why"]
    fitted = result["constants"]["latency_scale"]
    assert fitted["value"] == pytest.approx(1.05, abs=0.01)  # the data's +0.05 explained by the one constant they tell
    assert fitted["prior"]["value"] == 1.0 and fitted["moved_by"] == ["made.txt"]


def test_a_constant_driven_to_its_bound_is_flagged_not_kept(monkeypatch):
    _fake_des(monkeypatch, {"intra_efficiency": 1.0})  # the data want intra_efficiency 0.85: fine
    assert nccl_fit.fit([("made.txt", 2, None)], "dgx-h100", ["intra_efficiency"])["constants"]["intra_efficiency"][
        "value"
    ] == pytest.approx(0.85, abs=0.01)
    _fake_des(monkeypatch, {"intra_efficiency": 1.0}, offset=1.0)  # the data want it at 1.8: beyond its bound, 1.0
    result = nccl_fit.fit([("made.txt", 2, None)], "dgx-h100", ["intra_efficiency"])
    assert result["constants"] == {}
    assert "at its bound" in result["flagged"]["intra_efficiency"]["why"]


def test_a_strong_prior_is_overruled_only_as_far_as_the_data_go(monkeypatch):
    """A Gaussian prior pulls the estimate toward it by the ratio of the two precisions."""
    _fake_des(monkeypatch, {"base_latency_us": 0.01})  # the data want +5 us, told with noise 0.1 over 12 points
    value = nccl_fit.fit([("made.txt", 2, None)], "dgx-h100", ["base_latency_us"])["constants"]["base_latency_us"]["value"]
    assert 4.0 < value < 5.0  # between the prior (0) and the data (5), near the data


@pytest.mark.slow
def test_a_fit_on_a_nic_bound_two_node_log_leaves_nvlink_at_its_prior():
    result = nccl_fit.fit([(str(NIC_BOUND), 2, None)], "hgx-h100-nvls", ["intra_efficiency", "base_latency_us"], stride=4)
    assert "intra_efficiency" in result["held_at_prior"], result
    assert "intra_efficiency" not in result["constants"]
    assert all(math.isfinite(value) for value in result["residuals"].values())
