"""``collsim validate nccl-tests`` with each log's NCCL release: its points fitted and predicted with
the tuning of the release it names (else --nccl-version, else the default, said per log), and
summary.json / the report saying which release and where it came from. The DES is replaced by a
closed form that records the release it was asked for, except where the pick itself is checked."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from real.validate_nccl import read_logs, validate
from real.validate_nccl_report import markdown, nccl_tests_command
from sim.collective import nccl_fit
from sim.errors import CollsimError

from .test_validate_nccl_ops import closed_form, write_op_log

HARDWARE = "oci-a100-roce"


def named(path, line: str):
    """``path`` with ``line`` (a line naming the NCCL release) after its program line."""
    first, rest = path.read_text().split("\n", 1)
    path.write_text(f"{first}\n{line}\n{rest}")
    return path


@pytest.fixture
def releases(monkeypatch, tmp_path):
    """Three logs: one naming NCCL 2.19.3, two naming none; the DES records the release of each call."""
    seen: dict[tuple[str, int], set] = {}

    def recording(hardware, nodes, op, size, nccl_algo=None, nccl_proto=None, nccl_version=None):
        seen.setdefault((op, nodes), set()).add(nccl_version)
        return closed_form(hardware, nodes, op, size)

    monkeypatch.setattr(nccl_fit, "des_time", recording)
    paths = [named(write_op_log(tmp_path / "ar_1.txt", "all_reduce", 1), "NCCL version 2.19.3+cuda12.2"),
             write_op_log(tmp_path / "ar_2.txt", "all_reduce", 2), write_op_log(tmp_path / "ag_2.txt", "all_gather", 2)]  # fmt: skip
    return paths, seen


@pytest.mark.slow
def test_each_log_is_fitted_and_predicted_with_its_own_release(releases):
    paths, seen = releases
    logs = read_logs(paths, HARDWARE, nccl_version=",,2.21")
    document = validate(logs, HARDWARE, stride=3)
    assert seen == {("all_reduce", 1): {"2.19"}, ("all_reduce", 2): {"2.27"}, ("all_gather", 2): {"2.21"}}
    rows = {row["log"]: row["nccl_release"] for role in ("fitted", "predicted") for row in document["split"][role]}
    assert {log: (r["version"], r["source"], r["named"]) for log, r in rows.items()} == {
        "ar_1.txt": ("2.19", "log", "2.19.3"), "ar_2.txt": ("2.27", "default", None), "ag_2.txt": ("2.21", "flag", None)}  # fmt: skip
    json.dumps(document)  # summary.json carries it as plain data
    report = markdown(document)
    assert "- ar_2.txt: NCCL release: not named in the log; default 2.27.7-1 assumed" in report
    assert "- ar_1.txt: NCCL release: 2.19.3, named in the log; v2.19.3-1's tuning" in report
    assert "| 2.21 (flag) |" in report


def test_a_flag_differing_from_a_named_release_is_refused_before_any_fit(releases, tmp_path):
    paths, seen = releases
    result = CliRunner().invoke(nccl_tests_command, [*map(str, paths), "--hardware", HARDWARE, "--nccl-version", "2.27",
                                                     "--out", str(tmp_path / "out")])  # fmt: skip
    assert isinstance(result.exception, CollsimError), result.output
    assert "ar_1.txt line 2 names NCCL 2.19.3, but --nccl-version gives 2.27 for it" in str(result.exception)
    assert seen == {} and not (tmp_path / "out").exists()


def test_an_unknown_release_is_refused_naming_the_known_ones(releases):
    paths, _ = releases
    named(paths[1], "# nccl-tests version 2.11.0 nccl-headers=21403 nccl-library=21403")
    with pytest.raises(CollsimError, match=r"ar_2.txt line 2 names NCCL 2\.14\.3, .*known: 2\.19, .*2\.29"):
        read_logs(paths, HARDWARE)


@pytest.mark.slow
def test_a_2_19_log_is_predicted_with_2_19s_pick(monkeypatch, tmp_path):
    """The real DES: one node of A100s at 2 MiB, where 2.19 picks Ring/LL128 and 2.27 Ring/LL
    (tests/hardware/test_nccl_fit_version.py shows the two tuning models differ there)."""
    picks = []

    def real(*args, **kwargs):
        time_s, pick = real_des_time(*args, **kwargs)
        picks.append((kwargs.get("nccl_version"), pick))
        return time_s, pick

    real_des_time = nccl_fit.des_time
    monkeypatch.setattr(nccl_fit, "des_time", real)
    paths = []
    for name, line in (("v219.txt", "NCCL version 2.19.3+cuda12.2"), ("plain.txt", None)):
        path = write_op_log(tmp_path / name, "all_reduce", 1)
        path.write_text("\n".join(row for row in path.read_text().splitlines() if not row.strip()[:1].isdigit()) + "\n"
                        + f"  {2**21:>12d} {2**19:>12d}  float  none  -1  60.00  1.00  1.00  0  60.00  1.00  1.00  0\n")  # fmt: skip
        paths.append(named(path, line) if line else path)
    from real.validate_nccl import check_runs

    check_runs(read_logs(paths, HARDWARE), HARDWARE)
    assert picks == [("2.19", "Ring/LL128"), ("2.27", "Ring/LL")]
