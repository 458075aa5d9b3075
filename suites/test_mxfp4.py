"""MXFP4 quantize / dequantize against hand-derived values and an independent scalar implementation."""

import math

import pytest
import torch

from moe_gather.mxfp4 import (
    E2M1_VALUES,
    MXFP4Weights,
    decode_e8m0,
    dequantize_mxfp4,
    e2m1_round,
    quantize_mxfp4,
    unpack_codes,
)


def _block(values, scale=1.0):
    """A [1, 32, 1] weight (one block along K) holding `values`, zero-padded."""
    v = torch.zeros(32, dtype=torch.float32)
    v[: len(values)] = torch.tensor(values, dtype=torch.float32) * scale
    return v.reshape(1, 32, 1)


def _codes_and_scale(w):
    q = quantize_mxfp4(w)
    return unpack_codes(q.codes)[0, 0].tolist(), int(q.scales[0, 0, 0])


def test_representable_values_round_trip_exactly():
    g = torch.Generator().manual_seed(1)
    codes = torch.randint(0, 16, (3, 8, 64), generator=g, dtype=torch.uint8)
    codes[..., ::32] = 7  # every block holds a 6, so its scale is reproduced exactly (amax / 6 is a power of 2)
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    scales = torch.randint(100, 150, (3, 8, 2), generator=g, dtype=torch.uint8)
    w = MXFP4Weights(packed, scales)
    again = quantize_mxfp4(dequantize_mxfp4(w))
    assert torch.equal(again.codes, w.codes)
    assert torch.equal(again.scales, w.scales)
    assert torch.equal(dequantize_mxfp4(again, torch.float64), dequantize_mxfp4(w, torch.float64))


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (0.25, 0), (0.75, 2), (1.25, 2), (1.75, 4), (2.5, 4), (3.5, 6), (5.0, 6),  # ties go to the even code
        (0.26, 1), (0.74, 1), (1.3, 3), (2.49, 4), (2.51, 5), (4.9, 6), (5.1, 7),  # nearest otherwise
        (-0.25, 8), (-0.75, 10), (-5.0, 14), (-0.1, 8),  # sign kept, also on zero
    ],
)  # fmt: skip
def test_e2m1_ties_to_even_and_nearest(value, code):
    # the block also holds 6.0 so that its scale is exactly 1 and `value` is quantized as is
    codes, scale = _codes_and_scale(_block([6.0, value]))
    assert scale == 127
    assert codes[1] == code


@pytest.mark.parametrize(
    ("amax", "expected_scale"),
    [
        (6.0, 127),  # amax / 6 = 1
        (6.0001, 128),  # rounds up: never clip the largest value
        (4.0, 127),  # 4 / 6 rounds up to 1
        (3.0, 126),  # 0.5
        (1e-40, 1),  # a subnormal amax / 6 rounds up to the smallest normal scale
        (6 * 2.0**100, 227),
    ],
)
def test_scale_is_amax_over_6_rounded_up_to_a_power_of_two(amax, expected_scale):
    _, scale = _codes_and_scale(_block([amax, -amax / 2]))
    assert scale == expected_scale
    assert amax / 2.0 ** (scale - 127) <= 6.0  # the largest value does not clip


def test_zero_block_has_zero_scale_and_codes():
    codes, scale = _codes_and_scale(_block([]))
    assert scale == 0 and set(codes) == {0}


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_weights_are_refused(bad):
    with pytest.raises(ValueError, match="NaN or Inf"):
        quantize_mxfp4(_block([1.0, bad]))


def test_e8m0_255_decodes_to_nan_and_0_to_2_pow_minus_127():
    s = decode_e8m0(torch.tensor([0, 127, 254, 255], dtype=torch.uint8), torch.float64).tolist()
    assert s[0] == 2.0**-127 and s[1] == 1.0 and s[2] == 2.0**127 and math.isnan(s[3])


def test_e2m1_round_saturates():
    assert e2m1_round(torch.tensor([7.0, 100.0, -1e30])).tolist() == [7, 7, 15]


def _scalar_quantize(block):
    """Independent scalar MXFP4 of one 32-value block: (codes, e8m0) from the ROUND_UP rule and exact RNE."""
    amax = max(abs(v) for v in block)
    d = float(torch.tensor(amax / 6.0, dtype=torch.float32))  # the division is done in float32
    if d == 0:
        return [8 if math.copysign(1, v) < 0 else 0 for v in block], 0
    m, e = math.frexp(d)  # d = m * 2**e, m in [0.5, 1)
    exp = e - 1 if m == 0.5 else e  # ceil(log2 d)
    codes = []
    for v in block:
        q = v / 2.0**exp
        best = min(range(8), key=lambda i: (abs(abs(q) - E2M1_VALUES[i]), i % 2))  # nearest, then even
        codes.append(best | (8 if math.copysign(1, q) < 0 else 0))
    return codes, exp + 127


def test_quantize_matches_independent_scalar_implementation():
    g = torch.Generator().manual_seed(7)
    w = (torch.randn((2, 64, 5), generator=g) * torch.logspace(-3, 3, 5)).to(torch.bfloat16)
    q = quantize_mxfp4(w)
    codes = unpack_codes(q.codes)
    for e in range(2):
        for n in range(5):
            for b in range(2):
                block = w[e, 32 * b : 32 * b + 32, n].float().tolist()
                want_codes, want_scale = _scalar_quantize(block)
                assert codes[e, n, 32 * b : 32 * b + 32].tolist() == want_codes
                assert int(q.scales[e, n, b]) == want_scale


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="multiple of 32"):
        quantize_mxfp4(torch.zeros(1, 48, 2))
    with pytest.raises(ValueError, match=r"\[E, K, N\]"):
        quantize_mxfp4(torch.zeros(48, 2))
