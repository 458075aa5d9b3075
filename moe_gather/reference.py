"""Golden reference for the GPT-OSS MoE first matmul (BMM1), and the comparisons every test uses.

    out[t, j] = e4m3( swiglu( x[gather_indx[t]] * x_scale @ W[e(t)] + bias[e(t)] )[j] / out_scale )

Semantics (the kernels match these; what they may differ in is stated as a tolerance in TOLERANCES):
- Products are exact: x is fp8 e4m3, W is e2m1 times a power of two. The reduction over K runs in float64, so the
  reference is exact up to float64 rounding of the sum (far below anything an fp8 output can show).
- x_scale and bias are applied in float64: z = acc * x_scale + bias.
- SwiGLU on interleaved pairs, z[:, 0::2] the gate and z[:, 1::2] the linear half, exactly as triton_kernels writes it:
  gate = min(g, limit); linear = clamp(l, -limit, limit); y = gate * sigmoid(alpha * gate) * (linear + 1), in float64.
- out = y / out_scale rounded once to fp8 e4m3 (round to nearest, ties to even), saturating: finite values beyond
  +-448 and +-Inf become +-448 (PTX cvt.rn.satfinite). The division is exact (float64), not a multiply by 1/out_scale.
- NaN propagates: a NaN anywhere in a row's reduction or in its bias gives NaN outputs (e4m3fn code 0x7F) for the
  pairs it touches; min/clamp do not swallow NaN. (triton_kernels' min/max return the non-NaN operand and so turn a
  NaN gate into `limit`; this project chose propagation.) -Inf gates give NaN (-Inf * sigmoid(-Inf) = -Inf * 0).
- amax = max |y| over all outputs before the out scale, as float32 (NaN if any y is NaN); 0 for no rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .mxfp4 import MXFP4Weights, dequantize_mxfp4

E4M3_MAX = 448.0
E4M3_MIN_NORMAL_EXP = -6  # e4m3: 3 mantissa bits, exponents -6..8, subnormal quantum 2**-9


# ===----------------------------------------------------------------------=== #
# Reference Implementation
# ===----------------------------------------------------------------------=== #


def round_to_e4m3(v: torch.Tensor) -> torch.Tensor:
    """float64 -> float64 on the e4m3 grid: RNE, saturate to +-448 (Inf too), NaN kept. Exact, one rounding."""
    v = v.to(torch.float64)
    a = v.abs()
    _, e = torch.frexp(a)  # a = m * 2**e with m in [0.5, 1): floor(log2 a) = e - 1
    quantum = torch.exp2((e - 1).clamp(min=E4M3_MIN_NORMAL_EXP).to(torch.float64) - 3)
    r = torch.where(torch.isinf(a), E4M3_MAX, torch.round(a / quantum) * quantum)
    return torch.copysign(r.clamp(max=E4M3_MAX), v)


def to_e4m3(v: torch.Tensor) -> torch.Tensor:
    """float -> torch.float8_e4m3fn with the semantics of round_to_e4m3 (torch's own cast maps overflow to NaN)."""
    return round_to_e4m3(v).to(torch.float8_e4m3fn)


def swiglu_reference(z: torch.Tensor, alpha: float, limit: float) -> torch.Tensor:
    """[..., N] with interleaved (gate, linear) pairs -> [..., N/2], in the precision of z."""
    gate, linear = z[..., 0::2], z[..., 1::2]
    gate = torch.minimum(gate, torch.full_like(gate, limit))  # torch.minimum propagates NaN
    linear = linear.clamp(-limit, limit)
    return gate * torch.sigmoid(alpha * gate) * (linear + 1)


@dataclass(frozen=True)
class ReferenceOutput:
    out: torch.Tensor  # float8_e4m3fn [tokens, N/2]
    y: torch.Tensor  # float64 [tokens, N/2], before the out scale
    amax: torch.Tensor  # float32 scalar tensor


def _scalar(v) -> float:
    return float(v.item()) if isinstance(v, torch.Tensor) else float(v)


def moe_bmm1_reference(
    x: torch.Tensor,
    weights: MXFP4Weights,
    bias: torch.Tensor,
    gather_indx: torch.Tensor,
    slice_sizes: torch.Tensor,
    *,
    x_scale,
    out_scale,
    alpha: float,
    limit: float,
) -> ReferenceOutput:
    """The golden reference (module docstring), on x's device.

    x [batch, K] fp8 e4m3; weights [E, K, N] MXFP4; bias [E, N] fp32; gather_indx [tokens] int (row of x for each
    output row, expert-sorted); slice_sizes [E] int, summing to tokens; x_scale, out_scale: floats or 1-element
    tensors; alpha, limit: SwiGLU parameters.
    """
    sizes = [int(s) for s in slice_sizes.tolist()]
    tokens = gather_indx.shape[0]
    if sum(sizes) != tokens:
        raise ValueError(f"slice_sizes sum to {sum(sizes)} but gather_indx has {tokens} rows")
    x_scale, out_scale = _scalar(x_scale), _scalar(out_scale)
    y = torch.empty((tokens, weights.n // 2), dtype=torch.float64, device=x.device)
    start = 0
    for e, size in enumerate(sizes):
        if size == 0:
            continue
        rows = x[gather_indx[start : start + size].long()].to(torch.float64)
        w = dequantize_mxfp4(weights.expert(e), torch.float64)[0]
        z = (rows @ w) * x_scale + bias[e].to(torch.float64)
        y[start : start + size] = swiglu_reference(z, alpha, limit)
        start += size
    amax = y.abs().max().to(torch.float32) if tokens else torch.zeros((), dtype=torch.float32, device=x.device)
    return ReferenceOutput(out=to_e4m3(y / out_scale), y=y, amax=amax)


# ===----------------------------------------------------------------------=== #
# Comparisons
# ===----------------------------------------------------------------------=== #


@dataclass(frozen=True)
class Tolerance:
    maxtol: float  # max of |ref - out| / max(rms(ref), |ref|), both normalised by max |ref|
    rmstol: float  # RMS of the same relative error
    min_bitwise_equal: float  # fraction of fp8 outputs whose bytes must match the reference (allowed_count)
    max_ulp: float  # worst fp8 error allowed, in units in the last place (NaN mismatches count as infinite)
    reason: str
    max_scaled: float = float("inf")  # worst scaled error (scaled_errors) allowed
    max_scaled_over_one: float = 1.0  # fraction of outputs allowed a scaled error over 1 (allowed_count)


def allowed_count(fraction: float, count: int) -> float:
    """Outputs of `count` that a rate `fraction` measured over many outputs allows in one case: the expectation plus
    three standard deviations of a Poisson count, plus one, so that a decode case of a few thousand outputs is not
    failed by the chance of a handful (a rate of 1e-3 allows 8 of 2880 outputs, 0.28%, and 0.11% of 10^6)."""
    expected = fraction * count
    return expected + 3 * math.sqrt(expected) + 1 if fraction > 0 else 0.0


# Kernel paths, each per parameter set (problem.PARAMS): (path, params) -> Tolerance: what the path measured over the
# GPT-OSS cases of both models on the H200 (220 per parameter set, ladder and decode; results/h200/accuracy.md) plus a
# margin, the reason beside each number. The seed's maxtol and rmstol (0.125; rmstol None, triton_kernels' default
# 4e-3) hold everywhere.
TOLERANCES = {
    # fp32 accumulation and an fp32 epilogue flip an fp8 rounding now and then, by one ulp: measured 99.947% bitwise
    # equal or more on every case of 10^6 outputs (99.903% at the worst, a decode case of 14,400), never over 1 ulp.
    # Bitwise counts bytes: +0 against -0 is unequal (the peer's zeros are +0 where the reference's are -0).
    ("kernel", "seed"): Tolerance(
        0.125, 4e-3, 0.999, 1, "fp8 products exact, fp32 sums, fast exp, y * (1/out_scale)", max_scaled=1
    ),
    ("peer", "seed"): Tolerance(
        0.125, 4e-3, 0.999, 1, "triton_kernels: fp32 accumulate, y * (1/out_scale), fast exp", max_scaled=1
    ),
    # GPT-OSS's parameters. Engine-scaled x puts the outlier channels' products beside small ones in each 32-product
    # block, where fp8 wgmma keeps ~13 bits: measured 99.69% bitwise equal or more on every case of 10^6 outputs
    # (99.54% on a decode case of 2880), scaled error at most 7.5 (up to 60 ordinals near zero), over 1 on at most
    # 8.7e-6 of a large case's outputs (6.9e-5: 1 of a decode case's 14,400); cuBLAS's promoted fp8 GEMM on the same
    # inputs: 99.25%, 13.5, 2.9e-5 on cases of 10^5 outputs or more. Margins: ~1.3x, counts by allowed_count.
    ("kernel", "real"): Tolerance(
        0.125,
        4e-3,
        0.996,
        float("inf"),
        "fp8 wgmma's ~13 bits per block; ordinals unbounded near zero, see scaled",
        max_scaled=10,
        max_scaled_over_one=2e-5,
    ),
    # triton_kernels accumulates in fp32: 99.9997% or more on every case of 10^6 outputs, never over 1 ulp.
    ("peer", "real"): Tolerance(0.125, 4e-3, 0.9999, 1, "triton_kernels: fp32 accumulate", max_scaled=1),
    # The fp16 wgmma path (widely spread block scales) adds each block in fp32: at both parameter sets 99.9998% or
    # more and 1 ulp on the cases it runs (the fp8 path's real bounds would let it fall to fp8 accuracy unseen).
    ("kernel-f16", "seed"): Tolerance(0.125, 4e-3, 0.999, 1, "fp16 wgmma: fp32 sums per block", max_scaled=1),
    ("kernel-f16", "real"): Tolerance(0.125, 4e-3, 0.999, 1, "fp16 wgmma: fp32 sums per block", max_scaled=1),
    # The fast precision: each block's scale folded into the fp8 values, the four wgmmas of a 128-wide K tile chained
    # in fp8 wgmma's accumulator, one fp32 promotion per tile, as cuBLAS's promoted fp8 GEMM accumulates: on each of
    # the 440 cases of results/h200/accuracy.md its worst ulp and scaled error equal cuBLAS's on the same inputs, its
    # outputs off the reference within -20..+12 of cuBLAS's. The bounds are that budget: cuBLAS's worst over them
    # (4 ulp, scaled 4, 3.0e-5 over 1 at the seed's; scaled 13.5, 8.7e-5 over 1 at the real set), and bitwise floors
    # from cuBLAS's (and the kernel's) worst on cases of 10^5 outputs or more, 99.828% and 99.458%, with 1.16x and
    # 1.11x on the rate of outputs off (decode cases by allowed_count): each case uses at most 86% of its allowance,
    # and a partial truncated to 13 bits fails 14 of 16 cases.
    ("kernel-fast", "seed"): Tolerance(
        0.125, 4e-3, 0.998, 4, "fp8 wgmma over 128 K, promoted per tile", max_scaled=4, max_scaled_over_one=3e-5
    ),
    ("kernel-fast", "real"): Tolerance(
        0.125,
        4e-3,
        0.994,
        float("inf"),
        "fp8 wgmma over 128 K, promoted per tile; ordinals unbounded near zero, see scaled",
        max_scaled=13.5,
        max_scaled_over_one=8.7e-5,
    ),
    # Block scales 11 binades apart within each K tile (the fold's whole window): the fold is exact, but the four
    # blocks share one fp8 wgmma chain, so the small blocks' products round at the largest block's precision (cuBLAS's
    # promoted GEMM, with one scale per row, could not hold them at all). Measured on the H200
    # (results/h200/fast/spread_window.log): 99.23% bitwise equal, 6 ulp, scaled 7, 0.078% over 1.
    ("spread-fast", "seed"): Tolerance(
        0.125, 4e-3, 0.99, 8, "scales 11 binades apart in one 128-K chain", max_scaled=8, max_scaled_over_one=1e-3
    ),
    # An out_scale that saturates most outputs (1e-3 against ~4) also multiplies the kernel's absolute error near
    # zero by ~1000: Hopper's fp8 wgmma keeps ~13 bits within a 32-product group, so outputs of |y| << 1 move by many
    # ulps while assert_close, which weighs errors against max(RMS, |ref|), holds (measured 99.894% bitwise equal).
    ("saturating", "seed"): Tolerance(0.125, 4e-3, 0.998, float("inf"), "fp8 wgmma error near zero, amplified 1000x"),
    # The same through the fast precision's 128-K accumulation: measured 99.695% bitwise equal on the H200.
    ("saturating-fast", "seed"): Tolerance(
        0.125, 4e-3, 0.995, float("inf"), "fp8 wgmma over 128 K, error near zero amplified 1000x"
    ),
}


def with_precision(name: str, precision: str | None, sep: str = "-") -> str:
    """`name` as a precision's: the accurate precision's (or None's) is `name` itself, another's carries the
    precision ('kernel-fast', 'kernel_fast', 'nvidia-h200-fast')."""
    return name if precision in (None, "accurate") else f"{name}{sep}{precision}"


def kernel_tolerance(precision: str, params: str, path: str = "kernel") -> Tolerance:
    """The tolerance of a kernel path ("kernel", "saturating") at a precision (prepared weights' `.precision`) and
    parameter set: TOLERANCES[path, params], or [f"{path}-{precision}", params] for another than "accurate"."""
    return TOLERANCES[with_precision(path, precision), params]


def assert_close(ref: torch.Tensor, out: torch.Tensor, *, maxtol: float, rmstol: float, description: str = ""):
    """The seed's assert_close: errors relative to max(RMS(ref), |ref|) (the seed first normalises by max |ref|).

    fp8 tensors are compared as the float32 values they hold. Unlike triton_kernels' version, NaN and Inf must sit
    at the same places with the same signs (a NaN is never silently within tolerance). Returns (max_err, rms_err).
    """
    if ref.shape != out.shape:
        raise AssertionError(f"{description}: shapes differ, ref {tuple(ref.shape)} out {tuple(out.shape)}")
    ref, out = ref.to(torch.float32), out.to(torch.float32)
    for name, mask_fn in (("NaN", torch.isnan), ("Inf", torch.isinf)):
        if not torch.equal(mask_fn(ref), mask_fn(out)):
            bad = int((mask_fn(ref) != mask_fn(out)).sum())
            raise AssertionError(f"{description}: {bad} elements differ in being {name}")
    if not torch.equal(torch.isinf(ref) & (ref > 0), torch.isinf(out) & (out > 0)):
        raise AssertionError(f"{description}: Inf signs differ")
    if ref.numel() == 0:
        return 0.0, 0.0
    finite = torch.isfinite(ref)
    # float64 and no prior normalisation (it does not change the ratios and only guarded float32 against overflow):
    # a one-ulp fp8 step from a power of two, 0.5 -> 0.5625, is then exactly 0.125, not 0.125 plus rounding.
    ref = torch.where(finite, ref, 0.0).to(torch.float64)
    out = torch.where(finite, out, 0.0).to(torch.float64)
    ref_rms = ref.square().mean().sqrt()
    rel = (ref - out).abs() / torch.maximum(ref_rms, ref.abs()).clamp_min(1e-300)
    max_err, rms_err = rel.max().item(), rel.square().mean().sqrt().item()
    if max_err > maxtol or rms_err > rmstol:
        worst = int(rel.argmax())
        raise AssertionError(
            f"{description}: max relative error {max_err:.4g} (tol {maxtol}), RMS {rms_err:.4g} (tol {rmstol}); "
            f"worst at flat index {worst}: ref {ref.flatten()[worst]:.6g} out {out.flatten()[worst]:.6g}"
        )
    return max_err, rms_err


# The scaled error's floor: FLOOR_BINADES binades under the tensor's amax. In ordinals (ulps of |ref| itself) an error
# on an output near zero, where (linear + 1) cancels, grows without bound as |ref| shrinks, and so dominates any max;
# relative to the tensor's RMS (assert_close) it vanishes. Measured at max(|ref|, amax * 2**-10) instead, an error
# near zero counts in e4m3 ulps of amax / 1024, that is in steps of amax * 2**-13 to 2**-14: the resolution of an
# accumulation that keeps ~14 bits against the output's own scale (Hopper's fp8 wgmma keeps ~13 within a
# 32-product group). Then one rounding flip scores <= 1 anywhere (an fp32-accumulating GEMM does no worse), errors
# of fewer bits score in proportion, and the score does not depend on the out scale while the floor lies in e4m3's
# normal range (amax >= 16: at 448 the floor is 0.44); below that (the seed's outputs, amax ~0.7) the floor's ulp
# clamps to e4m3's subnormal step, 2**-9, and the score is the ordinal error.
FLOOR_BINADES = 10


def e4m3_ulp(magnitude: torch.Tensor) -> torch.Tensor:
    """float64 magnitudes -> the spacing of the e4m3 grid there: 2 ** (max(floor(log2 m), -6) - 3) (2**-9 at 0)."""
    m = magnitude.to(torch.float64)
    _, e = torch.frexp(torch.where(m > 0, m, 1.0))
    e = torch.where(m > 0, e - 1, E4M3_MIN_NORMAL_EXP)
    return torch.exp2(e.clamp(min=E4M3_MIN_NORMAL_EXP).to(torch.float64) - 3)


def scaled_errors(ref: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """|out - ref| in e4m3 ulps at max(|ref|, amax(ref) * 2**-FLOOR_BINADES), float64, for two fp8 e4m3 tensors:
    the error metric that sees accumulation error (FLOOR_BINADES says why). Where both are NaN: 0; where exactly one
    is: inf. amax over the finite references."""
    r, o = ref.to(torch.float64), out.to(torch.float64)
    both_nan, one_nan = r.isnan() & o.isnan(), r.isnan() ^ o.isnan()
    finite = torch.where(r.isnan(), 0.0, r).abs()
    floor = finite.max() * 2.0**-FLOOR_BINADES if r.numel() else torch.zeros((), dtype=torch.float64)
    err = (o - r).abs() / e4m3_ulp(torch.maximum(finite, floor))
    err = torch.where(both_nan, 0.0, err)
    return torch.where(one_nan, float("inf"), err)


@dataclass(frozen=True)
class Agreement:
    """Agreement of two fp8 e4m3 tensors: bitwise, in ordinals, and in the scaled error."""

    count: int
    bitwise_equal: int
    max_ulp: float  # inf when NaN-ness differs
    nan_mismatch: int
    max_scaled: float = 0.0  # worst scaled error (scaled_errors)
    scaled_over_one: int = 0  # outputs whose scaled error exceeds 1

    @property
    def bitwise_equal_fraction(self) -> float:
        return self.bitwise_equal / self.count if self.count else 1.0

    @property
    def scaled_over_one_fraction(self) -> float:
        return self.scaled_over_one / self.count if self.count else 0.0

    @classmethod
    def from_dict(cls, d: dict) -> Agreement:
        """as_dict's numbers back (the counts from their fractions, rounded)."""
        count = d["count"]
        return cls(
            count, round(d["bitwise_equal"] * count), d["max_ulp"], d["nan_mismatch"], d["max_scaled"],
            round(d["scaled_over_one"] * count),
        )  # fmt: skip

    def within(self, tolerance: Tolerance) -> bool:
        """The counting bounds of `tolerance`: the bitwise floor and the fraction over 1 as rates (allowed_count),
        the worst ulp and the worst scaled error."""
        return (
            self.count - self.bitwise_equal <= allowed_count(1 - tolerance.min_bitwise_equal, self.count)
            and self.max_ulp <= tolerance.max_ulp
            and self.max_scaled <= tolerance.max_scaled
            and self.scaled_over_one <= allowed_count(tolerance.max_scaled_over_one, self.count)
        )

    def as_dict(self) -> dict:
        """Plain numbers, for reports (pytest's user properties, JSON)."""
        return {
            "count": self.count,
            "bitwise_equal": self.bitwise_equal_fraction,
            "max_ulp": self.max_ulp,
            "max_scaled": self.max_scaled,
            "scaled_over_one": self.scaled_over_one_fraction,
            "nan_mismatch": self.nan_mismatch,
        }

    def __str__(self):
        return (
            f"bitwise equal {self.bitwise_equal_fraction:.5%} of {self.count}, worst {self.max_ulp:g} ulp, "
            f"scaled error worst {self.max_scaled:.3g} (over 1: {self.scaled_over_one_fraction:.4%}), "
            f"{self.nan_mismatch} NaN mismatches"
        )


def e4m3_ordinal(t: torch.Tensor) -> torch.Tensor:
    """fp8 e4m3fn -> int32 on a line where neighbours differ by 1 ulp (+0 and -0 both 0)."""
    b = t.view(torch.uint8).to(torch.int32)
    mag = b & 0x7F
    return torch.where(b & 0x80 != 0, -mag, mag)


def compare_fp8(ref: torch.Tensor, out: torch.Tensor) -> Agreement:
    if ref.dtype != torch.float8_e4m3fn or out.dtype != torch.float8_e4m3fn:
        raise ValueError(f"compare_fp8 takes float8_e4m3fn tensors, got {ref.dtype} and {out.dtype}")
    if ref.shape != out.shape:
        raise ValueError(f"compare_fp8: shapes differ, {tuple(ref.shape)} and {tuple(out.shape)}")
    nan_r, nan_o = torch.isnan(ref.to(torch.float32)), torch.isnan(out.to(torch.float32))
    nan_mismatch = int((nan_r != nan_o).sum())
    equal = int((ref.view(torch.uint8) == out.view(torch.uint8)).sum())
    both = ~(nan_r | nan_o)
    ulps = (e4m3_ordinal(ref) - e4m3_ordinal(out)).abs()[both]
    max_ulp = float("inf") if nan_mismatch else float(ulps.max()) if ulps.numel() else 0.0
    scaled = scaled_errors(ref, out)
    max_scaled = float(scaled.max()) if scaled.numel() else 0.0
    return Agreement(ref.numel(), equal, max_ulp, nan_mismatch, max_scaled, int((scaled > 1).sum()))


def check_against(
    ref: torch.Tensor, out: torch.Tensor, tolerance: Tolerance, description: str = "", record=None
) -> Agreement:
    """The agreement of `out` with `ref` (handed to `record` first, so that a failure is reported with its figures),
    then assert_close with `tolerance`, the bitwise floor, the ulp bound and the scaled error's bounds."""
    agreement = compare_fp8(ref, out) if ref.shape == out.shape else None
    if record is not None and agreement is not None:
        record(agreement)
    assert_close(ref, out, maxtol=tolerance.maxtol, rmstol=tolerance.rmstol, description=description)
    if not agreement.within(tolerance):
        raise AssertionError(
            f"{description}: {agreement}; needs {tolerance.min_bitwise_equal:.3%} bitwise equal, at most "
            f"{tolerance.max_ulp:g} ulp, a scaled error of at most {tolerance.max_scaled:g} and at most "
            f"{tolerance.max_scaled_over_one:.4%} over 1, as rates (allowed_count) ({tolerance.reason})"
        )
    return agreement
