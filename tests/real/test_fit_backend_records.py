"""real.fit, real.validate's link model and the gloo preset read one record of what each backend
runs per op (sim.algorithms.registry.backend_choice), and the link bandwidth a fit derives from
a measurement is the bandwidth that made it (no torch needed)."""

from __future__ import annotations

import pytest

from real.fit import alpha_beta_model, calibration, fit_alpha_beta, fit_groups, fitted_model, fitted_scenario
from real.validate import OPS as VALIDATED_OPS
from real.validate_analysis import fit_link_model, link_columns
from sim.algorithms.registry import backend_algorithms, backend_choice
from sim.collective.analytic import closed_form
from sim.hardware.gloo import gloo_default

CHOICES = [(backend, op) for backend, table in sorted(backend_algorithms().items()) for op in table]
WITH_FORMS = [(backend, op) for backend, op in CHOICES if backend_choice(backend, op).spec.closed_form is not None]
SIZES = [2**20 * 4**k for k in range(5)]  # 1 MiB .. 256 MiB: whole 128 KiB chunks, whole elements on p ranks
O_S, B_BPS = 30e-6, 12.5e9


def measured(backend: str, op: str, p: int, latency_s: float = 0.0) -> list[dict]:
    """Rows timed by the record's closed form (k = the backend's chunks) at link bandwidth B_BPS."""
    choice = backend_choice(backend, op)
    rows = []
    for n in SIZES:
        time_s = O_S + closed_form(choice.spec.op, choice.spec.name, p, n, latency_s, 1 / B_BPS, 0.0, choice.chunks(n))
        rows += [{"op": op, "world_size": p, "size_bytes": n, "run_id": run, "times_s": [time_s] * 3, "time_s": time_s, "median_s": time_s,
                  "backend": backend, "device": "cpu", "source": "measured"} for run in ("A", "B", "C")]  # fmt: skip
    return rows


@pytest.mark.parametrize(("backend", "op"), CHOICES)
def test_fit_validate_and_the_gloo_preset_read_the_same_record(backend, op):
    choice = backend_choice(backend, op)
    assert fitted_model(backend, op) == (choice, backend)
    model = alpha_beta_model(backend, op)
    assert model is None if choice.spec.closed_form is None else model["model"] == choice.model
    if backend == "gloo":
        assert gloo_default(op) == choice.simulated_algorithm
    if op in VALIDATED_OPS and choice.spec.closed_form is not None:
        assert fit_link_model(measured(backend, op, 4), backend)["algorithm"] == choice.model
        # validate's columns are the record's closed form with the record's chunks
        n = SIZES[1]
        assert link_columns(backend, op, 4, n)[2] == closed_form(choice.spec.op, choice.spec.name, 4, n, 0, 1, 0, choice.chunks(n))


@pytest.mark.parametrize("p", [2, 3, 4, 8])
@pytest.mark.parametrize(("backend", "op"), WITH_FORMS)
def test_the_link_bandwidth_fitted_from_a_measurement_is_the_one_that_made_it(backend, op, p):
    """Measured t(n) = o + T_record(p, n; a = 0, b = 1/B): fit, alpha-beta, the calibration's
    scenario and validate's link model all give back B (reading gloo's reduce_scatter as a ring
    reduce-scatter gave B/2)."""
    choice = backend_choice(backend, op)
    if choice.spec.form_power_of_two and p & (p - 1):
        pytest.skip("closed form for powers of two")
    rows = measured(backend, op, p)
    (fit,) = fit_groups(rows, replicates=0)
    assert choice.link_bandwidth(p, fit.w_Bps) == pytest.approx(B_BPS, rel=1e-6)
    (entry,) = fit_alpha_beta([fit])
    assert entry["bandwidth_Bps"] == pytest.approx(B_BPS, rel=1e-6) and entry["model"] == choice.model
    assert fitted_scenario(fit)["bandwidth_Bps"] == pytest.approx(B_BPS, rel=1e-6)
    if op in VALIDATED_OPS:
        assert 1 / fit_link_model(rows, backend)["inverse_bandwidth_s_per_B"] == pytest.approx(B_BPS, rel=1e-6)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_gloo_reduce_scatter_bandwidth_is_twice_what_a_ring_reduce_scatter_would_say(p):
    """Closed form: gloo's reduce_scatter of an n-byte input is a ring all-reduce of n bytes,
    t = o + 2(p-1)/p n / B, so w = p B / (2(p-1)) and B = 2(p-1)/p w (not (p-1)/p w)."""
    w_Bps = p * B_BPS / (2 * (p - 1))
    rows = [{"op": "reduce_scatter", "world_size": p, "size_bytes": n, "time_s": O_S + n / w_Bps, "backend": "gloo", "device": "cpu",
             "source": "measured"} for n in SIZES]  # fmt: skip
    (fit,) = fit_groups(rows, replicates=0)
    (entry,) = fit_alpha_beta([fit])
    assert entry["bandwidth_Bps"] == pytest.approx(2 * (p - 1) / p * fit.w_Bps, rel=1e-9) == pytest.approx(B_BPS, rel=1e-6)
    assert (entry["model"], entry["algorithm"]) == ("all_reduce/ring", "ring")
    # NCCL's ring reduce-scatter moves half the bytes: the same measurement there means twice the link
    (nccl,) = fit_alpha_beta(fit_groups([{**row, "backend": "nccl"} for row in rows], replicates=0))
    assert nccl["bandwidth_Bps"] == pytest.approx(B_BPS / 2, rel=1e-6)


def test_the_calibration_scenario_reproduces_gloos_reduce_scatter():
    """The scenario written for gloo's reduce_scatter is the all-reduce gloo runs: simulated, it
    gives the measured o + n/w."""
    from sim.collective.runner import run_collective
    from sim.scenario import CollectiveScenario

    (fit,) = fit_groups(measured("gloo", "reduce_scatter", 4), replicates=0)
    (entry,) = calibration([fit], [])["collectives"]
    assert (entry["scenario"]["op"], entry["scenario"]["algorithm"]) == ("all_reduce", "ring")
    for n in (2**20, 2**24):
        simulated = run_collective(CollectiveScenario.from_dict({**entry["scenario"], "size_bytes": n})).time_s
        assert simulated == pytest.approx(fit.predict(n), rel=1e-6)


@pytest.mark.parametrize("backend", [None, "mpi"])
def test_rows_without_a_known_backend_are_fitted_as_gloo_and_say_so(backend):
    rows = [{**row, "backend": backend} for row in measured("gloo", "broadcast", 4)]
    (entry,) = fit_alpha_beta(fit_groups(rows, replicates=0))
    assert entry["backend"] == backend and entry["model_backend"] == "gloo" and entry["model"] == "broadcast/binomial"
    assert entry["bandwidth_Bps"] == pytest.approx(B_BPS, rel=1e-6)


def test_an_op_no_record_covers_for_the_backend_gets_no_link_bandwidth():
    rows = [{**row, "backend": "nccl", "op": "reduce"} for row in measured("gloo", "reduce", 4)]
    fits = fit_groups(rows, replicates=0)
    assert fit_alpha_beta(fits) == [] and "scenario" not in calibration(fits, [])["collectives"][0]
