"""Scenario fields carry their metadata in one place (sim.fields): the scenarios read their short
keys and bounds from it, the CLI its options and help, the DDP page its labels."""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.errors import CollsimError
from sim.fields import COLLECTIVE, DDP, PRESET_KEYS, field_info
from sim.scenario import CollectiveScenario
from sim.training.ddp_scenario import DDPScenario

BASE = {"op": "all_reduce", "algorithm": "ring", "ranks": 4, "size": "1MiB", "bandwidth": "10GB/s"}


@pytest.mark.parametrize("cls, table, unlisted", [(CollectiveScenario, COLLECTIVE, set()), (DDPScenario, DDP, {"params"})])
def test_every_field_has_metadata(cls, table, unlisted):
    """``params`` (the parameter list as records) has no flag or form field of its own."""
    assert {f.name for f in dataclasses.fields(cls)} - set(table) == unlisted
    assert set(table) - set(PRESET_KEYS) <= {f.name for f in dataclasses.fields(cls)}  # and the keys a preset reads first
    assert all(info.label and info.help for info in table.values())


def test_short_keys_come_from_the_metadata():
    assert CollectiveScenario.ALIASES["eager_limit"] == "eager_limit_bytes"
    assert DDPScenario.ALIASES["bucket_cap"] == DDPScenario.ALIASES["bucket_size"] == "bucket_cap_bytes"
    assert CollectiveScenario.from_dict({**BASE, "jitter": "1us"}).jitter_s == 1e-6


def test_field_info_by_name_or_short_key_with_the_dataclass_default():
    size = field_info("size")
    assert (size.name, size.unit, size.low, size.option) == ("size_bytes", "bytes", 0, "--size")
    assert size.default is dataclasses.MISSING  # required
    assert field_info("chunks").default == 1 and field_info("w", "ddp").name == "w_Bps"
    assert field_info("bucket_cap", "ddp").default == 25 * 2**20
    with pytest.raises(CollsimError, match="unknown field 'sizes'.*did you mean 'size"):
        field_info("sizes")


def test_the_scenario_checks_the_bound_the_metadata_states():
    assert COLLECTIVE["chunks"].low == 1
    with pytest.raises(CollsimError, match="chunks: must be >= 1, got 0"):
        CollectiveScenario.from_dict({**BASE, "chunks": 0})


@pytest.mark.parametrize("command, table, names", [
    (["sim", "collective"], COLLECTIVE, ("size_bytes", "eager_limit_bytes", "sharing", "repetitions")),
    (["sim", "ddp"], DDP, ("bucket_cap_bytes", "mfu", "w_Bps", "first_bucket_bytes")),
    (["sim", "crossover"], COLLECTIVE, ("chunks", "overhead_s")),
])  # fmt: skip
def test_cli_help_is_the_fields_help(command, table, names):
    text = " ".join(CliRunner().invoke(cli, [*command, "--help"]).output.split()).replace("- ", "-")  # click wraps after hyphens
    for name in names:
        info = table[name]
        assert f"{info.option} " in text and " ".join(info.help.split()) in text


def test_choices_come_from_the_metadata():
    result = CliRunner().invoke(cli, ["sim", "collective", "--op", "all_reduce", "--algorithm", "ring", "--ranks", "4", "--size", "1MiB",
                                      "--bandwidth", "1GB/s", "--sharing", "fastest"])  # fmt: skip
    assert result.exit_code != 0 and "fifo" in result.output and "fair" in result.output


def test_ddp_page_labels_are_the_fields():
    from webapp.pages.ddp.page import LABELS, SCENARIO_FIELDS

    for key, name in SCENARIO_FIELDS.items():
        assert LABELS[key] == (DDP[name].label, DDP[name].help)
