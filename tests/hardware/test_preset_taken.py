"""Presets without a log of their own read fitted constants from a preset of the same hardware
(``fitted.taken_from``): read, never copied, so a refit there moves them too."""

import pytest
import yaml

from sim.collective.nccl_fit import des_time
from sim.errors import CollsimError
from sim.hardware.presets import HERE, effective, load_preset, parse_preset

TAKEN = {
    "dgx-h100": ("hgx-h100-nvls", ["latency_scale"]),
    "hgx-h200": ("hgx-h100-nvls", ["nvls_efficiency", "latency_scale", "nvls_latency_scale"]),
    "hgx-b200": ("gb200-nvl72", ["ll128_latency_scale"]),
}


@pytest.mark.parametrize("name", sorted(TAKEN))
def test_a_taking_preset_reads_the_source_fit(name):
    source, take = TAKEN[name]
    preset, fitted = load_preset(name), load_preset(source)
    mine, theirs = effective(preset), effective(fitted)
    assert preset.fitted["taken_from"] == source and preset.fitted["logs"] == fitted.fitted["logs"]
    for constant in take:
        rate = {"nvls_efficiency": "intra_bandwidth_Bps", "intra_efficiency": "intra_bandwidth_Bps"}.get(constant)
        if rate:  # an efficiency carries the fitted rate in bytes/s onto the taker's own bandwidth
            assert getattr(mine, constant) * getattr(preset, rate) == pytest.approx(
                getattr(theirs, constant) * getattr(fitted, rate), rel=1e-12
            )
        else:
            assert getattr(mine, constant) == getattr(theirs, constant) == fitted.fitted["constants"][constant]["value"]
        assert mine.provenance[constant].endswith(f"taken from {source}")
    for constant in set(fitted.fitted["constants"]) - set(take):  # what is not taken stays at the default
        assert mine.provenance[constant] == "default (no fit)"


def test_hgx_h200_answers_as_hgx_h100_nvls():
    """Same NVLink 4 switch, NICs and graphs: NCCL's times agree at every regime (the switch's
    fitted rate on ASTRA-sim's 400 GB/s is carried onto H200's datasheet 450 GB/s; only the presets' own
    intra-node latency figures differ, a few ns a hop)."""
    assert effective(load_preset("hgx-h200")).nvls_efficiency == pytest.approx(
        effective(load_preset("hgx-h100-nvls")).nvls_efficiency * 400 / 450
    )
    for size in (1 << 12, 1 << 24, 1 << 30):
        h200, h100 = des_time("hgx-h200", 2, "all_reduce", size), des_time("hgx-h100-nvls", 2, "all_reduce", size)
        assert h200[1] == h100[1] and h200[0] == pytest.approx(h100[0], rel=0.01)


def test_a_refit_of_the_source_moves_the_taker():
    """The taker reads the source's block when it is parsed: a new value there is the taker's."""
    from sim.hardware.presets import _load

    entry = _load("hgx-h100-nvls").fitted["constants"]["latency_scale"]
    shipped = entry["value"]
    entry["value"] = shipped * 1.5  # what a refit writes (the cached block stands for the file)
    try:
        parsed = parse_preset(yaml.safe_load((HERE / "dgx-h100.yaml").read_text()), "dgx-h100")
        assert effective(parsed).latency_scale == pytest.approx(shipped * 1.5)
    finally:
        entry["value"] = shipped
    assert effective(load_preset("dgx-h100")).latency_scale == shipped


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"taken_from": "warp-drive", "take": ["latency_scale"]}, "taken_from must name another shipped preset"),
        ({"taken_from": "dgx-h100", "take": ["latency_scale"]}, "taken_from must name another shipped preset"),
        ({"taken_from": "hgx-h100-nvls", "take": ["inter_efficiency"]}, "take must list constants that hgx-h100-nvls has fitted"),
        ({"taken_from": "hgx-h100-nvls", "take": []}, "take must list"),
        ({"taken_from": "hgx-h100-nvls", "take": ["latency_scale"], "constants": {}}, "give neither"),
    ],
)
def test_a_taken_block_is_checked(block, message):
    data = yaml.safe_load((HERE / "dgx-h100.yaml").read_text())
    data["fitted"] = block
    with pytest.raises(CollsimError, match=message):
        parse_preset(data, "dgx-h100")
