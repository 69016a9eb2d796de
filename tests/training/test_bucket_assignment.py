"""Bucket assignment equals PyTorch's: the C++ helper, and a real DDP Reducer after its rebuild."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.training.ddp import DDPScenario, assign_buckets, bucket_limits, compute_bucket_assignment_by_size, plan_calls, prepare
from sim.training.params import Param

ELEMENT_BYTES_BY_DTYPE = {"float16": 2, "float32": 4, "float64": 8}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason="torch not installed: the cross-check against PyTorch's bucketing needs it")


def torch_assignment(torch, numels, dtypes, limits, tensor_indices=None):
    tensors = [torch.empty(n, dtype=getattr(torch, d)) for n, d in zip(numels, dtypes)]
    if tensor_indices is None:
        return torch.distributed._compute_bucket_assignment_by_size(tensors, limits)
    return torch.distributed._compute_bucket_assignment_by_size(tensors, limits, [False] * len(tensors), tensor_indices)


tensors_strategy = st.lists(st.tuples(st.integers(1, 5000), st.sampled_from(sorted(ELEMENT_BYTES_BY_DTYPE))), min_size=1, max_size=30)
limits_strategy = st.lists(st.integers(1, 40000), min_size=1, max_size=3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tensors=tensors_strategy, limits=limits_strategy)
def test_equals_torch_without_indices_mixed_dtypes(torch, tensors, limits):
    numels, dtypes = zip(*tensors)
    sizes = [n * ELEMENT_BYTES_BY_DTYPE[d] for n, d in tensors]
    ours = compute_bucket_assignment_by_size(sizes, limits, keys=list(dtypes))
    buckets, bucket_limits_ = torch_assignment(torch, numels, dtypes, limits)
    assert ours == (list(map(list, buckets)), list(bucket_limits_))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(numels=st.lists(st.integers(1, 5000), min_size=1, max_size=30), limits=limits_strategy)
def test_equals_torch_in_reverse_order_with_indices(torch, numels, limits):
    """DDP's rebuild: tensors in gradient-ready order (here reverse registration) with their indices."""
    order = list(range(len(numels) - 1, -1, -1))
    params = [Param(f"p{i}", (n,), n) for i, n in enumerate(numels)]
    buckets, _ = torch_assignment(torch, [numels[i] for i in order], ["float32"] * len(order), limits, order)
    assert assign_buckets(params, order, limits) == list(map(list, buckets))


def ddp_buckets(torch, sizes, bucket_cap_mb):
    """Buckets of a real DistributedDataParallel (gloo, one process) after two steps (rebuilt)."""

    class Chain(torch.nn.Module):
        """Each parameter scales the running product, so backward makes gradients ready in
        reverse registration order, as in a layer stack."""

        def __init__(self):
            super().__init__()
            self.weights = torch.nn.ParameterList([torch.nn.Parameter(torch.full((n,), 0.5)) for n in sizes])

        def forward(self, x):
            for weight in self.weights:
                x = x * weight.sum() * 1e-3
            return x

    model = torch.nn.parallel.DistributedDataParallel(Chain(), bucket_cap_mb=bucket_cap_mb)
    for _ in range(2):
        model(torch.ones(1)).sum().backward()
    index_of = {id(p): i for i, p in enumerate(model.module.parameters())}
    return [[index_of[id(p)] for p in bucket.parameters()] for bucket in model.reducer._get_zeros_like_grad_buckets()]


@pytest.mark.torch
def test_equals_a_real_ddp_reducer(torch):
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    sizes = [300_000, 50_000, 400_000, 10, 262_144, 100_000, 20, 70_000]
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        # bucket_cap_mb=None: 25 MiB cap with a 1 MiB first bucket; an explicit cap in this
        # torch also sets the first bucket's cap (our first_bucket_bytes=None)
        cases = {None: (2**20, 25 * 2**20), 0.5: (None, 2**19)}
        for cap_mb, (first_nbytes, cap_nbytes) in cases.items():
            scenario = DDPScenario(
                param_bytes=tuple(4 * n for n in sizes),
                bucket_cap_bytes=cap_nbytes,
                first_bucket_bytes=first_nbytes,
                backward_time_s=1e-3,
                w_Bps=1e9,
            )
            ours = [list(call.params) for call in plan_calls(scenario, prepare(scenario))]
            assert ours == ddp_buckets(torch, sizes, cap_mb), f"bucket_cap_mb={cap_mb}"
    finally:
        dist.destroy_process_group()


def test_limits_follow_the_first_bucket_switch():
    scenario = DDPScenario(param_bytes=(4,), backward_time_s=1.0, w_Bps=1.0)
    assert bucket_limits(scenario) == [2**20, 25 * 2**20]
    assert bucket_limits(scenario.replace(first_bucket_bytes=None)) == [25 * 2**20]
