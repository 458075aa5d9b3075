"""The epilogue every kernel shares: x_scale, bias, SwiGLU on (gate, linear) column pairs, 1/out_scale, fp8 e4m3,
direct stores of the slice's rows. Semantics as moe_gather.reference states them, in fp32: NaN propagates through the
clamps; the sigmoid is 1 / (1 + 2 ** (-alpha * log2(e) * gate)) with PTX's ex2.approx and rcp.approx (a few ulps);
the out scale is a multiply by its reciprocal, rounded once (as triton_kernels does: within 1.5 ulps of the
division, and x / 0 and 0 / 0 alike; a subnormal out_scale below 2 ** -126 may have an infinite reciprocal); the fp8
conversion saturates to +-448. These fp32 roundings flip an fp8 output against the exact reference now and then, by
one ulp (reference.TOLERANCES).

The accumulator goes through shared memory once, into rows of tokens with VEC consecutive weight rows per thread.
The sm90 kernel's 128-token tiles take VEC 16 (wide stores) and the clamps as PTX min / max .NaN, which halve their
epilogue's instructions; the three-consumer tile's 64-token halves VEC 4 with min / max .NaN (a wider VEC's scratch
would not fit beside its ring); the smaller tiles keep VEC 2 and selects, where the wider form does not pay."""

import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

_MINUS_LOG2E = gl.constexpr(-1.4426950408889634)
_NAN = gl.constexpr(tl.PropagateNan.ALL)  # min / max that return NaN if either operand is (PTX min.NaN)


@gluon.jit
def _approx(instruction: gl.constexpr, v):
    """One PTX .approx.ftz instruction on each fp32 element (Triton's own exp and division add range fix-ups)."""
    return gl.inline_asm_elementwise(instruction + " $0, $1;", "=r,r", [v], dtype=gl.float32, is_pure=True, pack=1)


@gluon.jit
def swiglu_store(
    acc,  # fp32 [BLOCK_N, BLOCK_M]: weight rows (interleaved gate, linear) x the tile's tokens
    bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit,
    row0,  # first weight row of the tile in the [E * N] bias
    m0, pid_n, start, size,  # the tile's first row in its slice, column block, the slice's first output row, size
    N: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
    VEC: gl.constexpr = 2,  # consecutive weight rows each thread holds after the transpose: VEC / 2 outputs per store
    NAN_MIN_MAX: gl.constexpr = False,  # the clamps as min / max that keep NaN (one instruction each); else selects
    ACC_SCALE: gl.constexpr = 1.0,  # a power of two the accumulator carries: folded into x_scale (exact)
):  # fmt: skip
    LANES_N: gl.constexpr = min(32, BLOCK_N // VEC)
    epi_layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32 // LANES_N, LANES_N], [gl.num_warps(), 1], [1, 0])
    z = gl.convert_layout(gl.permute(acc, (1, 0)), epi_layout)  # [BLOCK_M, BLOCK_N]
    offs_en = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, epi_layout))
    bias = gl.load(bias_ptr + row0 + offs_en)
    x_scale = gl.load(x_scale_ptr)
    if ACC_SCALE != 1.0:
        x_scale = x_scale * ACC_SCALE
    z = gl.fma(z, x_scale, bias[None, :])
    gate, linear = gl.split(z.reshape([BLOCK_M, BLOCK_N // 2, 2]))
    if NAN_MIN_MAX:  # as torch.minimum and torch.clamp
        gate = gl.minimum(gate, limit, propagate_nan=_NAN)
        linear = gl.minimum(gl.maximum(linear, -limit, propagate_nan=_NAN), limit, propagate_nan=_NAN)
    else:  # NaN compares false: it stays NaN
        gate = gl.where(gate > limit, limit, gate)
        linear = gl.where(linear > limit, limit, gl.where(linear < -limit, -limit, linear))
    sigmoid = _approx("rcp.approx.ftz.f32", 1.0 + _approx("ex2.approx.ftz.f32", gate * (alpha * _MINUS_LOG2E)))
    y = gate * sigmoid * (linear + 1.0)
    out = (y * gl.div_rn(1.0, gl.load(out_scale_ptr))).to(gl.float8e4nv)
    out_layout: gl.constexpr = out.type.layout
    offs_om = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, out_layout))
    offs_on = pid_n * (BLOCK_N // 2) + gl.arange(0, BLOCK_N // 2, layout=gl.SliceLayout(0, out_layout))
    out_ptrs = out_ptr + (start + offs_om).to(gl.int64)[:, None] * (N // 2) + offs_on[None, :]
    gl.store(out_ptrs, out, mask=(offs_om < size)[:, None])
