"""Units and scenarios: parsing, validation messages, round trips."""

import pytest

from sim.errors import CollsimError
from sim.scenario import CollectiveScenario
from sim.units import format_size, format_time, parse_bandwidth, parse_size, parse_size_list, parse_time


@pytest.mark.parametrize(
    "text,nbytes",
    [("64MiB", 64 * 2**20), ("1.5KB", 1500), ("1.5KiB", 1536), ("4096", 4096), ("2GB", 2 * 10**9), ("1GiB", 2**30), ("7B", 7), (512, 512)],
)
def test_sizes(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize("text", ["-1MiB", "1e400B", "1e308GiB"])
def test_negative_or_infinite_sizes_are_refused_by_name(text):
    with pytest.raises(CollsimError, match=r"size: must be a finite, non-negative size, got"):
        parse_size(text)


@pytest.mark.parametrize(
    "text,rate",
    [("25GB/s", 25e9), ("100Gbps", 100e9 / 8), ("1GiB/s", 2**30), ("10MB/s", 1e7), ("1e9", 1e9), ("800Mbps", 1e8)],
)
def test_bandwidths(text, rate):
    assert parse_bandwidth(text) == pytest.approx(rate)


@pytest.mark.parametrize("text,seconds", [("5us", 5e-6), ("1.5e-6s", 1.5e-6), ("120ms", 0.12), ("3ns", 3e-9), ("2", 2.0), ("5µs", 5e-6)])
def test_times(text, seconds):
    assert parse_time(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "parse,text",
    [
        (parse_size, "64MiX"),
        (parse_size, "abc"),
        (parse_size, "-1KB"),
        (parse_size, "1.5B"),
        (parse_bandwidth, "25GB"),
        (parse_bandwidth, "10GBps"),
        (parse_time, "5 parsecs"),
    ],
)
def test_bad_units_are_clear_errors(parse, text):
    with pytest.raises(CollsimError, match="allowed|whole number|non-negative|expected|ambiguous"):
        parse(text)


@pytest.mark.parametrize(
    "text,bytes_per_s",
    [
        ("8Mb/s", 1e6),
        ("8MB/s", 8e6),
        ("400Gb/s", 50e9),
        ("400Gbit/s", 50e9),
        ("400Gbps", 50e9),
        ("25GB/s", 25e9),
        ("8Kb/s", 1e3),
        ("8kbps", 1e3),
    ],  # fmt: skip
)
def test_lowercase_b_is_bits_and_capital_b_bytes_in_every_bandwidth_spelling(text, bytes_per_s):
    assert parse_bandwidth(text) == pytest.approx(bytes_per_s, rel=1e-15)


def test_lowercase_b_is_bits_in_sizes_too():
    assert parse_size("8Mb") == 10**6 and parse_size("8MB") == 8 * 10**6 and parse_size("16b") == 2


@pytest.mark.parametrize("text", ["10GBPS", "10GBps", "5MBPS"])
def test_a_bandwidth_whose_b_cannot_be_read_is_refused_with_both_readings(text):
    with pytest.raises(CollsimError) as error:
        parse_bandwidth(text)
    message = str(error.value)
    assert "ambiguous" in message and "bits per second" in message and "bytes per second" in message
    assert error.value.field == "bandwidth"


def test_a_megabit_link_takes_eight_times_a_megabyte_link(tmp_path):
    """The issue's trap: --bandwidth 8Mb/s was read as 8 MB/s (a 15 s broadcast took 1.875 s)."""
    from sim.collective.runner import run_collective
    from sim.scenario import CollectiveScenario

    common = {"op": "broadcast", "algorithm": "linear", "ranks": 2, "size": "1MB"}
    bits = run_collective(CollectiveScenario.from_dict({**common, "bandwidth": "8Mb/s"})).time_s
    octets = run_collective(CollectiveScenario.from_dict({**common, "bandwidth": "8MB/s"})).time_s
    assert bits == pytest.approx(1.0) and octets == pytest.approx(0.125)


def test_a_scenario_giving_a_key_and_its_canonical_twin_is_an_error():
    from sim.scenario import CollectiveScenario

    data = {"op": "all_reduce", "algorithm": "ring", "ranks": 4, "bandwidth": "25GB/s", "latency": "5us", "latency_s": 1.0}
    with pytest.raises(CollsimError, match="latency.*latency_s|latency_s.*latency") as error:
        CollectiveScenario.from_dict(data)
    assert error.value.field == "latency"


def test_size_lists_and_ranges():
    assert parse_size_list("4KiB:64KiB:x4") == [4096, 16384, 65536]
    assert parse_size_list("1MiB,4MiB") == [2**20, 4 * 2**20]
    with pytest.raises(CollsimError):
        parse_size_list("4KiB:1KiB:x2")


def test_formatting():
    assert format_size(64 * 2**20) == "64 MiB" and format_time(5e-6) == "5 us"


BASE = dict(op="all_reduce", algorithm="ring", ranks=8, size_bytes=2**20, bandwidth_Bps=25e9)


@pytest.mark.parametrize(
    "changes,field",
    [
        (dict(ranks=0), "ranks"),
        (dict(bandwidth_Bps=0.0), "bandwidth"),
        (dict(bandwidth_Bps=-1.0), "bandwidth"),
        (dict(latency_s=-1e-6), "latency"),
        (dict(size_bytes=2**20 + 2), "element size"),
        (dict(algorithm="recursive_doubling", ranks=12), "power-of-two"),
        (dict(algorithm="rabenseifner", ranks=12), "power-of-two"),
        (dict(algorithm="magic"), "algorithm"),
        (dict(op="alltoall"), "op"),
        (dict(chunks=0), "chunks"),
        (dict(algorithm="recursive_doubling", chunks=4), "chunks"),
        (dict(root=8), "root"),
        (dict(algorithm="hierarchical"), "two_level"),
        (dict(topology="two_level", gpus_per_node=3), "gpus_per_node"),
        (dict(reduce_bandwidth_Bps=float("inf")), "reduce_bandwidth"),
        (dict(stragglers=((9, 1e-3),)), "stragglers"),
    ],
)
def test_invalid_scenarios_name_the_field(changes, field):
    with pytest.raises(CollsimError, match=field):
        CollectiveScenario(**{**BASE, **changes})


def test_unit_strings_and_round_trips():
    scenario = CollectiveScenario.from_dict(
        {
            "op": "all_reduce",
            "algorithm": "ring",
            "ranks": 8,
            "size": "64MiB",
            "bandwidth": "25GB/s",
            "latency": "5us",
            "stragglers": "3:1ms",
        }
    )
    assert scenario.size_bytes == 64 * 2**20 and scenario.latency_s == 5e-6 and scenario.stragglers == ((3, 1e-3),)
    assert CollectiveScenario.from_json(scenario.to_json()) == scenario
    assert CollectiveScenario.from_yaml(scenario.to_yaml()) == scenario


@pytest.mark.parametrize(
    "data,message",
    [
        ({**BASE, "colour": "red"}, "unknown field 'colour'"),
        ({"op": "all_reduce"}, "missing required"),
        ({**BASE, "ranks": "eight"}, "whole number"),
        ({**BASE, "verify": "maybe"}, "true or false"),
    ],
)
def test_bad_scenario_mappings(data, message):
    with pytest.raises(CollsimError, match=message):
        CollectiveScenario.from_dict(data)


def test_malformed_yaml_and_missing_files(tmp_path):
    with pytest.raises(CollsimError, match="YAML"):
        CollectiveScenario.from_yaml("op: [unclosed")
    with pytest.raises(CollsimError, match="not found"):
        CollectiveScenario.load(tmp_path / "nope.yaml")


def test_verify_refuses_payloads_that_would_not_fit_in_memory():
    with pytest.raises(CollsimError, match="verify: real payloads"):
        CollectiveScenario(**{**BASE, "ranks": 1024, "size_bytes": 64 * 2**20, "verify": True})


def test_load_mapping_reads_json_as_json_and_yaml_with_libyaml(tmp_path):
    """A .json file is read by the JSON parser (recorded profiles are megabytes); a .json file
    that is really YAML still reads, and a broken file names itself."""
    from sim.errors import CollsimError
    from sim.scenario import load_mapping

    profile = tmp_path / "profile.json"
    profile.write_text('{"events": [{"kind": "backward", "start_s": 0.5}], "world_size": 2}')
    assert load_mapping(profile, "profile") == {"events": [{"kind": "backward", "start_s": 0.5}], "world_size": 2}
    yaml_inside = tmp_path / "scenario.json"
    yaml_inside.write_text("op: all_reduce\nranks: 4\n")
    assert load_mapping(yaml_inside) == {"op": "all_reduce", "ranks": 4}
    broken = tmp_path / "broken.json"
    broken.write_text('{"op": [1, 2}')
    with pytest.raises(CollsimError, match="broken.json.*not valid YAML/JSON"):
        load_mapping(broken, "profile")
