"""A YAML or JSON input is bounded before it is parsed and its values are never echoed whole
(issue 36: a 600-byte YAML alias bomb in a scenario's ``stragglers`` or as ``--params`` ran 104-112 s
and died with MemoryError at a 4 GiB bound; uploaded on the DDP page it froze the explorer for every
client, and the error printed the whole expanded value). Duplicate keys kept the last one silently."""

from __future__ import annotations

import base64
import resource
import subprocess
import sys

import pytest

from sim.errors import MAX_MESSAGE_CHARS, CollsimError
from sim.files import parse_data, read_text

LEVELS = 9
BOMB = (
    "a: &a ["
    + ",".join(['"lol"'] * 9)
    + "]\n"
    + "".join(f"{chr(98 + level)}: &{chr(98 + level)} [" + ",".join([f"*{chr(97 + level)}"] * 9) + "]\n" for level in range(LEVELS - 1))
)  # 9**9 = 387 M strings when expanded, in ~600 bytes


def _bounded_cli(args: list[str], cwd) -> subprocess.CompletedProcess:
    """``collsim ARGS`` in 1 GiB of memory and 60 s: the bomb must be refused long before either."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    return subprocess.run([sys.executable, "-m", "sim.cli", *args], capture_output=True, text=True, timeout=60, cwd=cwd, preexec_fn=limit)


def test_the_bomb_is_small():
    assert len(BOMB) < 700


@pytest.mark.parametrize("suffix", ["", ".yaml"])
def test_a_yaml_alias_is_refused_at_the_alias(suffix):
    with pytest.raises(Exception, match="aliases"):
        parse_data(BOMB, suffix)


def test_a_key_given_twice_is_refused_in_yaml_and_json():
    with pytest.raises(Exception, match="'ranks' given twice"):
        parse_data("ranks: 4\nop: all_reduce\nranks: 8\n")
    with pytest.raises(CollsimError, match="ranks: key given twice"):
        parse_data('{"ranks": 4, "ranks": 8}', ".json")
    assert parse_data("a: 1\nb: {a: 2}\n") == {"a": 1, "b": {"a": 2}}  # the same key in two mappings is fine


def test_a_scenario_file_with_the_bomb_in_stragglers_is_one_message(tmp_path):
    scenario = tmp_path / "bomb.yaml"
    scenario.write_text("op: all_reduce\nranks: 4\nsize: 1MiB\n" + BOMB + "stragglers: *i\n")
    done = _bounded_cli(["sim", "collective", "--scenario", str(scenario)], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "aliases" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr) < 1000


def test_params_with_the_bomb_is_one_message(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(BOMB + "params: *i\n")
    done = _bounded_cli(["sim", "ddp", "--params", str(params), "--o", "50us", "--w", "10GB/s", "--backward-time", "10ms"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "aliases" in done.stderr and "Traceback" not in done.stderr


def test_a_key_given_twice_in_a_scenario_file_is_refused(tmp_path):
    scenario = tmp_path / "twice.yaml"
    scenario.write_text("op: all_reduce\nranks: 4\nsize: 1MiB\nsize: 2MiB\n")
    done = _bounded_cli(["sim", "collective", "--scenario", str(scenario)], tmp_path)
    assert done.returncode == 2
    assert "given twice" in done.stderr and "line 3" in done.stderr


def test_an_uploaded_bomb_is_refused_with_a_short_message():
    from webapp.pages.ddp.model import parse_upload

    contents = "data:application/x-yaml;base64," + base64.b64encode((BOMB + "params: *i\n").encode()).decode()
    params, message = parse_upload(contents, "bomb.yaml")
    assert params is None
    assert "aliases" in message and len(message) < 500


def test_an_upload_too_large_is_refused_before_decoding():
    from webapp.pages.ddp.model import MAX_UPLOAD_BYTES, parse_upload

    contents = "data:application/json;base64," + "A" * (MAX_UPLOAD_BYTES * 2)
    params, message = parse_upload(contents, "big.json")
    assert params is None and "larger than" in message


def test_a_file_too_large_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("x" * 2000)
    with pytest.raises(CollsimError, match="2,000 bytes"):
        read_text(big, "scenario file", limit=1000)


def test_a_message_never_carries_an_unbounded_value():
    error = CollsimError("algorithm: unknown " + repr("x" * 10_000_000))
    assert len(str(error)) < MAX_MESSAGE_CHARS + 100
    assert error.field == "algorithm"
