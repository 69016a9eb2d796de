"""No silent substitution (issue 22): an input is used as given or refused with its field named;
extrapolations are stated."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from sim.cli import cli
from sim.errors import CollsimError


def _run(args):
    return CliRunner().invoke(cli, args)


def _calibration(tmp_path, world_size=2):
    document = {
        "kind": "collsim-calibration",
        "version": 1,
        "collectives": [
            {"backend": "gloo", "device": "cpu", "op": "all_reduce", "world_size": world_size, "o_s": 1e-3, "w_Bps": 1e9,
             "scenario": {"op": "all_reduce", "algorithm": "ring", "ranks": world_size, "topology": "switch", "overhead_s": 1e-3,
                          "latency_s": 0.0, "bandwidth_Bps": 1e9}},
        ],
        "alpha_beta": [{"backend": "gloo", "op": "all_reduce", "algorithm": "ring", "call_overhead_s": 1e-3, "latency_s": 1e-4, "bandwidth_Bps": 2e9}],
    }  # fmt: skip
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def test_a_calibration_applied_at_a_world_size_it_was_not_fitted_at_says_so_in_text_and_json(tmp_path):
    path = _calibration(tmp_path)
    args = ["sim", "collective", "--op", "all_reduce", "--ranks", "64", "--size", "1MiB", "--calibration", path]
    text = _run(args)
    assert text.exit_code == 0, text.output
    assert "extrapolated across world sizes" in text.output and "fitted at p = 2" in text.output
    data = json.loads(_run([*args, "--json"]).output)
    assert data["calibration"]["extrapolated"] is True and data["calibration"]["fitted_world_sizes"] == [2]
    same = json.loads(
        _run(["sim", "collective", "--op", "all_reduce", "--ranks", "2", "--size", "1MiB", "--calibration", path, "--json"]).output
    )
    assert same["calibration"]["extrapolated"] is False


FSDP = ["sim", "fsdp", "--preset", "small", "--ranks", "4", "--o", "10us", "--w", "10GB/s", "--backward-time", "100ms"]


def test_sim_fsdp_refuses_a_zero_rank_shard_group_instead_of_running_full_shard():
    done = _run([*FSDP, "--sharding", "hybrid_shard", "--shard-size", "0"])
    assert done.exit_code == 2 and "shard_size: must be >= 1" in done.output


def test_sim_fsdp_refuses_a_slowdown_it_does_not_model():
    done = _run([*FSDP, "--slowdown", "2"])
    assert done.exit_code == 2 and "slowdown: sim fsdp does not model" in done.output
    assert _run([*FSDP, "--slowdown", "1"]).exit_code == 0


def test_a_flag_replaces_a_files_value_under_either_name(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("op: broadcast\nalgorithm: linear\nranks: 2\nsize: 1MB\nbandwidth: 1MB/s\nlatency_s: 1.0\n")
    data = json.loads(_run(["sim", "collective", "--scenario", str(scenario), "--latency", "0", "--json"]).output)
    assert data["time_s"] == pytest.approx(1.0)  # 1 MB at 1 MB/s, the file's 1 s latency replaced by the flag's 0


def test_errors_name_their_field():
    from sim.scenario import CollectiveScenario

    with pytest.raises(CollsimError) as error:
        CollectiveScenario.from_dict({"op": "all_reduce", "algorithm": "ring", "ranks": 4, "bandwidth": "fast"})
    assert error.value.field == "bandwidth"
    assert CollsimError("no field here").field is None
    assert CollsimError("--launches: must be >= 1").field == "launches"
    assert CollsimError("x", field="chunks").field == "chunks"


def test_explorer_forms_show_url_mistakes_in_their_field_with_the_cli_message():
    from webapp import collective as model

    _, errors = model.parse_form(model.form_from_query("?placement=round_robin"))
    cli = _run(["sim", "collective", "--op", "all_reduce", "--algorithm", "ring", "--ranks", "8", "--bandwidth", "25GB/s", "--size", "1MiB",
                "--placement", "round_robin"])  # fmt: skip
    assert cli.exit_code == 2 and errors["placement"] in cli.output
    _, errors = model.parse_form(model.form_from_query("?algorithm=nonsense"))
    assert "nonsense" in errors["algorithm"]


def test_a_link_naming_only_a_hardware_preset_works():
    from webapp import collective as model

    scenario, errors = model.parse_form(model.form_from_query("?hardware=dgx-h100"))
    assert errors == {} and scenario.topology == "two_level" and scenario.gpus_per_node == 8


def test_side_by_side_float_noise_is_no_difference():
    from webapp import figures

    a = {"latency": 1e-5, "bandwidth": 2e-3, "reduction": 0.0, "overhead": 0.0, "contention": 0.0, "total": 2.01e-3}
    b = {**a, "bandwidth": 2e-3 - 8.674e-19, "total": 2.01e-3 - 8.674e-19}
    title = figures.parts_figure(["A: ring", "B: ring"], [a, b]).layout.meta["summary"]
    assert "no difference" in title and "e-" not in title


def test_your_own_hardware_preset_file_is_accepted_where_a_preset_name_is(tmp_path):
    from pathlib import Path

    import sim.hardware.presets as presets

    own = tmp_path / "my-box.yaml"
    own.write_text((Path(presets.__file__).parent / "dgx-h100.yaml").read_text())
    args = ["sim", "collective", "--op", "all_reduce", "--size", "64MiB", "--json"]
    mine = json.loads(_run([*args, "--hardware", str(own)]).output)
    bundled = json.loads(_run([*args, "--hardware", "dgx-h100"]).output)
    assert mine["time_s"] == bundled["time_s"]


def test_sim_ddp_says_when_its_calibration_is_extrapolated_across_world_sizes(tmp_path):
    path = _calibration(tmp_path)
    args = ["sim", "ddp", "--preset", "small", "--backward-time", "100ms", "--calibration", path, "--json"]
    far = CliRunner().invoke(cli, [*args, "--ranks", "64"])
    assert far.exit_code == 0
    assert "extrapolated across world sizes" in far.stderr
    assert json.loads(far.stdout)["calibration"]["extrapolated"] is True
    near = CliRunner().invoke(cli, [*args, "--ranks", "2"])
    assert json.loads(near.stdout)["calibration"]["extrapolated"] is False


def test_an_errors_field_survives_another_process():
    import pickle

    error = pickle.loads(pickle.dumps(CollsimError("too many for this page", field="chunks")))
    assert str(error) == "too many for this page" and error.field == "chunks"
