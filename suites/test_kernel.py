"""The product's kernel against the golden reference, on every case the plugin selects (both parameter sets)."""

import pytest
import torch

from moe_gather import bmm1
from moe_gather.reference import check_against, kernel_tolerance

pytestmark = pytest.mark.gpu


def poisoned_output(problem):
    """An output buffer full of NaN (e4m3fn 0x7F): any element the kernel fails to write shows as a mismatch."""
    shape = (problem.tokens, problem.case.model.n // 2)
    return torch.full(shape, 0x7F, dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)


def test_kernel_matches_reference(case, problem, reference, kernel_weights, record_agreement):
    out = bmm1.run_problem(problem, kernel_weights, poisoned_output(problem))
    tolerance = kernel_tolerance(kernel_weights.precision, case.params)
    check_against(reference.out, out, tolerance, case.id, record_agreement("kernel"))
