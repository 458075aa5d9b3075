"""The kernel tests' outputs: a buffer that shows every element left unwritten, and byte-for-byte comparisons (the
fp8 bytes themselves: -0 against +0 and one NaN against another are told apart, as comparing values does not)."""

import torch

from moe_gather import bmm1

POISON = 0x7F  # e4m3fn NaN: any element the kernel fails to write shows as a mismatch


def poisoned_output(problem) -> torch.Tensor:
    """An output buffer full of POISON."""
    shape = (problem.tokens, problem.case.model.n // 2)
    return torch.full(shape, POISON, dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)


def assert_same_bytes(out: torch.Tensor, expected: torch.Tensor, what: str = "") -> None:
    assert torch.equal(out.view(torch.uint8), expected.view(torch.uint8)), what


def assert_launches_alike(problem, weights, first: torch.Tensor, config=None, what: str = "") -> None:
    """Another launch of the call (`config`: forced), into a poisoned buffer, gives `first`'s bytes."""
    again = bmm1.run_problem(problem, weights, config=config, out=poisoned_output(problem))
    torch.cuda.synchronize()
    assert_same_bytes(again, first, what)
