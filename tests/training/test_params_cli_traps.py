"""`collsim real params` and `real export` / `real bench` as a new user met them (issue 36):
a module:attr that is not a model, a full disk, an empty --ops: one error line each."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from sim.cli import cli  # noqa: E402

FULL = Path("/dev/full")


def one_error_line(result, *fragments: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = [line for line in result.output.splitlines() if line.strip() and not line.startswith("# ")]  # "# " notes: which store
    assert len(lines) == 1 and lines[0].startswith("error"), result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.mark.parametrize(
    "spec,said",
    [("os:getcwd", "gave a str, not a torch.nn.Module"), ("os:remove", "cannot call it"), ("os:nope", "cannot load it"),
     ("no_such_module_here:x", "cannot load it")],
)  # fmt: skip
def test_a_model_spec_that_is_not_a_model_is_one_error_line(tmp_path, spec, said):
    result = CliRunner().invoke(cli, ["real", "params", "--model", spec, "-o", str(tmp_path / "p.json")])
    one_error_line(result, f"--model {spec}", said)
    assert not (tmp_path / "p.json").exists()


def test_a_model_spec_that_is_a_model_is_written(tmp_path, monkeypatch):
    (tmp_path / "tiny_model_for_params.py").write_text("import torch\n\ndef build():\n    return torch.nn.Linear(4, 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "p.json"
    result = CliRunner().invoke(cli, ["real", "params", "--model", "tiny_model_for_params:build", "-o", str(out)])
    assert result.exit_code == 0 and '"shape": [\n    2,\n    4\n   ]' in out.read_text(), (result.output, out.read_text())


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full here")
@pytest.mark.parametrize(
    "args,flag",
    [(["real", "params", "--model", "small", "-o", str(FULL)], "parameter list file"),
     (["real", "export", "--csv", str(FULL)], "--csv"), (["real", "export", "--json", str(FULL)], "--json"),
     (["real", "export", "--nccl-tests", str(FULL)], "--nccl-tests")],
)  # fmt: skip
def test_an_output_file_on_a_full_disk_is_one_error_line(args, flag):
    one_error_line(CliRunner().invoke(cli, args), flag, "No space left")


def test_empty_ops_are_refused_not_run_as_no_points():
    result = CliRunner().invoke(cli, ["real", "bench", "--ops", " ", "--no-db", "--ranks", "2"])
    one_error_line(result, "--ops", "empty")
