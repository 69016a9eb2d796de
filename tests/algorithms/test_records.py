"""Every registered algorithm's record is complete: a closed form or the reason for none, message
counts, phases each with a sentence, and the real backends' ops each modelled by one record."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sim.algorithms.registry import Form, Shape, algorithm_spec, all_specs, backend_algorithms
from sim.collective import analytic, narrative
from sim.collective.runner import run_collective
from sim.hardware.presets import scenario_fields
from sim.scenario import CollectiveScenario

SPECS = all_specs()
IDS = [f"{spec.op}/{spec.name}" for spec in SPECS]


def test_the_registry_holds_every_algorithm_once():
    assert len(SPECS) == len(set(IDS)) >= 28
    assert {"all_to_all", "barrier", "send_recv"} <= {spec.op for spec in SPECS}


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_every_record_states_a_closed_form_or_why_there_is_none(spec):
    if isinstance(spec.form, Form):
        assert spec.form.split in ("", "p", "k", "pk")
        assert spec.chunked or not spec.form.chunked  # a form carries k only for an algorithm that takes chunks
        assert spec.terms(8) is not None
    else:
        assert isinstance(spec.form, str) and len(spec.form.split()) >= 5, "the reason, in words"
        assert spec.terms(8) is None


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_every_record_has_counts_phases_and_a_sentence_for_each(spec):
    assert spec.counts is not None
    messages, pairs = spec.counts(_shape(8, 2 if spec.chunked else 1))
    # only data that moves through the switch itself (NVLS) sends no point-to-point message
    assert (messages > 0 and pairs > 0) or (messages == pairs == 0 and "switch" in spec.form)
    assert spec.phases, "at least one phase"
    starts = [phase.start(8) for phase in spec.phases]
    assert starts[0] == 0 and starts == sorted(starts)
    for phase in spec.phases:
        assert phase.name and phase.sentence and not phase.sentence.endswith(".")
    assert callable(spec.whole_cells) or isinstance(spec.whole_cells, bool)


def _shape(p, k, gpus=4):
    from sim.algorithms.registry import Shape

    return Shape(p, k, gpus, p * k * 6, 4)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_the_counts_are_the_messages_a_run_sends(spec):
    """On 8 ranks (two nodes of 4 where the algorithm needs two_level), 2 chunks where it takes them;
    NVLS, which needs an NVLink SHARP switch (its record's ``needs``), on 2 x hgx-h100-nvls."""
    k = 2 if spec.chunked else 1
    fields = {"op": spec.op, "algorithm": spec.name, "ranks": 8, "chunks": k, "size_bytes": 8 * k * 6 * 4, "bandwidth": "1GB/s"}
    if spec.topology:
        fields.update(topology=spec.topology, gpus_per_node=4)
    shape = _shape(8, k, 4 if spec.topology else 8)  # a flat topology: one node of p
    if spec.needs is not None and spec.needs(SimpleNamespace(**{"hardware": None, "topology": "switch", **fields})):
        fields = {**scenario_fields("hgx-h100-nvls", 2), "op": spec.op, "algorithm": spec.name, "chunks": k, "size_bytes": 16 * k * 6 * 4}
        shape = Shape(16, k, 8, 16 * k * 6, 4)
    s = CollectiveScenario.from_dict(fields)
    messages, pairs = spec.counts(shape)
    result = run_collective(s)
    assert messages == result.message_count
    assert pairs >= len(result.overflow)


def test_the_power_of_two_rule_is_said_once():
    """An algorithm that refuses other counts says so in its record, and its form follows."""
    for spec in SPECS:
        form = spec.closed_form
        if spec.power_of_two and form is not None:
            assert not form.power_of_two and spec.form_power_of_two
            assert analytic.closed_form(spec.op, spec.name, 6, 1e6, 1e-6, 1e-9) is None


def test_terms_are_read_off_the_closed_form():
    ring = algorithm_spec("all_reduce", "ring")
    assert ring.terms(8) == (2 * 7, 2 * 7 / 8)
    assert algorithm_spec("broadcast", "binomial").terms(5) == (3, 3)


def test_every_backend_op_is_modelled_by_a_record_with_a_closed_form():
    table = backend_algorithms()
    for backend in ("gloo", "nccl"):
        assert set(table[backend]) >= {"all_reduce", "all_gather", "reduce_scatter", "broadcast"}  # what collsim validate measures
        for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast"):
            assert algorithm_spec(*table[backend][op]).closed_form is not None
    assert table["gloo"]["reduce_scatter"] == ("all_reduce", "ring")  # gloo reduce-scatters by an all-reduce


def test_narrative_reads_the_phases_of_the_record():
    s = CollectiveScenario.from_dict({"op": "all_to_all", "algorithm": "bruck", "ranks": 8, "size_bytes": "8KiB", "bandwidth": "1GB/s"})
    assert narrative.step_phases(s, [0, 2]) == ["Bruck rounds", "Bruck rounds"]
    sentence = narrative.step_sentences(s, [0], [[512, 512]])[0]
    assert sentence.startswith("In round k every rank sends") and sentence.endswith("2 messages of 512 B.")
    ring = CollectiveScenario.from_dict(
        {"op": "all_reduce", "algorithm": "nccl_ring", "ranks": 4, "chunks": 2, "size_bytes": "8KiB", "bandwidth": "1GB/s"}
    )
    assert narrative.step_phases(ring, [2, 3]) == ["reduce-scatter", "all-gather"]


NCCL = [spec for spec in SPECS if spec.name.startswith("nccl_")]


@pytest.mark.parametrize("spec", NCCL, ids=[f"{spec.op}/{spec.name}" for spec in NCCL])
def test_nccl_counts_hold_across_nodes(spec):
    """Two nodes of 4 GPUs (NVLSTree's tree over the NICs sends messages there), 2 channels, 3 MiB;
    NVLS, which needs an NVLink SHARP switch, on two nodes of hgx-h100-nvls."""
    chunks = 2 if spec.chunked else 1  # nccl_p2p: a message a peer, no channels
    fields = {"op": spec.op, "algorithm": spec.name, "ranks": 8, "chunks": chunks, "size_bytes": 3 << 20, "bandwidth": "10GB/s",
              "topology": "two_level", "gpus_per_node": 4}  # fmt: skip
    if spec.needs is not None and spec.needs(SimpleNamespace(hardware=None, **fields)):
        chunks = 16  # the preset's NVLS channels (nvls.cc NVLS_NCHANNELS), which the counts take as chunks
        fields = {**scenario_fields("hgx-h100-nvls", 2), "op": spec.op, "algorithm": spec.name, "chunks": chunks, "size_bytes": 3 << 20}
    s = CollectiveScenario.from_dict(fields)
    gpus = s.gpus_per_node_resolved
    messages, _ = spec.counts(Shape(s.ranks, chunks, gpus, s.elements, s.element_bytes))
    assert messages == run_collective(s).message_count
