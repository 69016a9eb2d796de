"""Theory vs simulation: on switch(p) the DES equals every closed form to 1e-9 relative."""

import itertools

import pytest

from sim.collective.analytic import closed_form, with_forms
from sim.collective.runner import run_collective
from sim.scenario import CollectiveScenario

NETWORKS = [
    # (latency_s, bandwidth_Bps, reduce_bandwidth_Bps)
    (5e-6, 25e9, 100e9),  # NVLink-ish
    (0.0, 1e9, None),  # bandwidth only, free reductions
    (1e-3, 1e15, 1e9),  # latency dominated, slow reductions
    (2e-6, 3e9, 7e9),  # everything matters
]
RANKS = (2, 3, 4, 5, 7, 8, 12, 16, 33)


def _cases():
    for spec in with_forms():
        for p in RANKS:
            if spec.form_power_of_two and p & (p - 1):
                continue
            yield spec.op, spec.name, p


# Empty messages go eagerly even under the default eager limit 0, so they race for the root's
# port in these rooted reductions, which the closed forms (receives one after the other) exclude.
RECEIVE_RACES = {(spec.op, spec.name) for spec in with_forms() if spec.closed_form.rendezvous}


@pytest.mark.parametrize("sharing", ["fair", "fifo"])
@pytest.mark.parametrize("op,algorithm,p", list(_cases()))
def test_des_equals_closed_form(op, algorithm, p, sharing):
    chunk_options = (1, 4) if algorithm == "pipelined_chain" else (1,)
    sizes = (p * 4 * 250,) if (op, algorithm) in RECEIVE_RACES else (p * 4 * 250, 0)
    for (latency, bandwidth, reduce_bandwidth), chunks, elements in itertools.product(NETWORKS, chunk_options, sizes):
        scenario = CollectiveScenario(
            op=op,
            algorithm=algorithm,
            ranks=p,
            size_bytes=elements * 4,
            bandwidth_Bps=bandwidth,
            latency_s=latency,
            reduce_bandwidth_Bps=reduce_bandwidth,
            chunks=chunks,
            overhead_s=1e-6,
            sharing=sharing,
        )
        result = run_collective(scenario)
        gamma = 1 / reduce_bandwidth if reduce_bandwidth else 0.0
        sent_chunks = min(chunks, max(1, elements))  # chunks beyond the elements are not sent
        expected = closed_form(op, algorithm, p, elements * 4, latency, 1 / bandwidth, gamma, sent_chunks, 1e-6)
        assert result.analytic_time_s == pytest.approx(expected, rel=1e-12)
        assert result.time_s == pytest.approx(expected, rel=1e-9), (latency, bandwidth, reduce_bandwidth, chunks, elements)


def test_classic_binomial_broadcast_example():
    """5 MB to 8 ranks at 1 MB/s along a binomial tree: 3 rounds of 5 s each."""
    scenario = CollectiveScenario(op="broadcast", algorithm="binomial", ranks=8, size_bytes=5_000_000, bandwidth_Bps=1e6)
    assert run_collective(scenario).time_s == pytest.approx(15.0, rel=1e-12)


def test_binomial_reduce_over_eight_ranks_takes_three_steps():
    scenario = CollectiveScenario(op="reduce", algorithm="binomial", ranks=8, size_bytes=4096, bandwidth_Bps=1e9, latency_s=1e-6)
    result = run_collective(scenario)
    assert result.steps == 3
    assert sorted({message[5] for message in result.messages}) == [0, 1, 2]
    assert result.message_count == 7


def test_pipelining_beats_unchunked_chain_for_large_messages():
    base = dict(op="broadcast", algorithm="pipelined_chain", ranks=8, size_bytes=64 * 2**20, bandwidth_Bps=10e9, latency_s=5e-6)
    one = run_collective(CollectiveScenario(**base, chunks=1)).time_s
    many = run_collective(CollectiveScenario(**base, chunks=64)).time_s
    assert many < one / 3


@pytest.mark.parametrize("sharing", ["fair", "fifo"])
def test_binomial_reduce_at_odd_p_is_exact_with_rendezvous_and_faster_eagerly(sharing):
    """With the default rendezvous the root receives from one child after the other, as MPICH's
    binomial reduce: ceil(lg p)(a + nb + ng) at any p. Sent eagerly, the small last subtrees'
    messages arrive while the root is still busy, and the DES beats the form (which is then None)."""
    base = dict(op="reduce", algorithm="binomial", ranks=6, size_bytes=4000, bandwidth_Bps=1e9, latency_s=1e-6, reduce_bandwidth_Bps=1e9)
    form = 3 * (1e-6 + 4000 / 1e9 + 4000 / 1e9)
    rendezvous = run_collective(CollectiveScenario(**base, sharing=sharing))
    assert rendezvous.analytic_time_s == pytest.approx(form, rel=1e-12)
    assert rendezvous.time_s == pytest.approx(form, rel=1e-12)
    eager = run_collective(CollectiveScenario(**base, sharing=sharing, eager_limit_bytes=1 << 20))
    assert eager.analytic_time_s is None
    assert eager.time_s < form
