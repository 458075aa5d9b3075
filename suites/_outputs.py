"""The kernel tests' outputs: a buffer that shows every element left unwritten, and byte-for-byte comparisons (the
fp8 bytes themselves: NaN payloads and -0 included, which a comparison of values would pass)."""

import torch

from moe_gather import bmm1


def poisoned_output(problem) -> torch.Tensor:
    """An output buffer full of NaN (e4m3fn 0x7F): any element the kernel fails to write shows as a mismatch."""
    shape = (problem.tokens, problem.case.model.n // 2)
    return torch.full(shape, 0x7F, dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)


def assert_same_bytes(out: torch.Tensor, expected: torch.Tensor, what: str = "") -> None:
    assert torch.equal(out.view(torch.uint8), expected.view(torch.uint8)), what


def assert_launches_alike(problem, weights, first: torch.Tensor, config=None, what: str = "") -> None:
    """Another launch of the call (`config`: forced), into a poisoned buffer, gives `first`'s bytes."""
    again = bmm1.run_problem(problem, weights, config=config, out=poisoned_output(problem))
    torch.cuda.synchronize()
    assert_same_bytes(again, first, what)
