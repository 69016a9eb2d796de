"""The NCCL release an nccl-tests log names (sim.nccl.log.release_named) and `collsim hardware fit`
picking each log's points with that release's tuning (sim.nccl.versions): a log of NCCL 2.19 is not
silently predicted with 2.27's choices; a release the log names is never overridden by --nccl-version."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sim.collective import nccl_fit
from sim.collective.nccl_fit import compare, log_release, log_runs, read_checked
from sim.errors import CollsimError
from sim.hardware.presets import load_preset
from sim.nccl.log import LogChecks, named_release, release_named, version_of_code
from sim.nccl.model import predict

HARDWARE = "oci-a100-roce"
SIZE = 2**21  # one node of A100s: 2.27 picks Ring/LL here, 2.19 Ring/LL128 (Ring/LL x 1/4 before 2.21: v2.19.3-1 tuning.cc:180)
INFO = "node1:2345:2345 [0] NCCL INFO NCCL version 2.21.5+cuda12.4"
HEADER = "# nccl-tests version 2.13.10 nccl-headers=22301 nccl-library=22204"
BARE = "NCCL version 2.29.3+cuda13.1"


def write_log(path, release_line: str | None = None, sizes=(SIZE,), ranks: int = 8):
    """A one-op nccl-tests log of ``ranks`` ranks (1 node of 8 A100s), with ``release_line`` after its ranks."""
    lines = [
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20",
        "# Collective test starting: all_reduce_perf",
    ]
    lines += [f"#  Rank {r:2d} Group  0 Pid 1 on host{r // 8} device {r % 8} [0x1] NVIDIA A100" for r in range(ranks)]
    lines += [release_line] if release_line else []
    lines += [f"  {size:>12d}  {size // 4:>10d}  float  sum  -1  {60.0:9.2f}  0.00  0.00  0  {60.0:9.2f}  0.00  0.00  0" for size in sizes]
    path.write_text("\n".join(lines + ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.0"]) + "\n")
    return path


def test_the_forms_a_log_names_its_release_in_are_read():
    assert release_named(INFO) == "2.21.5"  # NCCL_DEBUG=INFO
    assert release_named(HEADER) == "2.22.4"  # nccl-tests >= 2.13: the library that ran, not the headers it was built with
    assert release_named(BARE) == "2.29.3"  # what nccl-tests prints itself
    assert release_named("# NCCL:        2.26.2+cuda12.8 (printed in the log)") == "2.26.2"  # real/data/nccl-tests' header
    assert version_of_code(22301) == "2.23.1" and version_of_code(2708) == "2.7.8"  # NCCL_VERSION before and after 2.9


def test_an_inferred_or_unprinted_release_is_none():
    for line in ("# NCCL:        2.23.4 (inferred from the container image)", "# NCCL:        not printed; the image runs NCCL 2.19.3",
                 "# machine:     8x H100; NCCL version not printed", "# nccl-tests version 2.13.10 nccl-headers=22301"):  # fmt: skip
        assert release_named(line) is None, line


def test_the_first_line_naming_a_release_is_the_logs(tmp_path):
    lines = ["# NCCL:  2.23.4 (inferred)", BARE, INFO]
    assert named_release(lines) == ("2.29.3", 2)
    _, _, checks = read_checked(write_log(tmp_path / "x.txt", INFO))
    assert (checks.release, checks.release_line) == ("2.21.5", 11)


def test_picks_per_release_differ_at_this_size():
    """The ground the next test stands on: the two releases' tuning models pick differently here."""
    picks = {version: predict(HARDWARE, 1, "all_reduce", SIZE, nccl_version=version) for version in ("2.19", "2.27")}
    assert {v: f"{p.nccl_algorithm}/{p.nccl_protocol}" for v, p in picks.items()} == {"2.19": "Ring/LL128", "2.27": "Ring/LL"}


@pytest.mark.slow
def test_a_log_printing_nccl_2_19_is_simulated_with_2_19s_pick(tmp_path):
    (named,) = compare(write_log(tmp_path / "v219.txt", "NCCL version 2.19.3+cuda12.2"), HARDWARE, 1)
    (unnamed,) = compare(write_log(tmp_path / "none.txt"), HARDWARE, 1)
    assert named.pick == "Ring/LL128" and unnamed.pick == "Ring/LL"
    assert named.model_s == predict(HARDWARE, 1, "all_reduce", SIZE, nccl_version="2.19").time_s != unnamed.model_s


