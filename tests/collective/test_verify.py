"""Every algorithm moves real payloads; every rank's final buffer matches the definition."""

import pytest

from sim.algorithms.registry import algorithm_spec, algorithms_for, ops
from sim.collective.runner import run_collective
from sim.errors import CollsimError
from sim.scenario import CollectiveScenario

ROOTED = ("broadcast", "reduce", "gather", "scatter")


def _all():
    return [(op, algorithm) for op in ops() for algorithm in algorithms_for(op)]


def _scenario(op, algorithm, p, chunks=1, root=0, elements=None):
    spec = algorithm_spec(op, algorithm)
    two_level = spec.topology == "two_level"
    return CollectiveScenario(
        op=op,
        algorithm=algorithm,
        ranks=p,
        size_bytes=4 * (elements if elements is not None else 3 * p * chunks + 1),
        bandwidth_Bps=1e9,
        latency_s=1e-6,
        reduce_bandwidth_Bps=4e9,
        chunks=chunks,
        topology="two_level" if two_level else "switch",
        gpus_per_node=(2 if p % 2 == 0 else 1) if two_level else None,
        root=root if op in ROOTED else 0,
        verify=True,
    )


@pytest.mark.parametrize("op,algorithm", _all())
def test_every_algorithm_verifies_on_several_rank_counts(op, algorithm):
    spec = algorithm_spec(op, algorithm)
    ran = 0
    for p in (1, 2, 3, 4, 6, 8, 16):
        if spec.power_of_two and p & (p - 1):
            with pytest.raises(CollsimError, match="power-of-two"):
                _scenario(op, algorithm, p)
            continue
        if op == "send_recv" and p == 1:  # no peer to send to (issue 36)
            with pytest.raises(CollsimError, match="needs at least 2 ranks"):
                _scenario(op, algorithm, p)
            continue
        for chunks in (1, 3) if spec.chunked else (1,):
            for root in sorted({0, p - 1}) if op in ROOTED else (0,):
                result = run_collective(_scenario(op, algorithm, p, chunks, root))
                assert result.verified is True, (p, chunks, root)
                ran += 1
    assert ran >= 4


@pytest.mark.parametrize("op,algorithm", _all())
def test_uneven_splits_still_verify(op, algorithm):
    """Sizes that do not divide by p (or p*k) give uneven pieces, never wrong data."""
    spec = algorithm_spec(op, algorithm)
    p = 8 if spec.power_of_two or spec.topology else 7
    result = run_collective(_scenario(op, algorithm, p, 3 if spec.chunked else 1, elements=5 * p + 3))
    assert result.verified is True


def test_verification_catches_a_wrong_algorithm(monkeypatch):
    """A broken reduction (dropping a received piece) must fail verification."""
    from sim.algorithms.call import Call

    original = Call.add
    calls = {"n": 0}

    def lossy(self, rank, payload, piece=None):
        calls["n"] += 1
        if calls["n"] == 2:
            return
        original(self, rank, payload, piece)

    monkeypatch.setattr(Call, "add", lossy)
    assert run_collective(_scenario("all_reduce", "ring", 4)).verified is False


def test_the_expected_sum_takes_one_buffer_more_not_one_a_rank():
    """``--verify`` of 8 ranks of 64 MiB once stacked every rank's buffer into a new array to sum
    them (512 MiB more; on the project's VM fresh memory costs seconds of system time)."""
    from sim.algorithms.call import Call
    from sim.collective.verify import expected, initial_buffers

    from .test_verify_memory import traced_peak

    ranks, elements = 8, 1 << 18  # 1 MiB of int32 a rank
    call = Call("all_reduce", ranks, 4 * elements, 4, 1, 0)
    call.inputs = initial_buffers("all_reduce", ranks, elements, 0, seed=1)
    rows, peak = traced_peak(lambda: expected(call))
    assert (rows[0][2] == sum(buffer.astype("int64") for buffer in call.inputs)).all()
    assert peak < 2 * 4 * elements, peak  # the sum itself (1 MiB), not a stack of the 8 buffers
