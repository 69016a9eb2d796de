"""NCCL's data path counts every channel's bytes on the wire, not only the simulated channel's
(issue 36, E3: 8 x dgx-h100 at 64 MiB read 37.33 MiB, 1/24 of the true 896 MiB)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sim.cli import cli
from sim.collective.pick import scenario_for_pick
from sim.collective.runner import run_collective
from sim.nccl.proto import BY_NAME


@pytest.mark.parametrize(
    "hardware, nodes, algorithm, protocol, nbytes",
    [
        ("dgx-h100", 1, "Ring", "Simple", 64 << 20),
        ("dgx-h100", 2, "Ring", "LL", 1 << 20),
        ("dgx-h100", 2, "Ring", "LL128", 16 << 20),
        ("dgx-a100", 2, "Ring", "Simple", 16 << 20),
        ("dgx-h100", 2, "Tree", "Simple", 16 << 20),
        ("dgx-h100", 4, "Tree", "LL128", 4 << 20),
    ],
)
def test_all_reduce_puts_every_channels_bytes_on_the_wire(hardware, nodes, algorithm, protocol, nbytes):
    """A ring all-reduce of n bytes on p ranks sends 2(p-1)/p n a rank, p times that in all; a
    tree's up and down passes cross each of its p - 1 edges once each way: the same 2(p-1) n.
    On the wire LL puts 8-byte lines holding 4 data bytes, LL128 128-byte lines holding 120."""
    scenario, _ = scenario_for_pick(hardware, nodes, "all_reduce", nbytes, algorithm, protocol)
    assert scenario.chunks > 1  # several channels, of which the DES runs one or two
    result = run_collective(scenario.replace(record="aggregate"))
    p = scenario.ranks
    expected = p * 2 * (p - 1) / p * nbytes / BY_NAME[protocol].data_per_wire
    assert result.wire_copies > 1
    assert result.bytes_sent == pytest.approx(expected, rel=1e-4)  # channels' pieces differ by an element at most


def test_cli_json_bytes_on_wire_of_nccls_pick_equals_a_plain_rings():
    args = ["sim", "collective", "--op", "all_reduce", "--hardware", "dgx-h100", "--size", "64MiB", "--json"]
    picked = json.loads(CliRunner().invoke(cli, [*args, "--algorithm", "nccl"]).output)
    plain = json.loads(CliRunner().invoke(cli, [*args, "--algorithm", "ring"]).output)
    assert picked["algorithm"] == "nccl_ring" and plain["bytes_on_wire"] == 896 * 2**20
    assert picked["bytes_on_wire"] == pytest.approx(plain["bytes_on_wire"], rel=1e-4)


def test_the_players_steps_times_its_copies_are_the_bytes_on_the_wire():
    """The step caption sums a step's messages: x ``wire_copies`` it is every channel's bytes
    (step 1 of 8 x dgx-h100 at 64 MiB is 64 MiB in all, not the 2.667 MiB of one channel)."""
    from sim.collective.player import player_data

    scenario, _ = scenario_for_pick("dgx-h100", 1, "all_reduce", 64 << 20)
    result = run_collective(scenario)
    player = player_data(scenario, result)
    first = sum(message[4] for message in player["messages"][0]) * player["wire_copies"]
    assert first == pytest.approx(64 << 20, rel=1e-4)
    every = sum(message[4] for step in player["messages"] for message in step) * player["wire_copies"]
    assert every == pytest.approx(result.bytes_sent, rel=1e-9)
