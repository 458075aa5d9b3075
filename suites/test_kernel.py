"""The product's kernel against the golden reference, on every case the plugin selects."""

import pytest

from moe_gather import bmm1
from moe_gather.problem import reference_for
from moe_gather.reference import TOLERANCES, check_against

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def prepared():
    """Kernel-layout weights, once per model (the plugin builds the MXFP4 weights once per model)."""
    cache = {}

    def get(problem):
        key = problem.case.model.name
        if key not in cache:
            cache.clear()
            cache[key] = bmm1.prepare_weights(problem.params.weights)
        return cache[key]

    return get


def run_kernel(problem, weights):
    return bmm1.moe_bmm1(
        problem.x,
        weights,
        problem.params.bias,
        problem.routing.gather_indx,
        problem.routing.ragged,
        x_scale=problem.x_scale,
        out_scale=problem.out_scale,
        alpha=problem.alpha,
        limit=problem.limit,
    )


def test_kernel_matches_reference(case, problem, gpu, prepared, record_property):
    if not bmm1.has_kernel(gpu.capability):
        pytest.skip(f"NYI: no kernel for {gpu.found} yet")
    out = run_kernel(problem, prepared(problem))
    agreement = check_against(reference_for(problem).out, out, TOLERANCES["kernel"], case.id)
    record_property("agreement", str(agreement))
