"""MXFP4 (OCP microscaling, e2m1 values with one e8m0 scale per 32 along K) for the expert weights.

Storage used throughout the project (the "canonical" layout; kernels derive their own from it):
    codes  uint8 [E, N, K // 2]   two e2m1 codes per byte, the even K index in the low nibble
    scales uint8 [E, N, K // 32]  e8m0: the biased exponent of a power-of-two scale, 2 ** (s - 127); 255 is NaN
so that one output column's K values are contiguous, the way a matmul reads them.

Quantization semantics (the ones triton_kernels' `downcast_to_mxfp` applies in its default ROUND_UP mode):
- per block of 32 along K, amax = max |w| in float32, and d = amax / 6 rounded to float32;
- the scale is d rounded *up* to a power of two (so amax never clips), computed on the float32 bits:
  s = ((bits(d) + 0x7FFFFF) & 0x7F800000) >> 23; an all-zero block gets s = 0 and all-zero codes;
- each value w * 2 ** (127 - s) (exact) is rounded to the e2m1 grid {0, .5, 1, 1.5, 2, 3, 4, 6} to nearest, ties to
  the even code, saturating at 6; the sign is kept, so negative values that round to zero give code 0b1000 (-0);
- non-finite weights are refused (ValueError): e2m1 has no NaN or Inf, and a NaN weight is a bug upstream.
Dequantization is exact in float32 and float64: e2m1 value times 2 ** (s - 127); s = 255 decodes to NaN (OCP MX).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

MX_BLOCK = 32  # values per e8m0 scale, fixed by the OCP MX spec
E8M0_BIAS = 127
E8M0_NAN = 255
E2M1_MAX = 6.0

# e2m1 magnitude of codes 0..7; code | 8 is the negative value.
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
_E2M1_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)


class ExpertShape:
    """num_experts, N and device of expert weights, read from their [E, N, ...] tensor named by `_leading`."""

    _leading = "codes"

    @property
    def num_experts(self) -> int:
        return getattr(self, self._leading).shape[0]

    @property
    def n(self) -> int:
        return getattr(self, self._leading).shape[1]

    @property
    def device(self) -> torch.device:
        return getattr(self, self._leading).device


@dataclass(frozen=True)
class MXFP4Weights(ExpertShape):
    """Expert weights in the canonical MXFP4 layout (module docstring). Logical shape [E, K, N]."""

    codes: torch.Tensor  # uint8 [E, N, K // 2]
    scales: torch.Tensor  # uint8 [E, N, K // 32]

    def __post_init__(self):
        if self.codes.dtype != torch.uint8 or self.scales.dtype != torch.uint8:
            raise ValueError(
                f"MXFP4Weights: codes and scales must be uint8, got {self.codes.dtype}, {self.scales.dtype}"
            )
        if self.codes.ndim != 3 or self.scales.ndim != 3:
            raise ValueError("MXFP4Weights: codes and scales must be [E, N, K/2] and [E, N, K/32]")
        e, n, k_half = self.codes.shape
        if tuple(self.scales.shape) != (e, n, 2 * k_half // MX_BLOCK) or (2 * k_half) % MX_BLOCK:
            raise ValueError(
                f"MXFP4Weights: scales {tuple(self.scales.shape)} do not match codes {tuple(self.codes.shape)}"
            )

    @property
    def k(self) -> int:
        return 2 * self.codes.shape[2]

    def to(self, device) -> MXFP4Weights:
        return MXFP4Weights(self.codes.to(device), self.scales.to(device))

    def expert(self, e: int) -> MXFP4Weights:
        return MXFP4Weights(self.codes[e : e + 1], self.scales[e : e + 1])


def e2m1_round(q: torch.Tensor) -> torch.Tensor:
    """float32 values (already divided by their scale) -> e2m1 codes (uint8, 0..15), RNE, saturating at 6."""
    mag = q.abs().contiguous()  # bucketize copies a strided input anyway (and warns)
    midpoints = torch.tensor(_E2M1_MIDPOINTS, dtype=q.dtype, device=q.device)
    idx = torch.bucketize(mag, midpoints)  # a tie lands on the lower code
    tie = (idx < len(_E2M1_MIDPOINTS)) & (mag == midpoints[idx.clamp(max=len(_E2M1_MIDPOINTS) - 1)])
    idx = idx + (tie & (idx % 2 == 1)).to(idx.dtype)  # ties go to the even code
    sign = torch.signbit(q).to(torch.int64) << 3
    return (idx | sign).to(torch.uint8)


def quantize_mxfp4(w: torch.Tensor) -> MXFP4Weights:
    """w [E, K, N] (bf16, fp16 or fp32) -> MXFP4Weights, blocks of 32 along K (module docstring)."""
    if w.ndim != 3:
        raise ValueError(f"quantize_mxfp4: w must be [E, K, N], got shape {tuple(w.shape)}")
    if w.shape[1] % MX_BLOCK:
        raise ValueError(f"quantize_mxfp4: K = {w.shape[1]} is not a multiple of {MX_BLOCK}")
    if w.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise ValueError(f"quantize_mxfp4: w must be bf16, fp16 or fp32, got {w.dtype}")
    e, k, n = w.shape
    codes = torch.empty((e, n, k // 2), dtype=torch.uint8, device=w.device)
    scales = torch.empty((e, n, k // MX_BLOCK), dtype=torch.uint8, device=w.device)
    for i in range(e):  # one expert at a time bounds the float32 temporaries
        t = w[i].transpose(0, 1).to(torch.float32).reshape(n, k // MX_BLOCK, MX_BLOCK)
        if not torch.isfinite(t).all():
            raise ValueError(f"quantize_mxfp4: w[{i}] has NaN or Inf; MXFP4 cannot represent them")
        d = t.abs().amax(dim=-1, keepdim=True) / E2M1_MAX
        exp_bits = (d.view(torch.int32) + 0x7FFFFF) & 0x7F800000
        scale = exp_bits.view(torch.float32)
        q = torch.where(scale == 0, torch.zeros_like(t), t * torch.where(scale == 0, 1.0, 1.0 / scale))
        c = e2m1_round(q).reshape(n, k)
        codes[i] = c[:, 0::2] | (c[:, 1::2] << 4)
        scales[i] = (exp_bits >> 23).to(torch.uint8).squeeze(-1)
    return MXFP4Weights(codes, scales)


def unpack_codes(codes: torch.Tensor) -> torch.Tensor:
    """uint8 [..., K/2] -> uint8 e2m1 codes [..., K]."""
    out = torch.stack((codes & 0xF, codes >> 4), dim=-1)
    return out.reshape(*codes.shape[:-1], 2 * codes.shape[-1])


def decode_e8m0(scales: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """e8m0 bytes -> 2 ** (s - 127) in `dtype` (exact: float32 holds 2**-127 as a subnormal); 255 -> NaN."""
    s = scales.to(torch.float64)
    out = torch.exp2(s - E8M0_BIAS)
    return torch.where(scales == E8M0_NAN, torch.nan, out).to(dtype)


def refuse_nan_scales(w: MXFP4Weights) -> None:
    """The kernels' weight preparation: e8m0 255 (NaN) has no kernel encoding, a ValueError before any layout."""
    if (w.scales == E8M0_NAN).any():
        raise ValueError("prepare_weights: e8m0 scale 255 (NaN) is not supported by the kernels")


@functools.cache
def _e2m1_table(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.tensor(E2M1_VALUES + tuple(-v for v in E2M1_VALUES), dtype=dtype, device=device)


def e2m1_values(codes: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Packed codes uint8 [..., K/2] -> their e2m1 values [..., K] in `dtype`, unscaled (exact)."""
    return _e2m1_table(dtype, codes.device)[unpack_codes(codes).long()]


def dequantize_mxfp4(w: MXFP4Weights, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """MXFP4Weights -> [E, K, N] in `dtype` (float32 or float64; both exact)."""
    values = e2m1_values(w.codes, dtype)  # [E, N, K]
    scale = decode_e8m0(w.scales, dtype).repeat_interleave(MX_BLOCK, dim=-1)
    return (values * scale).transpose(1, 2)
