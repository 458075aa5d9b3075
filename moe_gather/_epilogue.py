"""The epilogue every kernel shares: x_scale, bias, SwiGLU on (gate, linear) column pairs, 1/out_scale, fp8 e4m3,
direct stores of the slice's rows. Semantics as moe_gather.reference states them (NaN propagates through the clamps,
division rounded to nearest, the fp8 conversion saturates to +-448)."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def swiglu_store(
    acc,  # fp32 [BLOCK_N, BLOCK_M]: weight rows (interleaved gate, linear) x the tile's tokens
    bias_ptr, x_scale_ptr, out_scale_ptr, out_ptr, alpha, limit,
    row0,  # first weight row of the tile in the [E * N] bias
    pid_m, pid_n, start, size,  # token block, column block, the slice's first output row and its size
    N: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
):  # fmt: skip
    epi_layout: gl.constexpr = gl.BlockedLayout([1, 2], [1, 32], [gl.num_warps(), 1], [1, 0])
    z = gl.convert_layout(gl.permute(acc, (1, 0)), epi_layout)  # [BLOCK_M, BLOCK_N]
    offs_en = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, epi_layout))
    bias = gl.load(bias_ptr + row0 + offs_en)
    z = gl.fma(z, gl.load(x_scale_ptr), bias[None, :])
    gate, linear = gl.split(z.reshape([BLOCK_M, BLOCK_N // 2, 2]))
    gate = gl.where(gate == gate, gl.minimum(gate, limit), gate)  # NaN stays NaN
    linear = gl.where(linear == linear, gl.minimum(gl.maximum(linear, -limit), limit), linear)
    y = gate / (1.0 + gl.exp(-alpha * gate)) * (linear + 1.0)
    out = gl.div_rn(y, gl.load(out_scale_ptr)).to(gl.float8e4nv)
    out_layout: gl.constexpr = out.type.layout
    offs_om = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, out_layout))
    offs_on = pid_n * (BLOCK_N // 2) + gl.arange(0, BLOCK_N // 2, layout=gl.SliceLayout(0, out_layout))
    out_ptrs = out_ptr + (start + offs_om).to(gl.int64)[:, None] * (N // 2) + offs_on[None, :]
    gl.store(out_ptrs, out, mask=(offs_om < size)[:, None])
