"""sim train's field table is registered with sim.fields: field_info(name, "train") and its flags."""

from __future__ import annotations

from click.testing import CliRunner

import sim.training.parallel  # noqa: F401  (registers the table)
from sim.fields import field_info, fields_of
from sim.training.parallel.cli import train
from sim.training.parallel.scenario import FIELDS


def test_field_info_of_train_gives_the_table_entry_with_the_scenario_default():
    info = field_info("tp", "train")
    assert (info.label, info.low, info.high, info.default) == ("Tensor parallel", 1, 1024, 1)
    assert field_info("schedule", "train").default == "1f1b"
    assert fields_of("train") is FIELDS


def test_sim_train_help_lists_every_field_with_its_range():
    text = CliRunner().invoke(train, ["--help"], terminal_width=200).output
    for info in FIELDS.values():
        assert info.option in text
    assert "(1 to 1024)" in text  # --tp's bounds, from the table
