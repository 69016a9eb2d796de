"""--calibration: fitted constants from real runs drive the simulator."""

import json

import pytest
import yaml
from click.testing import CliRunner

from sim.cli import cli
from sim.collective.analytic import busbw_factor

O_S, W_BPS, P = 1.5e-3, 0.8e9, 2


@pytest.fixture
def calibration(tmp_path):
    document = {
        "kind": "collsim-calibration",
        "version": 1,
        "collectives": [
            {"backend": "gloo", "device": "cpu", "op": "all_reduce", "world_size": P, "o_s": O_S, "w_Bps": W_BPS,
             "scenario": {"op": "all_reduce", "algorithm": "ring", "ranks": P, "topology": "switch", "overhead_s": O_S, "latency_s": 0.0, "bandwidth_Bps": W_BPS * busbw_factor("all_reduce", P)}},
        ],
        "alpha_beta": [{"backend": "gloo", "op": "all_reduce", "algorithm": "ring", "call_overhead_s": 1e-3, "latency_s": 1e-4, "bandwidth_Bps": 2e9}],
    }  # fmt: skip
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def _json(args):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_collective_reproduces_o_plus_n_over_w(calibration):
    n = 16 * 2**20
    data = _json(["sim", "collective", "--op", "all_reduce", "--ranks", str(P), "--size", "16MiB", "--calibration", calibration, "--json"])
    assert data["time_s"] == pytest.approx(O_S + n / W_BPS, rel=1e-9)


def test_alpha_beta_fallback_for_other_world_sizes(calibration):
    n, p = 2**20, 4
    data = _json(
        [
            "sim",
            "collective",
            "--op",
            "all_reduce",
            "--ranks",
            str(p),
            "--size",
            "1MiB",
            "--calibration",
            calibration,
            "--backend",
            "gloo",
            "--json",
        ]
    )
    assert data["time_s"] == pytest.approx(1e-3 + 2 * (p - 1) * 1e-4 + 2 * (p - 1) / p * n / 2e9, rel=1e-9)


def test_flags_override_the_calibration(calibration):
    data = _json(
        [
            "sim",
            "collective",
            "--op",
            "all_reduce",
            "--ranks",
            str(P),
            "--size",
            "1MiB",
            "--overhead",
            "0",
            "--calibration",
            calibration,
            "--json",
        ]
    )
    assert data["time_s"] == pytest.approx(2**20 / W_BPS, rel=1e-9)


def test_ddp_takes_o_and_w(calibration):
    data = _json(
        [
            "sim",
            "ddp",
            "--param-bytes",
            "4MiB,4MiB",
            "--strategy",
            "flat",
            "--backward-time",
            "10ms",
            "--ranks",
            str(P),
            "--calibration",
            calibration,
            "--json",
        ]
    )
    assert data["comm_end_s"] - data["backward_end_s"] == pytest.approx(O_S + 8 * 2**20 / W_BPS, rel=1e-9)


def test_missing_entry_is_a_clear_error(calibration):
    result = CliRunner().invoke(cli, ["sim", "collective", "--op", "broadcast", "--ranks", "2", "--calibration", calibration])
    assert result.exit_code == 2 and "calibration has nothing for" in result.output


def test_a_piecewise_fit_reads_back(tmp_path):
    """`collsim fit --piecewise --calibration` writes a top-level `piecewise` key; the simulator
    refused its own file ("unknown key 'piecewise'")."""
    pytest.importorskip("scipy", reason="collsim fit needs the real extra (scipy)")
    path = tmp_path / "cal.yaml"
    fitted = CliRunner().invoke(cli, ["fit", "--piecewise", "--calibration", str(path)])
    assert fitted.exit_code == 0, fitted.output
    assert "piecewise" in path.read_text()
    data = _json(
        [
            "sim",
            "collective",
            "--op",
            "all_reduce",
            "--ranks",
            "2",
            "--size",
            "16MiB",
            "--calibration",
            str(path),
            "--backend",
            "gloo",
            "--json",
        ]
    )
    assert data["time_s"] > 0
