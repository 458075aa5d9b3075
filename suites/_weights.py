"""Random MXFP4 weights for the kernels' CPU tests: every e2m1 code, e8m0 scales drawn from a range of exponents."""

import torch

from moe_gather.mxfp4 import MXFP4Weights


def random_mxfp4(e: int, n: int, k: int, exponents: tuple[int, int], seed: int = 0) -> MXFP4Weights:
    """[e, n, k] weights: codes uniform over all 256 bytes (two e2m1 values each), scales uniform over the e8m0 values
    from exponents[0] up to exponents[1], exclusive (127 is 2**0)."""
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 256, (e, n, k // 2), generator=g, dtype=torch.uint8)
    scales = torch.randint(*exponents, (e, n, k // 32), generator=g, dtype=torch.uint8)
    return MXFP4Weights(codes, scales)
