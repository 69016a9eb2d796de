"""mfu = measured: the model presets' utilisation measured on an H100 gives back the measured times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.errors import CollsimError
from sim.training import compute
from sim.training.ddp import DDPScenario, run_ddp
from sim.training.params import preset

DATA = Path(compute.__file__).with_name("data") / "step_times_h100.json"


def _row(name: str, precision: str, compiled: bool) -> dict:
    runs = json.loads(DATA.read_text())["runs"]
    return next(r for run in runs for r in run["rows"] if (r["preset"], r["precision"], r.get("compiled")) == (name, precision, compiled))


def _step(**changes) -> object:
    base = dict(preset="gpt2", mfu="measured", tokens=8192, precision="bf16", gpu="dgx-h100", ranks=8, comm="ow", o_s=30e-6, w_Bps=100e9)
    return run_ddp(DDPScenario(**(base | changes)))


@pytest.mark.parametrize("name", ["gpt2", "small", "2.7B"])
def test_measured_mfu_gives_back_the_measured_times_on_the_gpu_it_was_measured_on(name):
    row = _row(name, "bf16", True)
    result = _step(preset=name, tokens=row["tokens"])
    assert result.summary()["forward_time_s"] == pytest.approx(row["forward_s"], rel=1e-9)
    assert result.summary()["backward_time_s"] == pytest.approx(row["backward_s"], rel=1e-9)


def test_fp32_takes_the_eager_run_and_fp16_the_bf16_one():
    assert compute.measured("gpt2", "fp32").backward_s == _row("gpt2", "fp32", False)["backward_s"]
    assert compute.measured("gpt2", "fp16") == compute.measured("gpt2", "bf16")


def test_a_faster_gpu_at_the_same_utilisation_is_faster_and_the_text_says_it_is_assumed():
    from sim.training.explain import compute_words

    h100, b200 = _step(), _step(gpu="hgx-b200")
    assert b200.summary()["backward_time_s"] < h100.summary()["backward_time_s"]
    scenario = DDPScenario(
        preset="gpt2", mfu="measured", tokens=8192, precision="bf16", gpu="hgx-b200", ranks=8, comm="ow", o_s=30e-6, w_Bps=100e9
    )
    words = compute_words(b200.summary(), scenario)
    assert "the MFU was measured: NVIDIA H100 80GB HBM3, torch.compile" in words and "assumed the same on the" in words


def test_a_model_without_a_measurement_is_refused_naming_what_was_measured():
    with pytest.raises(CollsimError, match="no measurement of a model given by its parameter list.*measured presets: .*gpt2"):
        DDPScenario(
            param_bytes=(4 << 20,),
            mfu="measured",
            tokens=8192,
            precision="bf16",
            gpu="dgx-h100",
            ranks=8,
            comm="ow",
            o_s=30e-6,
            w_Bps=100e9,
        )


def test_resnet18_uses_its_measured_times_without_tokens():
    row = _row("resnet18", "bf16", True)
    result = run_ddp(
        DDPScenario(preset="resnet18", mfu="measured", precision="bf16", gpu="dgx-h100", ranks=8, comm="ow", o_s=30e-6, w_Bps=100e9)
    )
    assert result.summary()["backward_time_s"] == pytest.approx(row["backward_s"]) and result.summary()["forward_time_s"] == pytest.approx(
        row["forward_s"]
    )


def test_gpt2s_tied_head_is_a_matrix_product_in_forward_and_backward():
    wte = next(p for p in preset("gpt2") if p.name == "transformer.wte.weight")
    wpe = next(p for p in preset("gpt2") if p.name == "transformer.wpe.weight")
    assert compute.forward_flops(wte, 100) == 2 * 100 * wte.numel and compute.forward_flops(wpe, 100) == 0
    assert compute.backward_flops(wte, 100) == 4 * 100 * wte.numel + 100 * 768
    assert compute.backward_flops(wpe, 100) == 100 * 768


H200_DATA = DATA.with_name("step_times_h200.json")


def test_an_h200_preset_takes_the_h200_measurement_and_says_so_without_assuming():
    from sim.training.explain import compute_words

    runs = json.loads(H200_DATA.read_text())["runs"]
    row = next(r for run in runs for r in run["rows"] if (r["preset"], r["precision"], r.get("compiled")) == ("gpt2", "bf16", True))
    result = _step(gpu="hgx-h200")
    assert result.summary()["forward_time_s"] == pytest.approx(row["forward_s"], rel=1e-9)
    assert result.summary()["backward_time_s"] == pytest.approx(row["backward_s"], rel=1e-9)
    assert result.summary()["backward_time_s"] != pytest.approx(_step().summary()["backward_time_s"], rel=1e-3)
    scenario = DDPScenario(
        preset="gpt2", mfu="measured", tokens=8192, precision="bf16", gpu="hgx-h200", ranks=8, comm="ow", o_s=30e-6, w_Bps=100e9
    )
    words = compute_words(result.summary(), scenario)
    assert "the MFU was measured: NVIDIA H200, torch.compile" in words and "assumed" not in words


def test_a_gpu_without_its_own_measurement_uses_the_h100s():
    assert compute.measured_gpu("hgx-b200") == "H100" and compute.measured_gpu("hgx-h200") == "H200"
    assert compute.measured_gpu(None) == "H100"
    assert compute.measured("gpt2", "bf16", "hgx-b200") == compute.measured("gpt2", "bf16")


def test_the_documented_measured_mfu_commands_print_what_docs_ddp_md_shows():
    import re
    import shlex

    from click.testing import CliRunner

    from sim.cli import cli

    lines = (Path(__file__).resolve().parents[2] / "docs" / "ddp.md").read_text().splitlines()
    pairs = [(lines[i].strip(), lines[i + 1].strip()) for i in range(len(lines) - 1)
             if lines[i].strip().startswith("collsim sim ddp") and "--mfu measured" in lines[i] and lines[i + 1].strip().startswith("# ->")]  # fmt: skip
    assert len(pairs) >= 2  # the H100 and the H200 example
    for command, shown in pairs:
        out = CliRunner().invoke(cli, shlex.split(command)[1:])
        assert out.exit_code == 0, out.output
        for label, value in re.findall(r"(step|compute alone) ([\d.]+ ms)", shown):
            expected = "step time" if label == "step" else label
            assert re.search(rf"{expected}\s+.*?{re.escape(value)}|{expected} {re.escape(value)}", out.output), (
                command,
                label,
                value,
                out.output,
            )
