"""The product's kernel against the golden reference, on every case the plugin selects (both parameter sets)."""

import pytest
from _outputs import poisoned_output

from moe_gather import bmm1
from moe_gather.reference import check_against, kernel_tolerance

pytestmark = pytest.mark.gpu


def test_kernel_matches_reference(case, problem, reference, kernel_weights, record_agreement):
    out = bmm1.run_problem(problem, kernel_weights, poisoned_output(problem))
    tolerance = kernel_tolerance(kernel_weights.precision, case.params)
    check_against(reference.out, out, tolerance, case.id, record_agreement("kernel"))