def test_the_fit_runs_each_log_with_its_own_release(tmp_path, monkeypatch):
    seen = {}

    def spy(hardware, nodes, op, size, nccl_algo=None, nccl_proto=None, nccl_version=None):
        seen.setdefault(nodes, set()).add(nccl_version)
        return 1e-5 + size / 1e11, "Ring/Simple"

    monkeypatch.setattr(nccl_fit, "des_time", spy)
    sizes = [2**k for k in range(10, 24)]
    logs = [write_log(tmp_path / "one.txt", INFO, sizes), write_log(tmp_path / "two.txt", None, sizes, ranks=16)]
    result = CliRunner().invoke(nccl_fit_cli(), ["fit", *map(str, logs), "--hardware", HARDWARE, "--fit", "latency_scale"])
    assert result.exit_code == 0, result.output
    assert seen == {1: {"2.21"}, 2: {"2.27"}}
    assert "two.txt: NCCL release: not named in the log; default 2.27.7-1 assumed" in result.output
    assert "one.txt: NCCL release: 2.21.5, named in the log; v2.21.5-1's tuning" in result.output
    assert "two.txt: {version: '2.27', source: default}" in result.output  # the fitted block's nccl_releases


def nccl_fit_cli():
    from sim.hardware.cli import hardware

    return hardware


def test_a_flag_differing_from_the_release_a_log_names_is_refused_naming_both(tmp_path):
    log = write_log(tmp_path / "v219.txt", "NCCL version 2.19.3+cuda12.2")
    with pytest.raises(CollsimError, match=r"v219.txt line 11 names NCCL 2\.19\.3, but --nccl-version gives 2\.27 for it") as caught:
        log_runs([log], load_preset(HARDWARE), None, "2.27")
    assert "\n" not in str(caught.value)
    (run,) = log_runs([log], load_preset(HARDWARE), None, "2.19")  # the same release: no conflict
    assert (run.release.version, run.release.source) == ("2.19", "log")


def test_a_release_the_model_does_not_know_is_refused_naming_the_known_ones(tmp_path):
    log = write_log(tmp_path / "old.txt", "# nccl-tests version 2.11.0 nccl-headers=21403 nccl-library=21403")
    with pytest.raises(CollsimError, match=r"old.txt line 11 names NCCL 2\.14\.3, a release whose tuning tables") as caught:
        log_runs([log], load_preset(HARDWARE), None)
    assert "known: 2.19, " in str(caught.value) and "2.29" in str(caught.value) and "--nccl-version" in str(caught.value)
    (run,) = log_runs([log], load_preset(HARDWARE), None, "2.19")  # said explicitly: that release's tuning, and the note says so
    assert run.release.note.startswith("NCCL release: 2.19 from --nccl-version (the log names 2.14.3, a release the model has no tables")


def test_nccl_version_values_are_checked(tmp_path):
    logs = [write_log(tmp_path / "a.txt"), write_log(tmp_path / "b.txt")]
    with pytest.raises(CollsimError, match=r"--nccl-version: unknown NCCL version '2\.5'; known: 2\.19"):
        log_runs(logs, load_preset(HARDWARE), None, "2.5")
    with pytest.raises(CollsimError, match=r"--nccl-version: give one release for every log or one per log \(2, comma list\)"):
        log_runs(logs, load_preset(HARDWARE), None, "2.19,2.21,2.23")
    runs = log_runs(logs, load_preset(HARDWARE), None, ",2.21")  # an empty place: that log's own or the default
    assert [(r.release.version, r.release.source) for r in runs] == [("2.27", "default"), ("2.21", "flag")]


def test_a_log_naming_a_releases_tag_is_known():
    checks = LogChecks("x.txt", release="2.21.5", release_line=3)  # v2.21.5-1 is the 2.21 record's own tag
    assert log_release(checks).version == "2.21"


def test_a_direct_fit_reads_each_logs_release_itself(tmp_path, monkeypatch):
    """sim.collective.nccl_fit.fit given only paths (bench, tests): the release each log names, not the default."""
    seen = set()

    def spy(hardware, nodes, op, size, nccl_algo=None, nccl_proto=None, nccl_version=None):
        seen.add(nccl_version)
        return 1e-5 + size / 1e11, "Ring/Simple"

    monkeypatch.setattr(nccl_fit, "des_time", spy)
    log = write_log(tmp_path / "v219.txt", "NCCL version 2.19.3+cuda12.2", [2**k for k in range(10, 24)])
    nccl_fit.fit([(log, 1, None)], HARDWARE, ["latency_scale"])
    assert seen == {"2.19"}
