"""The per-call network cost (base_latency_us) has a prior per transport, from cited physical
figures (issue 33): InfiniBand and RoCE near 0 beyond NCCL's own NET latency, GPUDirect-TCPXO
(TCP through the host) tens of us. Before, one prior centred at 0 served every cluster, so a
cluster predicted from priors alone (GCP A3 Mega) missed its TCP cost by 30-55 us a call."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from sim.collective import nccl_fit
from sim.errors import CollsimError
from sim.hardware.presets import HERE, PRIORS, effective, list_presets, load_preset, parse_preset, prior
from sim.hardware.presets.transports import TRANSPORTS


def test_every_shipped_network_preset_names_its_transport_and_its_prior_names_the_source():
    for name in list_presets():
        preset = load_preset(name)
        if preset.nics_per_node == 0 or preset.nccl is None:
            assert prior("base_latency_us", preset)[3] == PRIORS["base_latency_us"][2], name  # no network: the shared prior
            continue
        assert preset.transport in TRANSPORTS, name
        assert "transports.py" in preset.sources["transport"] and "read 2026" in preset.sources["transport"], name
        centre, kind, sd, basis = prior("base_latency_us", preset)
        assert (centre, sd) == TRANSPORTS[preset.transport][:2] and kind == "abs", name
        assert basis.startswith(preset.transport) and "(" in basis and " us" in basis, name  # a figure and where it is from


def test_the_transports_differ_where_the_physics_does():
    assert TRANSPORTS["infiniband"][0] == 0.0 and TRANSPORTS["roce"][0] <= 1.0  # RDMA: under a microsecond on the wire
    assert TRANSPORTS["tcpxo"][0] >= 10 * max(TRANSPORTS["roce"][0], 1.0)  # TCP through the host: tens of us
    assert TRANSPORTS["tcpxo"][1] > PRIORS["base_latency_us"][1]  # one thin source: wider than the shared prior


@pytest.mark.slow
def test_a_fit_whose_logs_cannot_tell_the_per_call_cost_leaves_it_at_the_transports_prior(monkeypatch):
    """The logs move latency_scale only: base_latency_us is held, at TCPXO's 50 us, not at 0."""
    monkeypatch.setattr(
        nccl_fit, "_data_residuals", lambda hardware, data, scale, values: [k * (values["latency_scale"] - 1.05) for k in scale]
    )
    made = [("made.txt", 2, "all_reduce", 2**k, 1e-3, None, None) for k in range(12)]
    monkeypatch.setattr(nccl_fit, "_fit_data", lambda logs, stride: (made, [1.0] * 12))
    result = nccl_fit.fit([("made.txt", 2, None)], "gcp-a3-mega", ["latency_scale", "base_latency_us"])
    held = result["held_at_prior"]["base_latency_us"]
    assert held["value"] == TRANSPORTS["tcpxo"][0] and held["prior_sd"] == TRANSPORTS["tcpxo"][1]
    assert result["constants"]["latency_scale"]["value"] == pytest.approx(1.05, abs=0.01)


def test_a_preset_without_a_fit_runs_at_its_transports_prior():
    unfitted = replace(load_preset("gcp-a3-mega"), fitted=None)
    assert effective(unfitted).base_latency_us == TRANSPORTS["tcpxo"][0]
    assert "tcpxo" in effective(unfitted).provenance["base_latency_us"]
    assert effective(replace(load_preset("dgx-h100"), fitted=None)).provenance["base_latency_us"] == "default (no fit)"


def test_leave_one_out_predicts_an_uncalibrated_preset_from_its_transports_prior():
    from real.validate_nccl import priors_only

    calibration = priors_only("gcp-a3-mega")
    assert calibration.values["base_latency_us"] == TRANSPORTS["tcpxo"][0]
    low, high = calibration.spreads["base_latency_us"]
    assert (low, high) == (TRANSPORTS["tcpxo"][0] - TRANSPORTS["tcpxo"][1], TRANSPORTS["tcpxo"][0] + TRANSPORTS["tcpxo"][1])


def test_an_unknown_transport_is_refused_naming_the_allowed_ones():
    raw = yaml.safe_load((HERE / "gcp-a3-mega.yaml").read_text())
    raw["transport"] = "carrier-pigeon"
    with pytest.raises(CollsimError, match="transport must be one of infiniband, roce, tcpxo"):
        parse_preset(raw, "mine.yaml")
