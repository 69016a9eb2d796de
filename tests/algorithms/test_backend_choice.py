"""What a backend runs for a torch op is said once, in the algorithms' records (``runs``)."""

from __future__ import annotations

import pytest

from sim.algorithms.registry import all_specs, backend_algorithms, backend_choice, backend_table_markdown, ops
from sim.collective.analytic import closed_form
from sim.hardware.gloo import gloo_default, gloo_note

CHOICES = [(backend, op) for backend, table in sorted(backend_algorithms().items()) for op in table]


def test_no_two_records_claim_the_same_backend_op():
    claims = [(run.backend, run.op) for spec in all_specs() for run in spec.runs]
    assert len(claims) == len(set(claims))  # else backend_algorithms would keep whichever came last


@pytest.mark.parametrize(("backend", "op"), CHOICES)
def test_the_choice_is_the_record_that_names_the_pair(backend, op):
    choice = backend_choice(backend, op)
    assert (backend, op) in [(run.backend, run.op) for run in choice.spec.runs]
    assert (choice.spec.op, choice.spec.name) == backend_algorithms()[backend][op]


def test_a_pair_no_record_names_has_no_choice():
    assert backend_choice("nccl", "reduce") is None and backend_choice("mpi", "all_reduce") is None


@pytest.mark.parametrize("op", ops())
def test_the_gloo_preset_answers_from_the_record(op):
    choice = backend_choice("gloo", op)
    if choice is None:
        assert gloo_default(op) is None
        return
    assert gloo_default(op) == choice.spec.name
    assert gloo_note(op, gloo_default(op)) == (choice.run.note or None)
    assert gloo_note(op, "no_such_algorithm") is None  # a chosen algorithm gets no note


def test_gloo_reduce_scatter_is_the_all_reduce_of_the_input_and_the_preset_says_so():
    choice = backend_choice("gloo", "reduce_scatter")
    assert choice.model == "all_reduce/ring" and choice.simulated_algorithm == "ring"
    assert "all-reduce of the whole input" in gloo_note("reduce_scatter", "ring")


@pytest.mark.parametrize("p", [3, 4, 8])
def test_the_line_of_a_chunked_record_is_its_closed_form_at_many_chunks(p):
    """NCCL's broadcast, (p-2+k)(a + n b / k) with k = n / c: t = (p-2) a + n b + ... at large n."""
    choice = backend_choice("nccl", "broadcast")
    chunk = choice.run.chunk_bytes
    latency, factor = choice.line(p)
    assert (latency, factor) == pytest.approx((p - 2, 1.0))
    for n in (64 * chunk, 512 * chunk):  # the form itself, with the record's chunks, lies on that line (a = 0)
        assert closed_form("broadcast", "pipelined_chain", p, n, 0.0, 1.0, 0.0, choice.chunks(n)) == pytest.approx(n + (p - 2) * chunk)
    assert choice.chunks(1) == 1 and choice.chunks(chunk + 1) == 2


def test_an_unchunked_line_is_the_records_terms():
    choice = backend_choice("gloo", "all_reduce")
    assert choice.line(8) == choice.spec.terms(8) == (14, 1.75)


def test_the_docs_table_lists_every_choice_and_note():
    text = backend_table_markdown(p=8)
    lines = text.splitlines()
    assert lines[0].startswith("| op (torch call) | gloo runs |")
    (row,) = [line for line in lines if line.startswith("| reduce_scatter |")]
    assert [cell.strip() for cell in row.strip("|").split("|")][1:] == ["all_reduce/ring (2)", "1.75", "reduce_scatter/ring", "0.875"]
    for backend, op in CHOICES:
        assert backend_choice(backend, op).model in text
        if backend_choice(backend, op).run.note:
            assert backend_choice(backend, op).run.note in text
    assert "128 KiB chunks" in text
